// Bad input for the video VAE encoder: each ends in a clear error naming the problem, never a crash.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <functional>
#include <nlohmann/json.hpp>
#include <unistd.h>

#include "models/h3_video_vae/encoder_posterior.h"
#include "models/h3_video_vae/weights.h"
#include "support/paths.h"
#include "support/random.h"
#include "weights/checkpoint.h"
#include "weights/safetensors_writer.h"

namespace orochi {
namespace {

namespace fs = std::filesystem;

std::string vae_dir() { return testing::test_data_dir() + "/h3_video_vae_encoder/vae"; }
bool mentions(const Status& s, const std::string& text) { return s.message().find(text) != std::string::npos; }

class VideoVaeEncoderErrors : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("orochi_vvae_enc_errors_" + std::to_string(::getpid()) + "_" +
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
  Status load_status() { return h3vae::load_encoder_weights(dir_.string()).status(); }

  fs::path dir_;
};

TEST_F(VideoVaeEncoderErrors, TheDecoderStillLoadsFromTheSameFolder) {
  write_model([](auto&) {});
  EXPECT_TRUE(load_status().is_ok()) << load_status().to_string();
  Expected<h3vae::DecoderWeights> dec = h3vae::load_decoder_weights(dir_.string());
  EXPECT_TRUE(dec.has_value()) << dec.status().to_string();
}

TEST_F(VideoVaeEncoderErrors, DecoderKeysAreIgnored) {
  write_model([](auto& t) {
    std::erase_if(t, [](const auto& kv) { return kv.first.rfind("decoder.", 0) == 0; });
  });
  EXPECT_TRUE(load_status().is_ok()) << load_status().to_string();
}

TEST_F(VideoVaeEncoderErrors, DecodeOnlyCheckpointIsRefusedWithAdvice) {
  write_model([](auto& t) {
    std::erase_if(t, [](const auto& kv) { return h3vae::is_encoder_key(kv.first); });
  });
  const Status s = load_status();
  EXPECT_EQ(s.code(), ErrorCode::kInvalidArgument) << s.to_string();
  EXPECT_TRUE(mentions(s, "no encoder")) << s.to_string();
}

TEST_F(VideoVaeEncoderErrors, MissingKeyIsNamed) {
  write_model([](auto& t) {
    std::erase_if(t, [](const auto& kv) { return kv.first == "encoder.down_blocks.2.resnets.0.conv_shortcut.bias"; });
  });
  const Status s = load_status();
  EXPECT_EQ(s.code(), ErrorCode::kInvalidArgument) << s.to_string();
  EXPECT_TRUE(mentions(s, "missing")) << s.to_string();
  EXPECT_TRUE(mentions(s, "encoder.down_blocks.2.resnets.0.conv_shortcut.bias")) << s.to_string();
}

TEST_F(VideoVaeEncoderErrors, UnknownEncoderKeyIsNamed) {
  write_model([](auto& t) { t.emplace_back("encoder.down_blocks.3.downsamplers.0.conv.weight", Tensor::zeros({16, 16, 3, 3, 3}, DType::kF32)); });
  const Status s = load_status();
  EXPECT_EQ(s.code(), ErrorCode::kInvalidArgument) << s.to_string();
  EXPECT_TRUE(mentions(s, "unknown")) << s.to_string();
  EXPECT_TRUE(mentions(s, "encoder.down_blocks.3.downsamplers.0.conv.weight")) << s.to_string();
}

TEST_F(VideoVaeEncoderErrors, WrongShapeNamesTheKey) {
  write_model([](auto& t) {
    for (auto& [name, tensor] : t)
      if (name == "encoder.conv_out.weight") tensor = Tensor::zeros({8, 16, 1, 3, 3}, DType::kF32);
  });
  const Status s = load_status();
  EXPECT_EQ(s.code(), ErrorCode::kShapeMismatch) << s.to_string();
  EXPECT_TRUE(mentions(s, "encoder.conv_out.weight")) << s.to_string();
}

TEST_F(VideoVaeEncoderErrors, ConfigProblemsAreNamed) {
  write_model([](auto&) {});
  edit_config([](nlohmann::json& j) { j["spatial_padding_mode"] = "zeros"; });
  Status s = load_status();
  EXPECT_EQ(s.code(), ErrorCode::kUnsupported) << s.to_string();
  EXPECT_TRUE(mentions(s, "reflect")) << s.to_string();

  edit_config([](nlohmann::json& j) {
    j["spatial_padding_mode"] = "reflect";
    j["block_out_channels"] = {8, 8, 16};
  });
  s = load_status();
  EXPECT_EQ(s.code(), ErrorCode::kInvalidArgument) << s.to_string();
  EXPECT_TRUE(mentions(s, "one entry per encoder level")) << s.to_string();

  edit_config([](nlohmann::json& j) {
    j["block_out_channels"] = {8, 8, 16, 18};
  });
  s = load_status();
  EXPECT_EQ(s.code(), ErrorCode::kInvalidArgument) << s.to_string();
  EXPECT_TRUE(mentions(s, "norm_num_groups")) << s.to_string();
}

class EncoderInputErrors : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    Expected<h3vae::EncoderWeights> w = h3vae::load_encoder_weights(vae_dir());
    ASSERT_TRUE(w.has_value()) << w.status().to_string();
    weights_ = new h3vae::EncoderWeights(std::move(w).value());
  }
  static void TearDownTestSuite() { delete weights_; }
  static Status encode_status(const Tensor& x, const h3vae::EncodeOptions& options = {}) {
    return h3vae::encode_moments(*weights_, x, options).status();
  }
  static h3vae::EncoderWeights* weights_;
};
h3vae::EncoderWeights* EncoderInputErrors::weights_ = nullptr;

TEST_F(EncoderInputErrors, WrongChannelsOrRank) {
  Status s = encode_status(testing::random_normal({4, 1, 16, 16}, 1));
  EXPECT_EQ(s.code(), ErrorCode::kInvalidArgument) << s.to_string();
  EXPECT_TRUE(mentions(s, "[3, frames, height, width]")) << s.to_string();
  s = encode_status(testing::random_normal({3, 16, 16}, 2));
  EXPECT_EQ(s.code(), ErrorCode::kInvalidArgument) << s.to_string();
  s = encode_status(Tensor());
  EXPECT_EQ(s.code(), ErrorCode::kInvalidArgument) << s.to_string();
}

TEST_F(EncoderInputErrors, SidesMustBeWholeLatents) {
  const Status s = encode_status(testing::random_normal({3, 1, 20, 16}, 3));  // ratio 8
  EXPECT_EQ(s.code(), ErrorCode::kInvalidArgument) << s.to_string();
  EXPECT_TRUE(mentions(s, "multiples of 8")) << s.to_string();
}

TEST_F(EncoderInputErrors, TooSmallFramesAreRefused) {
  // 8 px -> 4 -> 2 -> 1 after three stride-2 levels: the last level's reflect pad cannot work.
  const Status s = encode_status(testing::random_normal({3, 1, 8, 16}, 4));
  EXPECT_EQ(s.code(), ErrorCode::kInvalidArgument) << s.to_string();
  EXPECT_TRUE(mentions(s, "too small")) << s.to_string();
  EXPECT_TRUE(mentions(s, "height of 8")) << s.to_string();
  // The smallest legal frame encodes.
  EXPECT_TRUE(encode_status(testing::random_normal({3, 1, 16, 16}, 5)).is_ok());
}

TEST_F(EncoderInputErrors, NoFramesAndBadTilesAreRefused) {
  Status s = encode_status(Tensor::empty({3, 0, 16, 16}, DType::kF32));
  EXPECT_EQ(s.code(), ErrorCode::kInvalidArgument) << s.to_string();
  h3vae::EncodeOptions bad;
  bad.tile_height = 20;  // not a multiple of 8
  s = encode_status(testing::random_normal({3, 1, 16, 16}, 6), bad);
  EXPECT_EQ(s.code(), ErrorCode::kInvalidArgument) << s.to_string();
  EXPECT_TRUE(mentions(s, "tile height")) << s.to_string();
}

TEST_F(EncoderInputErrors, PixelsMustBeUint8Rgb) {
  Expected<Tensor> x = h3vae::normalize_pixels(testing::random_normal({3, 1, 16, 16}, 7));
  ASSERT_FALSE(x.has_value());
  EXPECT_TRUE(mentions(x.status(), "uint8")) << x.status().to_string();
  x = h3vae::normalize_pixels(Tensor::empty({4, 1, 16, 16}, DType::kU8));
  ASSERT_FALSE(x.has_value());
  Expected<Tensor> l = h3vae::encode_condition(*weights_, Tensor::empty({3, 1, 12, 16}, DType::kU8));
  ASSERT_FALSE(l.has_value());
  EXPECT_TRUE(mentions(l.status(), "multiples of 8")) << l.status().to_string();
}

}  // namespace
}  // namespace orochi
