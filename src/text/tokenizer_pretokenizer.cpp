#include "text/tokenizer_pretokenizer.h"

#include <cstdint>

#include "text/unicode_properties.h"
#include "text/unicode_utf8.h"

namespace orochi::text {
namespace {

constexpr std::string_view kQwenRegex =
    R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";
constexpr std::string_view kLlama3Regex =
    R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";

enum : uint8_t { kLetter = 1, kNumber = 2, kSpace = 4, kLineBreak = 8 };

uint8_t classify(uint32_t cp) {
  if (cp == '\r' || cp == '\n') return kSpace | kLineBreak;
  if (is_letter(cp)) return kLetter;
  if (is_number(cp)) return kNumber;
  return is_whitespace(cp) ? kSpace : 0;
}

// Case-insensitive ASCII letter test as Oniguruma's (?i) does it: U+017F (long s) folds to 's'.
bool is_ci(uint32_t cp, char lower) {
  return cp == static_cast<uint32_t>(lower) || cp == static_cast<uint32_t>(lower - 32) ||
         (lower == 's' && cp == 0x17F);
}

// The scanner works on decoded characters; `cls` holds the classes above for each one.
class Scanner {
 public:
  Scanner(const std::vector<uint32_t>& cps, const std::vector<uint8_t>& cls, int max_digit_run)
      : cps_(cps), cls_(cls), n_(cps.size()), max_digit_run_(max_digit_run) {}

  // Length in characters of the match at i (always >= 1).
  size_t match_at(size_t i) const {
    if (size_t len = contraction(i)) return len;
    if (size_t len = letters(i)) return len;
    if (cls_[i] & kNumber) {
      size_t j = i + 1;
      while (j < n_ && (cls_[j] & kNumber) && static_cast<int>(j - i) < max_digit_run_) ++j;
      return j - i;
    }
    if (size_t len = symbols(i)) return len;
    return spaces(i);
  }

 private:
  bool other(size_t i) const { return i < n_ && cls_[i] == 0; }  // [^\s\p{L}\p{N}]
  bool letter(size_t i) const { return i < n_ && (cls_[i] & kLetter); }

  // (?i:'s|'t|'re|'ve|'m|'ll|'d)
  size_t contraction(size_t i) const {
    if (cps_[i] != '\'' || i + 1 >= n_) return 0;
    const uint32_t a = cps_[i + 1];
    if (is_ci(a, 's') || is_ci(a, 't') || is_ci(a, 'm') || is_ci(a, 'd')) return 2;
    if (i + 2 >= n_) return 0;
    const uint32_t b = cps_[i + 2];
    if ((is_ci(a, 'r') && is_ci(b, 'e')) || (is_ci(a, 'v') && is_ci(b, 'e')) || (is_ci(a, 'l') && is_ci(b, 'l')))
      return 3;
    return 0;
  }

  // [^\r\n\p{L}\p{N}]?\p{L}+ : one optional lead (anything but a line break, letter or digit).
  size_t letters(size_t i) const {
    size_t j = i;
    if (!(cls_[i] & (kLetter | kNumber | kLineBreak)) && letter(i + 1)) j = i + 1;
    if (!letter(j)) return 0;
    while (letter(j)) ++j;
    return j - i;
  }

  // ' '?[^\s\p{L}\p{N}]+[\r\n]*
  size_t symbols(size_t i) const {
    size_t j = i;
    if (cps_[i] == ' ' && other(i + 1)) j = i + 1;
    if (!other(j)) return 0;
    while (other(j)) ++j;
    while (j < n_ && (cls_[j] & kLineBreak)) ++j;
    return j - i;
  }

  // \s*[\r\n]+ | \s+(?!\S) | \s+ on the whitespace run starting at i.
  size_t spaces(size_t i) const {
    size_t end = i;
    while (end < n_ && (cls_[end] & kSpace)) ++end;
    for (size_t k = end; k > i; --k)  // backtracking \s* stops after the run's last line break
      if (cls_[k - 1] & kLineBreak) return k - i;
    if (end == n_) return end - i;      // (?!\S) holds at the end of the text
    if (end - i >= 2) return end - 1 - i;  // leave the last space to lead the next word
    return end - i;
  }

  const std::vector<uint32_t>& cps_;
  const std::vector<uint8_t>& cls_;
  size_t n_;
  int max_digit_run_;
};

}  // namespace

std::optional<SplitPattern> SplitPattern::recognize(std::string_view regex) {
  if (regex == kQwenRegex) return SplitPattern{1};
  if (regex == kLlama3Regex) return SplitPattern{3};
  return std::nullopt;
}

std::string SplitPattern::qwen_regex() { return std::string(kQwenRegex); }

void split_words(std::string_view text, const SplitPattern& pattern,
                 std::vector<std::pair<size_t, size_t>>& words) {
  std::vector<uint32_t> cps;
  std::vector<uint8_t> cls;
  std::vector<size_t> offsets;  // byte offset of each character, plus the end
  cps.reserve(text.size());
  cls.reserve(text.size());
  offsets.reserve(text.size() + 1);
  for (size_t pos = 0; pos < text.size();) {
    offsets.push_back(pos);
    const uint32_t cp = next_code_point(text, pos);
    cps.push_back(cp);
    cls.push_back(classify(cp));
  }
  offsets.push_back(text.size());

  const Scanner scanner(cps, cls, pattern.max_digit_run);
  for (size_t i = 0; i < cps.size();) {
    const size_t len = scanner.match_at(i);
    words.emplace_back(offsets[i], offsets[i + len]);
    i += len;
  }
}

}  // namespace orochi::text
