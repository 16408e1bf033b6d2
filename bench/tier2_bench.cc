// tier2_bench: what tier 2's activation capture costs over a plain forward, and the
// memory a localization holds.
//
//   tier2_bench MODEL.pt... [--repeats N] [--size S]
// Per model (input 1x3xSxS, seeded): the median of N plain forwards and of N capture
// forwards that return every activation (warmed up first; the capture function is
// built once), their ratio (target <= 1.5x), whether the capture's output is
// bit-identical to the plain forward's, the bytes of the captured activations, and
// peak RSS of a full localization (reference, float64 oracle, target onednn_off, in a
// forked child) with the default 256 MiB window budget and with a 16 MiB one.
// Figures go to stdout; nothing is asserted (tests never time anything).
#include <ATen/Parallel.h>
#include <torch/script.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <set>
#include <string>
#include <vector>

#include "core/experiment.h"
#include "runner/backend.h"
#include "runner/tier2_capture.h"
#include "runner/tier2_localize.h"

namespace {

using Clock = std::chrono::steady_clock;

double median(std::vector<double> values) {
  std::sort(values.begin(), values.end());
  return values[values.size() / 2];
}

template <typename Call>
double median_ms(int repeats, Call call) {
  std::vector<double> times;
  for (int r = 0; r < repeats; ++r) {
    auto start = Clock::now();
    call();
    times.push_back(std::chrono::duration<double, std::milli>(Clock::now() - start).count());
  }
  return median(times);
}

const driftgate::BackendSpec& builtin(const std::string& name) {
  for (const auto& spec : driftgate::builtin_backends()) {
    if (spec.name == name) {
      return spec;
    }
  }
  std::fprintf(stderr, "tier2_bench: no built-in backend %s\n", name.c_str());
  std::exit(2);
}

void bench_model(const std::string& path, int repeats, int64_t size) {
  driftgate::BackendSource source{"tier2_bench", path, 1};
  const at::Tensor input = at::randn({1, 3, size, size}, at::TensorOptions().dtype(at::kFloat));
  double plain_ms = 0.0;
  double capture_ms = 0.0;
  bool identical = false;
  int64_t bytes = 0;
  size_t points = 0;
  {
    driftgate::BackendInstance instance = driftgate::BackendInstance::load(builtin("cpu_fp32"), source);
    driftgate::CaptureGraph graph(instance.module());
    std::set<driftgate::Execution> all;
    for (size_t i = 0; i < graph.points().size(); ++i) {
      all.insert({i, 0});
    }
    points = all.size();
    c10::IValue plain;
    driftgate::Capture capture;
    for (int warm = 0; warm < 3; ++warm) {
      plain = instance.forward(input);
      instance.with_settings([&]() {
        capture = graph.run(input, all);
        return c10::IValue();
      });
    }
    identical = capture.output.toTensor().equal(plain.toTensor());
    for (const auto& [run, value] : capture.values) {
      bytes += static_cast<int64_t>(value.nbytes());
    }
    // Interleaved so that machine load hits both alike.
    std::vector<double> plain_times;
    std::vector<double> capture_times;
    for (int r = 0; r < repeats; ++r) {
      plain_times.push_back(median_ms(1, [&]() { instance.forward(input); }));
      capture_times.push_back(median_ms(1, [&]() {
        instance.with_settings([&]() {
          graph.run(input, all);
          return c10::IValue();
        });
      }));
    }
    plain_ms = median(plain_times);
    capture_ms = median(capture_times);
  }
  std::printf(
      "%s: %zu activations (%.1f MiB); plain forward %.2f ms, capture forward %.2f ms: %.2fx; output "
      "bit-identical: %s\n",
      path.c_str(), points, static_cast<double>(bytes) / (1 << 20), plain_ms, capture_ms, capture_ms / plain_ms,
      identical ? "yes" : "NO");
  for (int64_t budget_mib : {int64_t{256}, int64_t{16}}) {
    driftgate::LocalizeRequest request;
    request.reference = builtin("cpu_fp32");
    request.oracle = builtin("cpu_fp64");
    request.target = builtin("onednn_off");
    request.source = source;
    request.options.tolerance = driftgate::Tolerance{1e-4, 1e-4, driftgate::ToleranceRule::k_assert_close};
    request.options.budget_bytes = budget_mib << 20;
    auto start = Clock::now();
    driftgate::Localization localization = driftgate::localize_isolated(request, input, 600.0);
    const double seconds = std::chrono::duration<double>(Clock::now() - start).count();
    std::printf("  localization vs onednn_off, window budget %lld MiB: %.2f s, peak RSS %.0f MiB, %s\n",
                static_cast<long long>(budget_mib), seconds, static_cast<double>(localization.peak_rss_kib) / 1024.0,
                driftgate::describe_localization(localization).c_str());
  }
}

}  // namespace

int main(int argc, char** argv) {
  int repeats = 20;
  int64_t size = 224;
  std::vector<std::string> models;
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    if (arg == "--repeats" && i + 1 < argc) {
      repeats = std::atoi(argv[++i]);
      continue;
    }
    if (arg == "--size" && i + 1 < argc) {
      size = std::atoll(argv[++i]);
      continue;
    }
    models.push_back(arg);
  }
  if (models.empty() || repeats < 1 || size < 8) {
    std::fprintf(stderr, "usage: tier2_bench MODEL.pt... [--repeats N] [--size S]\n");
    return 2;
  }
  at::set_num_threads(1);  // localizations fork: this process never runs a multi-threaded region
  at::manual_seed(0);
  for (const std::string& model : models) {
    bench_model(model, repeats, size);
  }
  return 0;
}
