#include "core/experiment.h"

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <limits>
#include <set>

#include "core/error.h"
#include "core/file_util.h"
#include "core/input_file.h"
#include "core/input_spec.h"
#include "core/safe_text.h"
#include "core/suggest.h"
#include "core/tolerance.h"
#include "core/yaml_reader.h"

namespace driftgate {

namespace {

constexpr EnumName<Device> k_devices[] = {{Device::k_cpu, "cpu"}, {Device::k_cuda, "cuda"}};
constexpr EnumName<DType> k_dtypes[] = {{DType::k_float32, "float32"},
                                        {DType::k_float64, "float64"},
                                        {DType::k_bfloat16, "bfloat16"},
                                        {DType::k_float16, "float16"}};
constexpr EnumName<MemoryFormat> k_formats[] = {{MemoryFormat::k_contiguous, "contiguous"},
                                                {MemoryFormat::k_channels_last, "channels_last"}};
constexpr EnumName<Activations> k_activations[] = {
    {Activations::k_on_failure, "on_failure"}, {Activations::k_always, "always"}, {Activations::k_off, "off"}};
constexpr EnumName<GraphMode> k_graphs[] = {{GraphMode::k_eager, "eager"},
                                            {GraphMode::k_frozen, "frozen"},
                                            {GraphMode::k_optimized, "optimized"},
                                            {GraphMode::k_xnnpack, "xnnpack"},
                                            {GraphMode::k_fused, "fused"},
                                            {GraphMode::k_aoti, "aoti"},
                                            {GraphMode::k_onnxruntime, "onnxruntime"}};
constexpr EnumName<OnnxProvider> k_onnx_providers[] = {{OnnxProvider::k_cpu, "cpu"}, {OnnxProvider::k_dnnl, "dnnl"}};
constexpr EnumName<OnnxOptimization> k_onnx_levels[] = {{OnnxOptimization::k_disable, "disable"},
                                                        {OnnxOptimization::k_basic, "basic"},
                                                        {OnnxOptimization::k_extended, "extended"},
                                                        {OnnxOptimization::k_all, "all"}};

const std::vector<std::string> k_experiment_keys = {
    "name",    "model",  "inputs",    "reference",   "targets", "backends", "tolerance",    "tolerances",
    "repeats", "oracle", "timeout_s", "activations", "task",    "latency",  "aoti_package", "onnx_model"};
const std::vector<std::string> k_latency_keys = {"warmup", "runs"};
const std::vector<std::string> k_backend_keys = {"base",          "device",          "dtype",
                                                 "memory_format", "onednn",          "threads",
                                                 "graph",         "autocast",        "optimize_numerics",
                                                 "tf32",          "float32_modules", "provider",
                                                 "optimization",  "description"};

// `float32_modules:` a list of module paths as named_modules() spells them ("classifier.3",
// "layer4.1.conv2"): dot-separated names of letters, digits and '_'. Whether the model has
// them is known only when it is loaded (runner/backend.cc).
std::vector<std::string> parse_float32_modules(const YamlReader& reader, const std::string& backend,
                                               const YAML::Node& node) {
  const std::string what = "backend '" + backend + "': float32_modules";
  reader.sequence(node, what, 1);
  std::vector<std::string> names;
  std::vector<YAML::Node> nodes;
  for (const auto& entry : node) {
    if (!entry.IsScalar() || entry.Scalar().empty()) {
      const char* got = entry.IsScalar()     ? "an empty name"
                        : entry.IsMap()      ? "a mapping"
                        : entry.IsSequence() ? "a list"
                                             : "nothing";
      reader.fail(entry.Mark(), what + " must be a list of module names such as classifier.3, got " + got);
    }
    const std::string module = entry.Scalar();
    bool valid = module.size() <= 1024 && module.front() != '.' && module.back() != '.' &&
                 module.find("..") == std::string::npos;
    for (char c : module) {
      valid = valid && (std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '.');
    }
    if (!valid) {
      reader.fail(entry.Mark(), what + ": '" + escape_invisible(module) +
                                    "' is not a module path: give the name named_modules() prints, names of "
                                    "letters, digits and '_' joined by dots (e.g. classifier.3)");
    }
    for (size_t i = 0; i < names.size(); ++i) {
      if (names[i] == module) {
        reader.fail(entry.Mark(), what + " lists '" + module + "' twice (first at " + reader.location(nodes[i]) + ")");
      }
      const std::string& outer = names[i].size() < module.size() ? names[i] : module;
      const std::string& inner = names[i].size() < module.size() ? module : names[i];
      if (inner.rfind(outer + ".", 0) == 0) {
        reader.fail(entry.Mark(), what + ": '" + inner + "' lies inside '" + outer +
                                      "', which runs in float32 with everything in it; list one of the two");
      }
    }
    names.push_back(module);
    nodes.push_back(entry);
  }
  return names;
}

// float32_modules means something only for a model cast to a reduced dtype as a whole.
void check_float32_modules_fit(const YamlReader& reader, const std::string& name, const BackendSpec& spec,
                               const YAML::Node& where) {
  if (spec.autocast) {
    reader.fail(where.Mark(), "backend '" + name +
                                  "': float32_modules cannot be used with autocast: true; autocast keeps every "
                                  "parameter in float32 and picks a dtype per op, while float32_modules keeps the "
                                  "listed modules in float32 in a model cast to a reduced dtype as a whole: use "
                                  "autocast: false (e.g. base: cpu_bf16)");
  }
  if (spec.dtype == DType::k_float32 || spec.dtype == DType::k_float64) {
    reader.fail(where.Mark(), "backend '" + name +
                                  "': float32_modules needs a reduced dtype (bfloat16 or float16), got " +
                                  to_string(spec.dtype) +
                                  ": it keeps the listed modules in float32 in a model cast to that dtype as a "
                                  "whole; set dtype: bfloat16 (e.g. base: cpu_bf16)");
  }
}

// A backend of graph mode aoti runs the experiment's package, one of graph onnxruntime its
// ONNX file: the config must name it.
void require_graph_file(const YamlReader& reader, const YAML::Node& node, const Experiment& experiment,
                        const BackendSpec& spec) {
  if (spec.graph == GraphMode::k_aoti && experiment.aoti_package_path.empty()) {
    reader.fail(node.Mark(), "backend '" + spec.name +
                                 "' runs the model's AOTInductor package; name it beside the model with "
                                 "'aoti_package: PATH.pt2' (compiled from the same eager model, e.g. by "
                                 "torch._inductor.aoti_compile_and_package)");
  }
  if (spec.graph == GraphMode::k_onnxruntime && experiment.onnx_model_path.empty()) {
    reader.fail(node.Mark(), "backend '" + spec.name +
                                 "' runs the model's ONNX export with ONNX Runtime; name it beside the model with "
                                 "'onnx_model: PATH.onnx' (exported from the same eager model, e.g. by "
                                 "tools/export_models.py's export_onnx)");
  }
}

// The first setting of `spec` that converts a TorchScript model (device, dtype, memory
// format, float32_modules), or "": none of them can apply to a compiled package or an ONNX file.
std::string conversion_setting(const BackendSpec& spec) {
  if (spec.device != Device::k_cpu) {
    return "device " + std::string(to_string(spec.device));
  }
  if (spec.dtype != DType::k_float32 || spec.autocast) {
    return std::string("dtype ") + to_string(spec.dtype) + (spec.autocast ? " (autocast)" : "");
  }
  if (spec.memory_format != MemoryFormat::k_contiguous) {
    return std::string("memory_format ") + to_string(spec.memory_format);
  }
  return spec.float32_modules.empty() ? "" : "float32_modules";
}

// An AOTInductor package runs as it was compiled (float32, contiguous, CPU): the settings
// that would convert the model cannot apply to it; threads and oneDNN can.
void check_aoti_settings(const YamlReader& reader, const YAML::Node& node, const std::string& name,
                         const BackendSpec& spec) {
  if (const std::string problem = conversion_setting(spec); !problem.empty()) {
    reader.fail(node.Mark(), "backend '" + name +
                                 "': graph aoti runs the AOTInductor package as it was compiled "
                                 "(CPU, float32, contiguous), so " +
                                 problem + " cannot apply; compile another package for it, or use another graph mode");
  }
}

// ONNX Runtime runs the ONNX file as exported (float32, CPU) with its own kernels: LibTorch's
// settings cannot apply to it; threads, provider and optimization can. `provider:` and
// `optimization:` belong to it alone.
void check_onnx_settings(const YamlReader& reader, const YAML::Node& node, const std::string& name,
                         const BackendSpec& spec) {
  if (spec.graph != GraphMode::k_onnxruntime) {
    for (const char* key : {"provider", "optimization"}) {
      if (node[key]) {
        reader.fail(node[key].Mark(), "backend '" + name + "': " + key +
                                          " is an ONNX Runtime setting; it needs graph onnxruntime (e.g. base: "
                                          "onnxruntime)");
      }
    }
    return;
  }
  std::string problem = conversion_setting(spec);
  if (problem.empty() && node["onednn"]) {
    problem = "onednn (LibTorch's flag; ONNX Runtime's oneDNN is provider: dnnl)";
  } else if (problem.empty() && (node["optimize_numerics"] || node["tf32"])) {
    problem = node["tf32"] ? "tf32" : "optimize_numerics";
  }
  if (!problem.empty()) {
    reader.fail(node.Mark(), "backend '" + name +
                                 "': graph onnxruntime runs the ONNX file with ONNX Runtime (CPU, float32), so " +
                                 problem + " cannot apply; its settings are provider, optimization and threads");
  }
}

BackendSpec parse_backend(const YamlReader& reader, const std::string& name, const YAML::Node& node,
                          const std::vector<BackendSpec>& known) {
  reader.expect_map(node, "backend '" + name + "'", k_backend_keys);
  BackendSpec spec = known.front();
  spec.description = "";
  if (const YAML::Node base = node["base"]) {
    std::string base_name = reader.scalar(base, "base");
    std::vector<std::string> names;
    bool found = false;
    for (const auto& candidate : known) {
      names.push_back(candidate.name);
      if (candidate.name == base_name) {
        spec = candidate;
        found = true;
      }
    }
    if (!found) {
      reader.fail(base.Mark(), "unknown base backend '" + base_name + "'" + did_you_mean(base_name, names));
    }
  }
  spec.name = name;
  if (node["device"]) {
    spec.device = reader.choice(node["device"], "device", k_devices);
  }
  if (node["dtype"]) {
    spec.dtype = reader.choice(node["dtype"], "dtype", k_dtypes);
  }
  if (node["memory_format"]) {
    spec.memory_format = reader.choice(node["memory_format"], "memory_format", k_formats);
  }
  if (node["onednn"]) {
    spec.onednn = reader.boolean(node["onednn"], "onednn");
  }
  if (node["threads"]) {
    spec.threads = static_cast<int>(reader.integer(node["threads"], "threads", 1, 256));
  }
  if (node["graph"]) {
    spec.graph = reader.choice(node["graph"], "graph", k_graphs);
  }
  if (node["autocast"]) {
    spec.autocast = reader.boolean(node["autocast"], "autocast");
  }
  if (node["optimize_numerics"]) {
    spec.optimize_numerics = reader.boolean(node["optimize_numerics"], "optimize_numerics");
  }
  if (node["tf32"]) {
    spec.tf32 = reader.boolean(node["tf32"], "tf32");
  }
  if (spec.autocast && spec.device == Device::k_cpu && spec.dtype != DType::k_bfloat16) {
    reader.fail(node.Mark(), "backend '" + name +
                                 "': CPU autocast in LibTorch 1.13 supports dtype bfloat16 only, got " +
                                 to_string(spec.dtype));
  }
  if (spec.autocast && spec.dtype == DType::k_float32) {
    reader.fail(node.Mark(), "backend '" + name + "': autocast needs a lower-precision dtype (bfloat16 or float16)");
  }
  if (const YAML::Node modules = node["float32_modules"]) {
    spec.float32_modules = parse_float32_modules(reader, name, modules);
  }
  if (node["provider"]) {
    spec.onnx_provider = reader.choice(node["provider"], "provider", k_onnx_providers);
  }
  if (node["optimization"]) {
    spec.onnx_optimization = reader.choice(node["optimization"], "optimization", k_onnx_levels);
  }
  if (spec.graph == GraphMode::k_aoti) {
    check_aoti_settings(reader, node, name, spec);
  }
  check_onnx_settings(reader, node, name, spec);
  if (!spec.float32_modules.empty()) {
    // Checked on the final settings: a base backend may bring the list, this one the dtype.
    check_float32_modules_fit(reader, name, spec, node["float32_modules"] ? node["float32_modules"] : node);
  }
  spec.description = node["description"] ? reader.scalar(node["description"], "description")
                                         : "custom backend defined in " + reader.location(node);
  return spec;
}

// `what` is a C string: GCC 14's -Wdangling-reference flags a returned reference when an
// argument is a temporary std::string, although the result refers into `known` only.
const BackendSpec& find_backend(const YamlReader& reader, const YAML::Node& node, const std::vector<BackendSpec>& known,
                                const char* what) {
  std::string name = reader.scalar(node, what);
  std::vector<std::string> names;
  for (const auto& spec : known) {
    if (spec.name == name) {
      return spec;
    }
    names.push_back(spec.name);
  }
  reader.fail(node.Mark(), "unknown backend '" + name + "'" + did_you_mean(name, names) +
                               " (define it under 'backends:' or use one of: " + YamlReader::join(names) + ")");
}

// What to try when the model file is not there. tools/prepare-demo.sh exists only in
// driftgate's own checkout, where it exports the demo models into models/: it is named
// only for a model in a models/ directory next to that script's tools/.
std::string missing_model_hint(const std::string& resolved) {
  const std::filesystem::path models = std::filesystem::path(resolved).parent_path();
  const std::filesystem::path script = models.parent_path() / "tools" / "prepare-demo.sh";
  std::error_code ec;
  if (models.filename() == "models" && std::filesystem::is_regular_file(script, ec)) {
    return "; export driftgate's demo models with " + script.lexically_normal().string() +
           ", or fix the path (relative to the config file)";
  }
  return "; fix the path (relative to the config file's directory), or save the model there as TorchScript: "
         "torch.jit.script(model).save(path)";
}

// What part 1 of multi-argument inputs (issue 36) does not take yet: an input other than one
// float32 tensor with a target that runs an AOTInductor package or an ONNX file, with a
// target's float32_modules, or with tier 2 asked for by name. A config error before
// anything runs; tier 2 left at its default skips such inputs (runner/runner.cc).
void refuse_part_one_features(const YamlReader& reader, const YAML::Node& root, const Experiment& experiment) {
  const YAML::Node inputs = root["inputs"];
  for (size_t i = 0; i < experiment.inputs.size(); ++i) {
    const std::string limit = input_feature_limit(experiment.inputs[i]);
    if (limit.empty()) {
      continue;
    }
    for (const BackendSpec& target : experiment.targets) {
      if (target.graph == GraphMode::k_aoti || target.graph == GraphMode::k_onnxruntime) {
        reader.fail(inputs[i].Mark(), limit + ", and target '" + target.name + "' (graph " + to_string(target.graph) +
                                          ") takes one float32 tensor in this version; put " + to_string(target.graph) +
                                          " targets in an experiment whose inputs are one float32 tensor each");
      }
      if (!target.float32_modules.empty()) {
        reader.fail(inputs[i].Mark(), limit + ", and target '" + target.name +
                                          "' lists float32_modules, which take one float32 tensor in this version; "
                                          "drop float32_modules or use inputs of one float32 tensor");
      }
    }
    const YAML::Node activations = root["activations"];
    if (activations && experiment.activations != Activations::k_off) {
      reader.fail(activations.Mark(), limit + ", and tier 2 (activations: " + to_string(experiment.activations) +
                                          ") captures forwards of one float32 tensor in this version; set "
                                          "'activations: off' or leave it out (tier 2 then skips such inputs)");
    }
  }
}

Experiment parse_document(const YamlReader& reader, const YAML::Node& root) {
  if (!root || root.IsNull()) {
    reader.fail(YAML::Mark::null_mark(),
                "the file is empty; an experiment needs at least name, model, inputs and targets");
  }
  reader.expect_map(root, "the experiment", k_experiment_keys);
  const std::string base_dir = parent_directory(reader.path());
  Experiment experiment;
  experiment.config_path = reader.path();
  experiment.name = reader.name(reader.required(root, "name", "the experiment"), "experiment name");

  const YAML::Node model = reader.required(root, "model", "the experiment");
  experiment.model_path = resolve_path(base_dir, reader.scalar(model, "model"));
  reader.require_file(model, "model file", experiment.model_path, missing_model_hint(experiment.model_path));

  if (const YAML::Node package = root["aoti_package"]) {
    experiment.aoti_package_path = resolve_path(base_dir, reader.scalar(package, "aoti_package"));
  }
  if (const YAML::Node onnx = root["onnx_model"]) {
    experiment.onnx_model_path = resolve_path(base_dir, reader.scalar(onnx, "onnx_model"));
  }

  const YAML::Node inputs = reader.sequence(reader.required(root, "inputs", "the experiment"), "inputs", 1);
  std::set<std::string> input_names;
  for (const auto& node : inputs) {
    InputSpec input = parse_input(reader, node, base_dir);
    if (!input_names.insert(input.name).second) {
      reader.fail(node.Mark(), "duplicate input name '" + input.name + "'");
    }
    experiment.inputs.push_back(std::move(input));
  }

  std::vector<BackendSpec> known = builtin_backends();
  if (const YAML::Node backends = root["backends"]) {
    if (!backends.IsMap()) {
      reader.fail(backends.Mark(), "backends must map names to settings");
    }
    std::set<std::string> defined;
    for (const auto& pair : backends) {
      std::string name = reader.name(pair.first, "backend name");
      if (!defined.insert(name).second) {
        reader.fail(pair.first.Mark(), "duplicate backend '" + name + "'");
      }
      for (const auto& builtin : builtin_backends()) {
        if (builtin.name == name) {
          reader.fail(pair.first.Mark(), "backend '" + name + "' is built in; choose another name");
        }
      }
      known.push_back(parse_backend(reader, name, pair.second, known));
    }
  }

  experiment.reference = known.front();
  if (const YAML::Node reference = root["reference"]) {
    experiment.reference = find_backend(reader, reference, known, "reference");
  }
  const YAML::Node targets = reader.sequence(reader.required(root, "targets", "the experiment"), "targets", 1);
  std::set<std::string> target_names;
  for (const auto& node : targets) {
    const BackendSpec& target = find_backend(reader, node, known, "target");
    if (target.name == experiment.reference.name) {
      reader.fail(node.Mark(), "target '" + target.name + "' is the reference itself; compare it with another backend");
    }
    if (!target_names.insert(target.name).second) {
      reader.fail(node.Mark(), "duplicate target '" + target.name + "'");
    }
    experiment.targets.push_back(target);
    require_graph_file(reader, node, experiment, target);
  }
  if (root["reference"]) {
    require_graph_file(reader, root["reference"], experiment, experiment.reference);
  }

  experiment.tolerance_per_dtype = true;
  if (const YAML::Node tolerance = root["tolerance"]) {
    parse_tolerance(reader, tolerance, experiment);
  }
  if (const YAML::Node oracle = root["oracle"]) {
    experiment.oracle = reader.boolean(oracle, "oracle");
  }
  if (experiment.tolerance.rule == ToleranceRule::k_oracle && !experiment.oracle) {
    reader.fail(root["oracle"].Mark(),
                "the oracle rule judges targets against the float64 oracle; remove "
                "'oracle: false' or choose another rule");
  }
  if (const YAML::Node overrides = root["tolerances"]) {
    parse_tolerance_overrides(reader, overrides, experiment);
  }
  if (const YAML::Node timeout = root["timeout_s"]) {
    experiment.timeout_s = reader.number(timeout, "timeout_s");
    if (experiment.timeout_s <= 0.0 || experiment.timeout_s > 86400.0) {
      reader.fail(timeout.Mark(), "timeout_s must be more than 0 and at most 86400 (a day), got " + timeout.Scalar());
    }
  }
  if (const YAML::Node activations = root["activations"]) {
    experiment.activations = reader.choice(activations, "activations", k_activations);
  }
  if (const YAML::Node repeats = root["repeats"]) {
    experiment.repeats = static_cast<int>(reader.integer(repeats, "repeats", 1, 100));
  }
  if (const YAML::Node latency = root["latency"]) {
    reader.expect_map(latency, "latency", k_latency_keys);
    if (latency["warmup"]) {
      experiment.latency_warmup = static_cast<int>(reader.integer(latency["warmup"], "latency warmup", 0, 1000));
    }
    if (latency["runs"]) {
      experiment.latency_runs = static_cast<int>(reader.integer(latency["runs"], "latency runs", 1, 1000));
    }
  }
  if (const YAML::Node task = root["task"]) {
    experiment.task = parse_task(reader, task, base_dir);
  }
  refuse_part_one_features(reader, root, experiment);
  return experiment;
}

}  // namespace

std::string SourceLocation::str() const {
  if (line <= 0) {
    return file;
  }
  return file + ":" + std::to_string(line) + ":" + std::to_string(column);
}

std::string input_feature_limit(const InputSpec& input) {
  if (input.single_float32_tensor()) {
    return "";
  }
  if (input.named) {
    return "input '" + input.name + "' names forward's arguments under 'args'";
  }
  return std::string("input '") + input.name + "' is one " + to_string(input.args[0].tensor.dtype()) + " tensor";
}

const char* to_string(Device device) { return enum_name(k_devices, device); }
const char* to_string(DType dtype) { return enum_name(k_dtypes, dtype); }
const char* to_string(MemoryFormat format) { return enum_name(k_formats, format); }
const char* to_string(GraphMode mode) { return enum_name(k_graphs, mode); }
const char* to_string(OnnxProvider provider) { return enum_name(k_onnx_providers, provider); }
const char* to_string(OnnxOptimization level) { return enum_name(k_onnx_levels, level); }
const char* to_string(Activations activations) { return enum_name(k_activations, activations); }

Experiment parse_experiment(const std::string& yaml_text, const std::string& path) {
  const YamlReader reader(path);
  const YAML::Node document =
      reader.load(yaml_text, "one experiment per file: found a second YAML document; split it into its own file");
  try {
    return parse_document(reader, document);
  } catch (const YAML::Exception& e) {
    reader.fail(e.mark, e.msg);
  }
}

DType read_dtype(const YamlReader& reader, const YAML::Node& node) { return reader.choice(node, "dtype", k_dtypes); }

Experiment load_experiment(const std::string& path) {
  // The path is written into the run file (JSON: UTF-8 only) and shown in reports.
  if (std::string found = first_invisible(path); !found.empty()) {
    throw Error(escape_invisible(path) + ": the config's path holds " + found +
                "; run files and reports hold paths as UTF-8 text, so rename the file");
  }
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec)) {
    throw Error(path + ": is a directory; pass experiment files (e.g. " + path + "/*.yaml)");
  }
  return parse_experiment(read_input_file(path, k_experiment_config), path);
}

}  // namespace driftgate
