#include "core/format.h"

#include <cstdarg>
#include <cstdio>

namespace orochi {

std::string format_printf(const char* fmt, ...) {
  // Sized by a first pass: a plan's pool lines run to thousands of characters, and a fixed buffer
  // cut them short (the next line then ran on after the cut).
  va_list args;
  va_start(args, fmt);
  va_list again;
  va_copy(again, args);
  const int n = std::vsnprintf(nullptr, 0, fmt, args);
  va_end(args);
  std::string out;
  if (n > 0) {
    out.resize(static_cast<size_t>(n) + 1);
    std::vsnprintf(out.data(), out.size(), fmt, again);
    out.resize(static_cast<size_t>(n));
  }
  va_end(again);
  return out;
}

std::string format_bytes(uint64_t bytes) {
  const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  double v = static_cast<double>(bytes);
  int u = 0;
  while (v >= 1024.0 && u < 4) {
    v /= 1024.0;
    ++u;
  }
  char buf[32];
  std::snprintf(buf, sizeof buf, u == 0 ? "%.0f %s" : "%.2f %s", v, units[u]);
  return buf;
}

std::string format_grouped(int64_t count) {
  std::string s = std::to_string(count);
  const int first = s[0] == '-' ? 1 : 0;
  for (int i = static_cast<int>(s.size()) - 3; i > first; i -= 3) s.insert(static_cast<size_t>(i), ",");
  return s;
}

std::string format_count(int64_t count) {
  const char* units[] = {"", " K", " M", " B", " T"};
  double v = static_cast<double>(count);
  int u = 0;
  while (v >= 1000.0 && u < 4) {
    v /= 1000.0;
    ++u;
  }
  char buf[32];
  std::snprintf(buf, sizeof buf, u == 0 ? "%.0f%s" : "%.2f%s", v, units[u]);
  return buf;
}

std::string fnv1a_hex(const std::vector<const Tensor*>& tensors) {
  uint64_t hash = 1469598103934665603ull;
  for (const Tensor* t : tensors) {
    const Tensor c = t->contiguous();
    const auto* bytes = static_cast<const unsigned char*>(c.raw_data());
    for (size_t i = 0; i < c.nbytes(); ++i) hash = (hash ^ bytes[i]) * 1099511628211ull;
  }
  char hex[17];
  std::snprintf(hex, sizeof hex, "%016llx", static_cast<unsigned long long>(hash));
  return hex;
}

}  // namespace orochi
