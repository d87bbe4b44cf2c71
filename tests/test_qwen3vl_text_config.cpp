// Qwen3-VL text config parsing: both RoPE spellings (transformers 5's rope_parameters and the
// released checkpoints' rope_scaling + rope_theta), the bare text config, class defaults for absent
// fields, and clear errors for configs this engine cannot run.
#include <gtest/gtest.h>

#include <fstream>
#include <functional>
#include <nlohmann/json.hpp>

#include "models/qwen3vl/text_config.h"
#include "support/paths.h"

namespace orochi {
namespace {

using qwen3vl::TextConfig;

nlohmann::json tiny_config() {
  std::ifstream f(testing::test_data_dir() + "/qwen3vl_text/text_encoder/config.json");
  return nlohmann::json::parse(f);
}

void expect_tiny(const TextConfig& c) {
  EXPECT_EQ(c.vocab_size, 500);
  EXPECT_EQ(c.hidden_size, 64);
  EXPECT_EQ(c.intermediate_size, 128);
  EXPECT_EQ(c.num_hidden_layers, 4);
  EXPECT_EQ(c.num_attention_heads, 4);
  EXPECT_EQ(c.num_key_value_heads, 2);
  EXPECT_EQ(c.head_dim, 16);
  EXPECT_EQ(c.rms_norm_eps, 1e-6);
  EXPECT_EQ(c.rope_theta, 5e6);
  EXPECT_EQ(c.mrope_section, (std::array<int64_t, 3>{4, 2, 2}));
  EXPECT_TRUE(c.mrope_interleaved);
  EXPECT_FALSE(c.tie_word_embeddings);
}

TEST(Qwen3VLTextConfig, ReadsTheSavedConfig) {
  Expected<TextConfig> c = TextConfig::from_json(tiny_config());
  ASSERT_TRUE(c.has_value()) << c.status().to_string();
  expect_tiny(*c);
  EXPECT_EQ(c->q_dim(), 64);
  EXPECT_EQ(c->kv_dim(), 32);
}

TEST(Qwen3VLTextConfig, ReadsTheLegacyRopeSpelling) {
  // As in Qwen/Qwen3-VL-32B-Instruct's config.json.
  nlohmann::json j = tiny_config();
  nlohmann::json& t = j["text_config"];
  t.erase("rope_parameters");
  t["rope_scaling"] = {{"mrope_interleaved", true}, {"mrope_section", {4, 2, 2}}, {"rope_type", "default"}};
  t["rope_theta"] = 5000000;
  Expected<TextConfig> c = TextConfig::from_json(j);
  ASSERT_TRUE(c.has_value()) << c.status().to_string();
  expect_tiny(*c);
}

TEST(Qwen3VLTextConfig, ReadsABareTextConfig) {
  Expected<TextConfig> c = TextConfig::from_json(tiny_config()["text_config"]);
  ASSERT_TRUE(c.has_value()) << c.status().to_string();
  expect_tiny(*c);
}

TEST(Qwen3VLTextConfig, AbsentFieldsTakeTheClassDefaults) {
  // Qwen3VLTextConfig's defaults, kv heads falling back to the query heads, theta to default_theta.
  Expected<TextConfig> c =
      TextConfig::from_json({{"model_type", "qwen3_vl"}, {"text_config", {{"num_attention_heads", 16}}}});
  ASSERT_TRUE(c.has_value()) << c.status().to_string();
  EXPECT_EQ(c->hidden_size, 4096);
  EXPECT_EQ(c->num_hidden_layers, 32);
  EXPECT_EQ(c->num_key_value_heads, 16);
  EXPECT_EQ(c->rope_theta, 500000.0);
  EXPECT_EQ(c->mrope_section, (std::array<int64_t, 3>{24, 20, 20}));
}

TEST(Qwen3VLTextConfig, The32BValues) {
  const TextConfig c = TextConfig::qwen3vl_32b();
  EXPECT_TRUE(c.validate().is_ok());
  EXPECT_EQ(c.q_dim(), 8192);
  EXPECT_EQ(c.kv_dim(), 1024);
  EXPECT_EQ(c.rope_freq_slots(), 64);
  EXPECT_EQ(c.mrope_section[0] + c.mrope_section[1] + c.mrope_section[2], 64);
}

struct BadConfig {
  const char* what;
  std::function<void(nlohmann::json&)> edit;
  ErrorCode code;
  const char* mentions;
};

TEST(Qwen3VLTextConfig, RejectsWhatItCannotRun) {
  const BadConfig cases[] = {
      {"other model", [](auto& j) { j["model_type"] = "qwen2_5_vl"; }, ErrorCode::kInvalidArgument,
       "qwen2_5_vl"},
      {"no text_config", [](auto& j) { j.erase("text_config"); }, ErrorCode::kInvalidArgument, "text_config"},
      {"gelu", [](auto& j) { j["text_config"]["hidden_act"] = "gelu"; }, ErrorCode::kUnsupported,
       "hidden_act"},
      {"biases", [](auto& j) { j["text_config"]["attention_bias"] = true; }, ErrorCode::kUnsupported,
       "attention_bias"},
      {"yarn", [](auto& j) { j["text_config"]["rope_parameters"]["rope_type"] = "yarn"; },
       ErrorCode::kUnsupported, "yarn"},
      {"2 sections",
       [](auto& j) {
         j["text_config"]["rope_parameters"]["mrope_section"] = {4, 4};
       },
       ErrorCode::kInvalidArgument, "mrope_section"},
      {"kv heads", [](auto& j) { j["text_config"]["num_key_value_heads"] = 3; }, ErrorCode::kInvalidArgument,
       "num_key_value_heads"},
      {"odd head_dim", [](auto& j) { j["text_config"]["head_dim"] = 15; }, ErrorCode::kInvalidArgument,
       "head_dim"},
      {"string size", [](auto& j) { j["text_config"]["hidden_size"] = "64"; }, ErrorCode::kInvalidArgument,
       "hidden_size"},
      {"zero layers", [](auto& j) { j["text_config"]["num_hidden_layers"] = 0; }, ErrorCode::kInvalidArgument,
       "positive"},
  };
  for (const BadConfig& bad : cases) {
    nlohmann::json j = tiny_config();
    bad.edit(j);
    const Status s = TextConfig::from_json(j).status();
    EXPECT_EQ(s.code(), bad.code) << bad.what << ": " << s.to_string();
    EXPECT_NE(s.message().find(bad.mentions), std::string::npos) << bad.what << ": " << s.to_string();
  }
}

}  // namespace
}  // namespace orochi
