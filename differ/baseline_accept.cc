#include "differ/baseline_accept.h"

#include <fnmatch.h>

#include <algorithm>
#include <cstdint>
#include <deque>
#include <map>
#include <nlohmann/json.hpp>
#include <set>

#include "core/atomic_file.h"
#include "core/error.h"
#include "differ/baseline_store.h"

namespace driftgate {

namespace {

using Json = nlohmann::ordered_json;

std::vector<std::string> string_list(const Json& json, const char* key, const std::string& where) {
  auto it = json.find(key);
  if (it == json.end() || !it->is_array()) {
    throw Error(where + ": acceptance entry lacks the list '" + key + "'");
  }
  std::vector<std::string> items;
  for (const auto& item : *it) {
    if (!item.is_string()) {
      throw Error(where + ": '" + key + "' must hold strings");
    }
    items.push_back(item.get<std::string>());
  }
  return items;
}

std::string string_field(const Json& json, const char* key, const std::string& where) {
  auto it = json.find(key);
  if (it == json.end() || !it->is_string()) {
    throw Error(where + ": acceptance entry lacks the text '" + key + "'");
  }
  return it->get<std::string>();
}

}  // namespace

std::string Acceptance::to_json_line() const {
  Json json{{"when", when},       {"who", who},           {"reason", reason},     {"globs", globs},
            {"run_sha", run_sha}, {"from_sha", from_sha}, {"accepted", accepted}, {"removed", removed}};
  return json.dump(-1, ' ', false, Json::error_handler_t::replace);
}

Acceptance parse_acceptance(const std::string& line, const std::string& where) {
  Json json;
  try {
    json = Json::parse(line);
  } catch (const nlohmann::json::exception& e) {
    throw Error(where + ": not valid JSON (" + e.what() + "); the acceptance log is truncated or was edited");
  }
  if (!json.is_object()) {
    throw Error(where + ": expected a JSON object");
  }
  Acceptance acceptance;
  acceptance.when = string_field(json, "when", where);
  acceptance.who = string_field(json, "who", where);
  acceptance.reason = string_field(json, "reason", where);
  acceptance.globs = string_list(json, "globs", where);
  acceptance.run_sha = string_field(json, "run_sha", where);
  acceptance.from_sha = string_field(json, "from_sha", where);
  acceptance.accepted = string_list(json, "accepted", where);
  acceptance.removed = string_list(json, "removed", where);
  return acceptance;
}

namespace {

// fnmatch(glob, id, 0) == 0, without the call for the commonest glob, "PREFIX*" with
// no other special character ('*' matches anything, '/' included, without flags).
bool glob_matches(const std::string& glob, std::string_view id, std::string& buffer) {
  if (!glob.empty() && glob.back() == '*' && glob.find_first_of("*?[\\") == glob.size() - 1) {
    return id.size() >= glob.size() - 1 && id.compare(0, glob.size() - 1, glob, 0, glob.size() - 1) == 0;
  }
  buffer.assign(id.data(), id.size());
  return ::fnmatch(glob.c_str(), buffer.c_str(), 0) == 0;
}

}  // namespace

bool matches_any(std::string_view id, const std::vector<std::string>& globs) {
  thread_local std::string buffer;
  return std::any_of(globs.begin(), globs.end(),
                     [&](const std::string& glob) { return glob_matches(glob, id, buffer); });
}

namespace {

// What accepting `globs` makes of `base`: the header (the run's, shard 0 of 1, plus
// experiments only `base` knows) and the chosen checks in id order, pointers into
// both digests; with the accepted and removed ids when asked.
struct AcceptedDigests {
  RunHeader header;
  std::vector<const CheckDigest*> checks;
  std::vector<std::string> accepted;
  std::vector<std::string> removed;
};

AcceptedDigests accept_digests(const RunDigest& run, const RunDigest& base, const std::vector<std::string>& globs,
                               bool list_ids) {
  AcceptedDigests outcome;
  outcome.header = run.header;
  outcome.header.shard = ShardInfo{};
  for (const auto& experiment : base.header.experiments) {
    auto& experiments = outcome.header.experiments;
    bool known = std::any_of(experiments.begin(), experiments.end(),
                             [&](const ExperimentHeader& e) { return e.name == experiment.name; });
    if (!known) {
      experiments.push_back(experiment);
    }
  }
  // One merge of both files in id order: the result comes out sorted, as a canonical
  // baseline is, without a map of a million ids or a second sort.
  outcome.checks.reserve(std::max(run.checks.size(), base.checks.size()));
  merge_by_id(run, base, [&](size_t now, size_t was) {
    const CheckDigest* in_run = now != SIZE_MAX ? &run.checks[now] : nullptr;
    const CheckDigest* in_base = was != SIZE_MAX ? &base.checks[was] : nullptr;
    std::string_view id = in_run != nullptr ? in_run->id : in_base->id;
    if (!matches_any(id, globs)) {
      if (in_base != nullptr) {
        outcome.checks.push_back(in_base);
      }
    } else if (in_run != nullptr) {
      outcome.checks.push_back(in_run);
      if (list_ids) {
        outcome.accepted.emplace_back(id);
      }
    } else if (list_ids) {
      outcome.removed.emplace_back(id);
    }
  });
  return outcome;
}

}  // namespace

AcceptOutcome accept_checks(const RunFile& run, const RunFile& base, const std::vector<std::string>& globs) {
  // Digests of parsed runs: every check points at its record. They must outlive
  // `accepted`, which points into them.
  RunDigest run_digest = digest_view(run);
  RunDigest base_digest = digest_view(base);
  AcceptedDigests accepted = accept_digests(run_digest, base_digest, globs, true);
  AcceptOutcome outcome;
  outcome.baseline.header = std::move(accepted.header);
  outcome.baseline.checks.reserve(accepted.checks.size());
  for (const CheckDigest* check : accepted.checks) {
    outcome.baseline.checks.push_back(*check->record);
  }
  outcome.baseline.summary = summarize(outcome.baseline.header, outcome.baseline.checks);
  outcome.accepted = std::move(accepted.accepted);
  outcome.removed = std::move(accepted.removed);
  return outcome;
}

namespace {

// Where put_accepted's text goes: appended to a string, or written to a file as
// pieces that point into the digests' text (no copy of a gigabyte of lines), all at
// once at the end (writev, AtomicFile) unless the pieces made here grow large.
class AcceptedSink {
 public:
  explicit AcceptedSink(std::string& text) : m_text(&text) {}
  explicit AcceptedSink(AtomicFile& file) : m_file(&file) {}

  // `piece` stays where it is until finish(). A piece that continues the last one in
  // memory (neighbouring lines of a sorted file) joins it.
  void add(std::string_view piece) {
    if (m_text != nullptr) {
      m_text->append(piece);
      return;
    }
    if (!m_pieces.empty() && m_pieces.back().data() + m_pieces.back().size() == piece.data()) {
      m_pieces.back() = std::string_view(m_pieces.back().data(), m_pieces.back().size() + piece.size());
    } else {
      m_pieces.push_back(piece);
    }
  }
  void add_owned(std::string piece) {
    if (m_text != nullptr) {
      m_text->append(piece);
      return;
    }
    m_owned_bytes += piece.size();
    m_owned.push_back(std::move(piece));
    m_pieces.push_back(m_owned.back());
    if (m_owned_bytes > k_owned_limit) {
      // Checks written from their records are held here until written: bounded.
      m_file->write(m_pieces);
      m_pieces.clear();
      m_owned.clear();
      m_owned_bytes = 0;
    }
  }
  void finish() {
    if (m_file != nullptr && !m_pieces.empty()) {
      m_file->write(m_pieces);
    }
    m_pieces.clear();
    m_owned.clear();
  }

 private:
  static constexpr size_t k_owned_limit = size_t{64} << 20;
  std::string* m_text = nullptr;
  AtomicFile* m_file = nullptr;
  std::vector<std::string_view> m_pieces;
  std::deque<std::string> m_owned;  // pieces made here (deque: they do not move)
  size_t m_owned_bytes = 0;
};

// write_run's text of `accepted`. Lines read in canonical layout are copied as they
// were read (with the newline that follows them in their text); others are written
// from their record.
void put_accepted(const AcceptedDigests& accepted, AcceptedSink& out) {
  out.add_owned(header_to_json_line(accepted.header) + "\n");
  for (const CheckDigest* check : accepted.checks) {
    if (check->record != nullptr) {
      out.add_owned(check_to_json_line(*check->record) + "\n");
    } else {
      out.add(std::string_view(check->line.data(), check->line.size() + 1));
    }
  }
  const auto& checks = accepted.checks;
  out.add_owned(summary_to_json_line(
                    summarize_keys(accepted.header, checks.size(),
                                   [&checks](size_t i) {
                                     return CheckKey{checks[i]->experiment, checks[i]->output, checks[i]->status};
                                   })) +
                "\n");
  out.finish();
}

}  // namespace

std::string accepted_baseline_text(const RunFile& run, const RunFile& base, const std::vector<std::string>& globs) {
  std::string text;
  AcceptedSink sink(text);
  RunDigest run_digest = digest_view(run);
  RunDigest base_digest = digest_view(base);
  put_accepted(accept_digests(run_digest, base_digest, globs, false), sink);
  return text;
}

void write_accepted_baseline(const std::string& path, const RunDigest& run, const RunDigest& base,
                             const std::vector<std::string>& globs) {
  // A proposal, derived from the run and the stored baseline, which both stay: atomic
  // for readers, without the fsync of a gigabyte (core/atomic_file.h).
  AtomicFile file(path, Durability::k_replace);
  AcceptedSink sink(file);
  put_accepted(accept_digests(run, base, globs, false), sink);
  file.commit();
}

void write_accepted_baseline(const std::string& path, const RunFile& run, const RunFile& base,
                             const std::vector<std::string>& globs) {
  write_accepted_baseline(path, digest_view(run), digest_view(base), globs);
}

std::string glob_escape(const std::string& id) {
  std::string escaped;
  for (char c : id) {
    if (c == '*' || c == '?' || c == '[' || c == ']' || c == '\\') {
      escaped += '\\';
    }
    escaped += c;
  }
  return escaped;
}

std::string shell_quote(const std::string& text) {
  bool safe = !text.empty() && std::all_of(text.begin(), text.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) != 0 || std::string("/._-,+@%").find(c) != std::string::npos;
  });
  if (safe) {
    return text;
  }
  std::string quoted = "'";
  for (char c : text) {
    quoted += c == '\'' ? std::string("'\\''") : std::string(1, c);
  }
  return quoted + "'";
}

}  // namespace driftgate
