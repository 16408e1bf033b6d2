#include "ci/post_settings.h"

namespace driftgate {

std::string status_name(const PostSettings& settings) {
  return settings.key == "default" ? "driftgate" : "driftgate/" + settings.key;
}

}  // namespace driftgate
