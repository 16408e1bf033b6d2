#include "tier2_models.h"

#include <torch/script.h>

#include <stdexcept>

namespace driftgate::testing {
namespace {

at::Tensor ramp(std::vector<int64_t> shape, double scale, double offset, double phase) {
  int64_t n = 1;
  for (int64_t d : shape) {
    n *= d;
  }
  return at::arange(n, at::kFloat).mul(0.7).add(phase).sin().mul(scale).add(offset).reshape(shape);
}

torch::jit::Module conv(const std::string& type, int64_t in, int64_t out, double phase) {
  torch::jit::Module module("Conv_" + type);
  module.register_parameter("weight", ramp({out, in, 3, 3}, 0.25, 0.0, phase), false);
  module.register_parameter("bias", ramp({out}, 0.1, 0.02, phase + 1.0), false);
  module.define(R"(
def forward(self, x):
    return torch.conv2d(x, self.weight, self.bias, [1, 1], [1, 1], [1, 1], 1)
)");
  return module;
}

torch::jit::Module relu(const std::string& type) {
  torch::jit::Module module("Relu_" + type);
  module.define(R"(
def forward(self, x):
    return torch.relu_(x)
)");
  return module;
}

torch::jit::Module batch_norm(const std::string& type, int64_t channels) {
  torch::jit::Module module("Bn_" + type);
  module.register_parameter("weight", ramp({channels}, 0.2, 1.0, 0.3), false);
  module.register_parameter("bias", ramp({channels}, 0.1, -0.02, 0.9), false);
  module.register_buffer("running_mean", ramp({channels}, 0.05, 0.01, 1.7));
  module.register_buffer("running_var", ramp({channels}, 0.1, 0.9, 2.3));
  module.define(R"(
def forward(self, x):
    return torch.batch_norm(x, self.weight, self.bias, self.running_mean, self.running_var, False, 0.1, 1e-5, False)
)");
  return module;
}

void perturb(torch::jit::Module& model, const std::string& perturbed_parameter, double scale) {
  if (perturbed_parameter.empty()) {
    return;
  }
  for (const auto& parameter : model.named_parameters(/*recurse=*/true)) {
    if (parameter.name == perturbed_parameter) {
      at::NoGradGuard no_grad;
      parameter.value.mul_(scale);
      return;
    }
  }
  throw std::runtime_error("tier2 test models: no parameter '" + perturbed_parameter + "'");
}

torch::jit::Module conv_relu(const std::string& type, int64_t channels, double phase) {
  torch::jit::Module module("ConvRelu_" + type);
  module.register_module("conv", conv(type, channels, channels, phase));
  module.register_module("relu", relu(type));
  module.define(R"(
def forward(self, x):
    return self.relu.forward(self.conv.forward(x))
)");
  return module;
}

}  // namespace

std::string save_control_flow_model(const std::string& dir, const std::string& file, const ControlFlowModel& options) {
  torch::jit::Module block("CfBlock");
  block.register_module("conv", conv("cf_block", 8, 8, 0.5));
  block.register_module("bn", batch_norm("cf_block", 8));
  block.register_module("relu", relu("cf_block"));
  block.define(R"(
def forward(self, x):
    return self.relu.forward(self.bn.forward(self.conv.forward(x)))
)");
  torch::jit::Module model("ControlFlowNet");
  model.register_attribute("training", c10::BoolType::get(), false);
  model.register_attribute("residual", c10::BoolType::get(), true);
  model.register_attribute("repeats", c10::IntType::get(), 3);
  model.register_attribute("threshold", c10::FloatType::get(), options.threshold);
  model.register_module("block", block);
  model.register_module("up", conv("cf_up", 8, 8, 1.1));
  model.register_module("down", conv("cf_down", 8, 8, options.same_branches ? 1.1 : 2.1));
  model.register_module("step", conv_relu("cf_step", 8, 1.7));
  torch::jit::Module head("CfHead");
  head.register_parameter("weight", ramp({4, 8}, 0.3, 0.0, 0.2), false);
  head.register_parameter("bias", ramp({4}, 0.1, 0.0, 0.4), false);
  head.define(R"(
def forward(self, x):
    return torch.linear(torch.mean(x, [2, 3]), self.weight, self.bias)
)");
  model.register_module("head", head);
  torch::jit::Module stem("CfStem");
  stem.register_module("conv", conv("cf_stem3", 3, 8, 0.0));
  stem.register_module("relu", relu("cf_stem3"));
  stem.define(R"(
def forward(self, x):
    return self.relu.forward(self.conv.forward(x))
)");
  model.register_module("stem", stem);
  model.define(R"(
def forward(self, x):
    positive = float(torch.mean(x)) > self.threshold
    x = self.stem.forward(x)
    y = self.block.forward(x)
    if self.residual:
        y += x
    x = y
    if positive:
        x = self.up.forward(x)
    else:
        x = self.down.forward(x)
    for _ in range(self.repeats):
        x = self.step.forward(x)
    return self.head.forward(x)
)");
  perturb(model, options.perturbed_parameter, options.scale);
  std::string path = dir + "/" + file;
  model.save(path);
  return path;
}

std::string save_tier2_model(const std::string& dir, const std::string& file, const std::string& perturbed_parameter,
                             double scale) {
  torch::jit::Module stem("Stem");
  stem.register_module("conv", conv("stem", 3, 8, 0.0));
  stem.register_module("relu", relu("stem"));
  stem.define(R"(
def forward(self, x):
    return self.relu.forward(self.conv.forward(x))
)");
  torch::jit::Module block1("Block1");
  block1.register_module("conv", conv("block1", 8, 8, 0.5));
  block1.register_module("bn", batch_norm("block1", 8));
  block1.register_module("relu", relu("block1"));
  block1.define(R"(
def forward(self, x):
    y = self.relu.forward(self.bn.forward(self.conv.forward(x)))
    y += x
    return y
)");
  torch::jit::Module block2("Block2");
  block2.register_module("conv", conv("block2", 8, 8, 1.5));
  block2.register_module("relu", relu("block2"));
  block2.define(R"(
def forward(self, x):
    y = self.relu.forward(self.conv.forward(x))
    y += x
    return y
)");
  torch::jit::Module head("Head");
  head.register_parameter("weight", ramp({4, 8}, 0.3, 0.0, 0.2), false);
  head.register_parameter("bias", ramp({4}, 0.1, 0.0, 0.4), false);
  head.define(R"(
def forward(self, x):
    return torch.linear(torch.mean(x, [2, 3]), self.weight, self.bias)
)");
  torch::jit::Module model("Tier2Net");
  model.register_attribute("training", c10::BoolType::get(), false);
  model.register_module("stem", stem);
  model.register_module("block1", block1);
  model.register_module("block2", block2);
  model.register_module("head", head);
  model.define(R"(
def forward(self, x):
    return self.head.forward(self.block2.forward(self.block1.forward(self.stem.forward(x))))
)");
  perturb(model, perturbed_parameter, scale);
  std::string path = dir + "/" + file;
  model.save(path);
  return path;
}

}  // namespace driftgate::testing
