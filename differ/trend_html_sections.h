// The tables and per-layer charts of the HTML trend page (trend_html.cc draws the
// time charts). Split out only to keep each file one screenful of concerns; every
// function returns an HTML fragment with all record and commit text escaped.
#pragma once

#include <string>

#include "differ/trend.h"
#include "differ/trend_html.h"

namespace driftgate {

std::string short_sha(const std::string& sha);
// "97.5%", "100%", "n/a" for NaN.
std::string percent(double fraction);

std::string environments_section(const TrendData& trend);
std::string markers_section(const TrendData& trend);
std::string steps_section(const TrendData& trend, const TrendHtmlOptions& options);
// Per-layer error curves of checks with tier-2 profiles, or a note saying none carry one.
std::string layers_section(const TrendData& trend);
// One row per commit: SHA, subject, author, date, pass rate per environment.
std::string commits_section(const TrendData& trend);

}  // namespace driftgate
