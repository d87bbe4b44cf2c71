#include "text/tokenizer_byte_level.h"

#include <array>

#include "text/unicode_utf8.h"

namespace orochi::text {
namespace {

bool stands_for_itself(uint32_t b) {
  return (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF);
}

struct Alphabet {
  std::array<uint32_t, 256> char_of_byte{};
  // Every alphabet character is below U+0144, so a flat table inverts the mapping.
  std::array<int16_t, 0x144> byte_of_char{};

  Alphabet() {
    byte_of_char.fill(-1);
    uint32_t next = 0;
    for (uint32_t b = 0; b < 256; ++b) {
      char_of_byte[b] = stands_for_itself(b) ? b : 0x100 + next++;
      byte_of_char[char_of_byte[b]] = static_cast<int16_t>(b);
    }
  }
};

const Alphabet& alphabet() {
  static const Alphabet a;
  return a;
}

}  // namespace

uint32_t byte_level_char(uint8_t byte) { return alphabet().char_of_byte[byte]; }

std::optional<std::string> byte_level_to_bytes(std::string_view token) {
  if (first_invalid_utf8(token)) return std::nullopt;
  std::string bytes;
  bytes.reserve(token.size());
  for (size_t pos = 0; pos < token.size();) {
    const uint32_t cp = next_code_point(token, pos);
    if (cp >= alphabet().byte_of_char.size() || alphabet().byte_of_char[cp] < 0) return std::nullopt;
    bytes.push_back(static_cast<char>(alphabet().byte_of_char[cp]));
  }
  return bytes;
}

std::string byte_level_decode_token(std::string_view token) {
  std::optional<std::string> bytes = byte_level_to_bytes(token);
  return bytes ? std::move(*bytes) : std::string(token);
}

}  // namespace orochi::text
