// Human-readable numbers for CLI reports.
#pragma once

#include <cstdint>
#include <string>

namespace orochi::apps {

std::string format_bytes(uint64_t bytes);    // "61.73 GiB"
std::string format_count(int64_t count);     // "33.12 B", "52.1 K"

}  // namespace orochi::apps
