// Bad input for the video VAE decoder: each ends in a clear error naming the problem.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <functional>
#include <nlohmann/json.hpp>
#include <unistd.h>

#include "models/h3_video_vae/pixels.h"
#include "models/h3_video_vae/temporal.h"
#include "support/paths.h"
#include "support/random.h"
#include "weights/checkpoint.h"
#include "weights/safetensors_writer.h"

namespace orochi {
namespace {

namespace fs = std::filesystem;

std::string vae_dir() { return testing::test_data_dir() + "/h3_video_vae/vae"; }
bool mentions(const Status& s, const std::string& text) { return s.message().find(text) != std::string::npos; }

class VideoVaeErrors : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("orochi_vvae_errors_" + std::to_string(::getpid()) + "_" +
                                        ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
    fs::copy_file(vae_dir() + "/config.json", dir_ / "config.json");
  }
  void TearDown() override { fs::remove_all(dir_); }

  void write_model(const std::function<void(std::vector<std::pair<std::string, Tensor>>&)>& edit) {
    Expected<weights::Checkpoint> src = weights::Checkpoint::open(vae_dir());
    ASSERT_TRUE(src.has_value());
    std::vector<std::pair<std::string, Tensor>> tensors;
    for (const std::string& name : src->names()) tensors.emplace_back(name, *src->get(name));
    edit(tensors);
    ASSERT_TRUE(weights::write_safetensors((dir_ / "model.safetensors").string(), tensors).is_ok());
  }
  void edit_config(const std::function<void(nlohmann::json&)>& edit) {
    nlohmann::json j = nlohmann::json::parse(std::ifstream(dir_ / "config.json"));
    edit(j);
    std::ofstream(dir_ / "config.json") << j.dump();
  }
  Status load_status() { return h3vae::load_decoder_weights(dir_.string()).status(); }

  fs::path dir_;
};

TEST_F(VideoVaeErrors, EncoderKeysAreIgnoredAndTheRestLoads) {
  write_model([](auto& t) {
    std::erase_if(t, [](const auto& kv) { return kv.first.rfind("encoder.", 0) == 0; });
  });
  EXPECT_TRUE(load_status().is_ok()) << load_status().to_string();
}

TEST_F(VideoVaeErrors, MissingKeyIsNamed) {
  write_model([](auto& t) {
    std::erase_if(t, [](const auto& kv) { return kv.first == "decoder.transformer_blocks.1.scale2"; });
  });
  const Status s = load_status();
  EXPECT_EQ(s.code(), ErrorCode::kInvalidArgument) << s.to_string();
  EXPECT_TRUE(mentions(s, "missing")) << s.to_string();
  EXPECT_TRUE(mentions(s, "decoder.transformer_blocks.1.scale2")) << s.to_string();
}

TEST_F(VideoVaeErrors, UnknownKeyIsNamed) {
  write_model([](auto& t) { t.emplace_back("decoder.mask_token", Tensor::zeros({1, 1, 32}, DType::kF32)); });
  const Status s = load_status();
  EXPECT_EQ(s.code(), ErrorCode::kInvalidArgument) << s.to_string();
  EXPECT_TRUE(mentions(s, "unknown")) << s.to_string();
  EXPECT_TRUE(mentions(s, "decoder.mask_token")) << s.to_string();
}

TEST_F(VideoVaeErrors, WrongShapeNamesTheKey) {
  write_model([](auto& t) {
    for (auto& [name, tensor] : t)
      if (name == "decoder.transformer_blocks.0.attn.to_k.weight") tensor = Tensor::zeros({32, 31}, DType::kF32);
  });
  const Status s = load_status();
  EXPECT_EQ(s.code(), ErrorCode::kShapeMismatch) << s.to_string();
  EXPECT_TRUE(mentions(s, "decoder.transformer_blocks.0.attn.to_k.weight")) << s.to_string();
  EXPECT_TRUE(mentions(s, "[32, 32]")) << s.to_string();
}

// The original naming loads (test_h3_component_files); a file with keys of both namings is neither.
TEST_F(VideoVaeErrors, KeysOfBothNamingsAreRefused) {
  write_model([](auto& t) { t.emplace_back("decoder.x_embedder.weight", Tensor::zeros({32, 4}, DType::kF32)); });
  const Status s = load_status();
  EXPECT_EQ(s.code(), ErrorCode::kInvalidArgument) << s.to_string();
  EXPECT_TRUE(mentions(s, "both the diffusers (decoder.proj_in) and the original")) << s.to_string();
}

TEST_F(VideoVaeErrors, WrongConfigClassAndInconsistentConfig) {
  write_model([](auto&) {});
  edit_config([](nlohmann::json& j) { j["_class_name"] = "AutoencoderKLWan"; });
  Status s = load_status();
  EXPECT_EQ(s.code(), ErrorCode::kInvalidArgument);
  EXPECT_TRUE(mentions(s, "AutoencoderKLWan")) << s.to_string();
  edit_config([](nlohmann::json& j) {
    j["_class_name"] = "AutoencoderKLMiniMaxH3";
    j["latents_mean"] = {0.0, 0.0};
  });
  s = load_status();
  EXPECT_TRUE(mentions(s, "latents_mean")) << s.to_string();
  edit_config([](nlohmann::json& j) {
    j["latents_mean"] = {0.0, 0.0, 0.0, 0.0};
    j["decoder_attention_head_dim"] = 32;  // the weights are for 16
  });
  s = load_status();
  EXPECT_EQ(s.code(), ErrorCode::kShapeMismatch) << s.to_string();
}

TEST_F(VideoVaeErrors, MissingFolder) {
  EXPECT_EQ(h3vae::load_decoder_weights((dir_ / "nope").string()).status().code(), ErrorCode::kNotFound);
}

class VideoVaeInputErrors : public ::testing::Test {
 protected:
  void SetUp() override {
    Expected<h3vae::DecoderWeights> w = h3vae::load_decoder_weights(vae_dir());
    ASSERT_TRUE(w.has_value()) << w.status().to_string();
    weights_ = std::move(w).value();
  }
  h3vae::DecoderWeights weights_;
};

TEST_F(VideoVaeInputErrors, LatentFrameCountMustBe5nPlus2) {
  for (int64_t frames : {1, 2, 6, 8, 11, 13}) {
    SCOPED_TRACE(frames);
    const Status s = h3vae::decode(weights_, testing::random_normal({4, frames, 2, 2}, 1)).status();
    EXPECT_EQ(s.code(), ErrorCode::kInvalidArgument) << s.to_string();
    EXPECT_TRUE(mentions(s, "5n+2")) << s.to_string();
    EXPECT_TRUE(mentions(s, "7, 12, 17")) << s.to_string();
    EXPECT_TRUE(mentions(s, "17n+5")) << s.to_string();
    EXPECT_TRUE(mentions(s, "got " + std::to_string(frames))) << s.to_string();
  }
  EXPECT_TRUE(h3vae::decode(weights_, testing::random_normal({4, 7, 2, 2}, 1)).has_value());
}

TEST_F(VideoVaeInputErrors, WrongLatentShapeOrChunk) {
  Status s = h3vae::decode(weights_, testing::random_normal({5, 7, 2, 2}, 1)).status();
  EXPECT_EQ(s.code(), ErrorCode::kShapeMismatch) << s.to_string();
  EXPECT_TRUE(mentions(s, "[4, frames, height, width]")) << s.to_string();
  s = h3vae::decode(weights_, testing::random_normal({1, 4, 7, 2, 2}, 1)).status();
  EXPECT_EQ(s.code(), ErrorCode::kShapeMismatch) << s.to_string();
  s = h3vae::decode_chunk(weights_, testing::random_normal({4, 12, 2, 2}, 1), 2, {}).status();
  EXPECT_EQ(s.code(), ErrorCode::kInvalidArgument) << s.to_string();
  EXPECT_TRUE(mentions(s, "2 chunks")) << s.to_string();
  EXPECT_EQ(h3vae::to_pixels(Tensor::zeros({4, 2, 2, 2}, DType::kF32)).status().code(), ErrorCode::kShapeMismatch);
  EXPECT_EQ(h3vae::assemble_chunks(weights_.config, {Tensor::zeros({3, 27, 4, 4}, DType::kF32)},
                                   h3vae::BlendPrecision::kF32)
                .status()
                .code(),
            ErrorCode::kShapeMismatch);
}

TEST_F(VideoVaeInputErrors, BadTileOptions) {
  h3vae::DecodeOptions o;
  o.tile_height = 10;  // not a multiple of the spatial ratio 4
  Status s = h3vae::decode(weights_, testing::random_normal({4, 7, 2, 2}, 1), o).status();
  EXPECT_EQ(s.code(), ErrorCode::kInvalidArgument) << s.to_string();
  EXPECT_TRUE(mentions(s, "multiples of 4")) << s.to_string();
  o.tile_height = 8;
  o.min_overlap_height = 8;  // overlap as large as the tile: the layout would never end
  s = h3vae::decode(weights_, testing::random_normal({4, 7, 2, 2}, 1), o).status();
  EXPECT_EQ(s.code(), ErrorCode::kInvalidArgument) << s.to_string();
}

}  // namespace
}  // namespace orochi
