// driftgate explain in a build without LibTorch (-DDRIFTGATE_WITH_TORCH=OFF): tier 2
// runs the models, so such a build cannot explain a check, and says so.
#include <ostream>

#include "app/command.h"
#include "core/exit_code.h"

namespace driftgate {

int cmd_explain(CommandContext& context) {
  context.err << "error: this driftgate was built without LibTorch (DRIFTGATE_WITH_TORCH=OFF), so it has no "
                 "runner and cannot capture activations; build with -DDRIFTGATE_WITH_TORCH=ON or run `driftgate "
                 "explain` where LibTorch is installed (the localizations already in a run file are shown by "
                 "`driftgate diff`)\n";
  return to_int(ExitCode::k_error);
}

}  // namespace driftgate
