// Saved inputs against Python: driftgate's random inputs are exactly PyTorch's
// torch.randn/torch.rand with torch.Generator().manual_seed(seed) (docs/configuration.md says so, and a
// Python cross-check relies on it), its .npy reader reads what NumPy writes, and its
// channels_last backend is what PyTorch's module.to(memory_format=torch.channels_last) gives.
// tests/runner/saved_inputs.py writes the files first (a CTest fixture).
#include <ATen/Functions.h>
#include <gtest/gtest.h>

#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iterator>
#include <map>
#include <nlohmann/json.hpp>

#include "core/error.h"
#include "core/npy_file.h"
#include "runner/backend.h"
#include "runner/inputs.h"

namespace driftgate {
namespace {

std::string dir() {
  const char* value = std::getenv("DG_SAVED_INPUTS_DIR");
  return value ? value : "";
}

nlohmann::json manifest() {
  std::ifstream in(dir() + "/manifest.json");
  if (!in) {
    ADD_FAILURE() << "no manifest in '" << dir() << "': run tests/runner/saved_inputs.py first (ctest does)";
    return nlohmann::json::object();
  }
  return nlohmann::json::parse(in);
}

TEST(SavedInputs, RandomInputEqualsTorchRandnWithAManuallySeededGenerator) {
  const nlohmann::json cases = manifest()["random"];
  ASSERT_GE(cases.size(), 6u);
  for (const auto& item : cases) {
    RandomInput spec;
    spec.shape = item["shape"].get<std::vector<int64_t>>();
    spec.seed = item["seed"].get<uint64_t>();
    spec.distribution = item["distribution"] == "normal" ? Distribution::k_normal : Distribution::k_uniform;
    at::Tensor ours = make_random_input(spec);
    at::Tensor python = load_tensor_input(TensorInput{dir() + "/" + item["file"].get<std::string>(), spec.shape});
    ASSERT_EQ(ours.sizes(), python.sizes()) << item.dump();
    EXPECT_TRUE(at::equal(ours, python)) << item.dump() << ": max |difference| "
                                         << at::sub(ours, python).abs().max().item<float>();
  }
}

TEST(SavedInputs, ReadsWhatNumPyWrites) {
  std::ifstream raw(dir() + "/values.f32", std::ios::binary);
  std::vector<float> expected(1 * 3 * 4 * 6);
  ASSERT_TRUE(raw.read(reinterpret_cast<char*>(expected.data()), static_cast<std::streamsize>(expected.size() * 4)));
  const nlohmann::json files = manifest()["numpy"];
  ASSERT_EQ(files.size(), 4u);
  for (const auto& item : files) {
    at::Tensor tensor = load_tensor_input(TensorInput{dir() + "/" + item["file"].get<std::string>(), {}});
    EXPECT_EQ(tensor.sizes().vec(), item["shape"].get<std::vector<int64_t>>()) << item.dump();
    EXPECT_EQ(tensor.scalar_type(), at::kFloat);
    EXPECT_TRUE(tensor.is_contiguous());
    std::vector<float> values(tensor.data_ptr<float>(), tensor.data_ptr<float>() + tensor.numel());
    EXPECT_EQ(values, expected) << item.dump();
  }
  at::Tensor wide = load_tensor_input(TensorInput{dir() + "/float64.npy", {}});
  EXPECT_EQ(wide.scalar_type(), at::kDouble);
  EXPECT_TRUE(at::equal(wide.to(at::kFloat), at::from_blob(expected.data(), {1, 3, 4, 6}, at::kFloat)));
  EXPECT_THROW(load_tensor_input(TensorInput{dir() + "/fortran.npy", {}}), Error);
}

// Every dtype driftgate reads, as NumPy writes it (either byte order), fed exactly: the
// tensor's bytes are the raw little-endian bytes NumPy wrote beside it. uint16 is refused
// with the NumPy call that converts it.
TEST(SavedInputs, ReadsEveryDtypeExactly) {
  const std::map<std::string, std::string> k_torch_names = {
      {"float16", "Half"}, {"float64", "Double"}, {"int8", "Char"},  {"int16", "Short"},
      {"int32", "Int"},    {"int64", "Long"},     {"uint8", "Byte"}, {"bool", "Bool"}};
  const nlohmann::json files = manifest()["dtypes"];
  ASSERT_EQ(files.size(), 10u);
  for (const auto& item : files) {
    at::Tensor tensor = load_tensor_input(TensorInput{dir() + "/" + item["file"].get<std::string>(), {}});
    EXPECT_EQ(std::string(c10::toString(tensor.scalar_type())), k_torch_names.at(item["dtype"].get<std::string>()))
        << item.dump();
    EXPECT_EQ(tensor.sizes().vec(), item["shape"].get<std::vector<int64_t>>()) << item.dump();
    std::ifstream raw(dir() + "/" + item["raw"].get<std::string>(), std::ios::binary);
    const std::string bytes((std::istreambuf_iterator<char>(raw)), std::istreambuf_iterator<char>());
    ASSERT_EQ(bytes.size(), static_cast<size_t>(tensor.numel()) * tensor.element_size()) << item.dump();
    EXPECT_EQ(std::memcmp(bytes.data(), tensor.data_ptr(), bytes.size()), 0) << item.dump();
  }
  try {
    load_tensor_input(TensorInput{dir() + "/uint16.npy", {}});
    ADD_FAILURE() << "uint16 was read";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("holds uint16, which driftgate does not feed"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("array.astype(numpy.int64)"), std::string::npos) << e.what();
  }
}

TEST(SavedInputs, AFileChangedSinceTheConfigWasLoadedIsRefused) {
  try {
    load_tensor_input(TensorInput{dir() + "/v1.npy", {1, 3, 4, 5}});
    ADD_FAILURE() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find(
                  "changed since the config was loaded: float32 [1, 3, 4, 6], was float32 [1, 3, 4, 5]"),
              std::string::npos)
        << e.what();
  }
}

TEST(SavedInputs, ChannelsLastIsWhatPyTorchsModuleToDoes) {
  const nlohmann::json item = manifest()["channels_last"];
  ASSERT_TRUE(item.is_object());
  const BackendSpec* spec = nullptr;
  for (const BackendSpec& builtin : builtin_backends()) {
    if (builtin.name == "channels_last") {
      spec = &builtin;
    }
  }
  ASSERT_NE(spec, nullptr);
  BackendInstance instance = BackendInstance::load(
      *spec, BackendSource{"channels_last.yaml", dir() + "/" + item["model"].get<std::string>(), 1});
  // The 1x1 weight's strides are ambiguous: contiguous(ChannelsLast) would keep (8, 1, 1, 1).
  std::map<std::string, std::vector<int64_t>> strides;
  for (const auto& parameter : instance.module().named_parameters(/*recurse=*/true)) {
    if (parameter.value.dim() == 4) {
      strides[parameter.name] = parameter.value.strides().vec();
    }
  }
  EXPECT_EQ(strides, (item["weight_strides"].get<std::map<std::string, std::vector<int64_t>>>()));
  at::Tensor input = load_tensor_input(TensorInput{dir() + "/" + item["input"].get<std::string>(), {}});
  at::Tensor ours = instance.forward(input).toTensor().contiguous();
  at::Tensor python = load_tensor_input(TensorInput{dir() + "/" + item["output"].get<std::string>(), {}});
  ASSERT_EQ(ours.sizes().vec(), item["output_shape"].get<std::vector<int64_t>>());
  EXPECT_TRUE(at::equal(ours, python)) << "max |difference| " << at::sub(ours, python).abs().max().item<float>();
}

}  // namespace
}  // namespace driftgate
