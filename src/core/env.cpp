#include "core/env.h"

#include <algorithm>
#include <cstdlib>

namespace orochi {

Expected<std::string> env_choice(const char* name, std::initializer_list<std::string_view> allowed,
                                 std::string_view fallback) {
  const char* value = std::getenv(name);
  if (value == nullptr) return std::string(fallback);
  if (std::find(allowed.begin(), allowed.end(), std::string_view(value)) != allowed.end()) return std::string(value);
  std::string choices;  // "a or b", "a, b or c"
  size_t i = 0;
  for (std::string_view a : allowed) {
    if (i > 0) choices += i + 1 == allowed.size() ? " or " : ", ";
    choices += a;
    ++i;
  }
  return Status(ErrorCode::kInvalidArgument,
                std::string(name) + " must be " + choices + ", got '" + value + "'");
}

}  // namespace orochi
