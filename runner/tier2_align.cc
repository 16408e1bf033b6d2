#include "runner/tier2_align.h"

#include <map>

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

// Matches the unmatched points of equal `key` one to one, in graph order, where
// both sides have the same number of them (anything else is ambiguous: no match).
template <typename Key>
void match_by(const std::vector<CapturePoint>& reference, const std::vector<CapturePoint>& target, Key key,
              bool target_without_module_only, Alignment& alignment, std::vector<bool>& target_used) {
  std::map<std::string, std::vector<size_t>> reference_by_key;
  std::map<std::string, std::vector<size_t>> target_by_key;
  for (size_t r = 0; r < reference.size(); ++r) {
    if (!alignment.target_of[r]) {
      reference_by_key[key(reference[r])].push_back(r);
    }
  }
  for (size_t t = 0; t < target.size(); ++t) {
    if (!target_used[t] && (!target_without_module_only || target[t].module.empty())) {
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
  match_by(reference, target, boundary_key, false, alignment, target_used);
  // Consumer-side fallback: rewritten nodes that lost their callstack keep their consumers.
  match_by(
      reference, target, [](const CapturePoint& point) { return point.consumers; }, true, alignment, target_used);
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
