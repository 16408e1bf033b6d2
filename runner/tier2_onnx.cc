#include "runner/tier2_onnx.h"

#include <algorithm>
#include <map>
#include <set>

namespace driftgate {
namespace {

std::vector<std::string> split(const std::string& text, char separator) {
  std::vector<std::string> parts;
  size_t begin = 0;
  while (true) {
    const size_t end = text.find(separator, begin);
    parts.push_back(text.substr(begin, end == std::string::npos ? std::string::npos : end - begin));
    if (end == std::string::npos) {
      return parts;
    }
    begin = end + 1;
  }
}

bool numeric(const std::string& atom) {
  return !atom.empty() && std::all_of(atom.begin(), atom.end(), [](char c) { return c >= '0' && c <= '9'; });
}

bool within(const std::string& path, const std::string& module) {
  return path == module ||
         (path.size() > module.size() && path.compare(0, module.size(), module) == 0 && path[module.size()] == '.');
}

// The reference's module below `parent` (the model itself: "") that an ONNX scope component
// names. torch.onnx writes a module's path from its last non-numeric atom on ("layer1.0",
// "conv1", "features.0"); the reference's paths are its callstack's instance names, one
// attribute per call level, and a container that is iterated rather than called
// (`for block in self.features`) is not a level there: "backbone.0" where named_modules
// says "backbone.features.0". The component's last atom is the child's instance name in both.
std::optional<std::string> child_named(const std::string& parent, const std::string& component,
                                       const std::set<std::string>& modules) {
  const std::string instance = component.substr(component.find_last_of('.') + 1);
  const std::string child = parent.empty() ? instance : parent + "." + instance;
  if (modules.count(child) != 0) {
    return child;
  }
  return std::nullopt;
}

// The module instances of a point's callstack ("layer1@resnet.py:30:8/0@container.py:12:8/..."),
// as module_path counts them (no "SELF", no unnamed instance).
std::vector<std::string> instances(const std::string& callstack) {
  std::vector<std::string> kept;
  if (callstack.empty()) {
    return kept;
  }
  for (const std::string& entry : split(callstack, '/')) {
    const std::string name = entry.substr(0, entry.find('@'));
    if (!name.empty() && name != "SELF" && name != "?") {
      kept.push_back(entry);
    }
  }
  return kept;
}

}  // namespace

std::string onnx_node_module(const std::string& node_name, const std::set<std::string>& modules, std::string* repeated,
                             bool* unresolved) {
  if (node_name.empty() || node_name[0] != '/') {
    return "";
  }
  std::vector<std::string> components = split(node_name.substr(1), '/');
  components.pop_back();  // the op's own name
  std::string path;
  for (const std::string& component : components) {
    std::optional<std::string> child = child_named(path, component, modules);
    if (!child) {
      const size_t underscore = component.find_last_of('_');
      if (underscore != std::string::npos && numeric(component.substr(underscore + 1))) {
        child = child_named(path, component.substr(0, underscore), modules);
        if (child && repeated != nullptr && repeated->empty()) {
          *repeated = *child;
        }
      }
    }
    if (!child) {
      if (unresolved != nullptr) {
        *unresolved = true;
      }
      break;
    }
    path = *child;
  }
  return path;
}

OnnxScopeAlignment align_onnx_scopes(const std::vector<CapturePoint>& reference, const OnnxGraph& graph) {
  OnnxScopeAlignment result;
  result.target_of.assign(reference.size(), std::nullopt);

  // The reference's modules: every path a point names, and their ancestors.
  std::set<std::string> modules;
  for (const CapturePoint& point : reference) {
    std::string path;
    for (const std::string& atom : point.module.empty() ? std::vector<std::string>() : split(point.module, '.')) {
      path += (path.empty() ? "" : ".") + atom;
      modules.insert(path);
    }
  }

  // The ONNX side: each node's module, the modules called more than once, who reads each value.
  std::vector<std::string> scope(graph.nodes.size());
  std::set<std::string> repeated;
  size_t scoped = 0;
  size_t unresolved_nodes = 0;
  std::map<std::string, size_t> producer;
  std::map<std::string, std::vector<size_t>> readers;
  for (size_t n = 0; n < graph.nodes.size(); ++n) {
    const OnnxNode& node = graph.nodes[n];
    std::string again;
    bool unresolved = false;
    scope[n] = onnx_node_module(node.name, modules, &again, &unresolved);
    scoped += !node.name.empty() && node.name[0] == '/' ? 1 : 0;
    unresolved_nodes += unresolved ? 1 : 0;
    if (!again.empty()) {
      repeated.insert(again);
    }
    for (const std::string& output : node.outputs) {
      producer.emplace(output, n);
    }
    if (node.op != "Shape") {  // a Shape node reads no values, only their extents
      for (const std::string& input : node.inputs) {
        readers[input].push_back(n);
      }
    }
  }
  const std::set<std::string> graph_outputs(graph.outputs.begin(), graph.outputs.end());
  if (scoped == 0) {
    result.note =
        "the ONNX file's node names carry no module scope (torch.onnx.export's TorchScript-based "
        "exporter writes them, e.g. /layer1/layer1.0/conv1/Conv), so no value is paired";
    return result;
  }
  if (unresolved_nodes > 0) {
    result.note = std::to_string(unresolved_nodes) + " of " + std::to_string(graph.nodes.size()) +
                  " ONNX nodes have scopes naming no module of the TorchScript model; their values are "
                  "counted in the enclosing module's";
  }

  // The reference side: who reads each point, and the modules called from more than one site.
  std::vector<std::vector<size_t>> consumers(reference.size());
  for (size_t p = 0; p < reference.size(); ++p) {
    for (size_t predecessor : reference[p].predecessors) {
      if (predecessor < reference.size()) {
        consumers[predecessor].push_back(p);
      }
    }
  }
  for (const std::string& module : modules) {
    const size_t depth = split(module, '.').size();
    std::set<std::string> calls;
    for (const CapturePoint& point : reference) {
      if (!within(point.module, module)) {
        continue;
      }
      const std::vector<std::string> stack = instances(point.callstack);
      std::string key;
      for (size_t i = 0; i < std::min(depth, stack.size()); ++i) {
        key += "/" + stack[i];
      }
      calls.insert(key);
    }
    if (calls.size() > 1) {
      repeated.insert(module);
    }
  }
  auto is_repeated = [&](const std::string& module) {
    return std::any_of(repeated.begin(), repeated.end(),
                       [&](const std::string& again) { return within(module, again); });
  };

  std::map<size_t, std::string> pair_of;
  std::set<size_t> conflicted;
  for (const std::string& module : modules) {
    if (is_repeated(module)) {
      continue;
    }
    // The reference's exit: the one point of the module read outside it (or by nothing: returned).
    std::optional<size_t> exit;
    size_t exits = 0;
    for (size_t p = 0; p < reference.size(); ++p) {
      if (!within(reference[p].module, module)) {
        continue;
      }
      const bool read_outside = std::any_of(consumers[p].begin(), consumers[p].end(),
                                            [&](size_t c) { return !within(reference[c].module, module); });
      if (read_outside || consumers[p].empty()) {
        exit = p;
        ++exits;
      }
    }
    if (exits != 1) {
      continue;
    }
    std::set<std::string> reference_readers;
    bool batch_norm = false;
    for (size_t c : consumers[*exit]) {
      if (!within(reference[c].module, module)) {
        reference_readers.insert(reference[c].module);
        batch_norm = batch_norm || reference[c].op == "batch_norm";
      }
    }
    if (batch_norm) {
      continue;
    }
    // The ONNX file's exit, the same way.
    std::optional<std::string> value;
    size_t values = 0;
    bool has_nodes = false;
    for (size_t n = 0; n < graph.nodes.size(); ++n) {
      if (!within(scope[n], module)) {
        continue;
      }
      has_nodes = true;
      for (const std::string& output : graph.nodes[n].outputs) {
        const auto read = readers.find(output);
        const bool read_outside =
            read != readers.end() &&
            std::any_of(read->second.begin(), read->second.end(), [&](size_t r) { return !within(scope[r], module); });
        if (read_outside || graph_outputs.count(output) != 0) {
          value = output;
          ++values;
        }
      }
    }
    if (!has_nodes || values != 1) {
      continue;
    }
    std::set<std::string> onnx_readers;
    if (const auto read = readers.find(*value); read != readers.end()) {
      for (size_t r : read->second) {
        if (!within(scope[r], module)) {
          onnx_readers.insert(scope[r]);
        }
      }
    }
    if (onnx_readers != reference_readers) {
      continue;
    }
    const auto [it, inserted] = pair_of.emplace(*exit, *value);
    if (!inserted && it->second != *value) {
      conflicted.insert(*exit);
    }
  }

  std::map<std::string, size_t> index_of;
  for (const auto& [point, value] : pair_of) {
    if (conflicted.count(point) != 0) {
      continue;
    }
    const auto [it, inserted] = index_of.emplace(value, result.values.size());
    if (inserted) {
      result.values.push_back(value);
    }
    result.target_of[point] = it->second;
    ++result.observed;
  }
  return result;
}

}  // namespace driftgate
