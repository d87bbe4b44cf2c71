// Bad input for the H3 loader and forward: each ends in a clear error naming the problem.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <unistd.h>

#include "models/h3/flops.h"
#include "models/h3/summary.h"
#include "models/h3/transformer.h"
#include "support/golden.h"
#include "weights/safetensors_writer.h"

namespace orochi {
namespace {

namespace fs = std::filesystem;
using testing::h3_tiny_dir;

class H3Errors : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("orochi_h3_errors_" + std::to_string(::getpid()) + "_" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
    fs::copy_file(h3_tiny_dir() + "/transformer/config.json", dir_ / "config.json");
  }
  void TearDown() override { fs::remove_all(dir_); }

  // Writes the tiny model into dir_ as one file after `edit` changes the tensor list.
  void write_model(const std::function<void(std::vector<std::pair<std::string, Tensor>>&)>& edit) {
    Expected<weights::Checkpoint> src = weights::Checkpoint::open(h3_tiny_dir() + "/transformer");
    ASSERT_TRUE(src.has_value());
    std::vector<std::pair<std::string, Tensor>> tensors;
    for (const std::string& name : src->names()) tensors.emplace_back(name, *src->get(name));
    edit(tensors);
    ASSERT_TRUE(weights::write_safetensors((dir_ / "model.safetensors").string(), tensors).is_ok());
  }

  Status load_status() { return h3::load_weights(dir_.string()).status(); }

  fs::path dir_;
};

TEST_F(H3Errors, MissingFolder) {
  const Status s = h3::load_weights((dir_ / "nope").string()).status();
  EXPECT_EQ(s.code(), ErrorCode::kNotFound) << s.to_string();
}

TEST_F(H3Errors, TruncatedShard) {
  for (const auto& e : fs::directory_iterator(h3_tiny_dir() + "/transformer"))
    fs::copy_file(e.path(), dir_ / e.path().filename(), fs::copy_options::overwrite_existing);
  const fs::path shard = dir_ / "diffusion_pytorch_model-00002-of-00004.safetensors";
  fs::resize_file(shard, fs::file_size(shard) - 100);
  const Status s = load_status();
  EXPECT_EQ(s.code(), ErrorCode::kCorruptFile) << s.to_string();
  EXPECT_NE(s.message().find("00002-of-00004"), std::string::npos) << s.to_string();
}

TEST_F(H3Errors, WrongShapeNamesTheKey) {
  write_model([](auto& t) {
    for (auto& [name, tensor] : t)
      if (name == "transformer_blocks.1.attn.to_k.weight") tensor = Tensor::zeros({32, 25}, DType::kF32);
  });
  const Status s = load_status();
  EXPECT_EQ(s.code(), ErrorCode::kShapeMismatch) << s.to_string();
  EXPECT_NE(s.message().find("transformer_blocks.1.attn.to_k.weight"), std::string::npos) << s.to_string();
  EXPECT_NE(s.message().find("[32, 24]"), std::string::npos) << s.to_string();
}

TEST_F(H3Errors, UnknownKeyIsNamed) {
  write_model([](auto& t) { t.emplace_back("transformer_blocks.7.lora_A.weight", Tensor::zeros({2}, DType::kF32)); });
  const Status s = load_status();
  EXPECT_EQ(s.code(), ErrorCode::kInvalidArgument);
  EXPECT_NE(s.message().find("transformer_blocks.7.lora_A.weight"), std::string::npos) << s.to_string();
}

TEST_F(H3Errors, MissingKeyIsNamed) {
  write_model([](auto& t) {
    std::erase_if(t, [](const auto& p) { return p.first == "norm_out.linear.bias"; });
  });
  const Status s = load_status();
  EXPECT_EQ(s.code(), ErrorCode::kInvalidArgument);
  EXPECT_NE(s.message().find("missing"), std::string::npos);
  EXPECT_NE(s.message().find("norm_out.linear.bias"), std::string::npos) << s.to_string();
}

TEST_F(H3Errors, IntegerWeightIsRefused) {
  write_model([](auto& t) {
    for (auto& [name, tensor] : t)
      if (name == "proj_in.bias") tensor = Tensor::zeros({24}, DType::kI32);
  });
  EXPECT_EQ(load_status().code(), ErrorCode::kShapeMismatch);
}

TEST_F(H3Errors, WrongModelClassInConfig) {
  write_model([](auto&) {});
  std::ofstream(dir_ / "config.json") << R"({"_class_name": "AutoencoderKLMiniMaxH3"})";
  const Status s = load_status();
  EXPECT_EQ(s.code(), ErrorCode::kInvalidArgument);
  EXPECT_NE(s.message().find("AutoencoderKLMiniMaxH3"), std::string::npos) << s.to_string();
}

TEST_F(H3Errors, ImpossibleConfigValues) {
  write_model([](auto&) {});
  std::ofstream(dir_ / "config.json") << R"({"attention_head_dim": 8, "rope_freq_dim": 16})";
  EXPECT_EQ(load_status().code(), ErrorCode::kInvalidArgument);
  std::ofstream(dir_ / "config.json") << R"({"hidden_size": -3})";
  EXPECT_EQ(load_status().code(), ErrorCode::kInvalidArgument);
}

class H3InputErrors : public ::testing::Test {
 protected:
  void SetUp() override {
    Expected<weights::Checkpoint> golden = weights::Checkpoint::open(h3_tiny_dir() + "/golden.safetensors");
    ASSERT_TRUE(golden.has_value());
    in_ = testing::golden_inputs(*golden);
    config_ = h3::H3Config::from_json(nlohmann::json::parse(R"({
        "num_attention_heads": 2, "attention_head_dim": 16, "hidden_size": 24, "num_layers": 3,
        "ffn_dim": 32, "in_channels": 4, "audio_in_channels": 6, "text_dim": 8, "freq_dim": 8,
        "time_embed_hidden_dim": 24, "time_embed_dim": 16, "rope_freq_dim": 2})")).value();
    ASSERT_TRUE(h3::validate_inputs(config_, in_, 3).is_ok());
  }
  h3::H3Inputs in_;
  h3::H3Config config_;
};

TEST_F(H3InputErrors, RowClaimedTwice) {
  in_.audio_indices.data<int64_t>()[0] = 0;  // row 0 is a text row
  const Status s = h3::validate_inputs(config_, in_, 3);
  EXPECT_NE(s.message().find("claimed twice"), std::string::npos) << s.to_string();
}

TEST_F(H3InputErrors, TimestepIndexBeyondTables) {
  EXPECT_FALSE(h3::validate_inputs(config_, in_, 2).is_ok());
}

TEST_F(H3InputErrors, BadTagAndBadWidth) {
  in_.token_tags.data<int64_t>()[4] = 3;
  EXPECT_NE(h3::validate_inputs(config_, in_, 3).message().find("token tag 3"), std::string::npos);
  in_.token_tags.data<int64_t>()[4] = 1;
  in_.video = Tensor::zeros({18, 15}, DType::kF32);
  EXPECT_EQ(h3::validate_inputs(config_, in_, 3).code(), ErrorCode::kShapeMismatch);
}

TEST(H3Parameters, ReleasedConfigHas33BParametersOf13BAdaln) {
  const h3::ParamSummary s = h3::summarize_config(h3::H3Config{}, DType::kBF16);
  EXPECT_NEAR(static_cast<double>(s.total.params), 33.12e9, 0.01e9);
  EXPECT_NEAR(static_cast<double>(s.groups.at(h3::ParamGroup::kAdaln).params), 13.04e9, 0.01e9);
  // 638 diffusers keys, as the converted release has.
  EXPECT_EQ(h3::h3_parameters(h3::H3Config{}).size(), 638u);
}

}  // namespace
}  // namespace orochi

namespace orochi {
namespace {

TEST(H3Flops, MatchTheSpecAt480pAnd768p) {
  // MODELS_H3.md §8: 832x480 -> S 15,100 about 582 TF linear + 327 TF attention; 1344x768 ->
  // S 37,966 about 1,463 + 2,066 TF (L = 256).
  const h3::ForwardFlops f480 = h3::forward_flops(h3::H3Config{}, 15100, 256);
  EXPECT_NEAR(f480.linear / 1e12, 582, 3);
  EXPECT_NEAR(f480.attention / 1e12, 327, 2);
  const h3::ForwardFlops f768 = h3::forward_flops(h3::H3Config{}, 37966, 256);
  EXPECT_NEAR(f768.linear / 1e12, 1463, 5);
  EXPECT_NEAR(f768.attention / 1e12, 2066, 5);
}

}  // namespace
}  // namespace orochi
