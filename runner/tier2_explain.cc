#include "runner/tier2_explain.h"

#include <ATen/Parallel.h>

#include <filesystem>

#include "core/error.h"
#include "core/suggest.h"
#include "runner/inputs.h"
#include "runner/tier2_localize.h"

namespace driftgate {
namespace {

// The named item of `items` or an error listing the names, with a did-you-mean. `what` is a
// C string so that GCC 14's -Wdangling-reference sees no temporary std::string argument.
template <typename T, typename Name>
const T& find_named(const std::vector<T>& items, const std::string& wanted, Name name, const char* what,
                    const std::string& where) {
  std::vector<std::string> names;
  for (const T& item : items) {
    if (name(item) == wanted) {
      return item;
    }
    names.push_back(name(item));
  }
  std::string listed;
  for (const std::string& item : names) {
    listed += (listed.empty() ? "" : ", ") + item;
  }
  throw Error(where + "no " + std::string(what) + " '" + wanted + "'" + did_you_mean(wanted, names) +
              " (there are: " + listed + ")");
}

}  // namespace

Localization explain_check(const Experiment& experiment, const std::string& input, const std::string& target,
                           const ExplainOptions& options) {
  const std::string where = experiment.config_path + ": ";
  const InputSpec& input_spec = find_named(
      experiment.inputs, input, [](const InputSpec& spec) { return spec.name; }, "input", where);
  const BackendSpec& target_spec = find_named(
      experiment.targets, target, [](const BackendSpec& spec) { return spec.name; }, "target", where);
  if (std::string limit = input_feature_limit(input_spec); !limit.empty()) {
    throw Error(where + limit +
                ", and explain captures forwards of one float32 tensor in this version; explain "
                "an input of one float32 tensor, or read the check's tier-1 record");
  }
  if (!options.target_model.empty() && !std::filesystem::is_regular_file(options.target_model)) {
    throw Error("--target-model '" + options.target_model + "': no such file");
  }
  LocalizeRequest request =
      localize_request_for(experiment, target_spec,
                           BackendSource{experiment.config_path, experiment.model_path, options.threads,
                                         experiment.aoti_package_path, experiment.onnx_model_path});
  request.source.onnx_worker = options.onnx_worker;
  request.target_model_path = options.target_model;
  request.options.budget_bytes = options.budget_bytes;
  request.options.reinject_at = options.reinject_at;
  at::Tensor tensor;
  try {
    tensor = make_input(input_spec);
  } catch (const Error& e) {
    throw Error(where + e.what());
  }
  if (!options.isolate) {
    return localize_request(request, tensor);
  }
  at::set_num_threads(1);  // a forked child needs a parent that never ran a multi-threaded region
  return localize_isolated(request, tensor, experiment.timeout_s);
}

}  // namespace driftgate
