// Bad input for the H3 audio VAE encoder: missing/unknown keys, wrong shapes, configs it cannot
// encode with, and waveforms it must refuse (empty, more than 2 channels, wrong rank or dtype), each
// ending in a clear error. Also what a loadable checkpoint may leave out (the decoder, logs_proj).
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <functional>
#include <nlohmann/json.hpp>

#include "models/h3_audio_vae/encoder.h"
#include "models/h3_audio_vae/parameters.h"
#include "support/paths.h"
#include "weights/checkpoint.h"
#include "weights/safetensors_writer.h"

namespace orochi {
namespace {

namespace fs = std::filesystem;
using Tensors = std::vector<std::pair<std::string, Tensor>>;

std::string tiny_dir() { return testing::test_data_dir() + "/h3_audio_vae_encoder/audio_vae"; }

nlohmann::json tiny_config() {
  std::ifstream in(tiny_dir() + "/config.json");
  return nlohmann::json::parse(in);
}

void expect_error(const Status& s, ErrorCode code, const std::vector<std::string>& needles) {
  EXPECT_EQ(s.code(), code) << s.to_string();
  for (const std::string& n : needles)
    EXPECT_NE(s.message().find(n), std::string::npos) << n << " not in: " << s.to_string();
}

class H3AudioVaeEncoderErrors : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("orochi_audio_vae_encoder_errors_" + std::to_string(::getpid()) + "_" +
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

  Status load_status() { return h3_audio::load_encoder(dir_.string()).status(); }

  fs::path dir_;
};

TEST_F(H3AudioVaeEncoderErrors, TheUnchangedCopyLoads) {
  write_model([](Tensors&) {});
  EXPECT_TRUE(load_status().is_ok()) << load_status().to_string();
}

TEST_F(H3AudioVaeEncoderErrors, MissingFolderAndMissingWeights) {
  expect_error(h3_audio::load_encoder((dir_ / "nope").string()).status(), ErrorCode::kNotFound, {});
  expect_error(load_status(), ErrorCode::kNotFound, {});  // config.json but no safetensors
}

TEST_F(H3AudioVaeEncoderErrors, EncoderOnlyCheckpointWithoutLogStdHeadLoads) {
  // Encoding reads neither the decoder nor the unused log-std head.
  write_model([](Tensors& t) {
    std::erase_if(
        t, [](const auto& p) { return !h3_audio::is_encoder_tensor(p.first) || p.first.rfind("logs_proj.", 0) == 0; });
  });
  EXPECT_TRUE(load_status().is_ok()) << load_status().to_string();
}

TEST_F(H3AudioVaeEncoderErrors, MissingKeyIsNamed) {
  write_model([](Tensors& t) {
    std::erase_if(t, [](const auto& p) { return p.first == "encoder.block.3.block.1.block.2.alpha"; });
  });
  expect_error(load_status(), ErrorCode::kInvalidArgument, {"missing", "encoder.block.3.block.1.block.2.alpha"});
}

TEST_F(H3AudioVaeEncoderErrors, MissingKeyBiasBufferIsNamed) {
  // The stored key bias is read like the query and value biases.
  write_model(
      [](Tensors& t) { std::erase_if(t, [](const auto& p) { return p.first == "pre_block.attn.zero_k_bias"; }); });
  expect_error(load_status(), ErrorCode::kInvalidArgument, {"missing", "pre_block.attn.zero_k_bias"});
}

TEST_F(H3AudioVaeEncoderErrors, UnknownKeyIsNamed) {
  write_model([](Tensors& t) { t.emplace_back("pre_block.attn.k_bias", Tensor::zeros({32}, DType::kF32)); });
  expect_error(load_status(), ErrorCode::kInvalidArgument, {"unknown", "pre_block.attn.k_bias"});
}

TEST_F(H3AudioVaeEncoderErrors, WrongShapeNamesTheKeyAndBothShapes) {
  write_model([](Tensors& t) {
    for (auto& [name, tensor] : t)
      if (name == "encoder.block.5.block.4.weight_v") tensor = Tensor::zeros({32, 16, 9}, DType::kF32);
  });
  expect_error(load_status(), ErrorCode::kShapeMismatch,
               {"encoder.block.5.block.4.weight_v", "[32, 16, 9]", "[32, 16, 10]"});
}

TEST_F(H3AudioVaeEncoderErrors, ConfigsTheEncoderCannotRun) {
  write_model([](Tensors&) {});
  const std::vector<std::pair<std::function<void(nlohmann::json&)>, std::string>> cases = {
      {[](nlohmann::json& c) { c["num_attention_heads"] = 3; }, "equal heads"},
      // Same hop, but a rate-1 block would lengthen the signal.
      {[](nlohmann::json& c) { c["encoder_rates"] = {2, 4, 4, 5, 5, 1}; }, "rates >= 2"},
      {[](nlohmann::json& c) {
         c["encoder_rates"] = {2, 4, 4, 5};
       },
       "hop length"},
      {[](nlohmann::json& c) { c["encoder_dim"] = 0; }, "positive"},
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

TEST_F(H3AudioVaeEncoderErrors, ConfigThatDoesNotMatchTheWeights) {
  write_model([](Tensors&) {});
  nlohmann::json config = tiny_config();
  config["encoder_dim"] = 2;
  write_config(config);
  expect_error(load_status(), ErrorCode::kShapeMismatch, {"encoder.block.0.weight_g", "[2, 1, 1]", "config.json"});
}

class H3AudioVaeEncoderInputs : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    Expected<h3_audio::AudioEncoderWeights> w = h3_audio::load_encoder(tiny_dir());
    ASSERT_TRUE(w.has_value()) << w.status().to_string();
    weights_ = new h3_audio::AudioEncoderWeights(std::move(w).value());
  }
  static void TearDownTestSuite() { delete weights_; }
  static h3_audio::AudioEncoderWeights* weights_;
};
h3_audio::AudioEncoderWeights* H3AudioVaeEncoderInputs::weights_ = nullptr;

TEST_F(H3AudioVaeEncoderInputs, EmptyAudioIsRefused) {
  expect_error(h3_audio::encode_reference_audio(*weights_, Tensor::zeros({2, 0}, DType::kF32)).status(),
               ErrorCode::kInvalidArgument, {"empty"});
  expect_error(h3_audio::encode(*weights_, Tensor::zeros({2, 0}, DType::kF32)).status(), ErrorCode::kInvalidArgument,
               {"no samples"});
  expect_error(h3_audio::encode(*weights_, Tensor::zeros({0, 5}, DType::kF32)).status(), ErrorCode::kInvalidArgument,
               {"no samples"});
}

TEST_F(H3AudioVaeEncoderInputs, MoreThanTwoChannelsAreRefused) {
  for (int64_t channels : {3, 6}) {
    const Status s = h3_audio::encode_reference_audio(*weights_, Tensor::zeros({channels, 1600}, DType::kF32)).status();
    expect_error(s, ErrorCode::kInvalidArgument, {std::to_string(channels) + " channels", "mono or stereo", "downmix"});
  }
}

TEST_F(H3AudioVaeEncoderInputs, WrongRankOrDtypeIsRefused) {
  for (const Shape& shape : {Shape{1600}, Shape{2, 1, 1600}}) {
    expect_error(h3_audio::encode_reference_audio(*weights_, Tensor::zeros(shape, DType::kF32)).status(),
                 ErrorCode::kShapeMismatch, {"[channels, samples]"});
    expect_error(h3_audio::encode(*weights_, Tensor::zeros(shape, DType::kF32)).status(), ErrorCode::kShapeMismatch,
                 {"[items, samples]"});
  }
  expect_error(h3_audio::encode_reference_audio(*weights_, Tensor::zeros({2, 1600}, DType::kI64)).status(),
               ErrorCode::kShapeMismatch, {"float"});
  expect_error(h3_audio::encode_reference_audio(*weights_, Tensor()).status(), ErrorCode::kShapeMismatch, {"nothing"});
}

TEST_F(H3AudioVaeEncoderInputs, OneSampleAndBf16InputsEncode) {
  // One sample pads to one latent; a bf16 waveform is read as f32 (0.5 is exact in both).
  Expected<Tensor> one = h3_audio::encode_reference_audio(*weights_, Tensor::from_floats({0.25f}, {1, 1}));
  ASSERT_TRUE(one.has_value()) << one.status().to_string();
  EXPECT_EQ(one->shape(), (Shape{2, 1, 8}));
  const Tensor x = Tensor::from_floats(std::vector<float>(2 * 900, 0.5f), {2, 900});
  Expected<Tensor> f32 = h3_audio::encode(*weights_, x), bf16 = h3_audio::encode(*weights_, x.to(DType::kBF16));
  ASSERT_TRUE(f32.has_value() && bf16.has_value());
  EXPECT_EQ(f32->shape(), (Shape{2, 2, 8}));
  for (int64_t i = 0; i < f32->numel(); ++i) EXPECT_EQ(f32->data<float>()[i], bf16->data<float>()[i]);
}

TEST_F(H3AudioVaeEncoderInputs, NormalizeNeedsTheStatisticsAndTheShape) {
  h3_audio::AudioVaeConfig config = weights_->config;
  expect_error(h3_audio::normalize(config, Tensor::zeros({2, 3, 7}, DType::kF32)).status(), ErrorCode::kShapeMismatch,
               {"[items, A, 8]"});
  config.latents_std.clear();
  expect_error(h3_audio::normalize(config, Tensor::zeros({2, 3, 8}, DType::kF32)).status(), ErrorCode::kInvalidArgument,
               {"latents_std"});
}

TEST(H3AudioVaeEncoderConfig, ReleasedEncoderHasTheReleasedTensors) {
  // diffusers' default AutoencoderKLMiniMaxH3Audio: 171 encoder-side tensors (logs_proj aside),
  // 86,386,176 values (DAC 73.7 M, pre_block 12.7 M, mean_proj).
  Expected<h3_audio::AudioVaeConfig> c = h3_audio::AudioVaeConfig::from_json(nlohmann::json::object());
  ASSERT_TRUE(c.has_value());
  ASSERT_TRUE(c->validate_encoder().is_ok());
  EXPECT_EQ(c->encoder_hop_length(), 800);
  EXPECT_EQ(c->encoder_block_channels(c->num_encoder_blocks() - 1), 2048);
  const std::vector<h3_audio::TensorSpec> specs = h3_audio::encoder_tensors(*c);
  int64_t values = 0;
  for (const auto& spec : specs) values += shape_numel(spec.shape);
  EXPECT_EQ(specs.size(), 171u);
  EXPECT_EQ(values, 86386176);
}

}  // namespace
}  // namespace orochi
