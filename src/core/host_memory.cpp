#include "core/host_memory.h"

#include <fstream>
#include <string>

namespace orochi {
namespace {

// The "<key> <n> kB" line of a /proc file, in bytes.
uint64_t proc_kib_field(const char* path, const std::string& key) {
  std::ifstream f(path);
  std::string word;
  while (f >> word) {
    if (word == key) {
      uint64_t kib = 0;
      f >> kib;
      return kib * 1024;
    }
  }
  return 0;
}

}  // namespace

uint64_t available_ram_bytes() { return proc_kib_field("/proc/meminfo", "MemAvailable:"); }
uint64_t peak_rss_bytes() { return proc_kib_field("/proc/self/status", "VmHWM:"); }

}  // namespace orochi
