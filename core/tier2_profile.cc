#include "core/tier2_profile.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <nlohmann/json.hpp>

#include "core/error.h"
#include "core/record_json.h"

namespace driftgate {
namespace {

using Json = OrderedJson;

const char* const k_fields[] = {"alignment",
                                "status",
                                "not_captured",
                                "layers",
                                "observed",
                                "not_observable",
                                "calls",
                                "calls_compared",
                                "coverage",
                                "first_divergent",
                                "fused_before",
                                "highest_rank",
                                "reinjection",
                                "reinjection_delta",
                                "reinjection_group",
                                "note",
                                "peak_rss_kib",
                                "profile"};

Tier2Layer parse_layer(const Json& row) {
  if (!row.is_array() || (row.size() != 6 && row.size() != 7) || !row[0].is_string() || !row[1].is_string() ||
      (row.size() == 7 && !row[6].is_string())) {
    throw Error(
        "localization: a profile row must be [name, status, delta, noise_floor, threshold, rank] or, for a "
        "not-observable layer, [..., reason], got " +
        row.dump());
  }
  Tier2Layer layer;
  layer.name = row[0].get<std::string>();
  layer.status = parse_layer_status(row[1].get<std::string>());
  layer.delta = json_to_number(row[2], "localization: 'delta'");
  layer.noise_floor = json_to_number(row[3], "localization: 'noise_floor'");
  layer.threshold = json_to_number(row[4], "localization: 'threshold'");
  layer.rank = json_to_number(row[5], "localization: 'rank'");
  if (row.size() == 7) {
    if (layer.status != LayerStatus::k_not_observable) {
      throw Error("localization: only a not_observable layer has a reason, got " + row.dump());
    }
    layer.reason = row[6].get<std::string>();
  }
  return layer;
}

std::vector<std::string> string_array(const Json& json, const char* field) {
  if (!json.is_array()) {
    throw Error(std::string("localization: field '") + field + "' must be an array of layer names");
  }
  std::vector<std::string> names;
  for (const Json& name : json) {
    if (!name.is_string()) {
      throw Error(std::string("localization: field '") + field + "' must be an array of layer names");
    }
    names.push_back(name.get<std::string>());
  }
  return names;
}

// delta / threshold of an observed layer (0 when both are 0).
double ratio(const Tier2Layer& layer) {
  if (layer.threshold > 0.0) {
    return layer.delta / layer.threshold;
  }
  return layer.delta > 0.0 ? INFINITY : 0.0;
}

}  // namespace

const char* to_string(LayerStatus status) {
  switch (status) {
    case LayerStatus::k_ok:
      return "ok";
    case LayerStatus::k_divergent:
      return "divergent";
    case LayerStatus::k_not_observable:
      return "not_observable";
  }
  return "ok";
}

const char* to_string(LocalizationStatus status) {
  switch (status) {
    case LocalizationStatus::k_localized:
      return "localized";
    case LocalizationStatus::k_partial:
      return "partial";
    case LocalizationStatus::k_within_thresholds:
      return "within_thresholds";
  }
  return "within_thresholds";
}

LayerStatus parse_layer_status(const std::string& name) {
  for (LayerStatus status : {LayerStatus::k_ok, LayerStatus::k_divergent, LayerStatus::k_not_observable}) {
    if (name == to_string(status)) {
      return status;
    }
  }
  throw Error("localization: unknown layer status '" + name + "' (expected ok, divergent or not_observable)");
}

std::string localization_to_json(const Localization& localization) {
  Json profile = Json::array();
  for (const Tier2Layer& layer : localization.profile) {
    Json row = Json::array({layer.name, to_string(layer.status), json_number(layer.delta),
                            json_number(layer.noise_floor), json_number(layer.threshold), json_number(layer.rank)});
    if (layer.status == LayerStatus::k_not_observable && !layer.reason.empty()) {
      row.push_back(layer.reason);
    }
    profile.push_back(std::move(row));
  }
  Json json{{"alignment", localization.alignment}, {"status", to_string(localization.status)}};
  if (!localization.not_captured.empty()) {
    json["not_captured"] = localization.not_captured;
  }
  json["layers"] = localization.layers;
  json["observed"] = localization.observed;
  json["not_observable"] = localization.not_observable;
  json["calls"] = localization.calls;
  json["calls_compared"] = localization.calls_compared;
  json["coverage"] = json_number(localization.coverage);
  json["first_divergent"] = localization.first_divergent;
  json["fused_before"] = localization.fused_before;
  json["highest_rank"] = localization.highest_rank;
  json["reinjection"] = localization.reinjection;
  json["reinjection_delta"] = json_number(localization.reinjection_delta);
  if (!localization.reinjection_group.empty()) {
    json["reinjection_group"] = localization.reinjection_group;
  }
  json["note"] = localization.note;
  json["peak_rss_kib"] = localization.peak_rss_kib;
  json["profile"] = std::move(profile);
  return json.dump();
}

Localization parse_localization_json(const std::string& text_value) {
  Json json;
  try {
    json = Json::parse(text_value);
  } catch (const std::exception& e) {
    throw Error(std::string("localization: not JSON: ") + e.what());
  }
  return localization_from_json(json);
}

Localization localization_from_json(const OrderedJson& json) {
  if (!json.is_object()) {
    throw Error("localization: expected an object");
  }
  for (const auto& item : json.items()) {
    if (std::find_if(std::begin(k_fields), std::end(k_fields), [&](const char* name) { return item.key() == name; }) ==
        std::end(k_fields)) {
      throw Error("localization: unknown field '" + item.key() + "'");
    }
  }
  JsonFields fields(json, "localization: ");
  Localization localization;
  localization.alignment = fields.text("alignment");
  if (localization.alignment != "position" && localization.alignment != "boundary" &&
      localization.alignment != "package_outputs" && localization.alignment != "onnx_scope") {
    throw Error("localization: alignment must be 'position', 'boundary', 'onnx_scope' or 'package_outputs', got '" +
                localization.alignment + "'");
  }
  if (json.contains("status")) {
    const std::string status = fields.text("status");
    bool known = false;
    for (LocalizationStatus candidate :
         {LocalizationStatus::k_localized, LocalizationStatus::k_partial, LocalizationStatus::k_within_thresholds}) {
      if (status == to_string(candidate)) {
        localization.status = candidate;
        known = true;
      }
    }
    if (!known) {
      throw Error("localization: status must be localized, partial or within_thresholds, got '" + status + "'");
    }
  }
  if (json.contains("not_captured")) {
    localization.not_captured = fields.text("not_captured");
  }
  localization.layers = fields.integer("layers");
  localization.observed = fields.integer("observed");
  localization.not_observable = fields.integer("not_observable");
  if (json.contains("calls") != json.contains("calls_compared")) {
    throw Error("localization: 'calls' and 'calls_compared' come together");
  }
  if (json.contains("calls")) {
    localization.calls = fields.integer("calls");
    localization.calls_compared = fields.integer("calls_compared");
    if (localization.calls < 0 || localization.calls_compared < 0 || localization.calls_compared > localization.calls) {
      throw Error("localization: 'calls_compared' must be between 0 and 'calls'");
    }
  }
  localization.coverage = fields.number("coverage");
  localization.first_divergent = fields.text("first_divergent");
  localization.fused_before = string_array(fields.get("fused_before"), "fused_before");
  localization.highest_rank = fields.text("highest_rank");
  localization.reinjection = fields.text("reinjection");
  if (localization.reinjection != "confirmed" && localization.reinjection != "not_confirmed" &&
      localization.reinjection != "not_run") {
    throw Error("localization: reinjection must be confirmed, not_confirmed or not_run, got '" +
                localization.reinjection + "'");
  }
  localization.reinjection_delta = fields.number("reinjection_delta");
  if (json.contains("reinjection_group")) {
    localization.reinjection_group = string_array(fields.get("reinjection_group"), "reinjection_group");
  }
  localization.note = fields.text("note");
  localization.peak_rss_kib = fields.integer("peak_rss_kib");
  const Json& profile = fields.get("profile");
  if (!profile.is_array()) {
    throw Error("localization: field 'profile' must be an array");
  }
  for (const Json& row : profile) {
    localization.profile.push_back(parse_layer(row));
  }
  if (static_cast<int64_t>(localization.profile.size()) != localization.layers) {
    throw Error("localization: 'layers' is " + std::to_string(localization.layers) + " but the profile has " +
                std::to_string(localization.profile.size()) + " rows");
  }
  if (!json.contains("status")) {  // written before the status was
    localization.status = localization.first_divergent.empty() ? LocalizationStatus::k_within_thresholds
                                                               : LocalizationStatus::k_localized;
  }
  return localization;
}

std::string layer_sparkline(const Localization& localization, size_t width) {
  static const char* const k_bars[] = {"\u2581", "\u2582", "\u2583", "\u2584", "\u2585", "\u2586", "\u2587"};
  const auto& layers = localization.profile;
  if (layers.empty() || width == 0) {
    return "";
  }
  const size_t groups = std::min(width, layers.size());
  std::string line;
  for (size_t g = 0; g < groups; ++g) {
    const size_t begin = g * layers.size() / groups;
    const size_t end = (g + 1) * layers.size() / groups;
    bool any_observed = false;
    double worst = 0.0;
    for (size_t i = begin; i < end; ++i) {
      if (layers[i].status != LayerStatus::k_not_observable) {
        any_observed = true;
        worst = std::max(worst, ratio(layers[i]));
      }
    }
    if (!any_observed) {
      line += " ";
    } else if (worst > 1.0) {
      line += "\u2588";
    } else {
      // 1e-6 .. 1 of the threshold, log-scaled onto the seven lower bars.
      double level = worst <= 1e-6 ? 0.0 : (std::log10(worst) + 6.0) / 6.0;
      line += k_bars[std::clamp(static_cast<int>(level * 7.0), 0, 6)];
    }
  }
  return line;
}

std::string describe_localization(const Localization& localization) {
  char coverage[200];
  if (localization.calls > 0) {
    std::snprintf(coverage, sizeof coverage,
                  "coverage %.0f%% (%lld of %lld module calls compared; %lld of %lld layers, %lld not observable)",
                  localization.coverage * 100.0, static_cast<long long>(localization.calls_compared),
                  static_cast<long long>(localization.calls), static_cast<long long>(localization.observed),
                  static_cast<long long>(localization.layers), static_cast<long long>(localization.not_observable));
  } else {
    std::snprintf(coverage, sizeof coverage, "coverage %.0f%% (%lld of %lld layers; %lld fused / not observable)",
                  localization.coverage * 100.0, static_cast<long long>(localization.observed),
                  static_cast<long long>(localization.layers), static_cast<long long>(localization.not_observable));
  }
  const std::string partial =
      localization.not_captured.empty() ? std::string() : "partial profile: " + localization.not_captured + "; ";
  if (localization.first_divergent.empty()) {
    if (localization.status == LocalizationStatus::k_partial) {
      return "no divergent layer among the compared ones, but the " + partial + coverage;
    }
    return std::string("no divergent layer; ") + coverage;
  }
  double rank = 0.0;
  for (const Tier2Layer& layer : localization.profile) {
    if (layer.name == localization.first_divergent) {
      rank = layer.rank;
    }
  }
  char first[96];
  std::snprintf(first, sizeof first, " (rank %.3g; re-injection %s)", rank, localization.reinjection.c_str());
  std::string text_value = "first divergent: " + localization.first_divergent;
  if (!localization.fused_before.empty()) {
    std::string fused;
    for (const std::string& name : localization.fused_before) {
      fused += (fused.empty() ? "" : ", ") + name.substr(0, name.find(" ("));
    }
    text_value += " after not observable " + fused;
  }
  text_value += first;
  if (!localization.highest_rank.empty() && localization.highest_rank != localization.first_divergent) {
    text_value += "; highest rank: " + localization.highest_rank;
  }
  return text_value + "; " + partial + coverage;
}

}  // namespace driftgate
