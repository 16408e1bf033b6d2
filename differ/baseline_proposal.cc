#include "differ/baseline_proposal.h"

#include <algorithm>
#include <cinttypes>
#include <cstdio>
#include <deque>
#include <fstream>
#include <nlohmann/json.hpp>
#include <optional>
#include <unordered_map>

#include "core/atomic_file.h"
#include "core/environment.h"
#include "core/error.h"
#include "core/input_file.h"
#include "core/record_json.h"
#include "core/strict_json.h"
#include "differ/baseline_accept.h"
#include "differ/baseline_store.h"

namespace driftgate {

namespace {

using Json = nlohmann::ordered_json;

constexpr int k_schema = 1;

// One compact line; text that is not UTF-8 is replaced rather than thrown on (the
// reader then refuses what no longer matches).
std::string line_of(const Json& json) { return json.dump(-1, ' ', false, Json::error_handler_t::replace) + "\n"; }

// The pieces of a proposal, written together at the end (writev, AtomicFile) unless
// the pieces made here grow large. A piece that points into a digest's text stays
// there until then; one that continues the last in memory joins it.
class Pieces {
 public:
  explicit Pieces(AtomicFile& file) : m_file(file) {}

  void add(std::string_view piece) {
    if (!m_pieces.empty() && m_pieces.back().data() + m_pieces.back().size() == piece.data()) {
      m_pieces.back() = std::string_view(m_pieces.back().data(), m_pieces.back().size() + piece.size());
    } else {
      m_pieces.push_back(piece);
    }
  }
  void add_owned(std::string piece) {
    m_owned_bytes += piece.size();
    m_owned.push_back(std::move(piece));
    m_pieces.push_back(m_owned.back());
    if (m_owned_bytes > k_owned_limit) {
      flush();  // lines written from their records are held here until written: bounded
    }
  }
  void flush() {
    if (!m_pieces.empty()) {
      m_file.write(m_pieces);
    }
    m_pieces.clear();
    m_owned.clear();
    m_owned_bytes = 0;
  }

 private:
  static constexpr size_t k_owned_limit = size_t{64} << 20;
  AtomicFile& m_file;
  std::vector<std::string_view> m_pieces;
  std::deque<std::string> m_owned;  // pieces made here (deque: they do not move)
  size_t m_owned_bytes = 0;
};

// One base check's part of the fingerprint: what the diff compared it by.
void add_to_fingerprint(std::string& text, std::string_view id, CheckStatus status, std::string_view message,
                        bool has_stats, double max_abs) {
  text.append(id);
  text += '\n';
  text += to_string(status);
  text += '\n';
  text.append(message);
  text += '\n';
  if (has_stats) {
    char buffer[32];
    std::snprintf(buffer, sizeof buffer, "%a", max_abs);
    text += buffer;
  } else {
    text += '-';
  }
  text += '\n';
}

// The base's checks a proposal replaces or drops, merged in id order.
std::vector<const CheckDigest*> touched_in_id_order(const std::vector<const CheckDigest*>& replaced,
                                                    const std::vector<const CheckDigest*>& dropped) {
  std::vector<const CheckDigest*> touched;
  touched.reserve(replaced.size() + dropped.size());
  std::merge(replaced.begin(), replaced.end(), dropped.begin(), dropped.end(), std::back_inserter(touched),
             [](const CheckDigest* a, const CheckDigest* b) { return a->id < b->id; });
  return touched;
}

[[noreturn]] void refuse(const std::string& where, const std::string& what) {
  throw Error(where + ": " + what + "; write it again with driftgate diff (--propose FILE)");
}

// A line's members through the record's codec (core/record_json.h), refused as refuse does.
template <typename Read>
auto read_member(const Json& json, const std::string& where, Read&& read) {
  try {
    return read(JsonFields(json));
  } catch (const Error& e) {
    refuse(where, e.what());
  }
}

std::string text_member(const Json& json, const char* key, const std::string& where) {
  return read_member(json, where, [key](const JsonFields& fields) { return fields.text(key); });
}

size_t count_member(const Json& json, const char* key, const std::string& where) {
  return read_member(json, where, [key](const JsonFields& fields) { return static_cast<size_t>(fields.count(key)); });
}

Json parse_object(const std::string& line, const std::string& where) {
  Json json;
  try {
    json = parse_json_strict(line);
  } catch (const nlohmann::json::exception& e) {
    refuse(where, std::string("not valid JSON (") + e.what() + ")");
  } catch (const Error& e) {
    refuse(where, e.what());
  }
  if (!json.is_object()) {
    refuse(where, "expected a JSON object");
  }
  return json;
}

std::string type_of(const std::string& line) {
  constexpr std::string_view k_start = "{\"type\":\"";
  if (line.compare(0, k_start.size(), k_start) != 0) {
    return "";
  }
  size_t end = line.find('"', k_start.size());
  return end == std::string::npos ? "" : line.substr(k_start.size(), end - k_start.size());
}

}  // namespace

ProposalCounts write_baseline_proposal(const std::string& path, const RunDigest& run, const RunDigest& base,
                                       const std::vector<std::string>& globs) {
  AcceptedDigests accepted = accept_digests(run, base, globs, false);
  std::vector<const CheckDigest*> touched = touched_in_id_order(accepted.replaced, accepted.dropped);
  std::string fingerprint;
  for (const CheckDigest* check : touched) {
    add_to_fingerprint(fingerprint, check->id, check->status, check->message, check->has_stats, check->max_abs);
  }
  Json head{{"type", "proposal"},
            {"schema", k_schema},
            {"env_key", base.header.environment.key()},
            {"base_sha", base.header.commit.sha},
            {"run_sha", run.header.commit.sha},
            {"globs", globs},
            {"base_checks", base.checks.size()},
            {"touched", touched.size()},
            {"fingerprint", fnv1a_hex(fingerprint)},
            {"changes", accepted.changed.size()},
            {"drops", accepted.dropped.size()}};
  // Derived from two files that stay: atomic for readers, without an fsync (a
  // proposal that changes every check of a million is a gigabyte).
  AtomicFile file(path, Durability::k_replace);
  Pieces out(file);
  out.add_owned(line_of(head) + header_to_json_line(accepted.header) + "\n");
  for (const CheckDigest* check : accepted.changed) {
    if (check->record != nullptr) {
      out.add_owned(check_to_json_line(*check->record) + "\n");
    } else {
      out.add(std::string_view(check->line.data(), check->line.size() + 1));  // with the '\n' after it
    }
  }
  for (const CheckDigest* check : accepted.dropped) {
    out.add_owned(line_of(Json{{"type", "drop"}, {"id", std::string(check->id)}}));
  }
  out.add_owned(
      line_of(Json{{"type", "end"}, {"changes", accepted.changed.size()}, {"drops", accepted.dropped.size()}}));
  out.flush();
  file.commit();
  return ProposalCounts{accepted.changed.size(), accepted.dropped.size(), accepted.unchanged};
}

BaselineProposal read_baseline_proposal(const std::string& path) {
  std::optional<InputFile> file;
  try {
    file.emplace(path, k_proposal_file);
  } catch (const Error& e) {
    throw Error(std::string(e.what()) + "; driftgate diff writes the proposal beside --report (or at --propose FILE)");
  }
  std::istream& in = file->stream();
  BaselineProposal proposal;
  std::string line;
  size_t number = 0;
  auto where = [&] { return path + ":" + std::to_string(number); };
  if (!std::getline(in, line)) {
    refuse(path + ":1", "empty file, not a proposal");
  }
  ++number;
  Json head = parse_object(line, where());
  if (!head.contains("type") || head["type"] != "proposal") {
    refuse(where(),
           "not a proposal (its first line is not {\"type\":\"proposal\",...}); a baseline or run file is "
           "stored with driftgate baseline update");
  }
  if (!head.contains("schema") || head["schema"] != k_schema) {
    refuse(where(), "proposal schema " + (head.contains("schema") ? head["schema"].dump() : std::string("missing")) +
                        ", this driftgate reads " + std::to_string(k_schema));
  }
  proposal.env_key = text_member(head, "env_key", where());
  proposal.base_sha = text_member(head, "base_sha", where());
  proposal.run_sha = text_member(head, "run_sha", where());
  if (!is_env_key(proposal.env_key) || !is_commit_sha(proposal.base_sha) || !is_commit_sha(proposal.run_sha)) {
    refuse(where(), "env_key must be 16 hex digits and base_sha, run_sha 40");
  }
  proposal.globs = read_member(head, where(), [](const JsonFields& fields) { return fields.strings("globs"); });
  proposal.base_checks = count_member(head, "base_checks", where());
  proposal.touched = count_member(head, "touched", where());
  proposal.fingerprint = text_member(head, "fingerprint", where());
  const size_t changes = count_member(head, "changes", where());
  const size_t drops = count_member(head, "drops", where());

  if (!std::getline(in, line)) {
    refuse(path, "truncated: no header line after the proposal line");
  }
  ++number;
  try {
    proposal.header = parse_header_line(line);
  } catch (const Error& e) {
    refuse(where(), e.what());
  } catch (const std::exception& e) {
    refuse(where(), std::string("not a header line (") + e.what() + ")");
  }
  bool ended = false;
  while (std::getline(in, line)) {
    ++number;
    if (ended) {
      refuse(where(), "a line after the end line");
    }
    std::string type = type_of(line);
    if (type == "check") {
      if (!proposal.drops.empty()) {
        refuse(where(), "a check line after the drop lines");
      }
      try {
        proposal.changes.push_back(parse_check_line(line));
      } catch (const Error& e) {
        refuse(where(), e.what());
      } catch (const std::exception& e) {
        refuse(where(), std::string("not a check line (") + e.what() + ")");
      }
      if (proposal.changes.size() >= 2 &&
          !(proposal.changes[proposal.changes.size() - 2].id < proposal.changes.back().id)) {
        refuse(where(), "check " + proposal.changes.back().id + " is out of id order or repeated");
      }
    } else if (type == "drop") {
      Json drop = parse_object(line, where());
      proposal.drops.push_back(text_member(drop, "id", where()));
      if (proposal.drops.size() >= 2 && !(proposal.drops[proposal.drops.size() - 2] < proposal.drops.back())) {
        refuse(where(), "dropped check " + proposal.drops.back() + " is out of id order or repeated");
      }
    } else if (type == "end") {
      Json end = parse_object(line, where());
      if (count_member(end, "changes", where()) != changes || count_member(end, "drops", where()) != drops) {
        refuse(where(), "the end line's counts differ from the proposal line's");
      }
      ended = true;
    } else {
      refuse(where(), "expected a check, drop or end line");
    }
  }
  if (!ended) {
    refuse(path, "truncated: no end line after line " + std::to_string(number));
  }
  if (proposal.changes.size() != changes || proposal.drops.size() != drops) {
    refuse(path, "holds " + std::to_string(proposal.changes.size()) + " check and " +
                     std::to_string(proposal.drops.size()) + " drop lines, its proposal line says " +
                     std::to_string(changes) + " and " + std::to_string(drops));
  }
  // Both lists are in id order: one walk finds an id in both.
  for (size_t c = 0, d = 0; c < proposal.changes.size() && d < proposal.drops.size();) {
    const std::string& changed = proposal.changes[c].id;
    const std::string& dropped = proposal.drops[d];
    if (changed == dropped) {
      refuse(path, "check " + dropped + " is both changed and dropped");
    }
    changed < dropped ? ++c : ++d;
  }
  return proposal;
}

AcceptOutcome apply_baseline_proposal(const BaselineProposal& proposal, RunFile base,
                                      const std::string& proposal_path) {
  const std::string base_name = proposal.env_key + "/" + proposal.base_sha;
  if (base.header.commit.sha != proposal.base_sha || base.header.environment.key() != proposal.env_key) {
    throw Error(proposal_path + ": the proposal was made from baseline " + base_name + ", not " +
                base.header.environment.key() + "/" + base.header.commit.sha);
  }
  auto by_id = [](const CheckRecord& a, const CheckRecord& b) { return a.id < b.id; };
  if (!std::is_sorted(base.checks.begin(), base.checks.end(), by_id)) {
    std::sort(base.checks.begin(), base.checks.end(), by_id);  // a stored baseline already is
  }
  std::unordered_map<std::string_view, size_t> change_of;  // id -> index in proposal.changes
  for (size_t i = 0; i < proposal.changes.size(); ++i) {
    change_of.emplace(proposal.changes[i].id, i);
  }
  const std::vector<std::string>& drops = proposal.drops;
  std::vector<bool> in_base(proposal.changes.size(), false);
  const size_t base_checks = base.checks.size();
  size_t replaced = 0;
  size_t dropped = 0;
  std::string fingerprint;  // of the touched base checks, met here in id order
  AcceptOutcome outcome;
  outcome.baseline.header = proposal.header;
  outcome.baseline.checks.reserve(base_checks + proposal.changes.size());
  for (auto& check : base.checks) {
    auto change = change_of.find(check.id);
    bool drop = change == change_of.end() && std::binary_search(drops.begin(), drops.end(), check.id);
    if (change == change_of.end() && !drop) {
      outcome.baseline.checks.push_back(std::move(check));
      continue;
    }
    add_to_fingerprint(fingerprint, check.id, check.status, check.message, check.stats.has_value(),
                       check.stats ? check.stats->max_abs : 0.0);
    if (drop) {
      ++dropped;
    } else {
      ++replaced;
      in_base[change->second] = true;
      outcome.baseline.checks.push_back(proposal.changes[change->second]);
    }
  }
  if (base_checks != proposal.base_checks || dropped != drops.size() || replaced + dropped != proposal.touched ||
      fnv1a_hex(fingerprint) != proposal.fingerprint) {
    throw Error(proposal_path + ": baseline " + base_name +
                " no longer holds what it held when the proposal was made (" + std::to_string(proposal.base_checks) +
                " checks then, " + std::to_string(base_checks) +
                " now, or other values for the checks it changes); run driftgate diff again for a new proposal");
  }
  // Checks the base lacked, in id order too: one merge keeps the whole sorted.
  auto& checks = outcome.baseline.checks;
  const auto kept_end = static_cast<std::ptrdiff_t>(checks.size());
  for (size_t i = 0; i < proposal.changes.size(); ++i) {
    if (!in_base[i]) {
      checks.push_back(proposal.changes[i]);
    }
  }
  std::inplace_merge(checks.begin(), checks.begin() + kept_end, checks.end(), by_id);
  outcome.baseline.summary = summarize(outcome.baseline.header, checks);
  for (const auto& check : proposal.changes) {
    outcome.accepted.push_back(check.id);
  }
  outcome.removed = drops;
  return outcome;
}

}  // namespace driftgate
