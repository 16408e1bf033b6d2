#include "core/experiment.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <set>

#include "core/error.h"
#include "tests/support/unix_socket.h"

namespace driftgate {
namespace {

namespace fs = std::filesystem;

class ExperimentTest : public ::testing::Test {
 protected:
  void SetUp() override {
    m_dir = fs::temp_directory_path() / ("dg_experiment_" + std::to_string(::getpid()));
    fs::create_directories(m_dir);
    std::ofstream(m_dir / "m.pt") << "not really a model";
    std::ofstream(m_dir / "cat.png") << "not really an image";
  }
  void TearDown() override { fs::remove_all(m_dir); }

  Experiment parse(const std::string& text) { return parse_experiment(text, (m_dir / "x.yaml").string()); }

  // The message of the error that parsing `text` throws, with the directory replaced by "DIR".
  std::string error_of(const std::string& text) {
    try {
      parse(text);
    } catch (const Error& e) {
      std::string message = e.what();
      std::string dir = m_dir.string();
      for (size_t at = message.find(dir); at != std::string::npos; at = message.find(dir)) {
        message.replace(at, dir.size(), "DIR");
      }
      return message;
    }
    return "(no error)";
  }

  fs::path m_dir;
};

const char* k_valid = R"(name: tiny
model: m.pt
inputs:
  - name: cat
    image: cat.png
    resize: [224, 200]
    mean: [0.485, 0.456, 0.406]
    std: [0.229, 0.224, 0.225]
  - name: noise
    random: {shape: [1, 3, 8, 8], seed: 7, distribution: uniform}
reference: cpu_fp32
targets: [onednn_off, channels_last, frozen, mine]
backends:
  mine: {base: frozen, memory_format: channels_last, threads: 2}
tolerance: {atol: 1.0e-4, rtol: 0}
repeats: 3
latency: {warmup: 5, runs: 21}
)";

TEST_F(ExperimentTest, ParsesEverything) {
  Experiment e = parse(k_valid);
  EXPECT_EQ(e.name, "tiny");
  EXPECT_EQ(e.model_path, (m_dir / "m.pt").string());
  ASSERT_EQ(e.inputs.size(), 2U);
  EXPECT_EQ(e.inputs[0].args[0].tensor.kind, TensorSource::Kind::k_image);
  EXPECT_EQ(e.inputs[0].args[0].tensor.image.height, 224);
  EXPECT_EQ(e.inputs[0].args[0].tensor.image.width, 200);
  EXPECT_DOUBLE_EQ(e.inputs[0].args[0].tensor.image.std[2], 0.225);
  EXPECT_EQ(e.inputs[1].args[0].tensor.kind, TensorSource::Kind::k_random);
  EXPECT_EQ(e.inputs[1].args[0].tensor.random.shape, (std::vector<int64_t>{1, 3, 8, 8}));
  EXPECT_EQ(e.inputs[1].args[0].tensor.random.seed, 7U);
  EXPECT_EQ(e.inputs[1].args[0].tensor.random.distribution, Distribution::k_uniform);
  EXPECT_EQ(e.reference.name, "cpu_fp32");
  ASSERT_EQ(e.targets.size(), 4U);
  EXPECT_FALSE(e.targets[0].onednn);
  EXPECT_EQ(e.targets[1].memory_format, MemoryFormat::k_channels_last);
  EXPECT_EQ(e.targets[2].graph, GraphMode::k_frozen);
  EXPECT_EQ(e.targets[3].name, "mine");
  EXPECT_EQ(e.targets[3].graph, GraphMode::k_frozen);
  EXPECT_EQ(e.targets[3].memory_format, MemoryFormat::k_channels_last);
  EXPECT_EQ(e.targets[3].threads, 2);
  EXPECT_TRUE(e.targets[3].optimize_numerics);
  EXPECT_DOUBLE_EQ(e.tolerance.atol, 1e-4);
  EXPECT_DOUBLE_EQ(e.tolerance.rtol, 0.0);
  EXPECT_FALSE(e.tolerance_per_dtype);
  EXPECT_EQ(e.tolerance_origin, (m_dir / "x.yaml").string() + ":15:12");
  EXPECT_EQ(e.repeats, 3);
  EXPECT_EQ(e.latency_warmup, 5);
  EXPECT_EQ(e.latency_runs, 21);
}

TEST_F(ExperimentTest, DefaultsAreStated) {
  Experiment e = parse("name: a\nmodel: m.pt\ninputs: [{name: r, random: {shape: [2]}}]\ntargets: [frozen]\n");
  EXPECT_EQ(e.reference.name, "cpu_fp32");
  EXPECT_EQ(e.tolerance_origin, "default");
  EXPECT_TRUE(e.tolerance_per_dtype);
  EXPECT_EQ(e.tolerance.rule, ToleranceRule::k_assert_close);
  EXPECT_TRUE(e.oracle);
  EXPECT_DOUBLE_EQ(e.timeout_s, 120.0);
  EXPECT_EQ(e.repeats, 2);
  EXPECT_EQ(e.latency_warmup, 3);
  EXPECT_EQ(e.latency_runs, 10);
}

TEST_F(ExperimentTest, BackendOptionsForAutocastAndExactFreezing) {
  Experiment e = parse(
      "name: a\nmodel: m.pt\ninputs: [{name: r, random: {shape: [2]}}]\ntargets: [exact, cpu_bf16_autocast, "
      "xnnpack]\nbackends:\n  exact: {base: frozen, optimize_numerics: false}\n");
  EXPECT_EQ(e.targets[0].graph, GraphMode::k_frozen);
  EXPECT_FALSE(e.targets[0].optimize_numerics);
  EXPECT_TRUE(e.targets[1].autocast);
  EXPECT_EQ(e.targets[1].dtype, DType::k_bfloat16);
  EXPECT_EQ(e.targets[2].graph, GraphMode::k_xnnpack);
}

// Issue 25: `float32_modules:` is read into the spec in file order and inherited from a base.
TEST_F(ExperimentTest, Float32ModulesAreReadAndInherited) {
  Experiment e = parse(
      "name: a\nmodel: m.pt\ninputs: [{name: r, random: {shape: [2]}}]\ntargets: [mixed, more, cpu_bf16]\n"
      "backends:\n  mixed: {base: cpu_bf16, float32_modules: [classifier.3, features.12, '0', layer4.1.conv2]}\n"
      "  more:\n    base: mixed\n    graph: frozen\n");
  const std::vector<std::string> expected{"classifier.3", "features.12", "0", "layer4.1.conv2"};
  EXPECT_EQ(e.targets[0].float32_modules, expected);
  EXPECT_EQ(e.targets[0].dtype, DType::k_bfloat16);
  EXPECT_EQ(e.targets[1].float32_modules, expected);
  EXPECT_EQ(e.targets[1].graph, GraphMode::k_frozen);
  EXPECT_TRUE(e.targets[2].float32_modules.empty());
}

TEST_F(ExperimentTest, ActivationsDefaultToOnFailureAndAreStrict) {
  const std::string head = "name: a\nmodel: m.pt\ninputs: [{name: r, random: {shape: [2]}}]\ntargets: [frozen]\n";
  EXPECT_EQ(parse(head).activations, Activations::k_on_failure);
  EXPECT_EQ(parse(head + "activations: always\n").activations, Activations::k_always);
  EXPECT_EQ(parse(head + "activations: off\n").activations, Activations::k_off);
  EXPECT_EQ(parse(head + "activations: on_failure\n").activations, Activations::k_on_failure);
  EXPECT_EQ(error_of(head + "activations: allways\n"),
            "DIR/x.yaml:5:14: unknown activations 'allways'; did you mean 'always'? (one of: on_failure, always, off)");
  EXPECT_STREQ(to_string(Activations::k_on_failure), "on_failure");
}

// `tolerances:` by hand: each value from the most specific matching entry, with its origin.
TEST_F(ExperimentTest, ToleranceEntriesSetValuesPerTargetOutputAndDtype) {
  Experiment e = parse(
      "name: a\nmodel: m.pt\ninputs: [{name: r, random: {shape: [2]}}]\n"
      "targets: [frozen, cpu_bf16, cpu_bf16_autocast]\n"
      "tolerance: {atol: 1.0e-5, rtol: 1.0e-6}\n"
      "tolerances:\n"
      "  - {dtype: bfloat16, atol: 0.01, rtol: 0.02}\n"                   // line 7
      "  - {target: cpu_bf16, rule: oracle, k: 40}\n"                     // line 8
      "  - {output: \"out['boxes']\", atol: 0.5, rtol: 0}\n"              // line 9
      "  - {target: cpu_bf16, output: 'out*', atol: 0.1, rtol: 0.1}\n");  // line 10
  const std::string x = (m_dir / "x.yaml").string();
  ASSERT_EQ(e.tolerance_overrides.size(), 4u);
  EXPECT_EQ(e.tolerance_overrides[1].origin, x + ":8:5");
  const BackendSpec& frozen = e.targets[0];
  const BackendSpec& bf16 = e.targets[1];
  const BackendSpec& autocast = e.targets[2];

  Tolerance t = resolve_tolerance(e, frozen, "out", "float32", "float32");  // nothing matches
  EXPECT_EQ(t.rule, ToleranceRule::k_assert_close);
  EXPECT_EQ(t.atol, 1e-5);
  EXPECT_EQ(t.k, 0.0);
  EXPECT_EQ(t.origin, x + ":5:12");
  t = resolve_tolerance(e, frozen, "out['boxes']", "float32", "float32");  // the output entry
  EXPECT_EQ(t.atol, 0.5);
  EXPECT_EQ(t.origin, "rule " + x + ":5:12; atol/rtol " + x + ":9:5");
  t = resolve_tolerance(e, autocast, "out['boxes']", "float32", "float32");  // output over dtype
  EXPECT_EQ(t.atol, 0.5);
  t = resolve_tolerance(e, autocast, "out", "float32", "bfloat16");  // the dtype entry
  EXPECT_EQ(t.atol, 0.01);
  EXPECT_EQ(t.rtol, 0.02);
  t = resolve_tolerance(e, bf16, "logits", "float32", "bfloat16");  // target: rule and k; dtype: atol
  EXPECT_EQ(t.rule, ToleranceRule::k_oracle);
  EXPECT_EQ(t.k, 40.0);
  EXPECT_EQ(t.atol, 0.01);
  EXPECT_EQ(t.origin, "rule " + x + ":8:5; atol/rtol " + x + ":7:5; k " + x + ":8:5");
  t = resolve_tolerance(e, bf16, "out['boxes']", "float32", "bfloat16");  // target+output over all
  EXPECT_EQ(t.atol, 0.1);
  EXPECT_EQ(t.origin, "rule " + x + ":8:5; atol/rtol " + x + ":10:5; k " + x + ":8:5");
  // Before any output is seen (crashes, tier 2): entries with an output glob do not apply.
  t = configured_tolerance(e, bf16);
  EXPECT_EQ(t.atol, 0.01);
  EXPECT_EQ(t.k, 40.0);

  // The oracle rule's k defaults per observed dtype, and per-dtype atol/rtol say so.
  e = parse(
      "name: a\nmodel: m.pt\ninputs: [{name: r, random: {shape: [2]}}]\ntargets: [cpu_bf16]\n"
      "tolerance: {rule: oracle}\n");
  t = resolve_tolerance(e, e.targets[0], "out", "float32", "bfloat16");
  EXPECT_EQ(t.k, 3.0);
  EXPECT_EQ(t.atol, 1e-5);
  EXPECT_EQ(t.rtol, 1.6e-2);
  EXPECT_EQ(t.origin, "rule " + x + ":5:12; atol/rtol assert_close defaults for float32/bfloat16; k default");
  EXPECT_EQ(resolve_tolerance(e, e.targets[0], "out", "float32", "float32").k, 2.0);
  e = parse(
      "name: a\nmodel: m.pt\ninputs: [{name: r, random: {shape: [2]}}]\ntargets: [cpu_bf16]\n"
      "tolerance: {rule: oracle, atol: 0.001, rtol: 0, k: 8}\n");
  t = resolve_tolerance(e, e.targets[0], "out", "float32", "bfloat16");
  EXPECT_EQ(t.k, 8.0);
  EXPECT_EQ(t.origin, x + ":5:12");
}

// resolve_tolerance against a second implementation that picks, for each value, the
// matching entry that sets it with the highest (specificity, position), on random entries.
TEST_F(ExperimentTest, ToleranceResolutionAgreesWithAPerValueSearch) {
  const std::vector<std::string> targets = {"frozen", "cpu_bf16", "onednn_off"};
  const std::vector<std::string> outputs = {"out", "out[0]", "aux"};
  uint64_t state = 12345;
  auto next = [&state](uint64_t n) {
    state = state * 6364136223846793005ULL + 1442695040888963407ULL;
    return (state >> 33) % n;
  };
  for (int round = 0; round < 300; ++round) {
    std::string yaml =
        "name: a\nmodel: m.pt\ninputs: [{name: r, random: {shape: [2]}}]\n"
        "targets: [frozen, cpu_bf16, onednn_off]\ntolerance: {atol: 1.0e-5, rtol: 1.0e-6}\n"
        "tolerances:\n";
    struct Entry {
      std::string target, output, dtype;
      double atol = -1;
      bool oracle = false;
      double k = 0;
      int line = 0;
    };
    std::vector<Entry> entries;
    std::set<std::string> used;
    for (int i = 0; i < 6; ++i) {
      Entry entry;
      entry.target = next(2) ? targets[next(3)] : "";
      entry.output = next(2) ? (next(2) ? outputs[next(3)] : "out*") : "";  // out[0]: brackets are literal
      entry.dtype = next(3) == 0 ? "bfloat16" : "";
      if (entry.target.empty() && entry.output.empty() && entry.dtype.empty()) {
        entry.dtype = "float32";
      }
      if (!used.insert(entry.target + "|" + entry.output + "|" + entry.dtype).second) {
        continue;
      }
      entry.oracle = next(3) == 0;
      entry.k = entry.oracle && next(2) ? static_cast<double>(2 + next(50)) : 0.0;
      entry.atol = entry.oracle && next(2) ? -1 : static_cast<double>(next(1000) + 1) / 1024.0;  // exact in YAML
      entry.line = 7 + static_cast<int>(entries.size());
      yaml += "  - {";
      yaml += entry.target.empty() ? "" : "target: " + entry.target + ", ";
      yaml += entry.output.empty() ? "" : "output: '" + entry.output + "', ";
      yaml += entry.dtype.empty() ? "" : "dtype: " + entry.dtype + ", ";
      yaml += entry.oracle ? "rule: oracle, " : "";
      yaml += entry.k > 0 ? "k: " + std::to_string(static_cast<int>(entry.k)) + ", " : "";
      char atol_text[32];
      std::snprintf(atol_text, sizeof atol_text, "%.17g", entry.atol);
      yaml += entry.atol >= 0 ? "atol: " + std::string(atol_text) + ", rtol: 0, " : "";
      yaml.resize(yaml.size() - 2);
      yaml += "}\n";
      entries.push_back(entry);
    }
    Experiment e = parse(yaml);
    for (const BackendSpec& target : e.targets) {
      for (const std::string& output : outputs) {
        const std::string dtype = to_string(target.dtype);
        const Entry* rule = nullptr;
        const Entry* atol = nullptr;
        const Entry* k = nullptr;
        int best[3] = {-1, -1, -1};
        for (size_t i = 0; i < entries.size(); ++i) {
          const Entry& entry = entries[i];
          const bool matches = (entry.target.empty() || entry.target == target.name) &&
                               (entry.dtype.empty() || entry.dtype == dtype) &&
                               (entry.output.empty() || entry.output == output ||
                                (entry.output == "out*" && output.rfind("out", 0) == 0));
          if (!matches) {
            continue;
          }
          const int rank = (entry.target.empty() ? 0 : 400) + (entry.output.empty() ? 0 : 200) +
                           (entry.dtype.empty() ? 0 : 100) + static_cast<int>(i);
          if (entry.oracle && rank > best[0]) {
            best[0] = rank, rule = &entry;
          }
          if (entry.atol >= 0 && rank > best[1]) {
            best[1] = rank, atol = &entry;
          }
          if (entry.k > 0 && rank > best[2]) {
            best[2] = rank, k = &entry;
          }
        }
        const Tolerance t = resolve_tolerance(e, target, output, "float32", dtype);
        const std::string where = " round " + std::to_string(round) + " " + target.name + " " + output + "\n" + yaml;
        EXPECT_EQ(t.rule, rule ? ToleranceRule::k_oracle : ToleranceRule::k_assert_close) << where;
        EXPECT_EQ(t.atol, atol ? atol->atol : 1e-5) << where;
        const double k_expected = rule == nullptr ? 0.0 : k ? k->k : (dtype == "bfloat16" ? 3.0 : 2.0);
        EXPECT_EQ(t.k, k_expected) << where;
        const std::string atol_origin =
            atol ? (m_dir / "x.yaml").string() + ":" + std::to_string(atol->line) + ":5" : "";
        if (atol) {
          EXPECT_NE(t.origin.find(atol_origin), std::string::npos) << t.origin << where;
        }
      }
    }
  }
}

TEST_F(ExperimentTest, ToleranceEntriesThatCannotApplyAreRefused) {
  const std::string head =
      "name: a\nmodel: m.pt\ninputs: [{name: r, random: {shape: [2]}}]\ntargets: [frozen, cpu_bf16]\n";
  EXPECT_EQ(error_of(head + "tolerances:\n  - {target: cpu_bf61, atol: 1, rtol: 1}\n"),
            "DIR/x.yaml:6:14: 'cpu_bf61' is not a target of this experiment; did you mean 'cpu_bf16'? (its targets: "
            "frozen, cpu_bf16)");
  EXPECT_EQ(error_of(head + "tolerances:\n  - {dtype: float16, atol: 1, rtol: 1}\n"),
            "DIR/x.yaml:6:13: no target of this experiment runs in float16, so this entry would apply to nothing");
  EXPECT_EQ(error_of(head + "tolerances:\n  - {atol: 1, rtol: 1}\n"),
            "DIR/x.yaml:6:5: a tolerances entry selects checks by target, output or dtype (at least one); for every "
            "check, set the experiment's 'tolerance:'");
  EXPECT_EQ(error_of(head + "tolerances:\n  - {target: frozen}\n"),
            "DIR/x.yaml:6:5: this tolerances entry sets nothing; give rule, atol and rtol, or k");
  EXPECT_EQ(error_of(head + "tolerances:\n  - {target: frozen, k: 4}\n"),
            "DIR/x.yaml:6:25: k is the oracle rule's multiplier; add 'rule: oracle' to this entry or remove k");
  EXPECT_EQ(error_of(head + "tolerances:\n  - {target: frozen, atol: 1}\n"),
            "DIR/x.yaml:6:5: this tolerances entry sets atol without rtol; give both, or neither for PyTorch's "
            "per-dtype defaults (float32: atol 1e-05, rtol 1.3e-06)");
  EXPECT_EQ(error_of(head + "tolerances:\n  - {target: frozen, atol: 1, rtol: 1}\n  - {target: frozen, k: 3, rule: "
                            "oracle}\n"),
            "DIR/x.yaml:7:5: another tolerances entry selects the same checks; merge the two");
  EXPECT_EQ(error_of(head + "tolerances:\n  - {target: frozen, rule: oracle}\noracle: false\n"),
            "DIR/x.yaml:6:5: the oracle rule judges targets against the float64 oracle; remove 'oracle: false' or "
            "choose another rule");
  EXPECT_EQ(error_of(head + "tolerances:\n  - {target: frozen, rtol: 1, atoll: 1}\n"),
            "DIR/x.yaml:6:31: unknown key 'atoll' in tolerances entry; did you mean 'atol'? (allowed: target, "
            "output, dtype, rule, atol, rtol, k)");
  EXPECT_EQ(error_of(head + "tolerance: {atol: 1, rtol: 1, k: 3}\n"),
            "DIR/x.yaml:5:34: k is the oracle rule's multiplier; add 'rule: oracle' or remove k");
  EXPECT_EQ(error_of(head + "tolerance: {rule: oracle, k: 0.5}\n"),
            "DIR/x.yaml:5:30: k must be at least 1 and at most 1e6 (the target's error may be k times the "
            "reference's), got 0.5");
}

TEST_F(ExperimentTest, RuleWithoutValuesKeepsPerDtypeDefaults) {
  const std::string head = "name: a\nmodel: m.pt\ninputs: [{name: r, random: {shape: [2]}}]\ntargets: [frozen]\n";
  Experiment e = parse(head + "tolerance: {rule: normwise}\n");
  EXPECT_EQ(e.tolerance.rule, ToleranceRule::k_normwise);
  EXPECT_TRUE(e.tolerance_per_dtype);
  e = parse(head + "tolerance: {rule: oracle, atol: 1.0e-3, rtol: 0}\noracle: true\n");
  EXPECT_EQ(e.tolerance.rule, ToleranceRule::k_oracle);
  EXPECT_FALSE(e.tolerance_per_dtype);
  EXPECT_DOUBLE_EQ(e.tolerance.atol, 1e-3);
  EXPECT_FALSE(parse(head + "oracle: false\n").oracle);
}

TEST_F(ExperimentTest, OnnxRuntimeBackendsTakeProviderOptimizationAndThreads) {
  const Experiment experiment = parse(R"(name: ort
model: m.pt
onnx_model: m.onnx
inputs: [{name: r, random: {shape: [1, 3, 8, 8]}}]
targets: [onnxruntime, onnxruntime_dnnl, ort_basic, ort_dnnl_off]
backends:
  ort_basic: {base: onnxruntime, optimization: basic, threads: 2}
  ort_dnnl_off: {graph: onnxruntime, provider: dnnl, optimization: disable}
)");
  EXPECT_EQ(experiment.onnx_model_path, (m_dir / "m.onnx").string());
  ASSERT_EQ(experiment.targets.size(), 4u);
  const auto settings = [](const BackendSpec& spec) {
    return std::string(to_string(spec.graph)) + " " + to_string(spec.onnx_provider) + " " +
           to_string(spec.onnx_optimization) + " " + std::to_string(spec.threads);
  };
  EXPECT_EQ(settings(experiment.targets[0]), "onnxruntime cpu all 0");
  EXPECT_EQ(settings(experiment.targets[1]), "onnxruntime dnnl all 0");
  EXPECT_EQ(settings(experiment.targets[2]), "onnxruntime cpu basic 2");
  EXPECT_EQ(settings(experiment.targets[3]), "onnxruntime dnnl disable 0");
  // The ONNX file is the runner's to check (only a build with ONNX Runtime reads it).
  EXPECT_FALSE(fs::exists(m_dir / "m.onnx"));
}

struct BadConfig {
  const char* text;
  const char* message;
};

// Each malformed config and the exact message it must produce.
const BadConfig k_bad_configs[] = {
    {"", "DIR/x.yaml: the file is empty; an experiment needs at least name, model, inputs and targets"},
    {"name: a\nmodel: m.pt\ninputs: [{name: r, random: {shape: [2]}}]\ntargets: [frozen]\ntolerence: {atol: 1}\n",
     "DIR/x.yaml:5:1: unknown key 'tolerence' in the experiment; did you mean 'tolerance'? (allowed: name, model, "
     "inputs, reference, targets, backends, tolerance, tolerances, repeats, oracle, timeout_s, activations, task, "
     "latency, aoti_package, onnx_model)"},
    {"name: a\nmodel: m.pt\ninputs: [{name: r, random: {shape: [2]}}]\ntargets: [frozen]\ntimeout_s: 0\n",
     "DIR/x.yaml:5:12: timeout_s must be more than 0 and at most 86400 (a day), got 0"},
    {"name: a\nmodel: m.pt\ninputs: [{name: r, random: {shape: [2]}}]\ntargets: [frozen]\ntolerance: {rule: "
     "polygrafy}\n",
     "DIR/x.yaml:5:19: unknown tolerance rule 'polygrafy'; did you mean 'polygraphy'? (one of: assert_close, "
     "polygraphy, normwise, oracle)"},
    {"name: a\nmodel: m.pt\ninputs: [{name: r, random: {shape: [2]}}]\ntargets: [frozen]\ntolerance: {atol: 1e-3}\n",
     "DIR/x.yaml:5:12: tolerance sets atol without rtol; give both, or neither for PyTorch's per-dtype defaults "
     "(float32: atol 1e-05, rtol 1.3e-06)"},
    {"name: a\nmodel: m.pt\ninputs: [{name: r, random: {shape: [2]}}]\ntargets: [frozen]\ntolerance: {rule: "
     "oracle}\noracle: false\n",
     "DIR/x.yaml:6:9: the oracle rule judges targets against the float64 oracle; remove 'oracle: false' or choose "
     "another rule"},
    {"name: a\nmodel: m.pt\ninputs: [{name: r, random: {shape: [2]}}]\ntargets: [frozen]\noracle: maybe\n",
     "DIR/x.yaml:5:9: oracle must be true or false, got 'maybe'"},
    {"name: a\nmodel: m.pt\ninputs: [{name: r, random: {shape: [2]}}]\ntargets: [onednn_of]\n",
     "DIR/x.yaml:4:11: unknown backend 'onednn_of'; did you mean 'onednn_off'? (define it under 'backends:' or use "
     "one of: cpu_fp32, onednn_off, channels_last, frozen, frozen_exact, optimized, xnnpack, nnc_fused, aoti, "
     "onnxruntime, onnxruntime_dnnl, threads_2, "
     "threads_4, cpu_fp64, cpu_bf16, cpu_bf16_autocast, cpu_fp16, cuda_fp32, cuda_tf32, cuda_fp16, cuda_bf16)"},
    {"name: a\nmodel: m.pt\ninputs: [{name: r, random: {shape: [2]}}]\ntargets: [amp]\nbackends:\n  amp: {autocast: "
     "true, dtype: float16}\n",
     "DIR/x.yaml:6:8: backend 'amp': CPU autocast in LibTorch 1.13 supports dtype bfloat16 only, got float16"},
    {"name: a\nmodel: missing.pt\ninputs: [{name: r, random: {shape: [2]}}]\ntargets: [frozen]\n",
     "DIR/x.yaml:2:8: model file 'missing.pt' not found (looked for DIR/missing.pt); fix the path (relative to the "
     "config file's directory), or save the model there as TorchScript: torch.jit.script(model).save(path)"},
    {"name: a\nmodel: m.pt\ninputs: [{name: r, random: {shape: [2]}}]\ntargets: [frozen]\ntolerance: {atol: lots}\n",
     "DIR/x.yaml:5:19: atol must be a finite number, got 'lots'"},
    {"name: a\nmodel: m.pt\ninputs: []\ntargets: [frozen]\n", "DIR/x.yaml:3:9: inputs must have at least 1 entry"},
    {"name: a\nmodel: m.pt\ninputs: [{name: r, random: {shape: [2]}}]\n",
     "DIR/x.yaml:1:1: the experiment needs the key 'targets'"},
    {"name: a\nmodel: m.pt\ninputs: [{name: r, random: {shape: [2]}}]\ntargets: [cpu_fp32]\n",
     "DIR/x.yaml:4:11: target 'cpu_fp32' is the reference itself; compare it with another backend"},
    {"name: a\nmodel: m.pt\ninputs: [{name: r, random: {shape: [2, 0]}}]\ntargets: [frozen]\n",
     "DIR/x.yaml:3:40: a shape dimension must be between 1 and 1048576, got 0"},
    {"name: a\nmodel: m.pt\ninputs: [{name: r}]\ntargets: [frozen]\n",
     "DIR/x.yaml:3:10: input 'r' needs exactly one of 'image' (a file), 'random' (a seeded tensor), 'random_int' "
     "(seeded integers), 'fill' (a constant) or 'tensor' (a NumPy .npy file)"},
    {"name: ../evil\nmodel: m.pt\ninputs: [{name: r, random: {shape: [2]}}]\ntargets: [frozen]\n",
     "DIR/x.yaml:1:7: experiment name '../evil' must be 1-64 characters of letters, digits, '_', '-' or '.'"},
    {"name: a\nmodel: m.pt\ninputs: [{name: r, random: {shape: [2]}}]\ntargets: [frozen]\nbackends:\n  b: {dtype: "
     "float8}\n",
     "DIR/x.yaml:6:14: unknown dtype 'float8'; did you mean 'float32'? (one of: float32, float64, bfloat16, float16)"},
    {"name: a\nname: b\n", "DIR/x.yaml:2:1: duplicate key 'name' in the experiment"},
    {"name: [unclosed\n", "DIR/x.yaml:2:1: not valid YAML: end of sequence flow not found"},
    {"name: a\nmodel: m.pt\ninputs: [{name: r, random: {shape: [2]}}]\ntargets: [frozen, frozen]\n",
     "DIR/x.yaml:4:19: duplicate target 'frozen'"},
    {"- just\n- a list\n", "DIR/x.yaml:1:1: the experiment must be a mapping of keys to values, got a list"},
    {"name: a\nmodel: m.pt\ninputs: [{name: c, image: cat.png, mean: [0.5, 0.5]}]\ntargets: [frozen]\n",
     "DIR/x.yaml:3:42: mean must have exactly 3 values (one per RGB channel), got 2"},
    {"name: a\n---\nname: b\n",
     "DIR/x.yaml:3:1: one experiment per file: found a second YAML document; split it into its own file"},
    {"name: a\nmodel: m.pt\ninputs: [{name: r, random: {shape: [2]}}]\ntargets: [frozen]\ntask: {kind: detection, "
     "outputs: [a, b], nms: nativ}\n",
     "DIR/x.yaml:5:47: unknown nms mode 'nativ'; did you mean 'native'? (one of: stable, native)"},
    {"name: a\nmodel: m.pt\ninputs: [{name: r, random: {shape: [2]}}]\ntargets: [frozen]\ntask: {kind: "
     "classification, outputs: out, labels: none.txt}\n",
     "DIR/x.yaml:5:52: labels file 'none.txt' cannot be read (DIR/none.txt: cannot open labels file (No such file "
     "or directory))"},
    // Issue 24: a labels file that never ends is refused by its kind, not read until allocation fails.
    {"name: a\nmodel: m.pt\ninputs: [{name: r, random: {shape: [2]}}]\ntargets: [frozen]\ntask: {kind: "
     "classification, outputs: out, labels: /dev/zero}\n",
     "DIR/x.yaml:5:52: labels file '/dev/zero' cannot be read (/dev/zero: a character device, not a regular file; "
     "driftgate reads a labels file only from a regular file (save the data to a file and pass that))"},
    // A Latin-1 file name would end the run with a JSON type_error after every check ran.
    {"name: a\nmodel: caf\xE9.pt\ninputs: [{name: r, random: {shape: [2]}}]\ntargets: [frozen]\n",
     "DIR/x.yaml:2:8: model file 'caf\\xe9.pt': the path holds the byte 0xE9 (not UTF-8); run files and reports "
     "hold paths as UTF-8 text, so rename the file"},
    // Issue 24: 1e-400 was read as atol 0, 1e400 said "must be a finite number".
    {"name: a\nmodel: m.pt\ninputs: [{name: r, random: {shape: [2]}}]\ntargets: [frozen]\ntolerance: {atol: 1e-400, "
     "rtol: 0}\n",
     "DIR/x.yaml:5:19: atol '1e-400' is out of range (it underflows to 0): a double holds 0 and magnitudes from "
     "2.2250738585072014e-308 to 1.7976931348623157e+308; write a number in that range"},
    {"name: a\nmodel: m.pt\ninputs: [{name: r, random: {shape: [2]}}]\ntargets: [frozen]\ntolerance: {atol: 1e400, "
     "rtol: 0}\n",
     "DIR/x.yaml:5:19: atol '1e400' is out of range (it overflows): a double holds 0 and magnitudes from "
     "2.2250738585072014e-308 to 1.7976931348623157e+308; write a number in that range"},
    {"name: a\nmodel: m.pt\ninputs: [{name: r, random: {shape: [2]}}]\ntargets: [frozen]\ntolerance: {atol: -0.4e-319, "
     "rtol: 0}\n",
     "DIR/x.yaml:5:19: atol '-0.4e-319' is out of range (it underflows to a denormal, losing digits): a double holds 0 "
     "and magnitudes from 2.2250738585072014e-308 to 1.7976931348623157e+308; write a number in that range"},
    {"name: a\nmodel: m.pt\ninputs: [{name: r, random: {shape: [2]}}]\ntargets: [frozen]\ntimeout_s: 1.5E+309\n",
     "DIR/x.yaml:5:12: timeout_s '1.5E+309' is out of range (it overflows): a double holds 0 and magnitudes from "
     "2.2250738585072014e-308 to 1.7976931348623157e+308; write a number in that range"},
    {"name: a\nmodel: m.pt\ninputs: [{name: r, random: {shape: [2]}}]\ntargets: [frozen]\ntolerance: {atol: -.inf, "
     "rtol: 0}\n",
     "DIR/x.yaml:5:19: atol must be a finite number, got '-.inf'"},
    // Issue 24: a seed of 2^64 said "must be a whole number".
    {"name: a\nmodel: m.pt\ninputs: [{name: r, random: {shape: [2], seed: 18446744073709551616}}]\ntargets: [frozen]\n",
     "DIR/x.yaml:3:47: seed must be between 0 and 9223372036854775807, got 18446744073709551616 (out of range)"},
    {"name: a\nmodel: m.pt\ninputs: [{name: r, random: {shape: [2]}}]\ntargets: [frozen]\nrepeats: "
     "-0x8000000000000001\n",
     "DIR/x.yaml:5:10: repeats must be between 1 and 100, got -0x8000000000000001 (out of range)"},
    {"name: a\nmodel: m.pt\ninputs: [{name: r, random: {shape: [2]}}]\ntargets: [frozen]\nrepeats: 2.0\n",
     "DIR/x.yaml:5:10: repeats must be a whole number, got '2.0'"},
    {"name: a\nmodel: m.pt\ninputs: [{name: r, random: {shape: [2]}}]\ntargets: [frozen]\nlatency: {runs: 0}\n",
     "DIR/x.yaml:5:17: latency runs must be between 1 and 1000, got 0"},
    {"name: a\nmodel: m.pt\ninputs: [{name: r, random: {shape: [2]}}]\ntargets: [frozen]\nlatency: {warm_up: 2}\n",
     "DIR/x.yaml:5:11: unknown key 'warm_up' in latency; did you mean 'warmup'? (allowed: warmup, runs)"},
    // Issue 24: `!include` was ignored and "other.yaml" used as the model's path.
    {"name: a\nmodel: !include other.yaml\ninputs: [{name: r, random: {shape: [2]}}]\ntargets: [frozen]\n",
     "DIR/x.yaml:2:8: unknown YAML tag '!include'; driftgate reads plain YAML and resolves no tags (there is no "
     "include): remove the tag and write the value itself"},
    {"name: a\nmodel: m.pt\ninputs: [{name: r, random: {shape: [!!binary 2]}}]\ntargets: [frozen]\n",
     "DIR/x.yaml:3:37: unknown YAML tag '!!binary'; driftgate reads plain YAML and resolves no tags (there is no "
     "include): remove the tag and write the value itself"},
    {"%TAG !e! tag:example.com,2000:\n---\nname: a\nmodel: m.pt\ninputs: !e!list [{name: r, random: {shape: [2]}}]\n",
     "DIR/x.yaml:5:9: unknown YAML tag 'tag:example.com,2000:list'; driftgate reads plain YAML and resolves no tags "
     "(there is no include): remove the tag and write the value itself"},
    // Issue 24: a tab in the indentation was "illegal map value" or "illegal block entry".
    {"name: a\nmodel: m.pt\ninputs:\n\t- name: r\n",
     "DIR/x.yaml:4:1: a tab in the indentation; YAML forbids tabs for indentation: replace it with spaces"},
    {"name: a\nmodel: m.pt\ntolerance:\n  rule: normwise\n \tatol: 1\n",
     "DIR/x.yaml:5:2: a tab in the indentation; YAML forbids tabs for indentation: replace it with spaces"},
    // Issue 25: float32_modules. The value of "  mixed: {base: cpu_bf16, float32_modules: " starts at column 44.
    {"name: a\nmodel: m.pt\ninputs: [{name: r, random: {shape: [2]}}]\ntargets: [mixed]\nbackends:\n  mixed: {base: "
     "cpu_bf16, float32_modules: classifier.3}\n",
     "DIR/x.yaml:6:44: backend 'mixed': float32_modules must be a list, got 'classifier.3'"},
    {"name: a\nmodel: m.pt\ninputs: [{name: r, random: {shape: [2]}}]\ntargets: [mixed]\nbackends:\n  mixed: {base: "
     "cpu_bf16, float32_modules: []}\n",
     "DIR/x.yaml:6:44: backend 'mixed': float32_modules must have at least 1 entry"},
    {"name: a\nmodel: m.pt\ninputs: [{name: r, random: {shape: [2]}}]\ntargets: [mixed]\nbackends:\n  mixed: {base: "
     "cpu_bf16, float32_modules: [classifier.3, '']}\n",
     "DIR/x.yaml:6:59: backend 'mixed': float32_modules must be a list of module names such as classifier.3, got an "
     "empty name"},
    {"name: a\nmodel: m.pt\ninputs: [{name: r, random: {shape: [2]}}]\ntargets: [mixed]\nbackends:\n  mixed: {base: "
     "cpu_bf16, float32_modules: [[classifier.3]]}\n",
     "DIR/x.yaml:6:45: backend 'mixed': float32_modules must be a list of module names such as classifier.3, got a "
     "list"},
    {"name: a\nmodel: m.pt\ninputs: [{name: r, random: {shape: [2]}}]\ntargets: [mixed]\nbackends:\n  mixed: {base: "
     "cpu_bf16, float32_modules: [classifier.3, classifier.3]}\n",
     "DIR/x.yaml:6:59: backend 'mixed': float32_modules lists 'classifier.3' twice (first at DIR/x.yaml:6:45)"},
    {"name: a\nmodel: m.pt\ninputs: [{name: r, random: {shape: [2]}}]\ntargets: [mixed]\nbackends:\n  mixed: {base: "
     "cpu_bf16, float32_modules: [classifier..3]}\n",
     "DIR/x.yaml:6:45: backend 'mixed': float32_modules: 'classifier..3' is not a module path: give the name "
     "named_modules() prints, names of letters, digits and '_' joined by dots (e.g. classifier.3)"},
    {"name: a\nmodel: m.pt\ninputs: [{name: r, random: {shape: [2]}}]\ntargets: [mixed]\nbackends:\n  mixed: {base: "
     "cpu_bf16, float32_modules: [features/12]}\n",
     "DIR/x.yaml:6:45: backend 'mixed': float32_modules: 'features/12' is not a module path: give the name "
     "named_modules() prints, names of letters, digits and '_' joined by dots (e.g. classifier.3)"},
    {"name: a\nmodel: m.pt\ninputs: [{name: r, random: {shape: [2]}}]\ntargets: [mixed]\nbackends:\n  mixed: {base: "
     "cpu_bf16, float32_modules: [features, features.12]}\n",
     "DIR/x.yaml:6:55: backend 'mixed': float32_modules: 'features.12' lies inside 'features', which runs in float32 "
     "with everything in it; list one of the two"},
    {"name: a\nmodel: m.pt\ninputs: [{name: r, random: {shape: [2]}}]\ntargets: [mixed]\nbackends:\n  mixed: {base: "
     "cpu_bf16_autocast, float32_modules: [fc]}\n",
     "DIR/x.yaml:6:53: backend 'mixed': float32_modules cannot be used with autocast: true; autocast keeps every "
     "parameter in float32 and picks a dtype per op, while float32_modules keeps the listed modules in float32 in a "
     "model cast to a reduced dtype as a whole: use autocast: false (e.g. base: cpu_bf16)"},
    {"name: a\nmodel: m.pt\ninputs: [{name: r, random: {shape: [2]}}]\ntargets: [mixed]\nbackends:\n  mixed: "
     "{float32_modules: [fc]}\n",
     "DIR/x.yaml:6:28: backend 'mixed': float32_modules needs a reduced dtype (bfloat16 or float16), got float32: it "
     "keeps the listed modules in float32 in a model cast to that dtype as a whole; set dtype: bfloat16 (e.g. base: "
     "cpu_bf16)"},
    {"name: a\nmodel: m.pt\ninputs: [{name: r, random: {shape: [2]}}]\ntargets: [mixed]\nbackends:\n  mixed: {base: "
     "cpu_fp64, float32_modules: [fc]}\n",
     "DIR/x.yaml:6:44: backend 'mixed': float32_modules needs a reduced dtype (bfloat16 or float16), got float64: it "
     "keeps the listed modules in float32 in a model cast to that dtype as a whole; set dtype: bfloat16 (e.g. base: "
     "cpu_bf16)"},
    // Inherited from a base backend: judged on the final settings, at the backend that breaks them.
    {"name: a\nmodel: m.pt\ninputs: [{name: r, random: {shape: [2]}}]\ntargets: [back]\nbackends:\n  mixed: {base: "
     "cpu_bf16, float32_modules: [fc]}\n  back: {base: mixed, dtype: float32}\n",
     "DIR/x.yaml:7:9: backend 'back': float32_modules needs a reduced dtype (bfloat16 or float16), got float32: it "
     "keeps the listed modules in float32 in a model cast to that dtype as a whole; set dtype: bfloat16 (e.g. base: "
     "cpu_bf16)"},
};

TEST_F(ExperimentTest, TaskSectionIsParsed) {
  std::ofstream(m_dir / "labels.txt") << "r 3\n";
  Experiment e = parse(
      "name: a\nmodel: m.pt\ninputs: [{name: r, random: {shape: [1, 10]}}]\ntargets: [frozen]\n"
      "task: {kind: classification, outputs: out, top_k: 3, epsilon: 1.0e-6, labels: labels.txt,\n"
      "       tolerances: {min_top1_agreement: 0.9}}\n");
  ASSERT_TRUE(e.task.has_value());
  EXPECT_EQ(e.task->kind, TaskKind::k_classification);
  EXPECT_EQ(e.task->top_k, 3);
  EXPECT_DOUBLE_EQ(e.task->epsilon, 1e-6);
  EXPECT_EQ(e.task->labels.at("r"), std::vector<int64_t>{3});
  EXPECT_DOUBLE_EQ(e.task->tolerances.min_top1_agreement, 0.9);
  EXPECT_EQ(e.task->origin, (m_dir / "x.yaml").string() + ":5:7");
  EXPECT_FALSE(parse("name: a\nmodel: m.pt\ninputs: [{name: r, random: {shape: [2]}}]\ntargets: [frozen]\n").task);
}

// A float32 .npy file of shape [1, 2] as numpy.save writes it (version 1.0, header padded to 64 bytes).
void write_npy(const std::string& path, const std::string& descr = "<f4") {
  std::string header = "{'descr': '" + descr + "', 'fortran_order': False, 'shape': (1, 2), }";
  while ((10 + header.size() + 1) % 64 != 0) {
    header += ' ';
  }
  header += '\n';
  std::ofstream out(path, std::ios::binary);
  out << std::string("\x93NUMPY\x01\x00", 8) << static_cast<char>(header.size()) << '\0' << header
      << std::string(descr == "<f8" ? 16 : 8, '\0');
}

TEST_F(ExperimentTest, TensorInputReadsTheShapeAndChecksIt) {
  write_npy((m_dir / "x.npy").string());
  Experiment e = parse("name: a\nmodel: m.pt\ninputs: [{name: t, tensor: x.npy, shape: [1, 2]}]\ntargets: [frozen]\n");
  ASSERT_EQ(e.inputs.size(), 1u);
  EXPECT_EQ(e.inputs[0].args[0].tensor.kind, TensorSource::Kind::k_tensor);
  EXPECT_EQ(e.inputs[0].args[0].tensor.tensor.path, (m_dir / "x.npy").string());
  EXPECT_EQ(e.inputs[0].args[0].tensor.tensor.shape, (std::vector<int64_t>{1, 2}));
  EXPECT_EQ(error_of("name: a\nmodel: m.pt\ninputs: [{name: t, tensor: x.npy, shape: [1, 3]}]\ntargets: [frozen]\n"),
            "DIR/x.yaml:3:42: tensor file 'x.npy' has shape [1, 2], the config expects [1, 3]; save the array the "
            "model takes or fix 'shape'");
  write_npy((m_dir / "d.npy").string(), "<u2");
  EXPECT_EQ(error_of("name: a\nmodel: m.pt\ninputs: [{name: t, tensor: d.npy}]\ntargets: [frozen]\n"),
            "DIR/x.yaml:3:28: tensor file 'DIR/d.npy': holds uint16, which driftgate does not feed (it reads float16, "
            "float32, float64, int8, int16, int32, int64, uint8 and bool); convert it (numpy.save(path, "
            "array.astype(numpy.int64)))");
  EXPECT_EQ(error_of("name: a\nmodel: m.pt\ninputs: [{name: t, tensor: none.npy}]\ntargets: [frozen]\n"),
            "DIR/x.yaml:3:28: tensor file 'none.npy' not found (looked for DIR/none.npy)");
  EXPECT_EQ(error_of("name: a\nmodel: m.pt\ninputs: [{name: r, random: {shape: [2]}, shape: [2]}]\ntargets: "
                     "[frozen]\n"),
            "DIR/x.yaml:3:49: 'shape' applies to tensor inputs only (a random input's shape goes under 'random')");
  EXPECT_EQ(error_of("name: a\nmodel: m.pt\ninputs: [{name: t, tensor: x.npy, mean: [0, 0, 0]}]\ntargets: [frozen]\n"),
            "DIR/x.yaml:3:41: 'mean' applies to image inputs only");
}

TEST_F(ExperimentTest, MalformedConfigsGivePinnedMessages) {
  for (const auto& bad : k_bad_configs) {
    EXPECT_EQ(error_of(bad.text), bad.message) << "config:\n" << bad.text;
  }
}

// Numbers at the ends of a double's range, and explicit core tags, are accepted as written.
TEST_F(ExperimentTest, NumbersAtTheEndsOfTheRangeAndCoreTagsAreAccepted) {
  const std::string head =
      "name: a\nmodel: m.pt\ninputs: [{name: r, random: {shape: [2], seed: 9223372036854775807}}]\n";
  Experiment e = parse(head + "targets: [frozen]\ntolerance: {atol: 2.2250738585072014e-308, rtol: 0e-999}\n");
  EXPECT_EQ(e.tolerance.atol, 0x1p-1022);  // DBL_MIN, written as hex by hand
  EXPECT_EQ(e.tolerance.rtol, 0.0);
  EXPECT_EQ(e.inputs[0].args[0].tensor.random.seed, uint64_t{9223372036854775807});
  e = parse(head + "targets: [frozen]\ntolerance: {atol: !!float 1.7976931348623157e+308, rtol: !!str 1}\n");
  EXPECT_EQ(e.tolerance.atol, 0x1.fffffffffffffp+1023);  // DBL_MAX
  EXPECT_EQ(e.tolerance.rtol, 1.0);
  // A tab that is not indentation, and one inside a flow list, is valid YAML.
  e = parse(head + "targets: [frozen,\n\toptimized]\t# two\nrepeats:\t3\n");
  EXPECT_EQ(e.targets.size(), 2u);
  EXPECT_EQ(e.repeats, 3);
}

// Issue 24: a NUL byte was "unknown escape character", or kept inside a quoted value.
TEST_F(ExperimentTest, NulByteIsRefusedWithItsPosition) {
  const std::string nul(1, '\0');
  EXPECT_EQ(error_of("name: a\nmodel: \"m" + nul + ".pt\"\n"),
            "DIR/x.yaml:2:10: the file holds a NUL byte here, so it is not a text file; save it as UTF-8 text (UTF-16 "
            "and UTF-32 are not read)");
  // UTF-16LE "n\0a\0": yaml-cpp would read it as UTF-16.
  EXPECT_EQ(error_of(std::string("n\0a\0", 4)),
            "DIR/x.yaml:1:2: the file holds a NUL byte here, so it is not a text file; save it as UTF-8 text (UTF-16 "
            "and UTF-32 are not read)");
}

// Issue 24: 10,000 levels of nesting ended in yaml-cpp's "bad file" (its guard at depth
// 500); the guard at 64 levels holds far below any stack limit, also under ASan.
TEST_F(ExperimentTest, DeepNestingIsRefusedAt64Levels) {
  const std::string head = "name: a\nmodel: m.pt\ninputs: ";
  const std::string message =
      ": nesting deeper than 64 levels of lists and mappings starts here; driftgate's files need a few levels: look "
      "for an unclosed '[' or '{' or runaway indentation";
  // The root mapping is level 1, "inputs" level 2 at column 9: level 65 is the 64th '['.
  EXPECT_EQ(error_of(head + std::string(10000, '[') + std::string(10000, ']') + "\n"), "DIR/x.yaml:3:72" + message);
  // Unclosed, yaml-cpp reads each '[' after the first as a list holding a mapping whose
  // key is the next list: two levels per '[', so level 65 starts at the 32nd '['.
  EXPECT_EQ(error_of(head + std::string(10000, '[')), "DIR/x.yaml:3:" + std::to_string(9 + 32) + message);
  std::string maps;
  for (int level = 0; level < 10000; ++level) {
    maps += "{a: ";
  }
  EXPECT_EQ(error_of(head + maps), "DIR/x.yaml:3:" + std::to_string(9 + 63 * 4) + message);
  // Block mappings, one space deeper per line: level k starts at line k, column k.
  std::string block;
  for (int level = 0; level < 1000; ++level) {
    block += std::string(static_cast<size_t>(level), ' ') + "a:\n";
  }
  EXPECT_EQ(error_of(block), "DIR/x.yaml:65:65" + message);
  // 64 levels are read, and the config is judged on its content.
  EXPECT_EQ(error_of(head + std::string(63, '[') + std::string(63, ']') + "\ntargets: [frozen]\n"),
            "DIR/x.yaml:3:10: an input must be a mapping of keys to values, got a list");
}

TEST_F(ExperimentTest, LoadNamesMissingFileAndDirectory) {
  EXPECT_THROW(load_experiment((m_dir / "nope.yaml").string()), Error);
  try {
    load_experiment(m_dir.string());
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("is a directory"), std::string::npos);
  }
}

// Issue 24: a FIFO as the config hung `run` in open(); /dev/zero was read without end.
TEST_F(ExperimentTest, LoadRefusesAFifoOrADeviceWithoutBlocking) {
  std::string fifo = (m_dir / "fifo.yaml").string();
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  try {
    load_experiment(fifo);
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()), fifo +
                                         ": a FIFO (named pipe), not a regular file; driftgate reads an experiment "
                                         "config only from a regular file (save the data to a file and pass that)");
  }
  EXPECT_THROW(load_experiment("/dev/zero"), Error);
  // A config path that is not UTF-8 is refused before it is read.
  try {
    load_experiment((m_dir / "caf\xE9.yaml").string());
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()), m_dir.string() +
                                         "/caf\\xe9.yaml: the config's path holds the byte 0xE9 (not UTF-8); run "
                                         "files and reports hold paths as UTF-8 text, so rename the file");
  }
}

// Issue 24: a model, tensor or image path that is there but is not a regular file was
// "not found (looked for ...)". It is named as InputFile names it (core/input_file.cc).
TEST_F(ExperimentTest, PathThatIsNotARegularFileSaysWhatItIs) {
  const std::string rest = "\ninputs: [{name: r, random: {shape: [2]}}]\ntargets: [frozen]\n";
  const std::string model_fix =
      ", not a regular file; driftgate reads a model file only from a regular file: give the path of one (relative "
      "to the config file)";
  EXPECT_EQ(error_of("name: a\nmodel: /dev/zero" + rest),
            "DIR/x.yaml:2:8: model file '/dev/zero' is a character device" + model_fix);
  EXPECT_EQ(error_of("name: a\nmodel: /dev/null" + rest),
            "DIR/x.yaml:2:8: model file '/dev/null' is a character device" + model_fix);
  ASSERT_EQ(::mkfifo((m_dir / "fifo.pt").c_str(), 0600), 0);
  EXPECT_EQ(error_of("name: a\nmodel: fifo.pt" + rest),
            "DIR/x.yaml:2:8: model file 'fifo.pt' (DIR/fifo.pt) is a FIFO (named pipe)" + model_fix);

  // A socket as a tensor file.
  const std::string socket_path = (m_dir / "t.sock").string();
  const test::BoundUnixSocket bound(socket_path);
  EXPECT_EQ(error_of("name: a\nmodel: m.pt\ninputs: [{name: t, tensor: t.sock}]\ntargets: [frozen]\n"),
            "DIR/x.yaml:3:28: tensor file 't.sock' (DIR/t.sock) is a socket, not a regular file; driftgate reads a "
            "tensor file only from a regular file: give the path of one (relative to the config file)");
  EXPECT_EQ(error_of("name: a\nmodel: m.pt\ninputs: [{name: c, image: fifo.pt}]\ntargets: [frozen]\n"),
            "DIR/x.yaml:3:27: image 'fifo.pt' (DIR/fifo.pt) is a FIFO (named pipe), not a regular file; driftgate "
            "reads an image only from a regular file: give the path of one (relative to the config file)");

  // /dev/stdin is a link to whatever standard input is: here a pipe.
  int pipe_fds[2];
  ASSERT_EQ(::pipe(pipe_fds), 0);
  const int saved_stdin = ::dup(0);
  ASSERT_GE(saved_stdin, 0);
  ASSERT_EQ(::dup2(pipe_fds[0], 0), 0);
  const std::string from_stdin = error_of("name: a\nmodel: /dev/stdin" + rest);
  ::dup2(saved_stdin, 0);
  ::close(saved_stdin);
  ::close(pipe_fds[0]);
  ::close(pipe_fds[1]);
  EXPECT_EQ(from_stdin, "DIR/x.yaml:2:8: model file '/dev/stdin' is a FIFO (named pipe)" + model_fix);

  // Missing and directory keep their own words.
  EXPECT_EQ(error_of("name: a\nmodel: none.pt" + rest),
            "DIR/x.yaml:2:8: model file 'none.pt' not found (looked for DIR/none.pt); fix the path (relative to the "
            "config file's directory), or save the model there as TorchScript: torch.jit.script(model).save(path)");
}

// Issue 23: tools/prepare-demo.sh exists only in driftgate's own checkout. A missing model
// names it only in that layout (models/ next to tools/prepare-demo.sh); a user's repository
// with models/ and configs/ but no such script gets the hint that holds anywhere.
TEST_F(ExperimentTest, MissingModelNamesPrepareDemoOnlyInDriftgatesLayout) {
  const std::string config =
      "name: a\nmodel: ../models/none.pt\ninputs: [{name: r, random: {shape: [2]}}]\n"
      "targets: [frozen]\n";
  fs::create_directories(m_dir / "configs");
  fs::create_directories(m_dir / "models");
  auto error_in_configs = [&]() {
    try {
      parse_experiment(config, (m_dir / "configs" / "x.yaml").string());
    } catch (const Error& e) {
      std::string message = e.what();
      for (size_t at = message.find(m_dir.string()); at != std::string::npos; at = message.find(m_dir.string())) {
        message.replace(at, m_dir.string().size(), "DIR");
      }
      return message;
    }
    return std::string("(no error)");
  };
  EXPECT_EQ(error_in_configs(),
            "DIR/configs/x.yaml:2:8: model file '../models/none.pt' not found (looked for DIR/models/none.pt); fix "
            "the path (relative to the config file's directory), or save the model there as TorchScript: "
            "torch.jit.script(model).save(path)");

  fs::create_directories(m_dir / "tools");
  std::ofstream(m_dir / "tools" / "prepare-demo.sh") << "#!/bin/sh\n";
  EXPECT_EQ(error_in_configs(),
            "DIR/configs/x.yaml:2:8: model file '../models/none.pt' not found (looked for DIR/models/none.pt); export "
            "driftgate's demo models with DIR/tools/prepare-demo.sh, or fix the path (relative to the config file)");

  // The script beside a directory that is not models/ does not count.
  EXPECT_EQ(error_of("name: a\nmodel: none.pt\ninputs: [{name: r, random: {shape: [2]}}]\ntargets: [frozen]\n"),
            "DIR/x.yaml:2:8: model file 'none.pt' not found (looked for DIR/none.pt); fix the path (relative to the "
            "config file's directory), or save the model there as TorchScript: torch.jit.script(model).save(path)");
}

}  // namespace
}  // namespace driftgate

namespace driftgate {
namespace {

// Issue 36, part 1: what does not take inputs other than one float32 tensor yet is a config
// error before anything runs, naming the input, the feature and what to do instead.
TEST_F(ExperimentTest, FeaturesOfOneFloat32TensorRefuseOtherInputs) {
  const std::string named = "inputs: [{name: p, args: {ids: {random_int: {shape: [1, 4], high: 9}}}}]\n";
  EXPECT_EQ(error_of("name: a\nmodel: m.pt\nonnx_model: m.pt\n" + named + "targets: [onnxruntime]\n"),
            "DIR/x.yaml:4:10: input 'p' names forward's arguments under 'args', and target 'onnxruntime' (graph "
            "onnxruntime) takes one float32 tensor in this version; put onnxruntime targets in an experiment whose "
            "inputs are one float32 tensor each");
  EXPECT_EQ(error_of("name: a\nmodel: m.pt\n" + named + "targets: [frozen]\nactivations: always\n"),
            "DIR/x.yaml:5:14: input 'p' names forward's arguments under 'args', and tier 2 (activations: always) "
            "captures forwards of one float32 tensor in this version; set 'activations: off' or leave it out (tier "
            "2 then skips such inputs)");
  EXPECT_EQ(error_of("name: a\nmodel: m.pt\naoti_package: m.pt\ninputs: [{name: i, fill: {shape: [2], value: 3, "
                     "dtype: int64}}]\ntargets: [aoti]\n"),
            "DIR/x.yaml:4:10: input 'i' is one int64 tensor, and target 'aoti' (graph aoti) takes one float32 tensor "
            "in this version; put aoti targets in an experiment whose inputs are one float32 tensor each");
  EXPECT_EQ(error_of("name: a\nmodel: m.pt\n" + named +
                     "targets: [mixed]\nbackends:\n  mixed: {base: cpu_bf16, float32_modules: [fc]}\n"),
            "DIR/x.yaml:3:10: input 'p' names forward's arguments under 'args', and target 'mixed' lists "
            "float32_modules, which take one float32 tensor in this version; drop float32_modules or use inputs of "
            "one float32 tensor");
  EXPECT_NO_THROW(parse("name: a\nmodel: m.pt\n" + named + "targets: [frozen]\nactivations: off\n"));
  EXPECT_NO_THROW(parse("name: a\nmodel: m.pt\n" + named + "targets: [frozen, cpu_bf16]\n"));
}

}  // namespace
}  // namespace driftgate
