#include "apps/server/auth.h"

#include <algorithm>

namespace orochi::apps::server {

bool bearer_matches(const std::string& authorization, const std::string& key) {
  static constexpr char kScheme[] = "Bearer ";
  constexpr size_t kSchemeLength = sizeof(kScheme) - 1;
  if (key.empty()) return false;
  bool scheme = authorization.size() >= kSchemeLength;
  for (size_t i = 0; i < kSchemeLength && scheme; ++i) {
    const char c = authorization[i], want = kScheme[i];
    scheme = (c == want) || (c >= 'A' && c <= 'Z' && c + 32 == want) || (c >= 'a' && c <= 'z' && c - 32 == want);
  }
  const std::string token = scheme ? authorization.substr(kSchemeLength) : std::string();
  // Every byte of the longer of the two is compared, whatever differs first.
  unsigned char differ = token.size() == key.size() ? 0 : 1;
  const size_t n = std::max(token.size(), key.size());
  for (size_t i = 0; i < n; ++i) {
    const unsigned char a = i < token.size() ? static_cast<unsigned char>(token[i]) : 0;
    const unsigned char b = i < key.size() ? static_cast<unsigned char>(key[i]) : 0;
    differ |= static_cast<unsigned char>(a ^ b);
  }
  return scheme && differ == 0;
}

}  // namespace orochi::apps::server
