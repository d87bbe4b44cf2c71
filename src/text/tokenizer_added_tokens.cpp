#include "text/tokenizer_added_tokens.h"

#include <algorithm>

#include "core/check.h"
#include "text/unicode_properties.h"
#include "text/unicode_utf8.h"

namespace orochi::text {
namespace {

// Start of the whitespace run that ends at `end` (the reference's \s*$ on the text before a token).
size_t whitespace_start_before(std::string_view text, size_t end) {
  size_t start = end;
  while (start > 0) {
    size_t lead = start - 1;
    while (lead > 0 && (static_cast<unsigned char>(text[lead]) & 0xC0) == 0x80) --lead;
    size_t pos = lead;
    if (!is_whitespace(next_code_point(text, pos))) break;
    start = lead;
  }
  return start;
}

// End of the whitespace run starting at `begin` (\s* on the text after a token).
size_t whitespace_end_after(std::string_view text, size_t begin) {
  size_t end = begin;
  while (end < text.size()) {
    size_t pos = end;
    if (!is_whitespace(next_code_point(text, pos))) break;
    end = pos;
  }
  return end;
}

}  // namespace

AddedTokenMatcher::AddedTokenMatcher(const std::vector<AddedToken>& tokens,
                                     const std::vector<std::string>& patterns) {
  OROCHI_CHECK(tokens.size() == patterns.size(), "one pattern per added token");
  for (size_t i = 0; i < tokens.size(); ++i) {
    if (patterns[i].empty()) continue;
    patterns_.push_back(Pattern{patterns[i], tokens[i].id, tokens[i].lstrip, tokens[i].rstrip});
  }
  for (uint32_t i = 0; i < patterns_.size(); ++i)
    by_first_byte_[static_cast<unsigned char>(patterns_[i].text[0])].push_back(i);
  for (auto& list : by_first_byte_)
    std::stable_sort(list.begin(), list.end(), [&](uint32_t a, uint32_t b) {
      return patterns_[a].text.size() > patterns_[b].text.size();
    });
}

void AddedTokenMatcher::split(std::string_view text, std::vector<TextPiece>& pieces) const {
  size_t piece_start = 0;  // start of the text not yet assigned to a piece
  size_t pos = 0;
  while (pos < text.size()) {
    const Pattern* hit = nullptr;
    for (uint32_t index : by_first_byte_[static_cast<unsigned char>(text[pos])]) {
      const Pattern& p = patterns_[index];
      if (text.compare(pos, p.text.size(), p.text) == 0) {
        hit = &p;
        break;
      }
    }
    if (hit == nullptr) {
      ++pos;
      continue;
    }
    size_t begin = pos;
    size_t end = pos + hit->text.size();
    // Whitespace taken by the previous token's rstrip stays with it.
    if (hit->lstrip) begin = std::max(whitespace_start_before(text, begin), piece_start);
    if (hit->rstrip) end = whitespace_end_after(text, end);
    if (piece_start < begin) pieces.push_back(TextPiece{piece_start, begin, -1});
    pieces.push_back(TextPiece{begin, end, hit->id});
    piece_start = end;
    pos = end;
  }
  if (piece_start < text.size()) pieces.push_back(TextPiece{piece_start, text.size(), -1});
}

}  // namespace orochi::text
