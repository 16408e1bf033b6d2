#include "runner/tier2_align.h"

#include <algorithm>
#include <cstdint>
#include <iterator>
#include <map>
#include <unordered_map>

namespace driftgate {
namespace {

// The same ops from the same code in the same order: the same graph ran the same way (an `if`
// that took another branch on the target runs other nodes of the same kind).
bool same_runs(const std::vector<CapturePoint>& reference, const std::vector<CapturePoint>& target) {
  if (reference.size() != target.size()) {
    return false;
  }
  for (size_t i = 0; i < reference.size(); ++i) {
    if (reference[i].kind != target[i].kind || reference[i].callstack != target[i].callstack ||
        reference[i].source != target[i].source || reference[i].output != target[i].output) {
      return false;
    }
  }
  return true;
}

// A set of point indices.
class Bits {
 public:
  explicit Bits(size_t size = 0) : m_words((size + 63) / 64, 0) {}

  void set(size_t i) { m_words[i / 64] |= uint64_t{1} << (i % 64); }
  bool test(size_t i) const { return (m_words[i / 64] >> (i % 64)) & 1U; }
  void add(const Bits& other) {
    for (size_t w = 0; w < m_words.size(); ++w) {
      m_words[w] |= other.m_words[w];
    }
  }
  bool operator==(const Bits& other) const { return m_words == other.m_words; }
  bool subset_of(const Bits& other) const {
    for (size_t w = 0; w < m_words.size(); ++w) {
      if ((m_words[w] & ~other.m_words[w]) != 0) {
        return false;
      }
    }
    return true;
  }
  bool intersects(const Bits& other) const {
    for (size_t w = 0; w < m_words.size(); ++w) {
      if ((m_words[w] & other.m_words[w]) != 0) {
        return true;
      }
    }
    return false;
  }
  bool empty() const {
    for (uint64_t word : m_words) {
      if (word != 0) {
        return false;
      }
    }
    return true;
  }
  uint64_t hash() const {
    uint64_t hash = 1469598103934665603ULL;
    for (uint64_t word : m_words) {
      hash = (hash ^ word) * 1099511628211ULL;
    }
    return hash;
  }

 private:
  std::vector<uint64_t> m_words;
};

// Each point and everything upstream of it (points in graph order, so predecessors first).
std::vector<Bits> upstream(const std::vector<CapturePoint>& points) {
  std::vector<Bits> up(points.size(), Bits(points.size()));
  for (size_t p = 0; p < points.size(); ++p) {
    up[p].set(p);
    for (size_t predecessor : points[p].predecessors) {
      up[p].add(up[predecessor]);
    }
  }
  return up;
}

// Nodes matched by where they come from in the model's code.
struct NodeMatch {
  std::vector<std::optional<size_t>> counterpart;  // per reference point: the target point from the same code
  std::vector<std::optional<size_t>> origin;       // per target point: the reference point it comes from
};

bool matchable(const CapturePoint& point) {
  return !point.layout && !(point.callstack.empty() && point.source.empty());
}

// Pairs the unmatched points of equal `key` in graph order, where both sides have the
// same number of them and (with `only_single`) exactly one.
template <typename Key>
void match_by(const std::vector<CapturePoint>& reference, const std::vector<CapturePoint>& target, Key key,
              bool only_single, NodeMatch& match) {
  std::map<std::string, std::vector<size_t>> reference_by_key;
  std::map<std::string, std::vector<size_t>> target_by_key;
  for (size_t r = 0; r < reference.size(); ++r) {
    if (!match.counterpart[r] && matchable(reference[r])) {
      reference_by_key[key(reference[r])].push_back(r);
    }
  }
  for (size_t t = 0; t < target.size(); ++t) {
    if (!match.origin[t] && matchable(target[t])) {
      target_by_key[key(target[t])].push_back(t);
    }
  }
  for (const auto& [name, references] : reference_by_key) {
    auto it = target_by_key.find(name);
    if (it == target_by_key.end() || it->second.size() != references.size() ||
        (only_single && references.size() != 1)) {
      continue;
    }
    for (size_t i = 0; i < references.size(); ++i) {
      match.counterpart[references[i]] = it->second[i];
      match.origin[it->second[i]] = references[i];
    }
  }
}

NodeMatch match_nodes(const std::vector<CapturePoint>& reference, const std::vector<CapturePoint>& target) {
  NodeMatch match;
  match.counterpart.resize(reference.size());
  match.origin.resize(target.size());
  // The callstack and the node's own source location, then (for a rewritten node whose
  // source location is the rewrite pattern's) the callstack alone where it is unique.
  match_by(reference, target, code_of, false, match);
  match_by(
      reference, target,
      [](const CapturePoint& p) {
        return p.callstack.empty() ? std::string() : p.callstack + "|" + std::to_string(p.output);
      },
      true, match);
  return match;
}

// For each point, the reference points matched upstream of it (itself included),
// as reference indices: `origin` maps a point of `points` to the reference.
std::vector<Bits> matched_upstream(const std::vector<CapturePoint>& points,
                                   const std::vector<std::optional<size_t>>& origin, size_t reference_size) {
  std::vector<Bits> up(points.size(), Bits(reference_size));
  for (size_t p = 0; p < points.size(); ++p) {
    if (origin[p]) {
      up[p].set(*origin[p]);
    }
    for (size_t predecessor : points[p].predecessors) {
      up[p].add(up[predecessor]);
    }
  }
  return up;
}

// For each point, the reference points matched strictly downstream of it (its own
// match is upstream of, or is, the value: a folded conv's match is the conv), as
// reference indices.
std::vector<Bits> matched_downstream(const std::vector<CapturePoint>& points,
                                     const std::vector<std::optional<size_t>>& origin, size_t reference_size) {
  std::vector<Bits> down(points.size(), Bits(reference_size));
  for (size_t p = points.size(); p-- > 0;) {
    for (size_t predecessor : points[p].predecessors) {
      down[predecessor].add(down[p]);
      if (origin[p]) {
        down[predecessor].set(*origin[p]);
      }
    }
  }
  return down;
}

// The reference's matched points first reached from `u` along paths of unmatched points.
std::vector<size_t> nearest_matched_descendants(size_t u, const std::vector<std::vector<size_t>>& successors,
                                                const NodeMatch& match) {
  std::vector<size_t> found;
  std::vector<bool> seen(successors.size(), false);
  std::vector<size_t> stack(successors[u]);
  while (!stack.empty()) {
    const size_t p = stack.back();
    stack.pop_back();
    if (seen[p]) {
      continue;
    }
    seen[p] = true;
    if (match.counterpart[p]) {
      found.push_back(p);
      continue;
    }
    stack.insert(stack.end(), successors[p].begin(), successors[p].end());
  }
  return found;
}

// The graphs, their matches and, per absorbed reference point, the target points that
// could hold it.
class SameFunction {
 public:
  SameFunction(const std::vector<CapturePoint>& reference, const std::vector<CapturePoint>& target,
               const std::set<std::string>* target_code)
      : m_reference(reference),
        m_target(target),
        m_target_code(target_code),
        m_match(match_nodes(reference, target)),
        m_up_reference(upstream(reference)),
        m_up_target(upstream(target)) {
    std::vector<std::optional<size_t>> identity(reference.size());
    for (size_t r = 0; r < reference.size(); ++r) {
      identity[r] = m_match.counterpart[r] ? std::optional<size_t>(r) : std::nullopt;
    }
    m_matched_reference = matched_upstream(reference, identity, reference.size());
    m_matched_target = matched_upstream(target, m_match.origin, reference.size());
    m_below_reference = matched_downstream(reference, identity, reference.size());
    m_below_target = matched_downstream(target, m_match.origin, reference.size());
    find_absorbers();
  }

  // The target point computing the same function as reference point `r`, if one does:
  // the same matched points upstream and downstream, every absorbed point on the same
  // side. Among several (a matched node's own value first), the last of a chain (a
  // linear split into matmul and add is the add's value); otherwise none.
  std::optional<size_t> counterpart_of(size_t r, const std::unordered_multimap<uint64_t, size_t>& by_upstream) const {
    if (not_run_there(r)) {
      return std::nullopt;
    }
    std::vector<size_t> candidates;
    auto [begin, end] = by_upstream.equal_range(m_matched_reference[r].hash());
    for (auto it = begin; it != end; ++it) {
      const size_t t = it->second;
      if (m_matched_target[t] == m_matched_reference[r] && m_below_target[t] == m_below_reference[r] &&
          absorbed_on_same_side(r, t)) {
        candidates.push_back(t);
      }
    }
    for (size_t t : candidates) {
      if (m_match.counterpart[r] == t) {
        return t;
      }
    }
    std::optional<size_t> last;
    for (size_t t : candidates) {
      bool after_all = true;
      for (size_t other : candidates) {
        after_all = after_all && m_up_target[t].test(other);
      }
      if (after_all) {
        last = t;
      }
    }
    return last;
  }

  // Target points (not layout conversions) by the matched reference points upstream of them.
  std::unordered_multimap<uint64_t, size_t> index_target() const {
    std::unordered_multimap<uint64_t, size_t> index;
    for (size_t t = 0; t < m_target.size(); ++t) {
      if (!m_target[t].layout) {
        index.emplace(m_matched_target[t].hash(), t);
      }
    }
    return index;
  }

 private:
  // An unmatched reference run whose node the target's graph has: the target did not run it
  // (as often). Not absorbed by any other node.
  bool not_run_there(size_t r) const {
    return !m_match.counterpart[r] && m_target_code != nullptr && m_target_code->count(code_of(m_reference[r])) != 0;
  }

  bool unchanged(size_t t) const {
    return m_match.origin[t] && m_reference[*m_match.origin[t]].signature == m_target[t].signature;
  }

  // The target points an absorbed reference point may live in: changed or new points
  // between the matches of its matched ancestors and of its nearest matched descendants
  // (empty: the rewrite removed it as an identity). Then, in graph order, one of them
  // where the graphs tell which: the only new one of the same op (a pass that recreated
  // it without its callstack), else the only one holding a weight of the point's shape
  // (a convolution lives where its weights went), else the one holding the point's
  // input (a batch norm continues the region of the conv before it: folding), else the
  // only one whose inputs bring all of the point's inputs (an add of two values lives
  // where both arrive). Otherwise all of them stay possible. A point with weights (a
  // convolution, a linear) never lives where another one with weights already does: a
  // fused node runs one of them, and the node before holds the previous block's
  // convolution, not this one (XNNPACK's conv + bn + relu blocks in a row, issue #33).
  void find_absorbers() {
    std::vector<std::vector<size_t>> successors(m_reference.size());
    for (size_t r = 0; r < m_reference.size(); ++r) {
      for (size_t predecessor : m_reference[r].predecessors) {
        successors[predecessor].push_back(r);
      }
    }
    m_direct_inputs = direct_inputs(m_target);
    std::vector<std::optional<size_t>> holder(m_reference.size());  // where a reference point lives, when known
    std::vector<bool> holds_weights(m_target.size(), false);        // a point with weights lives there
    auto note_weights = [&](size_t u) {
      if (holder[u] && !m_reference[u].weight_shapes.empty()) {
        holds_weights[*holder[u]] = true;
      }
    };
    for (size_t u = 0; u < m_reference.size(); ++u) {
      if (m_match.counterpart[u]) {
        holder[u] = m_match.counterpart[u];
        note_weights(u);
        continue;
      }
      if (not_run_there(u)) {
        continue;
      }
      const std::vector<size_t> descendants = nearest_matched_descendants(u, successors, m_match);
      std::vector<size_t> candidates;
      for (size_t c = 0; c < m_target.size(); ++c) {
        if (m_target[c].layout || unchanged(c) || !m_matched_reference[u].subset_of(m_matched_target[c])) {
          continue;
        }
        bool before_descendants = true;
        for (size_t d : descendants) {
          before_descendants = before_descendants && m_up_target[*m_match.counterpart[d]].test(c);
        }
        if (before_descendants) {
          candidates.push_back(c);
        }
      }
      if (candidates.empty()) {
        continue;
      }
      if (!m_reference[u].weight_shapes.empty()) {
        std::vector<size_t> free;
        std::copy_if(candidates.begin(), candidates.end(), std::back_inserter(free),
                     [&](size_t c) { return !holds_weights[c]; });
        if (!free.empty()) {
          candidates = std::move(free);
        }
      }
      holder[u] = choose_holder(u, candidates, holder);
      note_weights(u);
      Bits holders(m_target.size());
      if (holder[u]) {
        holders.set(*holder[u]);
      } else {
        for (size_t c : candidates) {
          holders.set(c);
        }
      }
      m_absorbed.push_back(u);
      m_holders.push_back(std::move(holders));
    }
  }

  std::optional<size_t> choose_holder(size_t u, const std::vector<size_t>& candidates,
                                      const std::vector<std::optional<size_t>>& holder) const {
    const CapturePoint& point = m_reference[u];
    // The only one of `subset`, or the only one of those the point's inputs reach.
    auto only = [&](const std::vector<size_t>& subset) -> std::optional<size_t> {
      if (subset.size() == 1) {
        return subset.front();
      }
      std::optional<size_t> reached;
      for (size_t c : subset) {
        if (inputs_arrive(u, c, holder)) {
          if (reached) {
            return std::nullopt;
          }
          reached = c;
        }
      }
      return reached;
    };
    std::vector<size_t> same_op;
    std::vector<size_t> with_weights;
    for (size_t c : candidates) {
      if (!m_match.origin[c] && !point.op.empty() && m_target[c].op == point.op) {
        same_op.push_back(c);  // a pass recreated the op without its callstack (MKLDNNHardTanh_)
      }
      if (!point.weight_shapes.empty() && shares_a_shape(point.weight_shapes, m_target[c].weight_shapes)) {
        with_weights.push_back(c);
      }
    }
    if (auto c = only(same_op)) {
      return c;
    }
    if (auto c = only(with_weights)) {
      return c;
    }
    std::vector<size_t> fed;
    for (size_t c : candidates) {
      if (!inputs_arrive(u, c, holder)) {
        continue;
      }
      for (size_t predecessor : point.predecessors) {
        if (holder[predecessor] == c) {
          return c;
        }
      }
      fed.push_back(c);
    }
    return fed.size() == 1 ? std::optional<size_t>(fed.front()) : std::nullopt;
  }

  // Each input of reference point `u` is computed inside `c` or arrives as one of c's
  // inputs, as far as where the inputs live is known.
  bool inputs_arrive(size_t u, size_t c, const std::vector<std::optional<size_t>>& holder) const {
    for (size_t predecessor : m_reference[u].predecessors) {
      const std::optional<size_t>& from = holder[predecessor];
      if (from && *from != c &&
          std::find(m_direct_inputs[c].begin(), m_direct_inputs[c].end(), *from) == m_direct_inputs[c].end()) {
        return false;
      }
    }
    return true;
  }

  static bool shares_a_shape(const std::vector<std::vector<int64_t>>& a, const std::vector<std::vector<int64_t>>& b) {
    for (const auto& shape : a) {
      if (std::find(b.begin(), b.end(), shape) != b.end()) {
        return true;
      }
    }
    return false;
  }

  // Per point, the points its node reads, looking through layout conversions.
  static std::vector<std::vector<size_t>> direct_inputs(const std::vector<CapturePoint>& points) {
    std::vector<std::vector<size_t>> inputs(points.size());
    for (size_t p = 0; p < points.size(); ++p) {
      for (size_t predecessor : points[p].predecessors) {
        if (points[predecessor].layout) {
          inputs[p].insert(inputs[p].end(), inputs[predecessor].begin(), inputs[predecessor].end());
        } else {
          inputs[p].push_back(predecessor);
        }
      }
    }
    return inputs;
  }

  // Every absorbed reference point upstream of `r` has all its possible holders
  // upstream of `t`; every other one has none there.
  bool absorbed_on_same_side(size_t r, size_t t) const {
    for (size_t i = 0; i < m_absorbed.size(); ++i) {
      const bool inside = m_up_reference[r].test(m_absorbed[i]);
      if (inside ? !m_holders[i].subset_of(m_up_target[t]) : m_holders[i].intersects(m_up_target[t])) {
        return false;
      }
    }
    return true;
  }

  const std::vector<CapturePoint>& m_reference;
  const std::vector<CapturePoint>& m_target;
  const std::set<std::string>* m_target_code;
  NodeMatch m_match;
  std::vector<Bits> m_up_reference;                  // per reference point, over reference points
  std::vector<Bits> m_up_target;                     // per target point, over target points
  std::vector<Bits> m_matched_reference;             // per reference point, matched reference points upstream
  std::vector<Bits> m_matched_target;                // per target point, the reference points matched upstream
  std::vector<Bits> m_below_reference;               // per reference point, matched reference points downstream
  std::vector<Bits> m_below_target;                  // per target point, the reference points matched downstream
  std::vector<size_t> m_absorbed;                    // reference points absorbed by some changed or new target node
  std::vector<Bits> m_holders;                       // per absorbed point: the target points that may hold it
  std::vector<std::vector<size_t>> m_direct_inputs;  // per target point, the points it reads
};

}  // namespace

const char* to_string(AlignmentKind kind) {
  switch (kind) {
    case AlignmentKind::k_position:
      return "position";
    case AlignmentKind::k_boundary:
      return "boundary";
    case AlignmentKind::k_onnx_scope:
      return "onnx_scope";
  }
  return "position";
}

std::string code_of(const CapturePoint& point) {
  return point.callstack + "|" + point.source + "|" + std::to_string(point.output);
}

Alignment align_points(const std::vector<CapturePoint>& reference, const std::vector<CapturePoint>& target,
                       bool same_graph, const std::set<std::string>* target_code) {
  Alignment alignment;
  alignment.target_of.resize(reference.size());
  if (same_graph && same_runs(reference, target)) {
    alignment.kind = AlignmentKind::k_position;
    for (size_t i = 0; i < reference.size(); ++i) {
      alignment.target_of[i] = i;
    }
    alignment.observed = reference.size();
    return alignment;
  }
  alignment.kind = AlignmentKind::k_boundary;
  const SameFunction same_function(reference, target, target_code);
  const std::unordered_multimap<uint64_t, size_t> by_upstream = same_function.index_target();
  for (size_t r = 0; r < reference.size(); ++r) {
    alignment.target_of[r] = same_function.counterpart_of(r, by_upstream);
    alignment.observed += alignment.target_of[r] ? 1 : 0;
  }
  return alignment;
}

std::vector<std::optional<size_t>> reference_of(const Alignment& alignment, size_t target_points) {
  std::vector<std::optional<size_t>> reverse(target_points);
  for (size_t r = 0; r < alignment.target_of.size(); ++r) {
    if (alignment.target_of[r] && !reverse.at(*alignment.target_of[r])) {
      reverse.at(*alignment.target_of[r]) = r;
    }
  }
  return reverse;
}

}  // namespace driftgate
