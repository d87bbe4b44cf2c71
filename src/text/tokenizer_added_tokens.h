// Added tokens (Qwen's <|im_start|>, <|vision_start|>, ..., H3's <d> and </d>): matched in the text
// before anything else, each becoming exactly one id. Matching follows the reference: leftmost,
// then longest, never overlapping; lstrip / rstrip tokens also take the whitespace beside them.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace orochi::text {

struct AddedToken {
  int32_t id = 0;
  std::string content;
  bool special = false;     // only marks it; special and plain added tokens match alike
  bool normalized = false;  // matched in the normalized (NFC) text instead of the raw text
  bool lstrip = false;
  bool rstrip = false;
};

// A piece of text: a run to pre-tokenize (id < 0) or one matched added token.
struct TextPiece {
  size_t begin;
  size_t end;
  int32_t id;
};

class AddedTokenMatcher {
 public:
  AddedTokenMatcher() = default;
  // `patterns` are the strings to look for (for normalized tokens: their NFC form).
  AddedTokenMatcher(const std::vector<AddedToken>& tokens, const std::vector<std::string>& patterns);

  bool empty() const { return patterns_.empty(); }
  // Splits `text` into pieces covering it, in order; unmatched runs come back with id -1.
  void split(std::string_view text, std::vector<TextPiece>& pieces) const;

 private:
  struct Pattern {
    std::string text;
    int32_t id;
    bool lstrip;
    bool rstrip;
  };
  std::vector<Pattern> patterns_;
  // Indices into patterns_ by first byte, longest first: the first hit at a position wins.
  std::array<std::vector<uint32_t>, 256> by_first_byte_;
};

}  // namespace orochi::text
