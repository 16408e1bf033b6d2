#include "runner/tier2_capture.h"

#include <ATen/autocast_mode.h>
#include <torch/csrc/jit/api/function_impl.h>
#include <torch/csrc/jit/passes/inliner.h>

#include <algorithm>
#include <set>
#include <unordered_map>
#include <utility>

#include "core/error.h"

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

// The capturable values of a graph's top-level block, in graph order.
std::vector<Value*> capturable_values(Graph& graph) {
  std::vector<Value*> values;
  for (Node* node : graph.block()->nodes()) {
    if (!produces_activation(node)) {
      continue;
    }
    for (Value* output : node->outputs()) {
      if (is_tensor(output)) {
        values.push_back(output);
      }
    }
  }
  return values;
}

// "layer1.0.relu" from the module instances on the node's inlined callstack.
std::string module_path(const Node* node) {
  auto callstack = node->callstack();
  if (!callstack) {
    return "";
  }
  std::string path;
  for (const auto& entry : (*callstack)->vec()) {
    const auto& instance = std::get<2>(entry);
    if (instance && !instance->instance_name().empty()) {
      path += (path.empty() ? "" : ".") + instance->instance_name();
    }
  }
  return path;
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

// The modules that use `value`, looking through structural nodes (lists, tuples)
// that carry no callstack of their own.
void collect_consumers(const Value* value, std::set<std::string>& consumers, int depth = 0) {
  for (const torch::jit::Use& use : value->uses()) {
    const Node* user = use.user;
    if (user->kind() == c10::prim::Return) {
      consumers.insert("<output>");
      continue;
    }
    std::string path = module_path(user);
    if (path.empty() && depth < 4 && user->outputs().size() == 1 &&
        (user->kind() == c10::prim::ListConstruct || user->kind() == c10::prim::TupleConstruct)) {
      collect_consumers(user->output(), consumers, depth + 1);
      continue;
    }
    consumers.insert(path);
  }
}

std::string join(const std::set<std::string>& items) {
  std::string text;
  for (const std::string& item : items) {
    text += (text.empty() ? "" : ",") + item;
  }
  return text;
}

// Autocast off for one scope: graphs copied under autocast carry its cast nodes.
class NoAutocast {
 public:
  NoAutocast() : m_was(at::autocast::is_cpu_enabled()) { at::autocast::set_cpu_enabled(false); }
  ~NoAutocast() { at::autocast::set_cpu_enabled(m_was); }
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
  std::map<std::string, int> occurrences;  // "module/kind" -> count so far
  for (Value* value : capturable_values(*m_graph)) {
    const Node* node = value->node();
    CapturePoint point;
    point.kind = node->kind().toQualString();
    point.module = module_path(node);
    std::set<std::string> consumers;
    collect_consumers(value, consumers);
    point.consumers = join(consumers);
    const int n = ++occurrences[point.module + "/" + point.kind];
    point.name =
        (point.module.empty() ? "" : point.module + "/") + point.kind + "#" + std::to_string(n) + source_of(node);
    m_point_of[value] = m_points.size();
    m_values.push_back(value);
    m_points.push_back(std::move(point));
  }
  for (size_t p = 0; p < m_points.size(); ++p) {
    m_points[p].predecessors = node_tensor_inputs(p, &m_points[p].reads_graph_input);
  }
}

std::vector<size_t> CaptureGraph::node_tensor_inputs(size_t point, bool* reads_graph_input) const {
  std::set<size_t> found;
  bool graph_input = false;
  std::set<const Value*> seen;
  std::function<void(const Value*)> visit = [&](const Value* value) {
    if (!seen.insert(value).second) {
      return;
    }
    if (auto it = m_point_of.find(value); it != m_point_of.end()) {
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

at::Tensor CaptureGraph::run_node(size_t point,
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
    if (point_it != m_point_of.end() || value == m_graph->inputs()[1]) {
      Value* input = graph->addInput()->setType(value->type());
      stack.emplace_back(
          tensor_input(point_it != m_point_of.end() ? std::optional<size_t>(point_it->second) : std::nullopt));
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
