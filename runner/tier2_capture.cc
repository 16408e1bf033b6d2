#include "runner/tier2_capture.h"

#include <torch/csrc/jit/api/function_impl.h>
#include <torch/csrc/jit/passes/inliner.h>
#include <torch/csrc/jit/runtime/custom_operator.h>

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

using torch::jit::Block;
using torch::jit::Graph;
using torch::jit::Node;
using torch::jit::Value;

bool is_tensor(const Value* value) { return value->type()->cast<c10::TensorType>() != nullptr; }

bool is_control_flow(const Node* node) { return node->kind() == c10::prim::If || node->kind() == c10::prim::Loop; }

// Nodes whose tensor outputs are parameters or constants, not activations; and prim::If and
// prim::Loop, whose outputs are values their blocks computed.
bool produces_activation(const Node* node) {
  return node->kind() != c10::prim::Constant && node->kind() != c10::prim::GetAttr &&
         node->kind() != c10::prim::Param && !is_control_flow(node);
}

// Nodes that run code tier 2 cannot walk into: an asynchronous fork's subgraph, a closure.
bool hides_code(const Node* node) {
  return node->hasAttribute(c10::attr::Subgraph) || (!node->blocks().empty() && !is_control_flow(node));
}

// Every node of `block` and of the blocks inside it, in graph order: a node before the
// nodes of its blocks, an `if`'s first block before its second.
void nodes_in_order(Block* block, std::vector<Node*>& nodes) {
  for (Node* node : block->nodes()) {
    nodes.push_back(node);
    for (Block* inner : node->blocks()) {
      nodes_in_order(inner, nodes);
    }
  }
}

void mark_dependent(const Block* block, std::set<const Value*>& dependent);

bool depends(const std::set<const Value*>& dependent, const Value* value) { return dependent.count(value) != 0; }

// One pass over `block`: a node's outputs depend on the forward's input when one of its
// inputs does; an `if`'s or a loop's when the values its blocks give them do, or what
// decides the control flow does. A loop's carried values may depend on the input only
// through an earlier iteration: input_dependent() repeats the passes until nothing changes.
void mark_dependent(const Block* block, std::set<const Value*>& dependent) {
  for (const Node* node : block->nodes()) {
    const bool reads = std::any_of(node->inputs().begin(), node->inputs().end(),
                                   [&](const Value* input) { return depends(dependent, input); });
    if (node->kind() == c10::prim::Loop) {
      // Node inputs: [trip count, condition, initial carried...]; body inputs: [iteration,
      // carried...]; body outputs: [condition, carried...]; node outputs: [carried...].
      const Block* body = node->blocks()[0];
      for (size_t i = 1; i < body->inputs().size(); ++i) {
        if (depends(dependent, node->inputs()[i + 1]) || depends(dependent, body->outputs()[i])) {
          dependent.insert(body->inputs()[i]);
        }
      }
      mark_dependent(body, dependent);
      const bool decided_by_input = depends(dependent, node->inputs()[0]) || depends(dependent, node->inputs()[1]) ||
                                    depends(dependent, body->outputs()[0]);
      for (size_t i = 0; i < node->outputs().size(); ++i) {
        if (decided_by_input || depends(dependent, node->inputs()[i + 2]) ||
            depends(dependent, body->outputs()[i + 1])) {
          dependent.insert(node->outputs()[i]);
        }
      }
      continue;
    }
    bool from_blocks = false;
    for (const Block* inner : node->blocks()) {
      mark_dependent(inner, dependent);
      from_blocks = from_blocks || std::any_of(inner->outputs().begin(), inner->outputs().end(),
                                               [&](const Value* output) { return depends(dependent, output); });
    }
    if (node->kind() == c10::prim::If) {
      for (size_t i = 0; i < node->outputs().size(); ++i) {
        const bool returned = std::any_of(node->blocks().begin(), node->blocks().end(),
                                          [&](const Block* inner) { return depends(dependent, inner->outputs()[i]); });
        if (reads || returned) {
          dependent.insert(node->outputs()[i]);
        }
      }
    } else if (reads || from_blocks) {
      dependent.insert(node->outputs().begin(), node->outputs().end());
    }
  }
}

// The values of `graph`, in every block, that depend on the forward's input.
std::set<const Value*> input_dependent(const Graph& graph) {
  std::set<const Value*> dependent(graph.inputs().begin() + 1, graph.inputs().end());
  size_t before = 0;
  do {
    before = dependent.size();
    mark_dependent(graph.block(), dependent);
  } while (dependent.size() != before);
  return dependent;
}

// The values defined outside `block` that its nodes (and the nodes of the blocks inside
// them) read: what running the block needs from outside.
void free_values(const Block* block, std::vector<const Value*>& values) {
  auto defined_inside = [&](const Value* value) {
    for (const Block* owner = value->node()->owningBlock(); owner != nullptr;
         owner = owner->owningNode() != nullptr ? owner->owningNode()->owningBlock() : nullptr) {
      if (owner == block) {
        return true;
      }
    }
    return false;
  };
  std::vector<const Node*> nodes;
  std::function<void(const Block*)> walk = [&](const Block* inner) {
    for (const Node* node : inner->nodes()) {
      nodes.push_back(node);
      for (const Block* nested : node->blocks()) {
        walk(nested);
      }
    }
    nodes.push_back(inner->return_node());
  };
  walk(block);
  for (const Node* node : nodes) {
    for (const Value* input : node->inputs()) {
      if (!defined_inside(input)) {
        values.push_back(input);
      }
    }
  }
}

// The values `value` is computed from: its node's inputs; for an `if`'s or a loop's output
// also every value its blocks read from outside (run_group copies such a node whole, both
// branches), among them what each branch returns there; for a value a loop carries into its
// body, the initial value and, with `through_loops`, what the body returned at the end of
// the previous iteration (without it every source is earlier in graph order).
std::vector<const Value*> sources_of(const Value* value, bool through_loops) {
  const Node* node = value->node();
  std::vector<const Value*> sources(node->inputs().begin(), node->inputs().end());
  if (node->kind() == c10::prim::Param && node->owningBlock() != nullptr &&
      node->owningBlock()->owningNode() != nullptr && node->owningBlock()->owningNode()->kind() == c10::prim::Loop) {
    const Node* loop = node->owningBlock()->owningNode();
    const size_t i = value->offset();
    sources.push_back(loop->inputs()[i == 0 ? 0 : i + 1]);  // the trip count, or the initial carried value
    if (through_loops && i > 0) {
      sources.push_back(node->owningBlock()->outputs()[i]);
    }
    return sources;
  }
  if (node->kind() == c10::prim::If) {
    for (const Block* inner : node->blocks()) {
      sources.push_back(inner->outputs()[value->offset()]);
      free_values(inner, sources);
    }
  } else if (node->kind() == c10::prim::Loop) {
    sources.push_back(node->blocks()[0]->outputs()[value->offset() + 1]);
    free_values(node->blocks()[0], sources);
  }
  return sources;
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

// The last component of a source file's path.
std::string file_name(const std::string& path) {
  return path.substr(path.find_last_of('/') == std::string::npos ? 0 : path.find_last_of('/') + 1);
}

// "activation.py:8:11": a source range's file (last component), line and column.
std::string location_of(const torch::jit::SourceRange& range) {
  auto location = range.file_line_col();
  if (!location || std::get<0>(*location).empty()) {
    return "";
  }
  return file_name(std::get<0>(*location)) + ":" + std::to_string(std::get<1>(*location)) + ":" +
         std::to_string(std::get<2>(*location));
}

// "conv.py:459": the node's original source line (the range that generated it, when a
// pass made it), "" when the model kept no debug info.
std::string source_line_of(const Node* node) {
  const torch::jit::SourceRange& range = node->sourceRange();
  auto generated = range.findSourceRangeThatGenerated();
  auto location = (generated ? *generated : range).file_line_col();
  if (!location || std::get<0>(*location).empty()) {
    return "";
  }
  return file_name(std::get<0>(*location)) + ":" + std::to_string(std::get<1>(*location));
}

// One module call on a node's callstack: its callstack text up to and including it, and
// its module path.
struct CallOnStack {
  std::string callstack;
  std::string path;
};

// The callstack's text ("layer1@resnet.py:30:8/0@container.py:12:8/relu@resnet.py:52:12":
// every entry, a function's as "?") and the module calls on it, outermost first.
std::string callstack_of(const Node* node, std::vector<CallOnStack>* calls = nullptr) {
  std::string text;
  std::string path;
  if (auto callstack = node->callstack()) {
    for (const auto& entry : (*callstack)->vec()) {
      const auto& instance = std::get<2>(entry);
      text += (text.empty() ? "" : "/") + (instance ? instance->instance_name() : std::string("?")) + "@" +
              location_of(std::get<1>(entry));
      if (instance && !instance->instance_name().empty() && instance->instance_name() != "SELF") {
        path += (path.empty() ? "" : ".") + instance->instance_name();
        if (calls != nullptr) {
          calls->push_back({text, path});
        }
      }
    }
  }
  return text;
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

// "<module>/<op kind>#<n> (<file>:<line>)<branch>".
std::string name_of(const CapturePoint& point, int n) {
  return (point.module.empty() ? "" : point.module + "/") + point.kind + "#" + std::to_string(n) +
         (point.line.empty() ? "" : " (" + point.line + ")") + point.branch;
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

// What the recording op of the capture forward running on this thread writes into.
struct Recorder {
  const std::vector<CapturePoint>& points;
  const std::set<Execution>& wanted;
  ValueLayout layout;
  Capture& capture;
  std::vector<size_t> call_runs;  // per module call: how many runs have started
};

thread_local Recorder* t_recorder = nullptr;

// Sets the thread's recorder for one forward, and clears it however the forward ends.
class RecordInto {
 public:
  explicit RecordInto(Recorder& recorder) : m_was(t_recorder) { t_recorder = &recorder; }
  ~RecordInto() { t_recorder = m_was; }
  RecordInto(const RecordInto&) = delete;
  RecordInto& operator=(const RecordInto&) = delete;

 private:
  Recorder* m_was;
};

// driftgate::tier2_record(Tensor? value, int event): event >= 0 is a point that just
// produced `value`, event < 0 is the start of a run of module call -event - 1 (value None).
// Outside a capture forward (no recorder) it does nothing.
void record(torch::jit::Stack& stack) {
  const int64_t event = stack.back().toInt();
  stack.pop_back();
  const c10::IValue value = std::move(stack.back());
  stack.pop_back();
  Recorder* recorder = t_recorder;
  if (recorder == nullptr) {
    return;
  }
  if (event < 0) {
    ++recorder->call_runs.at(static_cast<size_t>(-event - 1));
    return;
  }
  const auto point = static_cast<size_t>(event);
  Trace& trace = recorder->capture.trace;
  const Execution execution{point, trace.runs.at(point)++};
  trace.executions.push_back(execution);
  std::vector<size_t> runs;
  for (size_t call : recorder->points[point].calls) {
    runs.push_back(recorder->call_runs[call] == 0 ? 0 : recorder->call_runs[call] - 1);
  }
  trace.call_runs.push_back(std::move(runs));
  if (recorder->wanted.count(execution) == 0 || !value.isTensor()) {
    return;
  }
  const at::Tensor& tensor = value.toTensor();
  if (tensor.is_mkldnn()) {
    recorder->capture.opaque.insert(execution);
  }
  recorder->capture.values[execution] =
      tensor.is_mkldnn() && recorder->layout == ValueLayout::k_dense ? tensor.to_dense() : tensor.clone();
}

// Side effects (CONSERVATIVE alias analysis): no graph pass removes it or moves a write
// across it, so it sees each value as its node produced it.
const torch::jit::RegisterOperators k_register_record({torch::jit::Operator(
    "driftgate::tier2_record(Tensor? value, int event) -> ()", [](torch::jit::Stack& stack) { record(stack); },
    c10::AliasAnalysisKind::CONSERVATIVE)});

const c10::Symbol k_record = c10::Symbol::fromQualString("driftgate::tier2_record");

}  // namespace

std::vector<std::string> execution_names(const std::vector<CapturePoint>& points, const Trace& trace) {
  std::map<std::string, int> occurrences;  // "module/kind" -> runs so far
  std::vector<std::string> names;
  names.reserve(trace.executions.size());
  for (const Execution& execution : trace.executions) {
    const CapturePoint& point = points.at(execution.point);
    names.push_back(name_of(point, ++occurrences[point.module + "/" + point.kind]));
  }
  return names;
}

std::vector<CapturePoint> unrolled_points(const std::vector<CapturePoint>& points, const Trace& trace) {
  const std::vector<std::string> names = execution_names(points, trace);
  std::vector<CapturePoint> unrolled;
  unrolled.reserve(trace.executions.size());
  std::vector<std::optional<size_t>> latest(points.size());
  for (size_t i = 0; i < trace.executions.size(); ++i) {
    const size_t p = trace.executions[i].point;
    CapturePoint point = points[p];
    point.name = names[i];
    point.predecessors.clear();
    point.carried.clear();
    std::set<size_t> earlier;
    for (const std::vector<size_t>* list : {&points[p].predecessors, &points[p].carried}) {
      for (size_t predecessor : *list) {
        if (latest[predecessor]) {
          earlier.insert(*latest[predecessor]);
        }
      }
    }
    point.predecessors.assign(earlier.begin(), earlier.end());
    latest[p] = i;
    unrolled.push_back(std::move(point));
  }
  return unrolled;
}

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
  std::map<std::string, size_t> call_of;   // callstack text -> call
  std::map<std::string, int> occurrences;  // "module/kind" -> count so far
  std::map<const Block*, std::pair<std::string, bool>> context{{m_graph->block(), {"", false}}};
  std::vector<Node*> nodes;
  nodes_in_order(m_graph->block(), nodes);
  for (Node* node : nodes) {
    const auto& [branch, in_loop] = context.at(node->owningBlock());
    if (is_control_flow(node)) {
      const std::string where = source_line_of(node);
      const bool loop = node->kind() == c10::prim::Loop;
      for (size_t b = 0; b < node->blocks().size(); ++b) {
        context[node->blocks()[b]] = {branch + " [" +
                                          (loop     ? "loop"
                                           : b == 0 ? "then"
                                                    : "else") +
                                          "@" + where + "]",
                                      in_loop || loop};
      }
    } else if (hides_code(node)) {
      m_unsupported.push_back(std::string(node->kind().toQualString()) + " at " + source_line_of(node));
    }
    std::vector<CallOnStack> on_stack;
    const std::string callstack = callstack_of(node, &on_stack);
    std::vector<size_t> calls;
    for (const CallOnStack& call : on_stack) {
      auto [it, added] = call_of.emplace(call.callstack, m_calls.size());
      if (added) {
        m_calls.push_back({call.path, call.callstack});
        m_call_anchors.push_back(nullptr);
      }
      // A run of the call starts at its first node that runs once per run: constants may
      // be hoisted anywhere by graph passes.
      if (m_call_anchors[it->second] == nullptr && node->kind() != c10::prim::Constant) {
        m_call_anchors[it->second] = node;
      }
      calls.push_back(it->second);
    }
    if (!produces_activation(node)) {
      continue;
    }
    for (Value* value : node->outputs()) {
      if (!is_tensor(value) || dependent.count(value) == 0) {
        continue;
      }
      CapturePoint point;
      point.kind = node->kind().toQualString();
      point.op = normalized_op(node->kind());
      point.module = module_path(node);
      point.callstack = callstack;
      point.source = location_of(node->sourceRange());
      point.branch = branch;
      point.in_loop = in_loop;
      point.calls = calls;
      describe_constants(node, dependent, hasher, m_points.size(), point);
      point.layout = is_layout_conversion(node);
      point.output = value->offset();
      point.line = source_line_of(node);
      point.name = name_of(point, ++occurrences[point.module + "/" + point.kind]);
      m_point_of[value] = m_points.size();
      m_values.push_back(value);
      m_points.push_back(std::move(point));
    }
  }
  const std::function<bool(size_t)> every_point = [](size_t) { return true; };
  for (size_t p = 0; p < m_points.size(); ++p) {
    CapturePoint& point = m_points[p];
    point.predecessors = group_inputs(p, every_point, &point.reads_graph_input);
    if (point.in_loop) {
      for (size_t q : reached(p, every_point, true, nullptr)) {
        if (!std::binary_search(point.predecessors.begin(), point.predecessors.end(), q)) {
          point.carried.push_back(q);
        }
      }
    }
  }
}

std::vector<size_t> CaptureGraph::group_inputs(size_t point, const std::function<bool(size_t)>& cut,
                                               bool* reads_graph_input) const {
  return reached(point, cut, false, reads_graph_input);
}

std::vector<size_t> CaptureGraph::reached(size_t point, const std::function<bool(size_t)>& cut, bool through_loops,
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
    for (const Value* source : sources_of(value, through_loops)) {
      visit(source);
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

Capture CaptureGraph::run(const at::Tensor& input, const std::set<Execution>& wanted, ValueLayout layout) const {
  if (!m_function) {
    m_function = build_function();
  }
  Capture capture;
  capture.trace.runs.assign(m_points.size(), 0);
  Recorder recorder{m_points, wanted, layout, capture, std::vector<size_t>(m_calls.size(), 0)};
  RecordInto into(recorder);
  std::vector<c10::IValue> stack{m_module._ivalue(), input};
  m_function->run(stack);
  capture.output = stack.at(0);
  return capture;
}

std::shared_ptr<torch::jit::GraphFunction> CaptureGraph::build_function() const {
  // The copy has the same nodes in the same order: find each point's node and each call's
  // anchor there by its position.
  std::vector<Node*> original;
  nodes_in_order(m_graph->block(), original);
  std::unordered_map<const Node*, size_t> position;
  for (size_t i = 0; i < original.size(); ++i) {
    position[original[i]] = i;
  }
  std::shared_ptr<Graph> graph = m_graph->copy();
  std::vector<Node*> copied;
  nodes_in_order(graph->block(), copied);
  torch::jit::WithInsertPoint at_start(graph->block()->nodes().front());
  Value* none = graph->insertConstant(c10::IValue());
  auto insert_record = [&](Value* value, int64_t event, Node* before) {
    Value* id = graph->insertConstant(event);  // at the start: visible in every block
    Node* node = graph->create(k_record, {value, id}, 0);
    node->insertBefore(before);
  };
  for (size_t c = 0; c < m_calls.size(); ++c) {
    if (m_call_anchors[c] != nullptr) {
      insert_record(none, -static_cast<int64_t>(c) - 1, copied.at(position.at(m_call_anchors[c])));
    }
  }
  for (size_t p = 0; p < m_points.size(); ++p) {
    Node* node = copied.at(position.at(m_values[p]->node()));
    insert_record(node->output(m_points[p].output), static_cast<int64_t>(p), node->next());
  }
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
    if (node->kind() == c10::prim::Param) {
      throw Error("tier 2: cannot re-run '" + m_points[point].name + "' on its own: an input is " +
                  (node->owningBlock() == m_graph->block() ? "an extra graph input" : "carried by a loop"));
    }
    // An `if` or a loop is copied whole: its blocks read what they need through map_value.
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
  graph->registerOutput(copy->output(target->offset()));
  torch::jit::GraphFunction function("driftgate_tier2_reinject", graph, nullptr);
  function.run(stack);
  return dense(stack.at(0));
}

}  // namespace driftgate
