#include "runner/backend_run.h"

#include <fcntl.h>
#include <linux/falloc.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <torch/csrc/jit/serialization/pickle.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <iterator>
#include <optional>

#include "core/error.h"
#include "core/file_util.h"
#include "runner/backend_messages.h"
#include "runner/subprocess.h"
#include "runner/tier1.h"

namespace driftgate {
namespace {

using Clock = std::chrono::steady_clock;

// Child -> parent messages: kind, stage, input index, where the child's stderr ended
// when it sent the message (what it printed for this step lies before), payload
// length, payload.
enum MessageKind : char {
  k_loaded = 'L',   // the instance loaded; forwards follow
  k_skipped = 'S',  // payload: the reason
  k_load_error = 'E',
  k_model_error = 'M',  // payload: why the model file cannot be used (ModelFileError)
  k_forwards = 'F',     // payload: pickled (outputs tuple, times list)
  k_forward_error = 'X',
};

struct Message {
  char kind = 0;
  uint32_t stage = 0;
  uint32_t index = 0;
  uint64_t stderr_end = 0;
  std::vector<char> payload;  // pickled bytes, or the text of a reason or an error

  std::string text() const { return std::string(payload.begin(), payload.end()); }
};

constexpr size_t k_header_size = 25;

bool send(int fd, char kind, uint32_t stage, uint32_t index, const char* payload, size_t payload_size) {
  uint64_t size = payload_size;
  // fd 2 is the child's stderr file, written only through it: its offset is its end.
  const off_t end = ::lseek(STDERR_FILENO, 0, SEEK_CUR);
  const uint64_t stderr_end = end < 0 ? 0 : static_cast<uint64_t>(end);
  char header[k_header_size];
  header[0] = kind;
  std::memcpy(header + 1, &stage, 4);
  std::memcpy(header + 5, &index, 4);
  std::memcpy(header + 9, &stderr_end, 8);
  std::memcpy(header + 17, &size, 8);
  return write_fully(fd, header, sizeof header) && write_fully(fd, payload, payload_size);
}

bool send(int fd, char kind, uint32_t stage, uint32_t index, const std::string& payload) {
  return send(fd, kind, stage, index, payload.data(), payload.size());
}

ReadResult receive(Child& child, Message& message, Deadline deadline) {
  char header[k_header_size];
  ReadResult result = child.read_exact(header, sizeof header, deadline);
  if (result != ReadResult::k_ok) {
    return result;
  }
  uint64_t size = 0;
  message.kind = header[0];
  std::memcpy(&message.stage, header + 1, 4);
  std::memcpy(&message.index, header + 5, 4);
  std::memcpy(&message.stderr_end, header + 9, 8);
  std::memcpy(&size, header + 17, 8);
  message.payload.assign(size, '\0');  // pickled outputs are read in place, not copied again
  return child.read_exact(message.payload.data(), size, deadline);
}

// Outputs with oneDNN layouts are made dense so they can be pickled.
c10::IValue densify(const c10::IValue& value) {
  if (value.isTensor() && value.toTensor().is_mkldnn()) {
    return value.toTensor().to_dense();
  }
  return value;
}

// Runs `plan` on one input: the repeats' outputs go to `outputs`; returns the times of
// the timed runs. Each time covers the forward and making its output dense, what a
// caller needs before it can use the output.
std::vector<double> planned_forwards(BackendInstance& instance, const ModelInput& input, const ForwardPlan& plan,
                                     std::vector<c10::IValue>& outputs) {
  const int repeats = std::max(1, plan.repeats);
  for (int r = 0; r < repeats; ++r) {
    outputs.push_back(densify(instance.forward(input)));
  }
  for (int w = repeats; w < plan.warmup; ++w) {
    densify(instance.forward(input));
  }
  std::vector<double> times;
  for (int r = 0; r < plan.runs; ++r) {
    auto start = Clock::now();
    c10::IValue output = densify(instance.forward(input));
    std::chrono::duration<double, std::milli> elapsed = Clock::now() - start;
    times.push_back(elapsed.count());
  }
  return times;
}

// The inputs stage `stage` runs: all for the reference (stage 0), else those on
// which the reference produced outputs.
std::vector<size_t> stage_inputs(size_t stage, size_t count, const std::vector<bool>& reference_failed) {
  std::vector<size_t> indices;
  for (size_t i = 0; i < count; ++i) {
    if (stage == 0 || !reference_failed[i]) {
      indices.push_back(i);
    }
  }
  return indices;
}

// The child: from (stage, position) on, loads each stage's backend and runs its
// inputs in order, reporting each, then exits. The parent mirrors this order.
[[noreturn]] void child_main(int fd, const std::vector<Stage>& stages, const BackendSource& source,
                             const std::vector<ModelInput>& inputs, size_t first_stage, size_t first_position,
                             std::vector<bool> reference_failed, const TimingTrace& trace) {
  for (size_t stage = first_stage; stage < stages.size(); ++stage) {
    std::vector<size_t> indices = stage_inputs(stage, inputs.size(), reference_failed);
    if (indices.empty()) {
      continue;
    }
    const uint32_t tag = static_cast<uint32_t>(stage);
    std::optional<BackendInstance> instance;
    const std::string traced = source.config_path + ": child: " + stages[stage].spec.name;
    try {
      TimingTrace::Phase phase(trace, traced + ": load");
      instance.emplace(BackendInstance::load(stages[stage].spec, source));
    } catch (const ModelFileError& e) {
      send(fd, k_model_error, tag, 0, e.what());  // the same file for every stage: nothing more to run
      ::_exit(0);
    } catch (const Error& e) {
      send(fd, k_load_error, tag, 0, e.what());
      if (stage == 0) {
        ::_exit(0);
      }
      continue;
    } catch (const std::exception& e) {
      send(fd, k_load_error, tag, 0, torch_error_summary(e));
      if (stage == 0) {
        ::_exit(0);
      }
      continue;
    }
    if (instance->skipped()) {
      send(fd, k_skipped, tag, 0, instance->skip_reason());
      if (stage == 0) {
        ::_exit(0);
      }
      continue;
    }
    send(fd, k_loaded, tag, 0, "");
    for (size_t position = stage == first_stage ? first_position : 0; position < indices.size(); ++position) {
      const size_t index = indices[position];
      try {
        std::vector<c10::IValue> outputs;
        const ForwardPlan& plan = stages[stage].plan;
        TimingTrace::Phase forwards_phase(
            trace, traced + ": input " + std::to_string(index) + ": " + std::to_string(plan.repeats) + " repeats, " +
                       std::to_string(plan.warmup) + " warm-up, " + std::to_string(plan.runs) + " timed forwards");
        std::vector<double> times = planned_forwards(*instance, inputs[index], plan, outputs);
        forwards_phase.end();
        TimingTrace::Phase send_phase(trace, traced + ": input " + std::to_string(index) + ": pickle and send");
        c10::List<double> time_list;
        for (double time : times) {
          time_list.push_back(time);
        }
        c10::IValue payload = c10::ivalue::Tuple::create({c10::ivalue::Tuple::create(outputs), time_list});
        std::vector<char> bytes = torch::jit::pickle_save(payload);
        send(fd, k_forwards, tag, static_cast<uint32_t>(index), bytes.data(), bytes.size());
      } catch (const std::exception& e) {
        const Error* error = dynamic_cast<const Error*>(&e);
        send(fd, k_forward_error, tag, static_cast<uint32_t>(index),
             error != nullptr ? std::string(e.what())
                              : "sending the outputs to the runner failed: " + torch_error_summary(e));
        if (stage == 0) {
          reference_failed[index] = true;
        }
      }
    }
  }
  ::_exit(0);
}

// Children whose work is done but which may still be exiting: the kernel frees a
// child's address space (every model it loaded) in tens of milliseconds, which
// need not hold up the runner. Reaped without waiting when the next isolated run
// starts, and for good by reap_exiting_children().
std::vector<pid_t>& exiting_children() {
  static std::vector<pid_t> pids;
  return pids;
}

void reap_exited_children() {
  std::vector<pid_t>& pids = exiting_children();
  pids.erase(std::remove_if(pids.begin(), pids.end(), reap_if_exited), pids.end());
}

// The parent's side of a child's stderr: an anonymous file both hold (the child's fd 2).
// The child writes at the shared offset; the parent reads with pread from where it
// stopped, so neither moves the other's place, and frees what it has read.
class ChildStderr {
 public:
  explicit ChildStderr(const std::string& who) : m_fd(::memfd_create("driftgate-child-stderr", MFD_CLOEXEC)) {
    if (m_fd < 0) {
      throw Error(who + ": cannot create a file for an isolated check's stderr: " + std::strerror(errno));
    }
  }
  ~ChildStderr() { ::close(m_fd); }
  ChildStderr(const ChildStderr&) = delete;
  ChildStderr& operator=(const ChildStderr&) = delete;

  // In the child: fd 2 becomes the file.
  void redirect() const { ::dup2(m_fd, STDERR_FILENO); }

  // What was written since the last call and before `end` (the child's offset when it
  // sent a message: it may have printed more for its next step since), as message
  // lines. At most the last 1 MiB of it is read; a line says how much was left unread.
  std::vector<std::string> take(uint64_t end = UINT64_MAX) {
    struct stat status {};
    if (::fstat(m_fd, &status) != 0) {
      return {};
    }
    const uint64_t size = std::min(static_cast<uint64_t>(status.st_size), end);
    if (size <= m_read) {
      return {};
    }
    constexpr uint64_t k_max = uint64_t{1} << 20;
    const uint64_t from = size - m_read > k_max ? size - k_max : m_read;
    std::string bytes(size - from, '\0');
    ssize_t got = 0;
    for (size_t done = 0; done < bytes.size(); done += static_cast<size_t>(got)) {
      got = ::pread(m_fd, bytes.data() + done, bytes.size() - done, static_cast<off_t>(from + done));
      if (got <= 0) {
        bytes.resize(done);
        break;
      }
    }
    std::vector<std::string> lines = message_lines(bytes);
    if (from > m_read) {
      lines.insert(lines.begin(), "(" + std::to_string(from - m_read) + " bytes of stderr before these not read)");
    }
    // Freed as read: a chatty model does not hold its whole stderr in memory.
    ::fallocate(m_fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, 0, static_cast<off_t>(size));
    m_read = size;
    return lines;
  }

 private:
  int m_fd;
  uint64_t m_read = 0;
};

void append(std::vector<std::string>& to, std::vector<std::string> lines) {
  to.insert(to.end(), std::make_move_iterator(lines.begin()), std::make_move_iterator(lines.end()));
}

std::string format_seconds(double seconds) {
  char buffer[32];
  std::snprintf(buffer, sizeof buffer, "%g s", seconds);
  return buffer;
}

}  // namespace

std::vector<BackendRun> run_isolated(const std::vector<Stage>& stages, const BackendSource& source,
                                     const std::vector<ModelInput>& inputs, double timeout_s, const TimingTrace& trace,
                                     const std::function<void(size_t stage, size_t input)>& on_input) {
  auto input_done = [&](size_t stage, size_t input) {
    if (on_input) {
      on_input(stage, input);
    }
  };
  reap_exited_children();
  std::vector<BackendRun> runs(stages.size());
  for (BackendRun& run : runs) {
    run.inputs.resize(inputs.size());
  }
  std::vector<bool> reference_failed(inputs.size(), false);
  auto who = [&](size_t stage) { return source.config_path + ": backend '" + stages[stage].spec.name + "'"; };
  size_t stage = 0;
  size_t position = 0;  // in stage_inputs(stage, ...)
  // Moves past stages with nothing to run; stops everything when the reference has nothing.
  auto settle = [&]() {
    while (stage < stages.size()) {
      if (stage > 0 && (!runs[0].load_error.empty() || !runs[0].skip_reason.empty())) {
        stage = stages.size();
        break;
      }
      if (position < stage_inputs(stage, inputs.size(), reference_failed).size()) {
        break;
      }
      ++stage;
      position = 0;
    }
  };
  settle();
  while (stage < stages.size()) {
    ChildStderr child_stderr(who(stage));
    TimingTrace::Phase fork_phase(trace, source.config_path + ": parent: fork");
    Child::StartFailure failure;
    std::optional<Child> child = Child::start(
        [&](int fd) -> int {
          child_stderr.redirect();
          child_main(fd, stages, source, inputs, stage, position, reference_failed, trace);
        },
        &failure);
    if (!child) {
      throw Error(
          who(stage) +
          (failure.at_pipe ? ": cannot create a pipe for an isolated check: " : ": cannot fork an isolated check: ") +
          failure.reason);
    }
    fork_phase.end();
    bool loaded = false;
    while (stage < stages.size()) {
      Message message;
      ReadResult result = receive(*child, message, deadline_in(timeout_s));
      if (result != ReadResult::k_ok) {
        const bool timed_out = result == ReadResult::k_timeout;
        const std::string died =
            timed_out ? "did not finish within timeout_s " + format_seconds(timeout_s) + " and was killed"
                      : "died: " + describe_exit(child->reap());
        if (timed_out) {
          child->kill_and_reap();
        }
        std::vector<std::string> printed = child_stderr.take();
        const std::string last_words = printed.empty() ? "" : "; its last line on stderr: " + printed.back();
        BackendRun& run = runs[stage];
        if (!loaded) {
          run.load_error = who(stage) + ": the process loading '" + source.model_path + "' " + died + last_words;
          run.load_timed_out = timed_out;
          append(run.load_messages, std::move(printed));
          ++stage;
          position = 0;
        } else {
          const size_t index = stage_inputs(stage, inputs.size(), reference_failed)[position];
          run.inputs[index].error =
              who(stage) + ": the process running forward of '" + source.model_path + "' " + died + last_words;
          run.inputs[index].timed_out = timed_out;
          append(run.inputs[index].messages, std::move(printed));
          if (stage == 0) {
            reference_failed[index] = true;
          }
          input_done(stage, index);
          ++position;
        }
        settle();
        break;
      }
      if (message.stage != stage) {  // throws: ~Child kills and reaps the child
        throw Error(who(stage) + ": an isolated check sent a message out of order; this is a bug in driftgate");
      }
      BackendRun& run = runs[stage];
      // The child printed this before it sent the message: it belongs to the same step.
      std::vector<std::string> printed = child_stderr.take(message.stderr_end);
      const bool about_input = message.kind == k_forwards || message.kind == k_forward_error;
      if (about_input && message.index < run.inputs.size()) {
        append(run.inputs[message.index].messages, std::move(printed));
      } else if (!about_input) {
        append(run.load_messages, std::move(printed));
      }
      switch (message.kind) {
        case k_model_error:
          run.model_error = message.text();
          stage = stages.size();
          break;
        case k_load_error:
        case k_skipped:
          (message.kind == k_skipped ? run.skip_reason : run.load_error) = message.text();
          ++stage;
          position = 0;
          break;
        case k_loaded:
          loaded = true;
          continue;
        case k_forward_error:
          run.inputs.at(message.index).error = message.text();
          if (stage == 0) {
            reference_failed[message.index] = true;
          }
          input_done(stage, message.index);
          ++position;
          break;
        case k_forwards: {
          TimingTrace::Phase phase(trace, source.config_path + ": parent: " + stages[stage].spec.name + ": input " +
                                              std::to_string(message.index) + ": unpickle and repeat statistics");
          c10::IValue payload = torch::jit::pickle_load(message.payload);
          const auto& parts = payload.toTupleRef().elements();
          std::vector<c10::IValue> outputs(parts[0].toTupleRef().elements().begin(),
                                           parts[0].toTupleRef().elements().end());
          std::vector<double> times;
          for (const c10::IValue& time : parts[1].toListRef()) {
            times.push_back(time.toDouble());
          }
          run.inputs.at(message.index).forwards = make_forwards(std::move(outputs), std::move(times));
          input_done(stage, message.index);
          ++position;
          break;
        }
        default:  // throws: ~Child kills and reaps the child
          throw Error(who(stage) + ": an isolated check sent a malformed message; this is a bug in driftgate");
      }
      const size_t before = stage;
      settle();
      if (stage != before) {
        loaded = false;
      }
    }
    child->close_pipe();
    if (stage >= stages.size()) {
      const pid_t pid = child->release();
      if (pid > 0) {  // not reaped already: done, its exit overlaps the runner's next work
        exiting_children().push_back(pid);
      }
    }
  }
  return runs;
}

namespace {

BackendRun run_in_process(const BackendSpec& spec, const BackendSource& source, const std::vector<ModelInput>& inputs,
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
  } catch (const ModelFileError& e) {
    run.model_error = e.what();
    return run;
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
      std::vector<double> times = planned_forwards(*instance, inputs[i], options.plan, outputs);
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

void reap_exiting_children() {
  for (pid_t pid : exiting_children()) {
    wait_for_exit(pid);
  }
  exiting_children().clear();
}

double quantile(const std::vector<double>& sorted, double q) {
  if (sorted.empty()) {
    return 0.0;
  }
  const double rank = q * static_cast<double>(sorted.size() - 1);
  const size_t below = static_cast<size_t>(rank);
  const size_t above = std::min(below + 1, sorted.size() - 1);
  return sorted[below] + (rank - static_cast<double>(below)) * (sorted[above] - sorted[below]);
}

Forwards make_forwards(std::vector<c10::IValue> outputs, std::vector<double> times_ms) {
  Forwards forwards;
  std::sort(times_ms.begin(), times_ms.end());
  forwards.median_ms = quantile(times_ms, 0.5);
  forwards.iqr_ms = quantile(times_ms, 0.75) - quantile(times_ms, 0.25);
  forwards.repeat_max_abs = repeat_max_abs(outputs);
  forwards.outputs = std::move(outputs);
  return forwards;
}

BackendRun run_backend(const BackendSpec& spec, const BackendSource& source, const std::vector<ModelInput>& inputs,
                       const std::vector<bool>& wanted, const BackendRunOptions& options,
                       const BackendInstance* alias_reference, std::optional<BackendInstance>* keep) {
  return run_in_process(spec, source, inputs, wanted, options, alias_reference, keep);
}

}  // namespace driftgate
