// The Qwen-style BPE tokenizer against the reference `tokenizers` library: ids, normalized text,
// pre-tokenizer words and decoded text for every golden prompt (tests/data/tokenizer, made by
// scripts/golden/make_tokenizer_golden.py), plus speed and thread safety.
#include <gtest/gtest.h>

#include <chrono>
#include <fstream>
#include <nlohmann/json.hpp>
#include <thread>

#include "support/paths.h"
#include "text/tokenizer.h"
#include "text/tokenizer_pretokenizer.h"

namespace orochi::text {
namespace {

const std::string kDir = testing::test_data_dir() + "/tokenizer";

const nlohmann::json& golden() {
  static const nlohmann::json g = [] {
    std::ifstream in(kDir + "/golden.json");
    return nlohmann::json::parse(in);
  }();
  return g;
}

BpeTokenizer load_or_die(const std::string& path) {
  Expected<BpeTokenizer> t = BpeTokenizer::load(path);
  if (!t) throw std::runtime_error(t.status().to_string());
  return std::move(t).value();
}

// Printable form of a prompt for failure messages.
std::string show(const std::string& s) {
  return nlohmann::json(s).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

std::vector<std::string> words_of(const std::string& text, const SplitPattern& pattern) {
  std::vector<std::pair<size_t, size_t>> ranges;
  split_words(text, pattern, ranges);
  std::vector<std::string> words;
  for (const auto& [b, e] : ranges) words.push_back(text.substr(b, e - b));
  return words;
}

// Checks every case of `cases` against `tokenizer`; returns how many prompts matched exactly.
int check_cases(const BpeTokenizer& tokenizer, const nlohmann::json& cases, const SplitPattern& pattern,
                bool round_trips) {
  int matched = 0;
  for (const auto& c : cases) {
    const std::string name = c["name"], prompt = c["prompt"], normalized = c["normalized"];
    SCOPED_TRACE(name + ": " + show(prompt.substr(0, 120)));
    const std::vector<int32_t> want = c["ids"].get<std::vector<int32_t>>();
    EXPECT_EQ(tokenizer.normalize(prompt), normalized);
    EXPECT_EQ(words_of(normalized, pattern), c["words"].get<std::vector<std::string>>());
    Expected<std::vector<int32_t>> ids = tokenizer.encode(prompt);
    EXPECT_TRUE(ids.has_value()) << ids.status().to_string();
    if (!ids) continue;
    EXPECT_EQ(*ids, want);
    matched += *ids == want;
    const std::string decoded = tokenizer.decode(*ids);
    EXPECT_EQ(decoded, c["decoded"].get<std::string>());
    if (round_trips) {
      EXPECT_EQ(decoded, normalized);
    }
  }
  return matched;
}

TEST(TokenizerGolden, QwenLayoutMatchesReferenceOnEveryPrompt) {
  const BpeTokenizer tokenizer = load_or_die(kDir + "/qwen_bpe");
  const nlohmann::json& cases = golden()["cases"];
  ASSERT_GE(cases.size(), 60u);
  size_t total_ids = 0;
  for (const auto& c : cases) total_ids += c["ids"].size();
  const int matched = check_cases(tokenizer, cases, SplitPattern{1}, /*round_trips=*/true);
  EXPECT_EQ(matched, static_cast<int>(cases.size()));
  std::printf("[tokenizer] %d/%zu prompts identical to tokenizers %s (%zu ids)\n", matched, cases.size(),
              golden()["tokenizers_version"].get<std::string>().c_str(), total_ids);
}

TEST(TokenizerGolden, VariantLayoutMatchesReference) {
  // Llama-3 digit groups, "a b" merges, lstrip/rstrip tokens, a normalized token that is not NFC.
  const BpeTokenizer tokenizer = load_or_die(kDir + "/variant_bpe/tokenizer.json");
  const nlohmann::json& cases = golden()["variant_cases"];
  const int matched = check_cases(tokenizer, cases, SplitPattern{3}, /*round_trips=*/false);
  EXPECT_EQ(matched, static_cast<int>(cases.size()));
  EXPECT_EQ(tokenizer.vocab_size(), golden()["variant_vocab_size"].get<size_t>());
}

TEST(TokenizerGolden, VocabularyAndTokenIds) {
  const BpeTokenizer tokenizer = load_or_die(kDir + "/qwen_bpe/tokenizer.json");
  EXPECT_EQ(tokenizer.vocab_size(), golden()["vocab_size"].get<size_t>());
  for (const auto& [token, id] : golden()["token_ids"].items()) {
    ASSERT_TRUE(tokenizer.token_id(token).has_value()) << token;
    EXPECT_EQ(*tokenizer.token_id(token), id.get<int32_t>()) << token;
  }
  EXPECT_FALSE(tokenizer.token_id("<|no_such_token|>").has_value());
  // An added token in the text is one id; decoding it gives its text back.
  const int32_t vision_start = *tokenizer.token_id("<|vision_start|>");
  Expected<std::vector<int32_t>> ids = tokenizer.encode("<|vision_start|>");
  ASSERT_TRUE(ids.has_value());
  EXPECT_EQ(*ids, std::vector<int32_t>{vision_start});
  EXPECT_EQ(tokenizer.decode({vision_start}), "<|vision_start|>");
}

size_t count_chars(const std::string& utf8) {
  size_t n = 0;
  for (unsigned char c : utf8) n += (c & 0xC0) != 0x80;
  return n;
}

// A long mixed-script prompt made of all golden prompts.
std::string long_text(size_t min_chars) {
  std::string text;
  while (count_chars(text) < min_chars)
    for (const auto& c : golden()["cases"]) text += c["prompt"].get<std::string>() + " ";
  return text;
}

TEST(TokenizerGolden, HundredThousandCharactersWellUnderASecond) {
  const BpeTokenizer tokenizer = load_or_die(kDir + "/qwen_bpe");  // fresh: an empty word cache
  const std::string text = long_text(100'000);
  const auto start = std::chrono::steady_clock::now();
  Expected<std::vector<int32_t>> ids = tokenizer.encode(text);
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  ASSERT_TRUE(ids.has_value());
  std::printf("[tokenizer] %zu characters (%zu bytes) -> %zu ids in %.1f ms\n", count_chars(text), text.size(),
              ids->size(), seconds * 1e3);
  EXPECT_LT(seconds, 0.5);
  EXPECT_EQ(tokenizer.decode(*ids), tokenizer.normalize(text));
}

TEST(TokenizerGolden, PathologicalInputsStayFast) {
  // Long runs hit the slow paths: one huge word, whitespace backtracking, near-miss added tokens.
  const BpeTokenizer tokenizer = load_or_die(kDir + "/qwen_bpe");
  const std::string inputs[] = {std::string(100'000, 'a'), std::string(100'000, ' ') + "x",
                                std::string(50'000, ' ') + std::string(50'000, '\n'),
                                std::string(100'000, '!'), [] {
                                  std::string s;
                                  while (s.size() < 100'000) s += "<|im_star <d <|vision_end| \t\r\n";
                                  return s;
                                }()};
  for (const std::string& text : inputs) {
    const auto start = std::chrono::steady_clock::now();
    Expected<std::vector<int32_t>> ids = tokenizer.encode(text);
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    ASSERT_TRUE(ids.has_value());
    std::printf("[tokenizer] %s... (%zu bytes): %.1f ms\n", show(text.substr(0, 12)).c_str(), text.size(),
                seconds * 1e3);
    EXPECT_LT(seconds, 1.0) << show(text.substr(0, 40));
    EXPECT_EQ(tokenizer.decode(*ids), text);
  }
}

TEST(TokenizerGolden, ConcurrentEncodesAgree) {
  const BpeTokenizer tokenizer = load_or_die(kDir + "/qwen_bpe");
  const std::string text = long_text(20'000);
  Expected<std::vector<int32_t>> want = tokenizer.encode(text);
  ASSERT_TRUE(want.has_value());
  const BpeTokenizer fresh = load_or_die(kDir + "/qwen_bpe");  // threads race to fill its cache
  std::vector<std::vector<int32_t>> got(4);
  std::vector<std::thread> threads;
  for (auto& out : got)
    threads.emplace_back([&] { out = fresh.encode(text).value(); });
  for (auto& th : threads) th.join();
  for (const auto& ids : got) EXPECT_EQ(ids, *want);
}

}  // namespace
}  // namespace orochi::text
