#include "core/experiment.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

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
)";

TEST_F(ExperimentTest, ParsesEverything) {
  Experiment e = parse(k_valid);
  EXPECT_EQ(e.name, "tiny");
  EXPECT_EQ(e.model_path, (m_dir / "m.pt").string());
  ASSERT_EQ(e.inputs.size(), 2U);
  EXPECT_EQ(e.inputs[0].kind, InputSpec::Kind::k_image);
  EXPECT_EQ(e.inputs[0].image.height, 224);
  EXPECT_EQ(e.inputs[0].image.width, 200);
  EXPECT_DOUBLE_EQ(e.inputs[0].image.std[2], 0.225);
  EXPECT_EQ(e.inputs[1].kind, InputSpec::Kind::k_random);
  EXPECT_EQ(e.inputs[1].random.shape, (std::vector<int64_t>{1, 3, 8, 8}));
  EXPECT_EQ(e.inputs[1].random.seed, 7U);
  EXPECT_EQ(e.inputs[1].random.distribution, Distribution::k_uniform);
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

struct BadConfig {
  const char* text;
  const char* message;
};

// Each malformed config and the exact message it must produce.
const BadConfig k_bad_configs[] = {
    {"", "DIR/x.yaml: the file is empty; an experiment needs at least name, model, inputs and targets"},
    {"name: a\nmodel: m.pt\ninputs: [{name: r, random: {shape: [2]}}]\ntargets: [frozen]\ntolerence: {atol: 1}\n",
     "DIR/x.yaml:5:1: unknown key 'tolerence' in the experiment; did you mean 'tolerance'? (allowed: name, model, "
     "inputs, reference, targets, backends, tolerance, repeats, oracle, timeout_s, activations, task)"},
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
     "one of: cpu_fp32, onednn_off, channels_last, frozen, frozen_exact, optimized, xnnpack, nnc_fused, threads_2, "
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
     "DIR/x.yaml:3:10: input 'r' needs exactly one of 'image' (a file), 'random' (a seeded tensor) or 'tensor' (a "
     "NumPy .npy file)"},
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
  EXPECT_EQ(e.inputs[0].kind, InputSpec::Kind::k_tensor);
  EXPECT_EQ(e.inputs[0].tensor.path, (m_dir / "x.npy").string());
  EXPECT_EQ(e.inputs[0].tensor.shape, (std::vector<int64_t>{1, 2}));
  EXPECT_EQ(error_of("name: a\nmodel: m.pt\ninputs: [{name: t, tensor: x.npy, shape: [1, 3]}]\ntargets: [frozen]\n"),
            "DIR/x.yaml:3:42: tensor file 'x.npy' has shape [1, 2], the config expects [1, 3]; save the array the "
            "model takes or fix 'shape'");
  write_npy((m_dir / "d.npy").string(), "<f8");
  EXPECT_EQ(error_of("name: a\nmodel: m.pt\ninputs: [{name: t, tensor: d.npy}]\ntargets: [frozen]\n"),
            "DIR/x.yaml:3:28: tensor file 'DIR/d.npy': holds float64; driftgate feeds float32 tensors: save it as "
            "float32 (numpy.save(path, array.astype(numpy.float32)))");
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
  const std::string head = "name: a\nmodel: m.pt\ninputs: [{name: r, random: {shape: [2], seed: 9223372036854775807}}]\n";
  Experiment e = parse(head + "targets: [frozen]\ntolerance: {atol: 2.2250738585072014e-308, rtol: 0e-999}\n");
  EXPECT_EQ(e.tolerance.atol, 0x1p-1022);  // DBL_MIN, written as hex by hand
  EXPECT_EQ(e.tolerance.rtol, 0.0);
  EXPECT_EQ(e.inputs[0].random.seed, uint64_t{9223372036854775807});
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
  const std::string config = "name: a\nmodel: ../models/none.pt\ninputs: [{name: r, random: {shape: [2]}}]\n"
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
