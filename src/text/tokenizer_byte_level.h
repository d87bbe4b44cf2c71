// GPT-2's byte-level alphabet, used by Qwen's ByteLevel pre-tokenizer and decoder: each of the 256
// bytes is shown as one printable character, so vocabulary entries are strings of those characters.
// The tokenizer works on raw bytes and converts vocabulary strings once, at load.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace orochi::text {

// The character that stands for `byte` ('!'..'~', '¡'..'¬', '®'..'ÿ' stand for themselves; the
// other 68 bytes map, in order, to U+0100 and up).
uint32_t byte_level_char(uint8_t byte);

// The raw bytes behind a vocabulary string, or nullopt when a character of it is not in the
// alphabet (such a token cannot come out of byte-level BPE).
std::optional<std::string> byte_level_to_bytes(std::string_view token_utf8);

// The ByteLevel decoder's view of one token: its bytes, or the token's own UTF-8 when it is not
// byte-level text (added tokens with spaces, say), as the reference decoder does.
std::string byte_level_decode_token(std::string_view token_utf8);

}  // namespace orochi::text
