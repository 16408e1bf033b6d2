// The aoti backend's output tree: torch.utils._pytree TreeSpecs written here by hand in the
// format treespec_dumps gives (protocol 1; the dict one is what torch 2.6 wrote for a model
// returning {"logits": ..., "mask": ...}), rebuilt over numbered leaves.
#include "runner/aoti_package.h"

#include <ATen/Functions.h>
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "core/error.h"

namespace driftgate {
namespace {

const char* const k_leaf = R"({"type": null, "context": null, "children_spec": []})";

std::vector<at::Tensor> numbered(int count) {
  std::vector<at::Tensor> leaves;
  for (int i = 0; i < count; ++i) {
    leaves.push_back(at::full({1}, static_cast<double>(i)));
  }
  return leaves;
}

double value_of(const c10::IValue& leaf) { return leaf.toTensor().item<double>(); }

TEST(AotiOutputTree, OneTensorIsTheLeafItself) {
  const std::string spec = std::string("[1, ") + k_leaf + "]";
  EXPECT_EQ(tree_leaves(spec), 1u);
  c10::IValue tree = unflatten_tree(spec, numbered(1));
  ASSERT_TRUE(tree.isTensor());
  EXPECT_EQ(value_of(tree), 0.0);
}

TEST(AotiOutputTree, DictKeysInTheSpecsOrder) {
  const std::string spec = std::string(R"([1, {"type": "builtins.dict", "context": "[\"logits\", \"mask\"]", )") +
                           R"("children_spec": [)" + k_leaf + ", " + k_leaf + "]}]";
  c10::IValue tree = unflatten_tree(spec, numbered(2));
  ASSERT_TRUE(tree.isGenericDict());
  c10::impl::GenericDict dict = tree.toGenericDict();
  ASSERT_EQ(dict.size(), 2u);
  EXPECT_EQ(value_of(dict.at("logits")), 0.0);
  EXPECT_EQ(value_of(dict.at("mask")), 1.0);
  EXPECT_EQ(dict.begin()->key().toStringRef(), "logits");
}

TEST(AotiOutputTree, NestedTupleListAndDictTakeLeavesDepthFirst) {
  // (a, [b, c], {"x": d})
  const std::string spec = std::string(R"([1, {"type": "builtins.tuple", "context": "null", "children_spec": [)") +
                           k_leaf + R"(, {"type": "builtins.list", "context": "null", "children_spec": [)" + k_leaf +
                           ", " + k_leaf + R"(]}, {"type": "collections.OrderedDict", "context": "[\"x\"]", )" +
                           R"("children_spec": [)" + k_leaf + "]}]}]";
  EXPECT_EQ(tree_leaves(spec), 4u);
  c10::IValue tree = unflatten_tree(spec, numbered(4));
  ASSERT_TRUE(tree.isTuple());
  const auto& items = tree.toTupleRef().elements();
  ASSERT_EQ(items.size(), 3u);
  EXPECT_EQ(value_of(items[0]), 0.0);
  c10::List<c10::IValue> list = items[1].toList();
  ASSERT_EQ(list.size(), 2u);
  EXPECT_EQ(value_of(list.get(0)), 1.0);
  EXPECT_EQ(value_of(list.get(1)), 2.0);
  EXPECT_EQ(value_of(items[2].toGenericDict().at("x")), 3.0);
}

TEST(AotiOutputTree, WhatDoesNotFitIsRefusedSayingWhat) {
  const std::string one = std::string("[1, ") + k_leaf + "]";
  auto message = [](const std::string& spec, int leaves) {
    try {
      unflatten_tree(spec, numbered(leaves));
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_EQ(message(one, 2), "the output spec has 1 leaves but the package returned 2 outputs");
  EXPECT_EQ(message(one, 0), "the output spec has more leaves than the package's 0 outputs");
  EXPECT_NE(message("[2, {}]", 1).find("not a TreeSpec of protocol 1"), std::string::npos);
  EXPECT_NE(message("not json", 1).find("not a TreeSpec of protocol 1"), std::string::npos);
  const std::string named = std::string(R"([1, {"type": "collections.namedtuple", "context": "x", )") +
                            R"("children_spec": [)" + k_leaf + "]}]";
  EXPECT_EQ(message(named, 1),
            "an output of pytree type 'collections.namedtuple': driftgate rebuilds tensors, tuples, lists and "
            "dicts with string keys only");
  const std::string int_keys =
      std::string(R"([1, {"type": "builtins.dict", "context": "[1]", "children_spec": [)") + k_leaf + "]}]";
  EXPECT_EQ(message(int_keys, 1), "a dict output with the key 1: driftgate compares dicts with string keys only");
  std::string deep = k_leaf;
  for (int i = 0; i < 70; ++i) {
    deep = std::string(R"({"type": "builtins.tuple", "context": "null", "children_spec": [)") + deep + "]}";
  }
  EXPECT_EQ(message("[1, " + deep + "]", 1), "a TreeSpec nested deeper than 64 levels");
}

}  // namespace
}  // namespace driftgate
