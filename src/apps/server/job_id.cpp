#include "apps/server/job_id.h"

#include <random>

namespace orochi::apps::server {
namespace {

constexpr const char* kPrefix = "video_";
constexpr size_t kPrefixLength = 6;
constexpr size_t kHexDigits = 32;

}  // namespace

std::string make_job_id() {
  static constexpr char kHex[] = "0123456789abcdef";
  std::random_device source;
  std::string id = kPrefix;
  for (size_t i = 0; i < kHexDigits / 8; ++i) {
    uint32_t bits = source();
    for (int d = 0; d < 8; ++d, bits >>= 4) id += kHex[bits & 15];
  }
  return id;
}

bool is_valid_job_id(const std::string& id) {
  if (id.size() != kPrefixLength + kHexDigits || id.compare(0, kPrefixLength, kPrefix) != 0) return false;
  for (size_t i = kPrefixLength; i < id.size(); ++i) {
    const char c = id[i];
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) return false;
  }
  return true;
}

}  // namespace orochi::apps::server
