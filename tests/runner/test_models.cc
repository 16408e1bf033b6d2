#include "test_models.h"

#include <torch/script.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <system_error>
#include <vector>

#include "tests/support/zip_writer.h"

namespace driftgate::testing {
namespace {

namespace fs = std::filesystem;

// Deterministic small weights, no generator state shared with the code under test.
at::Tensor ramp(std::vector<int64_t> shape, double scale, double offset) {
  int64_t n = 1;
  for (int64_t d : shape) {
    n *= d;
  }
  return (at::arange(n, at::kFloat).sin().mul(scale).add(offset)).reshape(shape);
}

}  // namespace

namespace {

// The directories fresh_dir made, removed when the test process exits (never by a forked child
// that happens to exit normally: the parent may still be reading them).
struct MadeDirs {
  pid_t owner = ::getpid();
  std::vector<fs::path> dirs;
  ~MadeDirs() {
    if (::getpid() != owner) {
      return;
    }
    for (const fs::path& dir : dirs) {
      std::error_code ignored;
      fs::remove_all(dir, ignored);
    }
  }
};

MadeDirs& made_dirs() {
  static MadeDirs made;
  return made;
}

}  // namespace

std::string fresh_dir(const std::string& name) {
  fs::path dir = fs::temp_directory_path() / ("dg_runner_" + name + "_" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  made_dirs().dirs.push_back(dir);
  return dir.string();
}

std::string save_conv_bn_model(const std::string& dir) {
  torch::jit::Module module("ConvBnRelu");
  module.register_attribute("training", c10::BoolType::get(), true);
  module.register_parameter("weight", ramp({4, 3, 3, 3}, 0.3, 0.0), false);
  module.register_parameter("bias", ramp({4}, 0.1, 0.05), false);
  module.register_parameter("bn_weight", ramp({4}, 0.2, 1.0), false);
  module.register_parameter("bn_bias", ramp({4}, 0.1, -0.02), false);
  module.register_buffer("running_mean", ramp({4}, 0.05, 0.01));
  module.register_buffer("running_var", ramp({4}, 0.1, 0.9));
  module.define(R"(
def forward(self, x):
    y = torch.conv2d(x, self.weight, self.bias, [1, 1], [1, 1], [1, 1], 1)
    y = torch.batch_norm(y, self.bn_weight, self.bn_bias, self.running_mean, self.running_var,
                         False, 0.1, 1e-5, False)
    y = torch.relu(y)
    return y, torch.mean(y, [2, 3])
)");
  std::string path = dir + "/conv_bn.pt";
  module.save(path);
  return path;
}

std::string save_dict_model(const std::string& dir) {
  torch::jit::Module module("DictOut");
  module.register_parameter("weight", ramp({2, 3, 1, 1}, 0.5, 0.1), false);
  module.define(R"(
def forward(self, x):
    out = {'scores': torch.conv2d(x, self.weight), 'boxes': x * 2.0}
    return out
)");
  std::string path = dir + "/dict.pt";
  module.save(path);
  return path;
}

std::string save_raising_model(const std::string& dir) {
  torch::jit::Module module("Raising");
  module.register_parameter("w", ramp({1}, 0.0, 1.5), false);
  module.define(R"(
def forward(self, x):
    assert x.element_size() != 8, "float64 is not supported"
    assert x.size(0) != 2, "batch of 2 is not supported"
    return x * self.w + 1.0
)");
  std::string path = dir + "/raising.pt";
  module.save(path);
  return path;
}

std::string save_broken_model(const std::string& dir) {
  std::string path = dir + "/broken.pt";
  // Shaped like a TorchScript archive (so the runner's pre-flight passes it), but its
  // pickle is garbage: torch::jit::load fails, as on a model saved by a newer PyTorch.
  std::ofstream(path, std::ios::binary) << test::make_zip(
      {{"broken/data.pkl", "not a pickle"},
       {"broken/code/__torch__/broken.py", "def forward(self, x):\n"},
       {"broken/version", "3\n"}});
  return path;
}

std::string save_hostile_model(const std::string& dir, const std::string& kind) {
  const std::map<std::string, std::string> bodies = {
      {"in_place", "def forward(self, x):\n    x.add_(1.0)\n    return x * self.w\n"},
      {"all_nan", "def forward(self, x):\n    return x * self.w * float('nan')\n"},
      {"random", "def forward(self, x):\n    return x * self.w + torch.rand_like(x)\n"},
      {"growing", "def forward(self, x):\n    self.calls = self.calls + 1\n    return x[:, :self.calls] * self.w\n"},
      {"two_inputs", "def forward(self, x, y):\n    return x * self.w + y\n"},
  };
  torch::jit::Module module("Hostile");
  module.register_parameter("w", ramp({1}, 0.0, 1.5), false);
  module.register_attribute("calls", c10::IntType::get(), c10::IValue(int64_t{0}));
  module.define(bodies.at(kind));
  std::string path = dir + "/" + kind + ".pt";
  module.save(path);
  return path;
}

const CommitInfo k_test_commit{"0123456789abcdef0123456789abcdef01234567", "main", false};

Experiment make_experiment(const std::string& dir, const std::string& name, const std::string& model, int repeats) {
  Experiment experiment;
  experiment.name = name;
  experiment.config_path = dir + "/" + name + ".yaml";
  std::ofstream(experiment.config_path) << "name: " << name << "\n";
  experiment.model_path = model;
  experiment.reference = backend("cpu_fp32");
  experiment.tolerance = Tolerance{1e-4, 1e-4};
  experiment.repeats = repeats;
  return experiment;
}

BackendSpec backend(const std::string& name) {
  BackendSpec spec;
  spec.name = name;
  return spec;
}

BackendSpec backend_with_dtype(const std::string& name, DType dtype) {
  BackendSpec spec = backend(name);
  spec.dtype = dtype;
  return spec;
}

InputSpec random_input(const std::string& name, std::vector<int64_t> shape, uint64_t seed) {
  InputSpec spec;
  spec.name = name;
  InputArgument argument;
  argument.tensor.kind = TensorSource::Kind::k_random;
  argument.tensor.random.shape = std::move(shape);
  argument.tensor.random.seed = seed;
  spec.args.push_back(std::move(argument));
  return spec;
}

}  // namespace driftgate::testing
