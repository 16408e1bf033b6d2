#include "runner/tier2_capture.h"

#include <torch/csrc/jit/api/function_impl.h>
#include <torch/csrc/jit/passes/inliner.h>

#include <algorithm>
#include <cctype>
#include <cstring>
#include <set>
#include <unordered_map>
#include <utility>

#include "core/error.h"
#include "runner/backend.h"
#include "runner/torch_compat.h"

namespace driftgate {
namespace {

using torch::jit::Graph;
using torch::jit::Node;
using torch::jit::Value;

bool is_tensor(const Value* value) { return value->type()->cast<c10::TensorType>() != nullptr; }

// Nodes whose tensor outputs are parameters or constants, not activations.
bool produces_activation(const Node* node) {
  return node->kind() != c10::prim::Constant && node->kind() != c10::prim::GetAttr && node->kind() != c10::prim::Param;
}

// The values of `graph`'s top-level block that depend on the forward's input.
std::set<const Value*> input_dependent(const Graph& graph) {
  std::set<const Value*> dependent{graph.inputs()[1]};
  for (const Node* node : graph.block()->nodes()) {
    const bool reads = std::any_of(node->inputs().begin(), node->inputs().end(),
                                   [&](const Value* input) { return dependent.count(input) != 0; });
    if (reads) {
      dependent.insert(node->outputs().begin(), node->outputs().end());
    }
  }
  return dependent;
}

// The capturable values of a graph's top-level block, in graph order: the tensors
// that depend on the forward's input (not constants, nor weights a pass prepacked).
std::vector<Value*> capturable_values(Graph& graph) {
  const std::set<const Value*> dependent = input_dependent(graph);
  std::vector<Value*> values;
  for (Node* node : graph.block()->nodes()) {
    if (!produces_activation(node)) {
      continue;
    }
    for (Value* output : node->outputs()) {
      if (is_tensor(output) && dependent.count(output) != 0) {
        values.push_back(output);
      }
    }
  }
  return values;
}

// The module instances on the node's inlined callstack, outermost first. "SELF" is
// what some passes name the module the graph belongs to: not a path component.
std::vector<std::string> instance_names(const Node* node) {
  std::vector<std::string> names;
  if (auto callstack = node->callstack()) {
    for (const auto& entry : (*callstack)->vec()) {
      const auto& instance = std::get<2>(entry);
      if (instance && !instance->instance_name().empty() && instance->instance_name() != "SELF") {
        names.push_back(instance->instance_name());
      }
    }
  }
  return names;
}

// "layer1.0.relu" from the module instances on the node's inlined callstack.
std::string module_path(const Node* node) {
  std::string path;
  for (const std::string& name : instance_names(node)) {
    path += (path.empty() ? "" : ".") + name;
  }
  return path;
}

// "activation.py:8:11": a source range's file (last component), line and column.
std::string location_of(const torch::jit::SourceRange& range) {
  auto location = range.file_line_col();
  if (!location || std::get<0>(*location).empty()) {
    return "";
  }
  const std::string& file = std::get<0>(*location);
  return file.substr(file.find_last_of('/') == std::string::npos ? 0 : file.find_last_of('/') + 1) + ":" +
         std::to_string(std::get<1>(*location)) + ":" + std::to_string(std::get<2>(*location));
}

// "layer1@resnet.py:30:8/0@container.py:12:8/relu@resnet.py:52:12": the callstack's
// module instances with their call sites; "" without a callstack.
std::string callstack_of(const Node* node) {
  std::string text;
  if (auto callstack = node->callstack()) {
    for (const auto& entry : (*callstack)->vec()) {
      const auto& instance = std::get<2>(entry);
      text += (text.empty() ? "" : "/") + (instance ? instance->instance_name() : std::string("?")) + "@" +
              location_of(std::get<1>(entry));
    }
  }
  return text;
}

// " (conv.py:459)": the original source line, when the model kept its debug info.
std::string source_of(const Node* node) {
  const torch::jit::SourceRange& range = node->sourceRange();
  auto generated = range.findSourceRangeThatGenerated();
  auto location = (generated ? *generated : range).file_line_col();
  if (!location) {
    return "";
  }
  std::string file = std::get<0>(*location);
  if (file.empty()) {
    return "";
  }
  file = file.substr(file.find_last_of('/') == std::string::npos ? 0 : file.find_last_of('/') + 1);
  return " (" + file + ":" + std::to_string(std::get<1>(*location)) + ")";
}

// The op an in-place or oneDNN layout variant stands for: "aten::relu_" and
// "aten::relu" -> "relu", "prim::MKLDNNHardSwish_" -> "hardswish",
// "prim::mkldnn_convolution" and "aten::_convolution" -> "convolution".
std::string normalized_op(c10::Symbol kind) {
  std::string name = kind.toUnqualString();
  std::string lower;
  for (char c : name) {
    lower += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  }
  for (const char* prefix : {"mkldnn_", "mkldnn"}) {
    if (lower.rfind(prefix, 0) == 0 && lower.size() > std::strlen(prefix)) {
      lower = lower.substr(std::strlen(prefix));
      break;
    }
  }
  while (lower.size() > 1 && lower.back() == '_') {
    lower.pop_back();
  }
  while (lower.size() > 1 && lower.front() == '_') {
    lower.erase(lower.begin());  // aten::_convolution and prim::mkldnn_convolution
  }
  return lower;
}

// Layout conversions that graph passes insert: the same values in another layout. And the
// dtype casts a backend's float32_modules inserts around the listed modules' calls
// (runner/backend.cc, marked by their source range): the same values in another dtype,
// which tier 2 compares as float64 anyway.
bool is_layout_conversion(const Node* node) {
  static const std::set<std::string> conversions{"aten::to_mkldnn", "aten::to_dense", "prim::BroadcastMKLDNNTensors",
                                                 "aten::contiguous"};
  if (node->kind() == c10::aten::to && !node->callstack()) {
    auto location = node->sourceRange().file_line_col();
    return location && std::get<0>(*location) == k_float32_modules_source;
  }
  return conversions.count(node->kind().toQualString()) != 0 && !node->callstack();
}

// FNV-1a over bytes, for the signature of a node's constant inputs.
class Fnv {
 public:
  void add(const void* data, size_t size) {
    const auto* bytes = static_cast<const unsigned char*>(data);
    for (size_t i = 0; i < size; ++i) {
      m_hash = (m_hash ^ bytes[i]) * 1099511628211ULL;
    }
  }
  void add(const std::string& text) { add(text.data(), text.size() + 1); }
  template <typename T>
  void add_value(T value) {
    add(&value, sizeof value);
  }
  uint64_t hash() const { return m_hash; }

 private:
  uint64_t m_hash = 1469598103934665603ULL;
};

// Hashes what a node input that does not depend on the forward's input holds:
// constants, module attributes (parameters) read through GetAttr chains, lists of
// those and oneDNN constant tensors. False when it cannot be read (a packed
// context, a value computed by another op): the caller makes the signature unique.
class ConstantHasher {
 public:
  ConstantHasher(const Graph& graph, const torch::jit::Module& module) : m_graph(graph), m_module(module) {}

  // Adds the value's hash to `fnv` and the shapes of its weight tensors to `shapes`.
  bool add(const Value* value, Fnv& fnv, std::vector<std::vector<int64_t>>& shapes) {
    std::optional<c10::IValue> constant = evaluate(value, 0);
    m_shapes = &shapes;
    return constant && add_ivalue(*constant, fnv, 0);
  }

 private:
  std::optional<c10::IValue> evaluate(const Value* value, int depth) {
    if (depth > 16) {
      return std::nullopt;
    }
    if (value == m_graph.inputs()[0]) {
      return m_module._ivalue();
    }
    const Node* node = value->node();
    if (node->kind() == c10::prim::Constant) {
      return torch::jit::toIValue(value);
    }
    if (node->kind() == c10::prim::GetAttr) {
      std::optional<c10::IValue> owner = evaluate(node->input(), depth + 1);
      if (!owner || !owner->isObject()) {
        return std::nullopt;
      }
      return owner->toObject()->getAttr(node->s(c10::attr::name));
    }
    if (node->hasAttribute(c10::attr::value) && node->inputs().empty() && node->outputs().size() == 1) {
      // prim::ConstantMKLDNNTensor and other constant-like nodes holding a tensor.
      if (node->kindOf(c10::attr::value) == torch::jit::AttributeKind::t) {
        return c10::IValue(node->t(c10::attr::value));
      }
      if (node->kindOf(c10::attr::value) == torch::jit::AttributeKind::ival) {
        return node->ival(c10::attr::value);
      }
      return std::nullopt;
    }
    if (node->kind() == c10::prim::ListConstruct || node->kind() == c10::prim::TupleConstruct) {
      std::vector<c10::IValue> items;
      for (const Value* input : node->inputs()) {
        std::optional<c10::IValue> item = evaluate(input, depth + 1);
        if (!item) {
          return std::nullopt;
        }
        items.push_back(*item);
      }
      return c10::ivalue::Tuple::create(std::move(items));
    }
    return std::nullopt;
  }

  bool add_ivalue(const c10::IValue& value, Fnv& fnv, int depth) {
    if (depth > 16) {
      return false;
    }
    if (value.isTensor()) {
      return add_tensor(value.toTensor(), fnv);
    }
    if (value.isNone()) {
      fnv.add("none");
      return true;
    }
    if (value.isInt()) {
      fnv.add("int");
      fnv.add_value(value.toInt());
      return true;
    }
    if (value.isDouble()) {
      fnv.add("double");
      fnv.add_value(value.toDouble());
      return true;
    }
    if (value.isBool()) {
      fnv.add("bool");
      fnv.add_value(value.toBool());
      return true;
    }
    if (value.isString()) {
      fnv.add("string");
      fnv.add(value.toStringRef());
      return true;
    }
    if (value.isDevice()) {
      fnv.add("device");
      fnv.add(value.toDevice().str());
      return true;
    }
    if (value.isList() || value.isTuple()) {
      const std::vector<c10::IValue> items =
          value.isList() ? value.toListRef().vec() : value.toTupleRef().elements().vec();
      fnv.add("list");
      fnv.add_value(items.size());
      for (const c10::IValue& item : items) {
        if (!add_ivalue(item, fnv, depth + 1)) {
          return false;
        }
      }
      return true;
    }
    if (value.isObject()) {
      // A packed context (XNNPACK's Conv2dOpContext, LinearOpContext: TorchBind classes)
      // serializes into its weight, bias and settings; any other object is unreadable.
      torch::jit::Function* unpack = value.toObject()->type()->findMethod("__getstate__");
      if (unpack == nullptr || !value.isCustomClass()) {
        return false;
      }
      std::vector<c10::IValue> stack{value};
      unpack->run(stack);
      fnv.add("packed");
      return !stack.empty() && add_ivalue(stack.back(), fnv, depth + 1);
    }
    return false;
  }

  bool add_tensor(const at::Tensor& tensor, Fnv& fnv) {
    if (!tensor.defined()) {
      fnv.add("undefined");
      return true;
    }
    at::Tensor dense = tensor.is_mkldnn() ? tensor.to_dense() : tensor;
    if (!dense.device().is_cpu()) {
      dense = dense.cpu();
    }
    dense = dense.contiguous();
    if (dense.dim() >= 2 && m_shapes != nullptr) {
      m_shapes->push_back(dense.sizes().vec());
    }
    fnv.add("tensor");
    fnv.add(std::string(c10::toString(dense.scalar_type())));
    for (int64_t size : dense.sizes()) {
      fnv.add_value(size);
    }
    fnv.add(dense.data_ptr(), dense.nbytes());
    return true;
  }

  const Graph& m_graph;
  const torch::jit::Module& m_module;
  std::vector<std::vector<int64_t>>* m_shapes = nullptr;
};

// Sets the point's signature (its op, input count and constant inputs; unique, salted
// by `salt`, when a constant input cannot be read) and weight shapes.
void describe_constants(const Node* node, const std::set<const Value*>& dependent, ConstantHasher& hasher,
                        uint64_t salt, CapturePoint& point) {
  Fnv fnv;
  fnv.add(normalized_op(node->kind()));
  fnv.add_value(node->inputs().size());
  fnv.add_value(node->outputs().size());
  for (const Value* input : node->inputs()) {
    if (dependent.count(input) != 0) {
      fnv.add("activation");
    } else if (!hasher.add(input, fnv, point.weight_shapes)) {
      fnv.add("unreadable");
      fnv.add_value(salt);
    }
  }
  point.signature = fnv.hash();
}

// Autocast off for one scope: graphs copied under autocast carry its cast nodes.
class NoAutocast {
 public:
  NoAutocast() : m_was(torch_compat::cpu_autocast_enabled()) { torch_compat::set_cpu_autocast_enabled(false); }
  ~NoAutocast() { torch_compat::set_cpu_autocast_enabled(m_was); }
  NoAutocast(const NoAutocast&) = delete;
  NoAutocast& operator=(const NoAutocast&) = delete;

 private:
  bool m_was;
};

at::Tensor dense(const c10::IValue& value) {
  at::Tensor tensor = value.toTensor();
  return tensor.is_mkldnn() ? tensor.to_dense() : tensor;
}

}  // namespace

CaptureGraph::CaptureGraph(const torch::jit::Module& module) : m_module(module) {
  NoAutocast no_autocast;
  auto method = module.find_method("forward");
  if (!method) {
    throw Error("tier 2: the module has no forward method to capture");
  }
  m_graph = method->graph()->copy();
  torch::jit::Inline(*m_graph);
  if (m_graph->inputs().size() != 2) {
    throw Error("tier 2: forward takes " + std::to_string(m_graph->inputs().size() - 1) +
                " arguments; activation capture supports one input tensor");
  }
  const std::set<const Value*> dependent = input_dependent(*m_graph);
  ConstantHasher hasher(*m_graph, m_module);
  std::map<std::string, int> occurrences;  // "module/kind" -> count so far
  for (Value* value : capturable_values(*m_graph)) {
    const Node* node = value->node();
    CapturePoint point;
    point.kind = node->kind().toQualString();
    point.op = normalized_op(node->kind());
    point.module = module_path(node);
    point.callstack = callstack_of(node);
    point.source = location_of(node->sourceRange());
    describe_constants(node, dependent, hasher, m_points.size(), point);
    point.layout = is_layout_conversion(node);
    point.output =
        static_cast<size_t>(std::find(node->outputs().begin(), node->outputs().end(), value) - node->outputs().begin());
    const int n = ++occurrences[point.module + "/" + point.kind];
    point.name =
        (point.module.empty() ? "" : point.module + "/") + point.kind + "#" + std::to_string(n) + source_of(node);
    m_point_of[value] = m_points.size();
    m_values.push_back(value);
    m_points.push_back(std::move(point));
  }
  const std::function<bool(size_t)> every_point = [](size_t) { return true; };
  for (size_t p = 0; p < m_points.size(); ++p) {
    m_points[p].predecessors = group_inputs(p, every_point, &m_points[p].reads_graph_input);
  }
}

std::vector<size_t> CaptureGraph::group_inputs(size_t point, const std::function<bool(size_t)>& cut,
                                               bool* reads_graph_input) const {
  std::set<size_t> found;
  bool graph_input = false;
  std::set<const Value*> seen;
  std::function<void(const Value*)> visit = [&](const Value* value) {
    if (!seen.insert(value).second) {
      return;
    }
    if (auto it = m_point_of.find(value); it != m_point_of.end() && cut(it->second)) {
      found.insert(it->second);
      return;
    }
    if (value == m_graph->inputs()[1]) {
      graph_input = true;
      return;
    }
    for (const Value* input : value->node()->inputs()) {
      visit(input);
    }
  };
  for (const Value* input : m_values.at(point)->node()->inputs()) {
    visit(input);
  }
  if (reads_graph_input != nullptr) {
    *reads_graph_input = graph_input;
  }
  return {found.begin(), found.end()};
}

Capture CaptureGraph::run(const at::Tensor& input, const std::vector<size_t>& wanted) const {
  std::shared_ptr<torch::jit::GraphFunction>& function = m_functions[wanted];
  if (!function) {
    function = build_function(wanted);
  }
  std::vector<c10::IValue> stack{m_module._ivalue(), input};
  function->run(stack);
  const auto& elements = stack.at(0).toTupleRef().elements();
  Capture capture;
  capture.output = elements[0];
  for (size_t i = 0; i < wanted.size(); ++i) {
    if (elements[i + 1].toTensor().is_mkldnn()) {
      capture.opaque.insert(wanted[i]);
    }
    capture.values[wanted[i]] = dense(elements[i + 1]);
  }
  return capture;
}

std::shared_ptr<torch::jit::GraphFunction> CaptureGraph::build_function(const std::vector<size_t>& wanted) const {
  std::shared_ptr<Graph> graph = m_graph->copy();
  std::vector<Value*> values = capturable_values(*graph);
  Value* none = nullptr;
  {
    torch::jit::WithInsertPoint at_start(graph->block()->nodes().front());
    none = graph->insertConstant(c10::IValue());
  }
  std::vector<Value*> clones;
  for (size_t index : wanted) {
    Value* value = values.at(index);
    torch::jit::WithInsertPoint after(value->node()->next());
    Node* clone = graph->create(c10::aten::clone, {value, none});
    clone->output()->setType(value->type());
    graph->insertNode(clone);
    clones.push_back(clone->output());
  }
  std::vector<Value*> returned{graph->outputs()[0]};
  returned.insert(returned.end(), clones.begin(), clones.end());
  Node* tuple = graph->createTuple(returned);
  graph->appendNode(tuple);
  graph->eraseOutput(0);
  graph->registerOutput(tuple->output());
  return std::make_shared<torch::jit::GraphFunction>("driftgate_tier2_capture", graph, nullptr);
}

at::Tensor CaptureGraph::run_group(size_t point, const std::function<bool(size_t)>& cut,
                                   const std::function<at::Tensor(std::optional<size_t>)>& tensor_input) const {
  auto graph = std::make_shared<Graph>();
  std::unordered_map<const Value*, Value*> env;
  std::vector<c10::IValue> stack{m_module._ivalue()};
  env[m_graph->inputs()[0]] = graph->addInput()->setType(m_graph->inputs()[0]->type());
  std::function<Value*(Value*)> map_value = [&](Value* value) -> Value* {
    if (auto it = env.find(value); it != env.end()) {
      return it->second;
    }
    auto point_it = m_point_of.find(value);
    const bool cut_here = point_it != m_point_of.end() && cut(point_it->second);
    if (cut_here || value == m_graph->inputs()[1]) {
      Value* input = graph->addInput()->setType(value->type());
      stack.emplace_back(tensor_input(cut_here ? std::optional<size_t>(point_it->second) : std::nullopt));
      return env[value] = input;
    }
    Node* node = value->node();
    if (node->kind() == c10::prim::Param || !node->blocks().empty()) {
      throw Error("tier 2: cannot re-run '" + m_points[point].name + "' on its own: an input comes from " +
                  (node->kind() == c10::prim::Param ? "an extra graph input" : "control flow"));
    }
    Node* copy = graph->createClone(node, map_value);
    graph->appendNode(copy);
    for (size_t i = 0; i < node->outputs().size(); ++i) {
      env[node->output(i)] = copy->output(i);
    }
    return env.at(value);
  };
  Value* target = m_values.at(point);
  Node* copy = graph->createClone(target->node(), map_value);
  graph->appendNode(copy);
  size_t offset = std::find(target->node()->outputs().begin(), target->node()->outputs().end(), target) -
                  target->node()->outputs().begin();
  graph->registerOutput(copy->output(offset));
  torch::jit::GraphFunction function("driftgate_tier2_reinject", graph, nullptr);
  function.run(stack);
  return dense(stack.at(0));
}

}  // namespace driftgate
