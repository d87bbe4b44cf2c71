// Human-readable numbers for reports, and a hash that shows bit-identical outputs.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/tensor.h"

namespace orochi {

std::string format_bytes(uint64_t bytes);    // "61.73 GiB"
std::string format_count(int64_t count);     // "33.12 B", "52.1 K"
std::string format_grouped(int64_t count);   // "117,662"
// printf into a string, of any length.
std::string format_printf(const char* fmt, ...) __attribute__((format(printf, 1, 2)));
// FNV-1a over the bytes of host tensors, as 16 hex digits: equal outputs, equal hash (benchmarks
// print it so runs that must be bit-identical can be compared by eye).
std::string fnv1a_hex(const std::vector<const Tensor*>& tensors);
inline std::string fnv1a_hex(const Tensor& t) { return fnv1a_hex(std::vector<const Tensor*>{&t}); }

}  // namespace orochi
