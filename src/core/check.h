// Invariant checks: a failed OROCHI_CHECK is a bug in Orochi, not bad user input. It throws
// InternalError carrying file:line so the report points at the broken assumption; apps catch it
// at the top level and print it. User-facing failures use Status instead (core/status.h).
#pragma once

#include <sstream>
#include <stdexcept>
#include <string>

namespace orochi {

class InternalError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

[[noreturn]] void throw_check_failure(const char* file, int line, const char* condition,
                                      const std::string& message);

namespace detail {
inline void append_all(std::ostringstream&) {}
template <typename T, typename... Rest>
void append_all(std::ostringstream& os, const T& first, const Rest&... rest) {
  os << first;
  append_all(os, rest...);
}
template <typename... Args>
std::string concat(const Args&... args) {
  std::ostringstream os;
  append_all(os, args...);
  return os.str();
}
}  // namespace detail

}  // namespace orochi

// OROCHI_CHECK(n > 0, "n was ", n);
#define OROCHI_CHECK(cond, ...)                                                      \
  do {                                                                               \
    if (!(cond))                                                                     \
      ::orochi::throw_check_failure(__FILE__, __LINE__, #cond,                       \
                                    ::orochi::detail::concat("" __VA_OPT__(, ) __VA_ARGS__)); \
  } while (0)
