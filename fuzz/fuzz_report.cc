// libFuzzer target: report.json as `driftgate post` reads it (ci/comment_body.h).
// The report comes from the gate run, which a fork's pull request controls, so
// parse_report must either accept it or throw driftgate::Error (never crash, never
// recurse without bound), and an accepted report must render within every
// surface's budget.
#include <cstddef>
#include <cstdint>
#include <string>

#include "ci/comment_body.h"
#include "core/error.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string text(reinterpret_cast<const char*>(data), size);
  nlohmann::json report;
  try {
    report = driftgate::parse_report(text, "report.json");
  } catch (const driftgate::Error&) {
    return 0;
  }
  (void)driftgate::verdict_line(report);
  for (driftgate::BodyBudget budget : {driftgate::k_github_comment_budget, driftgate::k_github_check_summary_budget,
                                       driftgate::BodyBudget{2000, true}}) {
    driftgate::BodyOptions options;
    options.marker = "<!-- driftgate-sticky project=p key=k -->";
    options.key = "k";
    options.artifact_url = "https://example.com/run/1";
    options.budget = budget;
    options.notice = "The gate run concluded failure";
    try {
      std::string body = driftgate::render_comment_body(report, options);
      if (driftgate::measure(body, budget) > budget.limit) {
        __builtin_trap();  // a body over the surface's limit is refused by the forge
      }
    } catch (const driftgate::Error&) {
    }
  }
  return 0;
}
