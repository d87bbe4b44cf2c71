// UTF-8 helpers for the tokenizer: strict validation (the prompt must be valid UTF-8), decoding of
// validated text, encoding, and the lossy conversion that decoding token ids ends with.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace orochi::text {

inline constexpr uint32_t kReplacementChar = 0xFFFD;

// Byte offset of the first byte that does not start a well-formed UTF-8 sequence (Unicode Table
// 3-7: no overlongs, no surrogates, nothing above U+10FFFF), or nullopt when `text` is valid.
std::optional<size_t> first_invalid_utf8(std::string_view text);

// The code point starting at text[pos], advancing pos past it. `text` must be valid UTF-8.
inline uint32_t next_code_point(std::string_view text, size_t& pos) {
  const auto byte = [&](size_t i) { return static_cast<uint32_t>(static_cast<unsigned char>(text[i])); };
  const uint32_t b0 = byte(pos);
  if (b0 < 0x80) {
    pos += 1;
    return b0;
  }
  if (b0 < 0xE0) {
    const uint32_t cp = ((b0 & 0x1F) << 6) | (byte(pos + 1) & 0x3F);
    pos += 2;
    return cp;
  }
  if (b0 < 0xF0) {
    const uint32_t cp = ((b0 & 0x0F) << 12) | ((byte(pos + 1) & 0x3F) << 6) | (byte(pos + 2) & 0x3F);
    pos += 3;
    return cp;
  }
  const uint32_t cp = ((b0 & 0x07) << 18) | ((byte(pos + 1) & 0x3F) << 12) |
                      ((byte(pos + 2) & 0x3F) << 6) | (byte(pos + 3) & 0x3F);
  pos += 4;
  return cp;
}

void append_utf8(std::string& out, uint32_t code_point);

// Bytes to text the way Rust's String::from_utf8_lossy does it (what the reference decoder
// returns): each maximal ill-formed subsequence becomes one U+FFFD.
std::string utf8_lossy(std::string_view bytes);

}  // namespace orochi::text
