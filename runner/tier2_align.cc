#include "runner/tier2_align.h"

#include <functional>
#include <map>
#include <set>

namespace driftgate {
namespace {

bool same_kinds(const std::vector<CapturePoint>& reference, const std::vector<CapturePoint>& target) {
  if (reference.size() != target.size()) {
    return false;
  }
  for (size_t i = 0; i < reference.size(); ++i) {
    if (reference[i].kind != target[i].kind) {
      return false;
    }
  }
  return true;
}

using PointFilter = std::function<bool(const CapturePoint&)>;
using PointKey = std::function<std::string(const CapturePoint&)>;

// Matches the unmatched points of equal `key` one to one, in graph order, where
// both sides have the same number of them (anything else is ambiguous: no match).
void match_by(const std::vector<CapturePoint>& reference, const std::vector<CapturePoint>& target, const PointKey& key,
              const PointFilter& reference_filter, const PointFilter& target_filter, Alignment& alignment,
              std::vector<bool>& target_used) {
  std::map<std::string, std::vector<size_t>> reference_by_key;
  std::map<std::string, std::vector<size_t>> target_by_key;
  for (size_t r = 0; r < reference.size(); ++r) {
    if (!alignment.target_of[r] && reference_filter(reference[r])) {
      reference_by_key[key(reference[r])].push_back(r);
    }
  }
  for (size_t t = 0; t < target.size(); ++t) {
    if (!target_used[t] && target_filter(target[t])) {
      target_by_key[key(target[t])].push_back(t);
    }
  }
  for (const auto& [name, references] : reference_by_key) {
    auto it = target_by_key.find(name);
    if (it == target_by_key.end() || it->second.size() != references.size()) {
      continue;
    }
    for (size_t i = 0; i < references.size(); ++i) {
      alignment.target_of[references[i]] = it->second[i];
      target_used[it->second[i]] = true;
      ++alignment.observed;
    }
  }
}

std::vector<std::string> split(const std::string& text) {
  std::vector<std::string> items;
  size_t begin = 0;
  while (begin <= text.size()) {
    size_t comma = text.find(',', begin);
    comma = comma == std::string::npos ? text.size() : comma;
    items.push_back(text.substr(begin, comma - begin));
    begin = comma + 1;
  }
  return items;
}

// Block-level view of module paths: a leaf module (one no other path extends, e.g.
// "layer1.0.relu") stands for its parent block ("layer1.0"), inside which rewrites
// fuse ops (conv + bn + relu) and move a callstack from one leaf to another.
class Blocks {
 public:
  explicit Blocks(const std::vector<CapturePoint>& reference) {
    for (const CapturePoint& point : reference) {
      m_paths.insert(point.module);
      for (const std::string& consumer : split(point.consumers)) {
        m_paths.insert(consumer);
      }
    }
  }

  std::string block_of(const std::string& path) const {
    auto next = m_paths.upper_bound(path + ".");
    const bool leaf = next == m_paths.end() || next->rfind(path + ".", 0) != 0;
    if (path.empty()) {
      return "<top>";  // the top-level forward's own code
    }
    if (path == "<output>" || !leaf) {
      return path;
    }
    const size_t dot = path.rfind('.');
    return dot == std::string::npos ? "<top>" : path.substr(0, dot);
  }

  // The blocks that use the value, leaving out uses by nodes without a callstack.
  std::string consumer_blocks(const CapturePoint& point) const {
    std::set<std::string> blocks;
    for (const std::string& consumer : split(point.consumers)) {
      if (!consumer.empty()) {
        blocks.insert(block_of(consumer));
      }
    }
    std::string text;
    for (const std::string& block : blocks) {
      text += (text.empty() ? "" : ",") + block;
    }
    return text;
  }

  // The value leaves its producer's block: a boundary that fusion inside blocks keeps.
  bool crosses(const CapturePoint& point) const {
    const std::string consumers = consumer_blocks(point);
    if (consumers.empty()) {
      return false;
    }
    for (const std::string& block : split(consumers)) {
      if (block == block_of(point.module)) {
        return false;
      }
    }
    return true;
  }

 private:
  std::set<std::string> m_paths;
};

}  // namespace

const char* to_string(AlignmentKind kind) { return kind == AlignmentKind::k_position ? "position" : "boundary"; }

std::string boundary_key(const CapturePoint& point) { return point.module + " -> " + point.consumers; }

Alignment align_points(const std::vector<CapturePoint>& reference, const std::vector<CapturePoint>& target,
                       bool same_graph) {
  Alignment alignment;
  alignment.target_of.resize(reference.size());
  if (same_graph && same_kinds(reference, target)) {
    alignment.kind = AlignmentKind::k_position;
    for (size_t i = 0; i < reference.size(); ++i) {
      alignment.target_of[i] = i;
    }
    alignment.observed = reference.size();
    return alignment;
  }
  alignment.kind = AlignmentKind::k_boundary;
  std::vector<bool> target_used(target.size(), false);
  const PointFilter any = [](const CapturePoint&) { return true; };
  const PointFilter lost_callstack = [](const CapturePoint& point) { return point.module.empty(); };
  match_by(reference, target, boundary_key, any, any, alignment, target_used);
  // Consumer-side fallback: rewritten nodes that lost their callstack keep their consumers.
  match_by(
      reference, target, [](const CapturePoint& point) { return point.consumers; }, any, lost_callstack, alignment,
      target_used);
  // Block boundaries: values that leave their block, matched by (block, consuming blocks),
  // or by the consuming blocks alone where the target's node lost its callstack.
  const Blocks blocks(reference);
  const PointFilter crosses = [&](const CapturePoint& point) { return blocks.crosses(point); };
  const PointFilter crosses_with_callstack = [&](const CapturePoint& point) {
    return !point.module.empty() && blocks.crosses(point);
  };
  const PointFilter lost_with_consumers = [&](const CapturePoint& point) {
    return point.module.empty() && !blocks.consumer_blocks(point).empty();
  };
  match_by(
      reference, target,
      [&](const CapturePoint& point) { return blocks.block_of(point.module) + " -> " + blocks.consumer_blocks(point); },
      crosses, crosses_with_callstack, alignment, target_used);
  match_by(
      reference, target, [&](const CapturePoint& point) { return blocks.consumer_blocks(point); }, crosses,
      lost_with_consumers, alignment, target_used);
  return alignment;
}

std::vector<std::optional<size_t>> reference_of(const Alignment& alignment, size_t target_points) {
  std::vector<std::optional<size_t>> reverse(target_points);
  for (size_t r = 0; r < alignment.target_of.size(); ++r) {
    if (alignment.target_of[r]) {
      reverse.at(*alignment.target_of[r]) = r;
    }
  }
  return reverse;
}

}  // namespace driftgate
