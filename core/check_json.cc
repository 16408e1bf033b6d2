#include "core/check_json.h"

#include <cstdint>
#include <vector>

#include "core/record_json.h"

namespace driftgate {

namespace {

void put_key(std::string& out, const char* key) {
  out += '"';
  out += key;
  out += "\":";
}

void put_integers(std::string& out, const std::vector<int64_t>& values) {
  out += '[';
  for (size_t i = 0; i < values.size(); ++i) {
    if (i > 0) {
      out += ',';
    }
    put_json_integer(out, values[i]);
  }
  out += ']';
}

void put_observed(std::string& out, const char* key, const ObservedTensor& observed) {
  out += ',';
  put_key(out, key);
  out += "{\"device\":";
  put_json_string(out, observed.device);
  out += ",\"dtype\":";
  put_json_string(out, observed.dtype);
  out += ",\"memory_format\":";
  put_json_string(out, observed.memory_format);
  out += ",\"shape\":";
  put_integers(out, observed.shape);
  out += '}';
}

void put_field(std::string& out, const char* key, double value) {
  out += ',';
  put_key(out, key);
  put_json_number(out, value);
}

void put_field(std::string& out, const char* key, int64_t value) {
  out += ',';
  put_key(out, key);
  put_json_integer(out, value);
}

void put_stats(std::string& out, const Tier1Stats& stats) {
  out += ",\"stats\":{\"numel\":";
  put_json_integer(out, stats.numel);
  put_field(out, "mismatches", stats.mismatches);
  put_field(out, "mismatch_fraction", stats.mismatch_fraction);
  put_field(out, "max_abs", stats.max_abs);
  out += ",\"max_abs_index\":";
  put_integers(out, stats.max_abs_index);
  put_field(out, "max_abs_reference", stats.max_abs_reference);
  put_field(out, "max_abs_target", stats.max_abs_target);
  put_field(out, "max_rel", stats.max_rel);
  out += ",\"max_rel_index\":";
  put_integers(out, stats.max_rel_index);
  put_field(out, "rel_floor", stats.rel_floor);
  put_field(out, "max_abs_reference_value", stats.max_abs_reference_value);
  put_field(out, "nan_reference", stats.nan_reference);
  put_field(out, "nan_target", stats.nan_target);
  put_field(out, "inf_reference", stats.inf_reference);
  put_field(out, "inf_target", stats.inf_target);
  put_field(out, "min_atol", stats.min_atol);
  put_field(out, "min_rtol", stats.min_rtol);
  put_field(out, "mean_abs", stats.mean_abs);
  put_field(out, "p99_abs", stats.p99_abs);
  put_field(out, "rmse", stats.rmse);
  put_field(out, "cosine_similarity", stats.cosine_similarity);
  put_field(out, "max_ulp", stats.max_ulp);
  if (stats.oracle) {
    out += ",\"oracle\":{\"reference_max_abs\":";
    put_json_number(out, stats.oracle->reference_max_abs);
    put_field(out, "target_max_abs", stats.oracle->target_max_abs);
    put_field(out, "reference_rmse", stats.oracle->reference_rmse);
    put_field(out, "target_rmse", stats.oracle->target_rmse);
    out += '}';
  }
  if (stats.reference_repeat_max_abs) {
    put_field(out, "reference_repeat_max_abs", *stats.reference_repeat_max_abs);
  }
  if (stats.target_repeat_max_abs) {
    put_field(out, "target_repeat_max_abs", *stats.target_repeat_max_abs);
  }
  out += '}';
}

}  // namespace

void append_check_json_begin(std::string& out, const CheckRecord& check) {
  out += "{\"type\":\"check\",\"id\":";
  put_json_string(out, check.id);
  out += ",\"experiment\":";
  put_json_string(out, check.experiment);
  out += ",\"input\":";
  put_json_string(out, check.input);
  out += ",\"reference\":";
  put_json_string(out, check.reference);
  out += ",\"target\":";
  put_json_string(out, check.target);
  out += ",\"output\":";
  put_json_string(out, check.output);
  out += ",\"status\":";
  put_json_string(out, to_string(check.status));
  out += ",\"message\":";
  put_json_string(out, check.message);
  out += ",\"tolerance\":{\"rule\":";
  put_json_string(out, to_string(check.tolerance.rule));
  out += ",\"atol\":";
  put_json_double(out, check.tolerance.atol);
  out += ",\"rtol\":";
  put_json_double(out, check.tolerance.rtol);
  if (check.tolerance.k > 0.0) {
    out += ",\"k\":";
    put_json_double(out, check.tolerance.k);
  }
  if (!check.tolerance.origin.empty()) {
    out += ",\"origin\":";
    put_json_string(out, check.tolerance.origin);
  }
  out += '}';
  if (check.observed_reference) {
    put_observed(out, "observed_reference", *check.observed_reference);
  }
  if (check.observed_target) {
    put_observed(out, "observed_target", *check.observed_target);
  }
  if (check.stats) {
    put_stats(out, *check.stats);
  }
}

void append_check_json_end(std::string& out, const CheckRecord& check) {
  out += ",\"timings_ms\":{\"reference\":";
  put_json_number(out, check.reference_ms);
  put_field(out, "target", check.target_ms);
  put_field(out, "reference_iqr", check.reference_iqr_ms);
  put_field(out, "target_iqr", check.target_iqr_ms);
  out += "}}";
}

}  // namespace driftgate
