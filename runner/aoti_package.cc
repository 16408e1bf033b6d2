#include "runner/aoti_package.h"

#include <ATen/core/Dict.h>
#include <ATen/core/List.h>

#include <nlohmann/json.hpp>

#include "core/error.h"
#include "runner/torch_compat.h"

namespace driftgate {
namespace {

using Json = nlohmann::json;

Json parse_spec(const std::string& spec_json) {
  Json spec = Json::parse(spec_json, nullptr, /*allow_exceptions=*/false);
  if (!spec.is_array() || spec.size() != 2 || spec[0] != 1 || !spec[1].is_object()) {
    throw Error("not a TreeSpec of protocol 1 ([1, {...}]): " + spec_json.substr(0, 200));
  }
  return spec[1];
}

const Json& children_of(const Json& node) {
  auto found = node.find("children_spec");
  if (found == node.end() || !found->is_array()) {
    throw Error("a TreeSpec node without children_spec: " + node.dump().substr(0, 200));
  }
  return *found;
}

std::string type_of(const Json& node) {
  auto type = node.find("type");
  if (type == node.end() || type->is_null()) {
    return "";
  }
  if (!type->is_string()) {
    throw Error("a TreeSpec node whose type is not a string: " + node.dump().substr(0, 200));
  }
  return type->get<std::string>();
}

std::vector<std::string> dict_keys(const Json& node, size_t children) {
  auto context = node.find("context");
  Json keys = context != node.end() && context->is_string()
                  ? Json::parse(context->get<std::string>(), nullptr, /*allow_exceptions=*/false)
                  : Json();
  if (!keys.is_array() || keys.size() != children) {
    throw Error("a dict TreeSpec whose context is not a list of its " + std::to_string(children) + " keys");
  }
  std::vector<std::string> names;
  for (const Json& key : keys) {
    if (!key.is_string()) {
      throw Error("a dict output with the key " + key.dump() + ": driftgate compares dicts with string keys only");
    }
    names.push_back(key.get<std::string>());
  }
  return names;
}

size_t count_leaves(const Json& node, int depth) {
  if (depth > 64) {
    throw Error("a TreeSpec nested deeper than 64 levels");
  }
  const std::string type = type_of(node);
  if (type.empty()) {
    return 1;
  }
  size_t leaves = 0;
  for (const Json& child : children_of(node)) {
    leaves += count_leaves(child, depth + 1);
  }
  return leaves;
}

c10::IValue build(const Json& node, const std::vector<at::Tensor>& leaves, size_t& next, int depth) {
  if (depth > 64) {
    throw Error("a TreeSpec nested deeper than 64 levels");
  }
  const std::string type = type_of(node);
  if (type.empty()) {
    if (next >= leaves.size()) {
      throw Error("the output spec has more leaves than the package's " + std::to_string(leaves.size()) + " outputs");
    }
    return leaves[next++];
  }
  const Json& children = children_of(node);
  if (type == "builtins.tuple") {
    std::vector<c10::IValue> items;
    for (const Json& child : children) {
      items.push_back(build(child, leaves, next, depth + 1));
    }
    return c10::ivalue::Tuple::create(std::move(items));
  }
  if (type == "builtins.list") {
    c10::impl::GenericList items(c10::AnyType::get());
    for (const Json& child : children) {
      items.push_back(build(child, leaves, next, depth + 1));
    }
    return items;
  }
  if (type == "builtins.dict" || type == "collections.OrderedDict") {
    const std::vector<std::string> keys = dict_keys(node, children.size());
    c10::impl::GenericDict dict(c10::StringType::get(), c10::AnyType::get());
    for (size_t i = 0; i < keys.size(); ++i) {
      dict.insert(keys[i], build(children[i], leaves, next, depth + 1));
    }
    return dict;
  }
  throw Error("an output of pytree type '" + type +
              "': driftgate rebuilds tensors, tuples, lists and dicts with string keys only");
}

}  // namespace

size_t tree_leaves(const std::string& spec_json) { return count_leaves(parse_spec(spec_json), 0); }

c10::IValue unflatten_tree(const std::string& spec_json, const std::vector<at::Tensor>& leaves) {
  size_t next = 0;
  c10::IValue tree = build(parse_spec(spec_json), leaves, next, 0);
  if (next != leaves.size()) {
    throw Error("the output spec has " + std::to_string(next) + " leaves but the package returned " +
                std::to_string(leaves.size()) + " outputs");
  }
  return tree;
}

AotiPackage::AotiPackage(const std::string& path) {
  try {
    m_loader = std::make_unique<torch_compat::AotiLoader>(path);
  } catch (const std::exception& e) {
    throw Error("AOTInductor package '" + path + "' cannot be loaded: " + e.what());
  }
  const std::vector<std::string> spec = m_loader->call_spec();
  if (spec.size() != 2) {
    throw Error("AOTInductor package '" + path +
                "' has no call spec (inputs and outputs); compile it with "
                "torch._inductor.aoti_compile_and_package from torch.export.export");
  }
  try {
    if (size_t inputs = tree_leaves(spec[0]); inputs != 1) {
      throw Error("it takes " + std::to_string(inputs) + " tensors; driftgate feeds one (the input tensor)");
    }
    tree_leaves(spec[1]);
  } catch (const Error& e) {
    throw Error("AOTInductor package '" + path + "': " + e.what());
  }
  m_out_spec = spec[1];
}

AotiPackage::~AotiPackage() = default;

c10::IValue AotiPackage::run(const at::Tensor& input) { return unflatten_tree(m_out_spec, m_loader->run({input})); }

}  // namespace driftgate
