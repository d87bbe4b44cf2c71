// The Split pre-tokenizer of Qwen2/Qwen3-VL, a hand-written scanner for its regex (behaviour
// Isolated: every match is one word; the pattern matches at every position, so words tile the text):
//
//   (?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+
//
// Llama-3's pattern differs only in \p{N}{1,3}; `max_digit_run` covers both.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace orochi::text {

struct SplitPattern {
  int max_digit_run = 1;  // 1: Qwen's \p{N}; 3: Llama-3's \p{N}{1,3}

  // The pattern a tokenizer.json Split holds, when it is one this scanner implements exactly.
  static std::optional<SplitPattern> recognize(std::string_view regex);
  static std::string qwen_regex();
};

// Byte ranges [begin, end) of the words of `valid_utf8`, in order, covering all of it.
void split_words(std::string_view valid_utf8, const SplitPattern& pattern,
                 std::vector<std::pair<size_t, size_t>>& words);

}  // namespace orochi::text
