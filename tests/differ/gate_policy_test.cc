// The gate policy: strict YAML, per-experiment overrides, the allowlist and its
// expiry, and where each value came from.
#include "differ/gate_policy.h"

#include <gtest/gtest.h>

#include "core/error.h"
#include "tests/differ/test_support.h"

namespace driftgate {
namespace {

using test::make_check;
using test::make_environment;
using test::make_run;

const std::string k_sha = "0123456789abcdef0123456789abcdef01234567";
const std::string k_today = "2026-06-15";

std::string error_of(const std::string& yaml) {
  try {
    parse_gate_policy(yaml, "policy.yaml", k_today);
  } catch (const Error& e) {
    return e.what();
  }
  return "(no error)";
}

CheckDiff check_diff(const std::string& id, const std::string& experiment, DiffClass diff_class) {
  CheckDiff check;
  check.id = id;
  check.experiment = experiment;
  check.diff_class = diff_class;
  return check;
}

TEST(GatePolicy, TheDefaultGatesRegressedCrashedMissingGrownAndNewFailures) {
  GatePolicy policy = parse_gate_policy("", "policy.yaml", k_today);
  EXPECT_EQ(policy.gated, (std::set<DiffClass>{DiffClass::k_regressed, DiffClass::k_crashed, DiffClass::k_missing,
                                               DiffClass::k_failure_grew, DiffClass::k_new_failure}));
  EXPECT_EQ(describe_policy(policy),
            std::vector<std::string>{"(default) gate: [regressed, crashed, missing, failure_grew, new_failure]"});
}

TEST(GatePolicy, ValuesRememberTheirOrigin) {
  GatePolicy policy = parse_gate_policy(
      "# team policy\n"
      "gate: [regressed, drift_grew]\n"
      "experiments:\n"
      "  bf16:\n"
      "    gate: [crashed]\n"
      "allow:\n"
      "  - check: \"exp/*/cpu_fp32~onednn_off/*\"\n"
      "    owner: alice\n"
      "    reason: \"known oneDNN rounding, tracked in #12\"\n"
      "    expires: 2026-12-31\n"
      "  - {check: old/*, owner: bob, reason: was flaky, expires: 2026-06-14}\n",
      "policy.yaml", k_today);
  EXPECT_EQ(describe_policy(policy),
            (std::vector<std::string>{
                "(policy.yaml:2) gate: [regressed, drift_grew]", "(policy.yaml:5) experiments.bf16.gate: [crashed]",
                "(policy.yaml:7) allow: 'exp/*/cpu_fp32~onednn_off/*' owner alice until 2026-12-31: known oneDNN "
                "rounding, tracked in #12",
                "(policy.yaml:11) allow: 'old/*' owner bob until 2026-06-14 EXPIRED: was flaky"}));
  EXPECT_EQ(policy.expiry_notes(),
            std::vector<std::string>{"allowlist entry 'old/*' (policy.yaml:11, owner bob) expired on 2026-06-14 and "
                                     "no longer applies; renew or remove it"});
  EXPECT_EQ(policy.gate_for("bf16").origin, "policy.yaml:5");
  EXPECT_EQ(policy.gate_for("other").origin, "policy.yaml:2");
}

TEST(GatePolicy, AnEntryAppliesThroughItsExpiryDay) {
  std::string yaml = "allow: [{check: '*', owner: a, reason: r, expires: 2026-06-15}]\n";
  EXPECT_FALSE(parse_gate_policy(yaml, "p.yaml", "2026-06-15").allow[0].expired);
  EXPECT_TRUE(parse_gate_policy(yaml, "p.yaml", "2026-06-16").allow[0].expired);
}

TEST(GatePolicy, UnknownKeysAndClassesArePositionedErrorsWithSuggestions) {
  EXPECT_EQ(error_of("gate: [regressed]\ngates: [missing]\n"),
            "policy.yaml:2:1: unknown key 'gates' in the gate policy; did you mean 'gate'? (allowed: gate, "
            "experiments, allow)");
  EXPECT_EQ(error_of("gate: [regresed, crashed]\n"),
            "policy.yaml:1:8: unknown diff class 'regresed' in gate; did you mean 'regressed'? (one of: regressed, "
            "crashed, missing, failure_grew, new_failure, drift_grew, task_changed, new, fixed, unchanged)");
  EXPECT_EQ(error_of("allow:\n  - check: x\n    ownr: a\n"),
            "policy.yaml:3:5: unknown key 'ownr' in an allowlist entry; did you mean 'owner'? (allowed: check, owner, "
            "reason, expires)");
  EXPECT_EQ(error_of("allow:\n  - {check: x, owner: a, reason: r}\n"),
            "policy.yaml:2:5: an allowlist entry needs the key 'expires'");
  EXPECT_EQ(error_of("allow:\n  - {check: x, owner: a, reason: r, expires: 2026-02-30}\n"),
            "policy.yaml:2:46: expires '2026-02-30' must be a date YYYY-MM-DD (the last day the entry applies)");
  EXPECT_EQ(error_of("experiments:\n  e: {gate: [new], gated: [x]}\n"),
            "policy.yaml:2:20: unknown key 'gated' in experiment 'e'; did you mean 'gate'? (allowed: gate)");
  EXPECT_EQ(error_of("gate: regressed\n"),
            "policy.yaml:1:7: gate must be a list of diff classes, e.g. [regressed, crashed, missing]");
  EXPECT_EQ(error_of("gate: [regressed\n").substr(0, 17), "policy.yaml:2:1: ");
  EXPECT_EQ(error_of("gate: [regressed]\ngate: [new]\n"), "policy.yaml:2:1: duplicate key 'gate' in the gate policy");
  // Issue 35: read by the experiment's reader (core/yaml_reader.h), in its words.
  EXPECT_EQ(error_of("- gate\n"), "policy.yaml:1:1: the gate policy must be a mapping of keys to values, got a list");
  EXPECT_EQ(error_of("[gate]: [new]\n"), "policy.yaml:1:1: keys of the gate policy must be plain words");
  EXPECT_EQ(error_of("experiments:\n  e: [gate]\n"),
            "policy.yaml:2:6: experiment 'e' must be a mapping of keys to values, got a list");
}

TEST(GatePolicy, DecisionsFollowOverridesAndTheLiveAllowlist) {
  GatePolicy policy = parse_gate_policy(
      "gate: [regressed]\n"
      "experiments: {strict: {gate: [regressed, drift_grew]}}\n"
      "allow:\n"
      "  - {check: 'exp/a/*', owner: alice, reason: known, expires: 2026-12-31}\n"
      "  - {check: 'exp/b/*', owner: bob, reason: stale, expires: 2026-01-01}\n",
      "policy.yaml", k_today);
  GateDecision allowed = decide(policy, check_diff("exp/a/cpu_fp32~onednn_off/out", "exp", DiffClass::k_regressed));
  EXPECT_FALSE(allowed.gated);
  EXPECT_TRUE(allowed.class_gated);
  ASSERT_NE(allowed.allowed_by, nullptr);
  EXPECT_EQ(allowed.allowed_by->owner, "alice");
  GateDecision expired = decide(policy, check_diff("exp/b/cpu_fp32~onednn_off/out", "exp", DiffClass::k_regressed));
  EXPECT_TRUE(expired.gated);
  EXPECT_EQ(expired.allowed_by, nullptr);
  EXPECT_EQ(expired.origin, "policy.yaml:1");
  EXPECT_FALSE(decide(policy, check_diff("exp/c/x~y/out", "exp", DiffClass::k_drift_grew)).gated);
  GateDecision strict = decide(policy, check_diff("strict/c/x~y/out", "strict", DiffClass::k_drift_grew));
  EXPECT_TRUE(strict.gated);
  EXPECT_EQ(strict.origin, "policy.yaml:2");
  EXPECT_FALSE(decide(policy, check_diff("exp/c/x~y/out", "exp", DiffClass::k_missing)).gated);
}

TEST(GatePolicy, TheExitCodeFollowsPerCheckDecisions) {
  using S = CheckStatus;
  RunFile baseline = make_run(k_sha, make_environment(), {make_check("a", S::k_pass), make_check("b", S::k_pass)});
  RunFile run = make_run(k_sha, make_environment(),
                         {make_check("a", S::k_fail_numeric, 1.0), make_check("b", S::k_fail_numeric, 1.0)});
  DiffResult result = diff_runs(run, baseline);
  GatePolicy one =
      parse_gate_policy("allow: [{check: 'exp/a/*', owner: o, reason: r, expires: 2026-12-31}]\n", "p.yaml", k_today);
  EXPECT_EQ(gate_exit_code(result, one), ExitCode::k_gated);
  GatePolicy both =
      parse_gate_policy("allow: [{check: 'exp/*', owner: o, reason: r, expires: 2026-12-31}]\n", "p.yaml", k_today);
  EXPECT_EQ(gate_exit_code(result, both), ExitCode::k_ok);
  EXPECT_TRUE(gated_classes_present(result, both).empty());
  EXPECT_EQ(
      gate_exit_code(result, parse_gate_policy("allow: [{check: 'exp/*', owner: o, reason: r, expires: 2026-12-31}]\n",
                                               "p.yaml", "2027-01-01")),
      ExitCode::k_gated);
}

TEST(GatePolicy, DatesAreValidated) {
  EXPECT_TRUE(is_iso_date("2024-02-29"));
  EXPECT_FALSE(is_iso_date("2023-02-29"));
  EXPECT_FALSE(is_iso_date("2023-13-01"));
  EXPECT_FALSE(is_iso_date("2023-1-01"));
  EXPECT_THROW(parse_gate_policy("", "p.yaml", "tomorrow"), Error);
}

}  // namespace
}  // namespace driftgate
