// Bad input for the tokenizer: missing or corrupt tokenizer.json, layouts it does not support,
// invalid UTF-8 prompts and prompts over the length limit. Each ends in a clear Status.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <functional>
#include <nlohmann/json.hpp>
#include <sstream>
#include <unistd.h>

#include "support/paths.h"
#include "text/tokenizer.h"

namespace orochi::text {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

const std::string kQwenJson = testing::test_data_dir() + "/tokenizer/qwen_bpe/tokenizer.json";

std::string read_text(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

// The golden tokenizer.json after `edit`, loaded from text.
Status load_edited(const std::function<void(json&)>& edit) {
  json j = json::parse(read_text(kQwenJson));
  edit(j);
  return BpeTokenizer::from_json(j.dump()).status();
}

bool mentions(const Status& s, const std::string& text) { return s.message().find(text) != std::string::npos; }

class TokenizerErrors : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("orochi_tok_" + std::to_string(::getpid()) + "_" +
                                        ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  fs::path dir_;
};

TEST_F(TokenizerErrors, MissingFileOrFolder) {
  Status s = BpeTokenizer::load((dir_ / "nope").string()).status();
  EXPECT_EQ(s.code(), ErrorCode::kNotFound) << s.to_string();
  EXPECT_TRUE(mentions(s, "tokenizer/ folder")) << s.to_string();  // says what to pass instead
  s = BpeTokenizer::load(dir_.string()).status();  // a folder without tokenizer.json
  EXPECT_EQ(s.code(), ErrorCode::kNotFound) << s.to_string();
  EXPECT_TRUE(mentions(s, (dir_ / "tokenizer.json").string())) << s.to_string();
}

TEST_F(TokenizerErrors, MalformedJson) {
  const std::string text = read_text(kQwenJson);
  std::ofstream(dir_ / "tokenizer.json", std::ios::binary) << text.substr(0, text.size() / 2);
  Status s = BpeTokenizer::load(dir_.string()).status();
  EXPECT_EQ(s.code(), ErrorCode::kCorruptFile) << s.to_string();
  EXPECT_TRUE(mentions(s, "not valid JSON")) << s.to_string();
  EXPECT_TRUE(mentions(s, "tokenizer.json")) << s.to_string();
  s = BpeTokenizer::from_json("[1, 2]").status();
  EXPECT_EQ(s.code(), ErrorCode::kCorruptFile) << s.to_string();
  s = BpeTokenizer::from_json("{\"version\": \"1.0\"}").status();
  EXPECT_EQ(s.code(), ErrorCode::kCorruptFile) << s.to_string();
  EXPECT_TRUE(mentions(s, "'model'")) << s.to_string();
}

TEST_F(TokenizerErrors, ModelOtherThanBpe) {
  const Status s = load_edited([](json& j) { j["model"]["type"] = "WordPiece"; });
  EXPECT_EQ(s.code(), ErrorCode::kUnsupported) << s.to_string();
  EXPECT_TRUE(mentions(s, "WordPiece")) << s.to_string();
}

TEST_F(TokenizerErrors, UnsupportedLayouts) {
  Status s = load_edited([](json& j) { j["normalizer"] = {{"type", "NFKC"}}; });
  EXPECT_EQ(s.code(), ErrorCode::kUnsupported) << s.to_string();
  EXPECT_TRUE(mentions(s, "NFKC")) << s.to_string();
  s = load_edited([](json& j) { j["pre_tokenizer"]["pretokenizers"][0]["pattern"]["Regex"] = "\\w+|\\s+"; });
  EXPECT_EQ(s.code(), ErrorCode::kUnsupported) << s.to_string();
  EXPECT_TRUE(mentions(s, "\\w+|\\s+")) << s.to_string();
  s = load_edited([](json& j) { j["pre_tokenizer"] = {{"type", "Whitespace"}}; });
  EXPECT_EQ(s.code(), ErrorCode::kUnsupported) << s.to_string();
  s = load_edited([](json& j) { j["pre_tokenizer"]["pretokenizers"][1]["add_prefix_space"] = true; });
  EXPECT_EQ(s.code(), ErrorCode::kUnsupported) << s.to_string();
  s = load_edited([](json& j) { j["decoder"] = {{"type", "WordPiece"}}; });
  EXPECT_EQ(s.code(), ErrorCode::kUnsupported) << s.to_string();
  s = load_edited([](json& j) { j["added_tokens"][0]["single_word"] = true; });
  EXPECT_EQ(s.code(), ErrorCode::kUnsupported) << s.to_string();
  EXPECT_TRUE(mentions(s, "<|endoftext|>")) << s.to_string();
  s = load_edited([](json& j) { j["model"]["byte_fallback"] = true; });
  EXPECT_EQ(s.code(), ErrorCode::kUnsupported) << s.to_string();
}

TEST_F(TokenizerErrors, BrokenVocabularyOrMerges) {
  Status s = load_edited([](json& j) { j["model"]["merges"].push_back({"Ġzz", "q"}); });
  EXPECT_EQ(s.code(), ErrorCode::kCorruptFile) << s.to_string();
  EXPECT_TRUE(mentions(s, "'Ġzz' is not in model.vocab")) << s.to_string();
  s = load_edited([](json& j) { j["model"]["merges"].push_back("a b c"); });
  EXPECT_EQ(s.code(), ErrorCode::kCorruptFile) << s.to_string();
  s = load_edited([](json& j) { j["model"]["vocab"]["Ġthe"] = "five"; });
  EXPECT_EQ(s.code(), ErrorCode::kCorruptFile) << s.to_string();
  EXPECT_TRUE(mentions(s, "Ġthe")) << s.to_string();
  s = load_edited([](json& j) { j["model"]["vocab"]["Ġthe"] = 2'000'000'000; });  // would size tables
  EXPECT_EQ(s.code(), ErrorCode::kCorruptFile) << s.to_string();
  s = load_edited([](json& j) { j["added_tokens"][0]["id"] = -4; });
  EXPECT_EQ(s.code(), ErrorCode::kCorruptFile) << s.to_string();
  s = load_edited([](json& j) { j["model"].erase("merges"); });
  EXPECT_EQ(s.code(), ErrorCode::kCorruptFile) << s.to_string();
  s = load_edited([](json& j) { j["added_tokens"][0].erase("id"); });
  EXPECT_EQ(s.code(), ErrorCode::kCorruptFile) << s.to_string();
  EXPECT_TRUE(mentions(s, "added_tokens[0]")) << s.to_string();
}

TEST_F(TokenizerErrors, InvalidUtf8PromptNamesTheOffset) {
  Expected<BpeTokenizer> t = BpeTokenizer::load(kQwenJson);
  ASSERT_TRUE(t.has_value()) << t.status().to_string();
  const std::pair<std::string, size_t> bad[] = {
      {"abc\xFF" "def", 3},          // never valid
      {"ok \xE4\xB8", 3},            // cut short at the end
      {"x\xC0\x80", 1},              // overlong NUL
      {"中\xED\xA0\x80", 3},          // a surrogate
      {"\xF4\x90\x80\x80", 0},       // above U+10FFFF
      {"caf\xC3\xA9 \x80", 6},       // a lone continuation byte after valid text
  };
  for (const auto& [prompt, offset] : bad) {
    const Status s = t->encode(prompt).status();
    EXPECT_EQ(s.code(), ErrorCode::kInvalidArgument) << s.to_string();
    EXPECT_TRUE(mentions(s, "byte offset " + std::to_string(offset) + " ")) << s.to_string();
  }
}

TEST_F(TokenizerErrors, PromptOverTheLengthLimit) {
  Expected<BpeTokenizer> t = BpeTokenizer::load(kQwenJson);
  ASSERT_TRUE(t.has_value()) << t.status().to_string();
  const std::string prompt = "A woman walks along a beach at sunset, 镜头缓慢推进 <d>Hello!</d>";
  Expected<std::vector<int32_t>> all = t->encode(prompt);
  ASSERT_TRUE(all.has_value());
  const size_t n = all->size();
  ASSERT_GT(n, 5u);
  Expected<std::vector<int32_t>> at_limit = t->encode(prompt, n);
  ASSERT_TRUE(at_limit.has_value()) << at_limit.status().to_string();
  EXPECT_EQ(*at_limit, *all);
  const Status s = t->encode(prompt, n - 1).status();
  EXPECT_EQ(s.code(), ErrorCode::kInvalidArgument) << s.to_string();
  EXPECT_TRUE(mentions(s, "prompt is " + std::to_string(n) + " tokens, the model allows " + std::to_string(n - 1)))
      << s.to_string();
}

TEST_F(TokenizerErrors, DecodeSkipsUnknownIds) {
  Expected<BpeTokenizer> t = BpeTokenizer::load(kQwenJson);
  ASSERT_TRUE(t.has_value()) << t.status().to_string();
  Expected<std::vector<int32_t>> ids = t->encode("hello world");
  ASSERT_TRUE(ids.has_value());
  std::vector<int32_t> noisy = {-1};
  noisy.insert(noisy.end(), ids->begin(), ids->end());
  noisy.push_back(static_cast<int32_t>(t->vocab_size()) + 1000);
  EXPECT_EQ(t->decode(noisy), "hello world");
  // A multi-byte character cut between ids decodes to U+FFFD rather than invalid UTF-8.
  Expected<std::vector<int32_t>> cjk = t->encode("镜");
  ASSERT_TRUE(cjk.has_value());
  ASSERT_GT(cjk->size(), 1u);  // the tiny vocabulary has no token for it
  EXPECT_EQ(t->decode({cjk->front()}), "\uFFFD");
}

}  // namespace
}  // namespace orochi::text
