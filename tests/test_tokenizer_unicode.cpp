// Unicode pieces of the tokenizer: UTF-8 validation and lossy decoding against naive checks, NFC
// against Python's unicodedata (tests/data/tokenizer/nfc_cases.json), character classes, and the
// byte-level alphabet.
#include <gtest/gtest.h>

#include <fstream>
#include <nlohmann/json.hpp>
#include <optional>
#include <random>
#include <cstdio>

#include "support/paths.h"
#include "text/tokenizer_byte_level.h"
#include "text/unicode_nfc.h"
#include "text/unicode_properties.h"
#include "text/unicode_tables.h"
#include "text/unicode_utf8.h"

namespace orochi::text {
namespace {

// Naive well-formedness: a sequence is valid iff decoding it bit by bit and re-encoding the code
// point canonically gives the same bytes (no overlong), and the code point is a scalar value.
std::optional<size_t> naive_first_invalid(const std::string& s) {
  size_t pos = 0;
  while (pos < s.size()) {
    bool found = false;
    for (size_t len = 1; len <= 4 && pos + len <= s.size() && !found; ++len) {
      const auto b0 = static_cast<unsigned char>(s[pos]);
      uint32_t cp = len == 1 ? b0 : (b0 & (0x7F >> len));
      bool continuation_ok = true;
      for (size_t k = 1; k < len; ++k) {
        const auto b = static_cast<unsigned char>(s[pos + k]);
        continuation_ok &= (b & 0xC0) == 0x80;
        cp = (cp << 6) | (b & 0x3F);
      }
      if (!continuation_ok || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) continue;
      std::string again;
      append_utf8(again, cp);
      found = again == s.substr(pos, len);
      if (found) pos += len;
    }
    if (!found) return pos;
  }
  return std::nullopt;
}

std::string hex(const std::string& s) {
  std::string out;
  char buf[4];
  for (unsigned char c : s) {
    std::snprintf(buf, sizeof(buf), "%02X ", c);
    out += buf;
  }
  return out;
}

TEST(TokenizerUnicode, Utf8ValidationMatchesNaiveCheck) {
  // Every scalar value encodes, validates and decodes back.
  for (uint32_t cp = 0; cp <= 0x10FFFF; ++cp) {
    if (cp >= 0xD800 && cp <= 0xDFFF) continue;
    std::string s;
    append_utf8(s, cp);
    size_t pos = 0;
    ASSERT_FALSE(first_invalid_utf8(s).has_value()) << std::hex << cp;
    ASSERT_EQ(next_code_point(s, pos), cp);
    ASSERT_EQ(pos, s.size());
  }
  // Random byte strings biased to near-valid sequences: same verdict and offset as the naive check.
  std::mt19937 rng(7);
  const unsigned char interesting[] = {0x00, 0x41, 0x7F, 0x80, 0x8F, 0x90, 0x9F, 0xA0, 0xBF, 0xC0, 0xC1, 0xC2,
                                       0xDF, 0xE0, 0xE1, 0xED, 0xEE, 0xEF, 0xF0, 0xF1, 0xF4, 0xF5, 0xFF};
  int invalid = 0;
  for (int trial = 0; trial < 200000; ++trial) {
    std::string s(1 + rng() % 6, '\0');
    for (char& c : s) c = static_cast<char>(interesting[rng() % sizeof(interesting)]);
    const std::optional<size_t> want = naive_first_invalid(s);
    ASSERT_EQ(first_invalid_utf8(s), want) << hex(s);
    invalid += want.has_value();
  }
  EXPECT_GT(invalid, 1000);
}

TEST(TokenizerUnicode, LossyDecodingReplacesMaximalSubparts) {
  // The example of the Unicode Standard, §3.9 (Table 3-8): U+FFFD per maximal subpart.
  EXPECT_EQ(utf8_lossy("\x61\xF1\x80\x80\xE1\x80\xC2\x62\x80\x63\x80\xBF\x64"),
            "a\uFFFD\uFFFD\uFFFDb\uFFFDc\uFFFD\uFFFDd");
  EXPECT_EQ(utf8_lossy("\xED\xA0\x80x"), "\uFFFD\uFFFD\uFFFDx");  // a surrogate: each byte alone
  EXPECT_EQ(utf8_lossy("\xE4\xB8"), "\uFFFD");                    // cut short at the end
  EXPECT_EQ(utf8_lossy("ok \xE4\xB8\xAD"), "ok \xE4\xB8\xAD");
}

TEST(TokenizerUnicode, NfcMatchesPythonUnicodedata) {
  std::ifstream in(testing::test_data_dir() + "/tokenizer/nfc_cases.json");
  const nlohmann::json data = nlohmann::json::parse(in);
  EXPECT_EQ(data["unicode_version"].get<std::string>(), unicode_tables::unicode_version());
  int changed = 0;
  for (const auto& c : data["cases"]) {
    const std::string input = c[0], want = c[1];
    ASSERT_EQ(nfc(input), want) << nlohmann::json(input).dump();
    changed += input != want;
  }
  std::printf("[tokenizer] NFC: %zu cases (%d change under NFC) match Python's unicodedata %s\n",
              data["cases"].size(), changed, unicode_tables::unicode_version());
  EXPECT_GT(changed, 2000);
  EXPECT_EQ(nfc("plain ASCII, 中文, 😀"), "plain ASCII, 中文, 😀");
}

TEST(TokenizerUnicode, CharacterClasses) {
  for (uint32_t cp : {U'A', U'z', U'é', U'ß', U'中', U'あ', U'ا', U'Ω', U'ǅ', U'ʰ', U'𝔘', U'𠀋'})
    EXPECT_TRUE(is_letter(cp) && !is_number(cp) && !is_whitespace(cp)) << std::hex << cp;
  for (uint32_t cp : {U'0', U'9', U'٣', U'४', U'Ⅻ', U'½', U'²', U'③', U'𝟘'})
    EXPECT_TRUE(is_number(cp) && !is_letter(cp)) << std::hex << cp;
  for (uint32_t cp : {0x09u, 0x0Au, 0x0Bu, 0x0Cu, 0x0Du, 0x20u, 0x85u, 0xA0u, 0x1680u, 0x2000u, 0x200Au,
                      0x2028u, 0x2029u, 0x202Fu, 0x205Fu, 0x3000u})
    EXPECT_TRUE(is_whitespace(cp)) << std::hex << cp;
  for (uint32_t cp : {0x1Cu, 0x1Fu, 0x180Eu, 0x200Bu, 0xFEFFu, 0x200Du, 0x5Fu, 0x1F600u, 0x301u, 0xFE0Fu})
    EXPECT_FALSE(is_whitespace(cp) || is_letter(cp) || is_number(cp)) << std::hex << cp;
  EXPECT_EQ(combining_class(0x301), 230);
  EXPECT_EQ(combining_class(0x323), 220);
  EXPECT_EQ(combining_class(U'a'), 0);
}

TEST(TokenizerUnicode, ByteLevelAlphabetIsABijection) {
  std::string all;
  for (int b = 0; b < 256; ++b) {
    append_utf8(all, byte_level_char(static_cast<uint8_t>(b)));
  }
  const std::optional<std::string> bytes = byte_level_to_bytes(all);
  ASSERT_TRUE(bytes.has_value());
  ASSERT_EQ(bytes->size(), 256u);
  for (int b = 0; b < 256; ++b) EXPECT_EQ(static_cast<unsigned char>((*bytes)[b]), b);
  EXPECT_EQ(byte_level_char(' '), 0x120u);   // 'Ġ'
  EXPECT_EQ(byte_level_char('\n'), 0x10Au);  // 'Ċ'
  EXPECT_EQ(byte_level_char('a'), uint32_t{'a'});
  EXPECT_FALSE(byte_level_to_bytes("a b").has_value());  // a plain space is not in the alphabet
  EXPECT_EQ(byte_level_decode_token("a b"), "a b");
}

}  // namespace
}  // namespace orochi::text
