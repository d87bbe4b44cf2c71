// Unicode Normalization Form C (UAX #15): canonical decomposition, canonical ordering, canonical
// composition. The Qwen tokenizer's normalizer; tables come from unicode_tables.cpp.
#pragma once

#include <string>
#include <string_view>

namespace orochi::text {

// NFC of valid UTF-8 text. Text holding no character that NFC could touch (the common case: ASCII,
// CJK, emoji) is returned unchanged without decomposing it.
std::string nfc(std::string_view valid_utf8);

}  // namespace orochi::text
