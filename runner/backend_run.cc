#include "runner/backend_run.h"

#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <torch/csrc/jit/serialization/pickle.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>

#include "core/error.h"
#include "runner/tier1.h"

namespace driftgate {
namespace {

using Clock = std::chrono::steady_clock;

// Child -> parent messages: kind, input index, payload length, payload.
enum MessageKind : char {
  k_loaded = 'L',   // the instance loaded; forwards follow
  k_skipped = 'S',  // payload: the reason
  k_load_error = 'E',
  k_forwards = 'F',  // payload: pickled (outputs tuple, times list)
  k_forward_error = 'X',
};

struct Message {
  char kind = 0;
  uint32_t index = 0;
  std::string payload;
};

bool write_all(int fd, const char* data, size_t size) {
  while (size > 0) {
    ssize_t written = ::write(fd, data, size);
    if (written < 0 && errno == EINTR) {
      continue;
    }
    if (written <= 0) {
      return false;
    }
    data += written;
    size -= static_cast<size_t>(written);
  }
  return true;
}

bool send(int fd, char kind, uint32_t index, const std::string& payload) {
  uint64_t size = payload.size();
  char header[13];
  header[0] = kind;
  std::memcpy(header + 1, &index, 4);
  std::memcpy(header + 5, &size, 8);
  return write_all(fd, header, sizeof header) && write_all(fd, payload.data(), payload.size());
}

enum class ReadResult { k_ok, k_eof, k_timeout };

// Reads exactly `size` bytes before `deadline`.
ReadResult read_exact(int fd, char* data, size_t size, Clock::time_point deadline) {
  while (size > 0) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
    if (left <= 0) {
      return ReadResult::k_timeout;
    }
    pollfd descriptor{fd, POLLIN, 0};
    int ready = ::poll(&descriptor, 1, static_cast<int>(std::min<int64_t>(left, 1 << 30)));
    if (ready < 0 && errno == EINTR) {
      continue;
    }
    if (ready == 0) {
      return ReadResult::k_timeout;
    }
    ssize_t got = ::read(fd, data, size);
    if (got < 0 && errno == EINTR) {
      continue;
    }
    if (got <= 0) {
      return ReadResult::k_eof;
    }
    data += got;
    size -= static_cast<size_t>(got);
  }
  return ReadResult::k_ok;
}

ReadResult receive(int fd, Message& message, Clock::time_point deadline) {
  char header[13];
  ReadResult result = read_exact(fd, header, sizeof header, deadline);
  if (result != ReadResult::k_ok) {
    return result;
  }
  uint64_t size = 0;
  message.kind = header[0];
  std::memcpy(&message.index, header + 1, 4);
  std::memcpy(&size, header + 5, 8);
  message.payload.assign(size, '\0');
  return read_exact(fd, message.payload.data(), size, deadline);
}

// Outputs with oneDNN layouts are made dense so they can be pickled.
c10::IValue densify(const c10::IValue& value) {
  if (value.isTensor() && value.toTensor().is_mkldnn()) {
    return value.toTensor().to_dense();
  }
  return value;
}

std::vector<double> timed_forwards(BackendInstance& instance, const at::Tensor& input, int repeats,
                                   std::vector<c10::IValue>& outputs) {
  std::vector<double> times;
  for (int r = 0; r < std::max(1, repeats); ++r) {
    auto start = Clock::now();
    outputs.push_back(densify(instance.forward(input)));
    std::chrono::duration<double, std::milli> elapsed = Clock::now() - start;
    times.push_back(elapsed.count());
  }
  return times;
}

// The child: loads the backend, runs `indices` in order, reports each, exits.
[[noreturn]] void child_main(int fd, const BackendSpec& spec, const BackendSource& source,
                             const std::vector<at::Tensor>& inputs, const std::vector<size_t>& indices, int repeats) {
  std::optional<BackendInstance> instance;
  try {
    instance.emplace(BackendInstance::load(spec, source));
  } catch (const Error& e) {
    send(fd, k_load_error, 0, e.what());
    ::_exit(0);
  } catch (const std::exception& e) {
    send(fd, k_load_error, 0, torch_error_summary(e));
    ::_exit(0);
  }
  if (instance->skipped()) {
    send(fd, k_skipped, 0, instance->skip_reason());
    ::_exit(0);
  }
  send(fd, k_loaded, 0, "");
  for (size_t index : indices) {
    try {
      std::vector<c10::IValue> outputs;
      std::vector<double> times = timed_forwards(*instance, inputs[index], repeats, outputs);
      c10::List<double> time_list;
      for (double time : times) {
        time_list.push_back(time);
      }
      c10::IValue payload = c10::ivalue::Tuple::create({c10::ivalue::Tuple::create(outputs), time_list});
      std::vector<char> bytes = torch::jit::pickle_save(payload);
      send(fd, k_forwards, static_cast<uint32_t>(index), std::string(bytes.begin(), bytes.end()));
    } catch (const Error& e) {
      send(fd, k_forward_error, static_cast<uint32_t>(index), e.what());
    } catch (const std::exception& e) {
      send(fd, k_forward_error, static_cast<uint32_t>(index),
           "sending the outputs to the runner failed: " + torch_error_summary(e));
    }
  }
  ::_exit(0);
}

// "killed by signal 6 (Aborted)" or "exited with code 3".
std::string describe_exit(int status) {
  if (WIFSIGNALED(status)) {
    return "killed by signal " + std::to_string(WTERMSIG(status)) + " (" + ::strsignal(WTERMSIG(status)) + ")";
  }
  if (WIFEXITED(status)) {
    return "exited with code " + std::to_string(WEXITSTATUS(status));
  }
  return "stopped";
}

int reap(pid_t pid, bool kill_first) {
  if (kill_first) {
    ::kill(pid, SIGKILL);
  }
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  return status;
}

std::string format_seconds(double seconds) {
  char buffer[32];
  std::snprintf(buffer, sizeof buffer, "%g s", seconds);
  return buffer;
}

BackendRun run_isolated(const BackendSpec& spec, const BackendSource& source, const std::vector<at::Tensor>& inputs,
                        const std::vector<bool>& wanted, const BackendRunOptions& options) {
  BackendRun run;
  run.inputs.resize(inputs.size());
  run.skip_reason = backend_skip_reason(spec);
  if (!run.skip_reason.empty()) {
    return run;
  }
  std::vector<size_t> pending;
  for (size_t i = 0; i < inputs.size(); ++i) {
    if (wanted[i]) {
      pending.push_back(i);
    }
  }
  const auto limit = std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(options.timeout_s));
  const std::string who = source.config_path + ": backend '" + spec.name + "'";
  size_t next = 0;
  while (next < pending.size()) {
    int fds[2];
    if (::pipe(fds) != 0) {
      throw Error(who + ": cannot create a pipe for an isolated check: " + std::strerror(errno));
    }
    pid_t pid = ::fork();
    if (pid < 0) {
      ::close(fds[0]);
      ::close(fds[1]);
      throw Error(who + ": cannot fork an isolated check: " + std::strerror(errno));
    }
    if (pid == 0) {
      ::close(fds[0]);
      child_main(fds[1], spec, source, inputs, std::vector<size_t>(pending.begin() + next, pending.end()),
                 options.repeats);
    }
    ::close(fds[1]);
    bool loaded = false;
    bool finished = false;
    while (!finished) {
      Message message;
      ReadResult result = receive(fds[0], message, Clock::now() + limit);
      if (result == ReadResult::k_timeout) {
        reap(pid, true);
        const std::string what = "did not finish within timeout_s " + format_seconds(options.timeout_s) +
                                 " and was killed";
        if (!loaded) {
          run.load_error = who + ": loading '" + source.model_path + "' " + what;
          run.load_timed_out = true;
          ::close(fds[0]);
          return run;
        }
        InputRun& input = run.inputs[pending[next++]];
        input.timed_out = true;
        input.error = who + ": forward of '" + source.model_path + "' " + what;
        break;
      }
      if (result == ReadResult::k_eof) {
        const std::string died = describe_exit(reap(pid, false));
        if (!loaded) {
          run.load_error = who + ": the process loading '" + source.model_path + "' died: " + died;
          ::close(fds[0]);
          return run;
        }
        if (next < pending.size()) {
          run.inputs[pending[next++]].error =
              who + ": the process running forward of '" + source.model_path + "' died: " + died;
        }
        break;
      }
      switch (message.kind) {
        case k_load_error:
          run.load_error = message.payload;
          finished = true;
          break;
        case k_skipped:
          run.skip_reason = message.payload;
          finished = true;
          break;
        case k_loaded:
          loaded = true;
          break;
        case k_forward_error:
          run.inputs.at(message.index).error = message.payload;
          ++next;
          break;
        case k_forwards: {
          std::vector<char> bytes(message.payload.begin(), message.payload.end());
          c10::IValue payload = torch::jit::pickle_load(bytes);
          const auto& parts = payload.toTupleRef().elements();
          std::vector<c10::IValue> outputs(parts[0].toTupleRef().elements().begin(),
                                           parts[0].toTupleRef().elements().end());
          std::vector<double> times;
          for (const c10::IValue& time : parts[1].toListRef()) {
            times.push_back(time.toDouble());
          }
          run.inputs.at(message.index).forwards = make_forwards(std::move(outputs), std::move(times));
          ++next;
          break;
        }
        default:
          reap(pid, true);
          ::close(fds[0]);
          throw Error(who + ": an isolated check sent a malformed message; this is a bug in driftgate");
      }
    }
    if (finished) {
      reap(pid, false);
      ::close(fds[0]);
      return run;
    }
    ::close(fds[0]);
  }
  return run;
}

BackendRun run_in_process(const BackendSpec& spec, const BackendSource& source, const std::vector<at::Tensor>& inputs,
                          const std::vector<bool>& wanted, const BackendRunOptions& options,
                          const BackendInstance* alias_reference, std::optional<BackendInstance>* keep) {
  BackendRun run;
  run.inputs.resize(inputs.size());
  std::optional<BackendInstance> instance;
  try {
    instance.emplace(BackendInstance::load(spec, source));
    if (alias_reference != nullptr && !alias_reference->skipped()) {
      check_no_shared_storage(*alias_reference, *instance);
    }
  } catch (const Error& e) {
    run.load_error = e.what();
    return run;
  }
  if (instance->skipped()) {
    run.skip_reason = instance->skip_reason();
    return run;
  }
  for (size_t i = 0; i < inputs.size(); ++i) {
    if (!wanted[i]) {
      continue;
    }
    try {
      std::vector<c10::IValue> outputs;
      std::vector<double> times = timed_forwards(*instance, inputs[i], options.repeats, outputs);
      run.inputs[i].forwards = make_forwards(std::move(outputs), std::move(times));
    } catch (const Error& e) {
      run.inputs[i].error = e.what();
    } catch (const std::exception& e) {
      run.inputs[i].error = "measuring the outputs failed: " + torch_error_summary(e);
    }
  }
  if (keep != nullptr) {
    keep->emplace(std::move(*instance));
  }
  return run;
}

}  // namespace

Forwards make_forwards(std::vector<c10::IValue> outputs, std::vector<double> times_ms) {
  Forwards forwards;
  std::sort(times_ms.begin(), times_ms.end());
  size_t middle = times_ms.size() / 2;
  if (!times_ms.empty()) {
    forwards.median_ms = times_ms.size() % 2 == 1 ? times_ms[middle] : (times_ms[middle - 1] + times_ms[middle]) / 2.0;
  }
  forwards.repeat_max_abs = repeat_max_abs(outputs);
  forwards.outputs = std::move(outputs);
  return forwards;
}

BackendRun run_backend(const BackendSpec& spec, const BackendSource& source, const std::vector<at::Tensor>& inputs,
                       const std::vector<bool>& wanted, const BackendRunOptions& options,
                       const BackendInstance* alias_reference, std::optional<BackendInstance>* keep) {
  if (options.isolate) {
    return run_isolated(spec, source, inputs, wanted, options);
  }
  return run_in_process(spec, source, inputs, wanted, options, alias_reference, keep);
}

}  // namespace driftgate
