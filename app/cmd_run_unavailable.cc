// driftgate run in a build without LibTorch (-DDRIFTGATE_WITH_TORCH=OFF): such a
// build still diffs, stores baselines and posts, but has no runner, and says so
// instead of failing obscurely.
#include <ostream>

#include "app/command.h"
#include "core/exit_code.h"

namespace driftgate {

int cmd_run(CommandContext& context) {
  context.err << "error: this driftgate was built without LibTorch (DRIFTGATE_WITH_TORCH=OFF), so it has no "
                 "runner; build with -DDRIFTGATE_WITH_TORCH=ON or run `driftgate run` where LibTorch is "
                 "installed\n";
  return to_int(ExitCode::k_error);
}

}  // namespace driftgate
