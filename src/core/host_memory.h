// Host memory figures from /proc, for refusing work that cannot fit and for stage reports.
#pragma once

#include <cstdint>

namespace orochi {

uint64_t available_ram_bytes();  // MemAvailable of /proc/meminfo; 0 if unknown
uint64_t peak_rss_bytes();       // VmHWM of /proc/self/status (this process's peak); 0 if unknown

}  // namespace orochi
