#include "differ/baseline_accept.h"

#include <fnmatch.h>

#include <algorithm>
#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <set>

#include "core/error.h"
#include "core/record_json.h"
#include "core/safe_text.h"
#include "core/strict_json.h"
#include "core/text_compare.h"
#include "differ/baseline_store.h"

namespace driftgate {

namespace {
using Json = OrderedJson;
}  // namespace

std::string Acceptance::to_json_line() const {
  Json json{{"when", when},       {"who", who},           {"reason", reason},     {"globs", globs},
            {"run_sha", run_sha}, {"from_sha", from_sha}, {"accepted", accepted}, {"removed", removed}};
  return json.dump(-1, ' ', false, Json::error_handler_t::replace);
}

Acceptance parse_acceptance(const std::string& line, const std::string& where) {
  Json json;
  try {
    json = parse_json_strict(line);
  } catch (const nlohmann::json::exception& e) {
    throw Error(where + ": not valid JSON (" + e.what() + "); the acceptance log is truncated or was edited");
  } catch (const Error& e) {
    throw Error(where + ": " + e.what());
  }
  if (!json.is_object()) {
    throw Error(where + ": expected a JSON object");
  }
  Acceptance acceptance;
  try {
    JsonFields fields(json);
    acceptance.when = fields.text("when");
    acceptance.who = fields.text("who");
    acceptance.reason = fields.text("reason");
    acceptance.globs = fields.strings("globs");
    acceptance.run_sha = fields.text("run_sha");
    acceptance.from_sha = fields.text("from_sha");
    acceptance.accepted = fields.strings("accepted");
    acceptance.removed = fields.strings("removed");
  } catch (const Error& e) {
    throw Error(where + ": acceptance entry: " + e.what());
  }
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

// `check`'s record: its own, or its line read in full.
CheckRecord record_of(const CheckDigest& check) {
  if (check.record != nullptr) {
    return *check.record;
  }
  return parse_check_line(check.line);
}

// Whether `was` (a baseline's check) already holds `now`'s values: the two are the same
// check line up to their timings. `twin`: `was` was vouched for by `now` when read.
bool holds_the_same_values(const CheckDigest& now, const CheckDigest& was, bool twin) {
  if (twin) {
    return true;  // read_check_like: the same bytes up to the timings
  }
  if (now.record == nullptr && was.record == nullptr && now.timings_at != 0) {
    return now.timings_at == was.timings_at && same_bytes(now.line.data(), was.line.data(), now.timings_at);
  }
  CheckRecord a = record_of(now);
  CheckRecord b = record_of(was);
  a.reference_ms = a.target_ms = a.reference_iqr_ms = a.target_iqr_ms = 0.0;
  b.reference_ms = b.target_ms = b.reference_iqr_ms = b.target_iqr_ms = 0.0;
  return check_to_json_line(a) == check_to_json_line(b);
}

}  // namespace

AcceptedDigests accept_digests(const RunDigest& run, const RunDigest& base, const std::vector<std::string>& globs,
                               bool with_checks) {
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
  const bool twins = base.like_serial != 0 && base.like_serial == run.serial;
  // One merge of both files in id order: the result comes out sorted, as a canonical
  // baseline is, without a map of a million ids or a second sort.
  if (with_checks) {
    outcome.checks.reserve(std::max(run.checks.size(), base.checks.size()));
  }
  auto keep = [&](const CheckDigest* check) {
    if (with_checks) {
      outcome.checks.push_back(check);
    }
  };
  merge_by_id(run, base, [&](size_t now, size_t was) {
    const CheckDigest* in_run = now != SIZE_MAX ? &run.checks[now] : nullptr;
    const CheckDigest* in_base = was != SIZE_MAX ? &base.checks[was] : nullptr;
    std::string_view id = in_run != nullptr ? in_run->id : in_base->id;
    if (!matches_any(id, globs)) {
      if (in_base != nullptr) {
        keep(in_base);
      }
    } else if (in_run == nullptr) {
      outcome.dropped.push_back(in_base);
    } else if (in_base != nullptr && holds_the_same_values(*in_run, *in_base, twins && in_base->twin == now)) {
      keep(in_base);
      ++outcome.unchanged;
    } else {
      keep(in_run);
      outcome.changed.push_back(in_run);
      if (in_base != nullptr) {
        outcome.replaced.push_back(in_base);
      }
    }
  });
  return outcome;
}

AcceptOutcome accept_checks(const RunFile& run, const RunFile& base, const std::vector<std::string>& globs) {
  // Digests of parsed runs: every check points at its record. They must outlive
  // `accepted`, which points into them.
  RunDigest run_digest = digest_view(run);
  RunDigest base_digest = digest_view(base);
  AcceptedDigests accepted = accept_digests(run_digest, base_digest, globs);
  AcceptOutcome outcome;
  outcome.baseline.header = std::move(accepted.header);
  outcome.baseline.checks.reserve(accepted.checks.size());
  for (const CheckDigest* check : accepted.checks) {
    outcome.baseline.checks.push_back(*check->record);
  }
  outcome.baseline.summary = summarize(outcome.baseline.header, outcome.baseline.checks);
  for (const CheckDigest* check : accepted.changed) {
    outcome.accepted.emplace_back(check->id);
  }
  for (const CheckDigest* check : accepted.dropped) {
    outcome.removed.emplace_back(check->id);
  }
  outcome.unchanged = accepted.unchanged;
  return outcome;
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
  if (!first_invisible(text).empty()) {
    // A NUL would cut the word in a shell, U+202E would show it in another order.
    return ansi_c_quote(text);
  }
  std::string quoted = "'";
  for (char c : text) {
    quoted += c == '\'' ? std::string("'\\''") : std::string(1, c);
  }
  return quoted + "'";
}

}  // namespace driftgate
