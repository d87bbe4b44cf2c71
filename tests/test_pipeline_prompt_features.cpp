// Prompt conditioning: the tokenizer step (verbatim ids, length limit, clear errors) and the text
// encoder step (the residual after layer k of the tiny Qwen3-VL golden, as transformers computes it).
#include <gtest/gtest.h>

#include "text/tokenizer.h"
#include "pipeline/prompt_features.h"
#include "support/compare.h"
#include "support/golden.h"
#include "support/paths.h"

namespace orochi {
namespace {

const std::string kTokenizer = testing::test_data_dir() + "/tokenizer/qwen_bpe";
const std::string kTextEncoder = testing::test_data_dir() + "/qwen3vl_text/text_encoder";

TEST(PromptFeatures, TokenizesVerbatimAndRefusesOverlongPrompts) {
  const std::string prompt = "A red fox runs through the snow, 雪が降る 🦊";
  Expected<Tensor> ids = pipeline::tokenize_prompt(kTokenizer, prompt, 4096);
  ASSERT_TRUE(ids.has_value()) << ids.status().to_string();
  Expected<text::BpeTokenizer> tok = text::BpeTokenizer::load(kTokenizer);
  ASSERT_TRUE(tok.has_value());
  Expected<std::vector<int32_t>> expected = tok->encode(prompt);
  ASSERT_TRUE(expected.has_value());
  ASSERT_EQ(ids->numel(), static_cast<int64_t>(expected->size()));
  for (size_t i = 0; i < expected->size(); ++i) EXPECT_EQ(ids->data<int64_t>()[i], (*expected)[i]);

  Expected<Tensor> too_long = pipeline::tokenize_prompt(kTokenizer, prompt, 3);
  ASSERT_FALSE(too_long.has_value());
  EXPECT_EQ(too_long.status().code(), ErrorCode::kInvalidArgument);
  EXPECT_FALSE(pipeline::tokenize_prompt(kTokenizer, "", 10).has_value());
  Expected<Tensor> missing = pipeline::tokenize_prompt("/nonexistent/tokenizer", prompt, 10);
  ASSERT_FALSE(missing.has_value());
  EXPECT_EQ(missing.status().code(), ErrorCode::kNotFound);
}

TEST(PromptFeatures, EncodesTheResidualAfterTheRequestedLayer) {
  Expected<weights::Checkpoint> g =
      weights::Checkpoint::open(testing::test_data_dir() + "/qwen3vl_text/golden.safetensors");
  ASSERT_TRUE(g.has_value());
  Expected<Tensor> out = pipeline::encode_prompt_cpu(kTextEncoder, testing::golden_tensor(*g, "in.input_ids"), 3);
  ASSERT_TRUE(out.has_value()) << out.status().to_string();
  EXPECT_TENSOR_CLOSE(*out, testing::golden_tensor(*g, "hidden_states.3"), 1e-5);

  int64_t max_tokens = 0, hidden = 0;
  ASSERT_TRUE(pipeline::check_text_encoder(kTextEncoder, 3, &max_tokens, &hidden).is_ok());
  EXPECT_EQ(hidden, 64);
  EXPECT_EQ(max_tokens, 256);  // the tiny config's max_position_embeddings
  const Status last = pipeline::check_text_encoder(kTextEncoder, 4);  // the normed last layer is never read
  ASSERT_FALSE(last.is_ok());
  EXPECT_NE(last.message().find("--text-layer"), std::string::npos) << last.to_string();
  EXPECT_EQ(pipeline::check_text_encoder("/nonexistent/text_encoder", 3).code(), ErrorCode::kNotFound);
}

}  // namespace
}  // namespace orochi
