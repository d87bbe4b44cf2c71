// Bad input for the H3 audio VAE decoder: missing/truncated files, missing/unknown keys, wrong
// shapes, inconsistent configs and wrong latent shapes each end in a clear error.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <functional>
#include <nlohmann/json.hpp>

#include "models/h3_audio_vae/decoder.h"
#include "support/paths.h"
#include "weights/checkpoint.h"
#include "weights/safetensors_writer.h"

namespace orochi {
namespace {

namespace fs = std::filesystem;
using Tensors = std::vector<std::pair<std::string, Tensor>>;

std::string tiny_dir() { return testing::test_data_dir() + "/h3_audio_vae/audio_vae"; }

nlohmann::json tiny_config() {
  std::ifstream in(tiny_dir() + "/config.json");
  return nlohmann::json::parse(in);
}

class H3AudioVaeErrors : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("orochi_audio_vae_errors_" + std::to_string(::getpid()) + "_" +
                                        ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
    write_config(tiny_config());
  }
  void TearDown() override { fs::remove_all(dir_); }

  void write_config(const nlohmann::json& config) { std::ofstream(dir_ / "config.json") << config.dump(2); }

  // Writes the tiny model into dir_ after `edit` changes the tensor list.
  void write_model(const std::function<void(Tensors&)>& edit) {
    Expected<weights::Checkpoint> src = weights::Checkpoint::open(tiny_dir());
    ASSERT_TRUE(src.has_value());
    Tensors tensors;
    for (const std::string& name : src->names()) tensors.emplace_back(name, *src->get(name));
    edit(tensors);
    ASSERT_TRUE(weights::write_safetensors((dir_ / "model.safetensors").string(), tensors).is_ok());
  }

  Status load_status() { return h3_audio::load_decoder(dir_.string()).status(); }

  fs::path dir_;
};

void expect_error(const Status& s, ErrorCode code, const std::vector<std::string>& needles) {
  EXPECT_EQ(s.code(), code) << s.to_string();
  for (const std::string& n : needles)
    EXPECT_NE(s.message().find(n), std::string::npos) << n << " not in: " << s.to_string();
}

TEST_F(H3AudioVaeErrors, TheUnchangedCopyLoads) {
  write_model([](Tensors&) {});
  EXPECT_TRUE(load_status().is_ok()) << load_status().to_string();
}

TEST_F(H3AudioVaeErrors, MissingFolderAndMissingWeights) {
  expect_error(h3_audio::load_decoder((dir_ / "nope").string()).status(), ErrorCode::kNotFound, {});
  expect_error(load_status(), ErrorCode::kNotFound, {});  // config.json but no safetensors
}

TEST_F(H3AudioVaeErrors, TruncatedFile) {
  write_model([](Tensors&) {});
  fs::resize_file(dir_ / "model.safetensors", fs::file_size(dir_ / "model.safetensors") - 64);
  expect_error(load_status(), ErrorCode::kCorruptFile, {"model.safetensors"});
}

TEST_F(H3AudioVaeErrors, MissingKeyIsNamed) {
  write_model([](Tensors& t) {
    std::erase_if(t, [](const auto& p) { return p.first == "decoder.resblocks.3.activations.2.upsample.filter"; });
  });
  expect_error(load_status(), ErrorCode::kInvalidArgument,
               {"missing", "decoder.resblocks.3.activations.2.upsample.filter"});
}

TEST_F(H3AudioVaeErrors, UnknownKeyIsNamed) {
  write_model(
      [](Tensors& t) { t.emplace_back("decoder.resblocks.9.convs1.0.weight", Tensor::zeros({2}, DType::kF32)); });
  expect_error(load_status(), ErrorCode::kInvalidArgument, {"unknown", "decoder.resblocks.9.convs1.0.weight"});
}

TEST_F(H3AudioVaeErrors, WrongShapeNamesTheKeyAndBothShapes) {
  write_model([](Tensors& t) {
    for (auto& [name, tensor] : t)
      if (name == "decoder.ups.1.0.weight_v") tensor = Tensor::zeros({8, 4, 5}, DType::kF32);
  });
  expect_error(load_status(), ErrorCode::kShapeMismatch, {"decoder.ups.1.0.weight_v", "[8, 4, 5]", "[8, 4, 4]"});
}

TEST_F(H3AudioVaeErrors, DecoderOnlyCheckpointLoads) {
  // The encoder is not needed to decode: a file without it is complete.
  write_model([](Tensors& t) { std::erase_if(t, [](const auto& p) { return h3_audio::is_encoder_tensor(p.first); }); });
  EXPECT_TRUE(load_status().is_ok()) << load_status().to_string();
}

TEST_F(H3AudioVaeErrors, InconsistentConfigs) {
  write_model([](Tensors&) {});
  const std::vector<std::pair<std::function<void(nlohmann::json&)>, std::string>> cases = {
      {[](nlohmann::json& c) {
         c["decoder_rates"] = {2, 4};
       },
       "hop length"},
      {[](nlohmann::json& c) { c["_class_name"] = "AutoencoderKLMiniMaxH3"; }, "audio_vae/"},
      {[](nlohmann::json& c) {
         c["latents_std"] = {1.0, 2.0};
       },
       "latent_channels"},
      {[](nlohmann::json& c) {
         c["resblock_dilation_sizes"] = {{1, 3}};
       },
       "resblock_dilation_sizes"},
      {[](nlohmann::json& c) {
         c["resblock_dilation_sizes"] = {{1, "x"}, {1, 3}};
       },
       "resblock_dilation_sizes"},
      {[](nlohmann::json& c) { c["decoder_dim"] = "16"; }, "decoder_dim"},
      {[](nlohmann::json& c) { c["latent_dim"] = 36; }, "multiple of latent_channels"},
      {[](nlohmann::json& c) {
         c["resblock_kernel_sizes"] = {3, 6};
       },
       "odd"},
  };
  for (const auto& [edit, needle] : cases) {
    nlohmann::json config = tiny_config();
    edit(config);
    write_config(config);
    const Status s = load_status();
    EXPECT_FALSE(s.is_ok()) << needle;
    EXPECT_NE(s.message().find(needle), std::string::npos) << s.to_string();
  }
}

TEST_F(H3AudioVaeErrors, ConfigThatDoesNotMatchTheWeights) {
  write_model([](Tensors&) {});
  nlohmann::json config = tiny_config();
  config["decoder_dim"] = 32;
  write_config(config);
  expect_error(load_status(), ErrorCode::kShapeMismatch, {"decoder.conv_pre.weight_g", "[32, 1, 1]", "config.json"});
}

TEST(H3AudioVaeInputs, WrongLatentShapesAreErrors) {
  Expected<h3_audio::AudioDecoderWeights> w = h3_audio::load_decoder(tiny_dir());
  ASSERT_TRUE(w.has_value()) << w.status().to_string();
  for (const Shape& shape : {Shape{2, 8, 7}, Shape{16, 8}, Shape{2, 0, 8}, Shape{0, 3, 8}}) {
    const Tensor z = Tensor::zeros(shape, DType::kF32);
    expect_error(h3_audio::decode(*w, z).status(), ErrorCode::kShapeMismatch, {"[channels, A, 8]"});
    expect_error(h3_audio::denormalize(w->config, z).status(), ErrorCode::kShapeMismatch, {"[channels, A, 8]"});
  }
  expect_error(h3_audio::decode(*w, Tensor::zeros({2, 3, 8}, DType::kI64)).status(), ErrorCode::kShapeMismatch, {});
}

TEST(H3AudioVaeInputs, OneLatentAndBf16LatentsDecode) {
  Expected<h3_audio::AudioDecoderWeights> w = h3_audio::load_decoder(tiny_dir());
  ASSERT_TRUE(w.has_value());
  Expected<Tensor> one = h3_audio::decode(*w, Tensor::zeros({1, 1, 8}, DType::kF32));
  ASSERT_TRUE(one.has_value()) << one.status().to_string();
  EXPECT_EQ(one->shape(), (Shape{1, 4}));
  Tensor z = Tensor::from_floats(std::vector<float>(2 * 3 * 8, 0.5f), {2, 3, 8});
  Expected<Tensor> f32 = h3_audio::decode(*w, z), bf16 = h3_audio::decode(*w, z.to(DType::kBF16));
  ASSERT_TRUE(f32.has_value() && bf16.has_value());
  EXPECT_EQ(f32->shape(), (Shape{2, 12}));
  for (int64_t i = 0; i < f32->numel(); ++i) EXPECT_EQ(f32->data<float>()[i], bf16->data<float>()[i]);  // 0.5 is exact
}

TEST(H3AudioVaeInputs, DenormalizeNeedsTheStatistics) {
  Expected<h3_audio::AudioDecoderWeights> w = h3_audio::load_decoder(tiny_dir());
  ASSERT_TRUE(w.has_value());
  h3_audio::AudioVaeConfig config = w->config;
  config.latents_mean.clear();
  expect_error(h3_audio::denormalize(config, Tensor::zeros({2, 3, 8}, DType::kF32)).status(),
               ErrorCode::kInvalidArgument, {"latents_mean"});
}

TEST(H3AudioVaeConfig, DefaultsAreTheRelease) {
  Expected<h3_audio::AudioVaeConfig> c = h3_audio::AudioVaeConfig::from_json(nlohmann::json::object());
  ASSERT_TRUE(c.has_value()) << c.status().to_string();
  EXPECT_EQ(c->hop_length(), 800);
  EXPECT_EQ(c->stage_channels(c->num_stages() - 1), 8);
  EXPECT_EQ(c->latent_channels, 32);
  // 1 dec_in_proj + conv_pre + 7 upsamplers + 21 AMP blocks x 3 dilations x (2 convs + 2 acts) + post.
  EXPECT_EQ(h3_audio::decoder_tensors(*c).size(), 2u + 3u + 7u * 3u + 21u * 3u * (3u + 3u + 4u + 4u) + 4u + 2u);
}

}  // namespace
}  // namespace orochi
