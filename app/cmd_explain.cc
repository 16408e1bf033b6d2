// driftgate explain: where, layer by layer, one check's target leaves its reference.
//
// Loads the configs, finds the check's experiment, input, reference and target,
// and runs tier 2 (runner/tier2_localize.h) on that input: every activation of
// reference, float64 oracle and target captured, aligned and compared; the first
// divergent layer, CRADLE's rank, the re-injection of that layer's group alone, coverage and
// peak memory. `--target-model` loads the target from another file (a re-exported,
// quantized or fine-tuned model against the original).
#include <cstdio>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "app/cli_util.h"
#include "app/command.h"
#include "core/error.h"
#include "core/exit_code.h"
#include "core/experiment.h"
#include "core/file_util.h"
#include "core/suggest.h"
#include "core/tier2_profile.h"
#include "runner/tier2_explain.h"

namespace driftgate {
namespace {

struct ExplainRequest {
  std::string check_id;
  std::vector<std::string> configs;
  std::string target_model;  // load the target from this file instead of the experiment's model
  std::string json_path;     // also write the localization as JSON here
  std::string reinject;      // re-inject this layer instead of the first divergent one
  int threads = 1;
  bool in_process = false;
  int64_t budget_mib = 256;
};

// The parts of "<experiment>/<input>/<reference>~<target>/<output>".
struct CheckIdParts {
  std::string experiment;
  std::string input;
  std::string reference;
  std::string target;
  std::string output;
};

const CommandHelp k_help{
    "driftgate explain CHECK_ID CONFIG.yaml... [--target-model FILE] [--json FILE] [--reinject LAYER] [--threads N]\n"
    "                  [--in-process]",
    "Says where a check's drift starts. Runs the check's input through the reference, a float64 oracle and\n"
    "the target with every activation captured (a copy after each tensor-producing node of the inlined\n"
    "TorchScript graph, inside the branches an `if` takes and once per loop iteration; the output stays\n"
    "bit-identical) and pairs the layers: by position when the\n"
    "target only changes runtime settings; when it rewrites the graph (frozen, optimized, xnnpack), only\n"
    "where both graphs compute the same function of the input (a folded conv's output with the batch norm's,\n"
    "a fused conv+bn+relu's with the relu's); the values a rewrite folded away are 'not_observable', never\n"
    "divergent, and a layer the target did not run (another branch, fewer loop iterations) is not_observable\n"
    "with that reason, which makes the profile partial: then it never says 'no divergent layer' alone.\n"
    "Coverage counts module calls: those whose output was compared, of those the reference made on this\n"
    "input. Per layer it prints the range-normalized error against the reference, the fp32 reference's\n"
    "own error against float64 (the noise floor), the threshold max(10 x noise floor x the target's unit\n"
    "roundoff / the reference's, the check's atol + rtol at the layer's scale) and CRADLE's rank (large\n"
    "where error starts, small where it is only carried). The target's ops that compute the first\n"
    "divergent value are then re-run alone on the reference's values before them (with the convolution\n"
    "whose oneDNN output layout a fused activation reads): 'confirmed' means they alone reproduce the\n"
    "divergence; --reinject LAYER re-runs another layer's ops instead (a control upstream of the\n"
    "divergence should give 'not_confirmed'). The output leaf of CHECK_ID is accepted but the whole model is\n"
    "explained; `run` attaches the same profile to failing checks. --target-model compares the\n"
    "experiment's model (reference) with another file (target): a TorchScript file, or for an\n"
    "onnxruntime target an ONNX file (values then paired at module exits, no re-injection).\n"
    "Exit 1 when a divergent layer was found, 0 when none was.",
    "driftgate explain 'resnet18_oracle/scene0/cpu_fp32~xnnpack/out' configs/resnet18_oracle.yaml"};

std::optional<ExplainRequest> parse_request(CommandContext& context) {
  ExplainRequest request;
  po::options_description options;
  options.add_options()("check", po::value<std::string>(&request.check_id),
                        "the check id, as in run.jsonl and the reports (positional)")(
      "config", po::value<std::vector<std::string>>(&request.configs),
      "experiment config files; one of them defines the check's experiment (positional)")(
      "target-model", po::value<std::string>(&request.target_model),
      "load the target backend from this file instead of the experiment's model (TorchScript; ONNX for an "
      "onnxruntime target)")("json", po::value<std::string>(&request.json_path),
                             "also write the localization as JSON to this file")(
      "threads", po::value<int>(&request.threads)->default_value(1),
      "intra-op threads for backends that do not set their own")(
      "budget-mib", po::value<int64_t>(&request.budget_mib)->default_value(256),
      "activations held per backend at once, in MiB: layers are compared window by window")(
      "reinject", po::value<std::string>(&request.reinject),
      "re-run this layer's ops on the reference's values (a name from the profile, with or without its "
      "' (file:line)' tail) instead of the first divergent layer's")(
      "in-process", po::bool_switch(&request.in_process), "localize in this process instead of a forked child");
  po::positional_options_description positional;
  positional.add("check", 1);
  positional.add("config", -1);
  po::variables_map variables;
  if (!parse_command_line("explain", context.args, options, positional, k_help, variables, context.out)) {
    return std::nullopt;
  }
  if (request.check_id.empty() || request.configs.empty()) {
    throw Error("driftgate explain: expected a check id and at least one config; e.g. " + k_help.example);
  }
  if (request.threads < 1) {
    throw Error("driftgate explain: --threads " + std::to_string(request.threads) + ": must be at least 1");
  }
  if (request.budget_mib < 1) {
    throw Error("driftgate explain: --budget-mib " + std::to_string(request.budget_mib) + ": must be at least 1");
  }
  return request;
}

CheckIdParts split_check_id(const std::string& id) {
  CheckIdParts parts;
  const size_t first = id.find('/');
  const size_t second = first == std::string::npos ? first : id.find('/', first + 1);
  const size_t third = second == std::string::npos ? second : id.find('/', second + 1);
  const size_t tilde = second == std::string::npos ? second : id.find('~', second + 1);
  if (third == std::string::npos || tilde == std::string::npos || tilde > third || first == 0 || second == first + 1 ||
      tilde == second + 1 || third == tilde + 1 || third + 1 == id.size()) {
    throw Error("driftgate explain: '" + id +
                "' is not a check id; expected <experiment>/<input>/<reference>~<target>/<output>, e.g. "
                "resnet18/scene0/cpu_fp32~onednn_off/out");
  }
  parts.experiment = id.substr(0, first);
  parts.input = id.substr(first + 1, second - first - 1);
  parts.reference = id.substr(second + 1, tilde - second - 1);
  parts.target = id.substr(tilde + 1, third - tilde - 1);
  parts.output = id.substr(third + 1);
  return parts;
}

std::string format(const char* pattern, double value) {
  char buffer[32];
  std::snprintf(buffer, sizeof buffer, pattern, value);
  return buffer;
}

void print_localization(const std::string& id, const Localization& localization, std::ostream& out) {
  out << "explain " << id << "\n";
  out << "  alignment: " << localization.alignment << "; " << describe_localization(localization) << "\n";
  if (localization.reinjection != "not_run") {
    std::string group;
    for (const std::string& name : localization.reinjection_group) {
      group += (group.empty() ? "" : " + ") + name.substr(0, name.find(" ("));
    }
    out << "  re-injection: " << localization.reinjection << " (the target's ops for this value alone"
        << (group.empty() ? "" : ", " + group) << ", fed the reference's values before them: error "
        << format("%.3g", localization.reinjection_delta) << ")\n";
  } else if (!localization.first_divergent.empty()) {
    out << "  re-injection: not_run (the note says why)\n";
  }
  if (!localization.note.empty()) {
    out << "  note: " << localization.note << "\n";
  }
  out << "  peak RSS: " << format("%.0f", static_cast<double>(localization.peak_rss_kib) / 1024.0) << " MiB\n";
  out << "  layers: " << layer_sparkline(localization) << "\n";
  char header[160];
  std::snprintf(header, sizeof header, "  %4s  %-14s %-10s %-11s %-10s %-10s %s\n", "#", "status", "error",
                "noise floor", "threshold", "rank", "layer");
  out << header;
  for (size_t i = 0; i < localization.profile.size(); ++i) {
    const Tier2Layer& layer = localization.profile[i];
    char row[128];
    if (layer.status == LayerStatus::k_not_observable) {
      std::snprintf(row, sizeof row, "  %4zu  %-14s %-10s %-11s %-10s %-10s ", i, to_string(layer.status), "-", "-",
                    "-", "-");
    } else {
      std::snprintf(row, sizeof row, "  %4zu  %-14s %-10.3g %-11.3g %-10.3g %-10.3g ", i, to_string(layer.status),
                    layer.delta, layer.noise_floor, layer.threshold, layer.rank);
    }
    out << row << layer.name;
    if (layer.status == LayerStatus::k_not_observable && !layer.reason.empty() && layer.reason != k_reason_fused) {
      out << "  (" << layer.reason << ")";
    }
    out << "\n";
  }
}

}  // namespace

int cmd_explain(CommandContext& context) {
  std::optional<ExplainRequest> request = parse_request(context);
  if (!request) {
    return 0;
  }
  const CheckIdParts parts = split_check_id(request->check_id);
  std::vector<Experiment> experiments;
  for (const std::string& config : request->configs) {
    experiments.push_back(load_experiment(config));
  }
  const Experiment* experiment = nullptr;
  std::vector<std::string> names;
  for (const Experiment& candidate : experiments) {
    names.push_back(candidate.name);
    if (candidate.name == parts.experiment) {
      experiment = &candidate;
    }
  }
  if (experiment == nullptr) {
    std::string listed;
    for (const std::string& name : names) {
      listed += (listed.empty() ? "" : ", ") + name;
    }
    throw Error("driftgate explain: the configs define no experiment '" + parts.experiment + "'" +
                did_you_mean(parts.experiment, names) + " (they define: " + listed + ")");
  }
  if (parts.reference != experiment->reference.name) {
    throw Error("driftgate explain: " + experiment->config_path + ": the reference is '" + experiment->reference.name +
                "', not '" + parts.reference + "'");
  }
  ExplainOptions options;
  options.target_model = request->target_model;
  options.onnx_worker = onnx_worker_setting(context.env);
  options.threads = request->threads;
  options.budget_bytes = request->budget_mib << 20;
  options.isolate = !request->in_process;
  options.reinject_at = request->reinject;
  Localization localization;
  try {
    localization = explain_check(*experiment, parts.input, parts.target, options);
  } catch (const Error& e) {
    throw Error(std::string("driftgate explain: ") + e.what());
  }
  print_localization(request->check_id, localization, context.out);
  if (!request->json_path.empty()) {
    write_file_atomic(request->json_path, localization_to_json(localization) + "\n");
  }
  return to_int(localization.first_divergent.empty() ? ExitCode::k_ok : ExitCode::k_gated);
}

}  // namespace driftgate
