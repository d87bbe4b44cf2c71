// Character classes the Qwen pre-tokenizer regex uses: \p{L}, \p{N} and \s, with the Unicode data
// of unicode_tables.cpp (generated from Python's unicodedata).
#pragma once

#include <cstdint>

namespace orochi::text {

bool is_letter(uint32_t code_point);      // General_Category L* (Lu Ll Lt Lm Lo)
bool is_number(uint32_t code_point);      // General_Category N* (Nd Nl No)
// The White_Space property, what Oniguruma's and Rust regex's \s match: \t \n \v \f \r, space,
// U+0085, U+00A0, U+1680, U+2000..U+200A, U+2028, U+2029, U+202F, U+205F, U+3000.
bool is_whitespace(uint32_t code_point);
uint8_t combining_class(uint32_t code_point);  // canonical combining class, 0 for starters

}  // namespace orochi::text
