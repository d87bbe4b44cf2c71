#include "core/check.h"

namespace orochi {

void throw_check_failure(const char* file, int line, const char* condition,
                         const std::string& message) {
  std::ostringstream os;
  os << file << ":" << line << ": check failed: " << condition;
  if (!message.empty()) os << ": " << message;
  throw InternalError(os.str());
}

}  // namespace orochi
