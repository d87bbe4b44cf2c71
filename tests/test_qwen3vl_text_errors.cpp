// Bad input for the Qwen3-VL text loader and forward: each ends in a clear error naming the problem.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <functional>
#include <vector>

#include "models/qwen3vl/text_model.h"
#include "support/paths.h"
#include "weights/safetensors_writer.h"

namespace orochi {
namespace {

namespace fs = std::filesystem;

const std::string kPrefix = "model.language_model.";
std::string model_dir() { return testing::test_data_dir() + "/qwen3vl_text/text_encoder"; }

class Qwen3VLTextErrors : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("orochi_qwen3vl_errors_" + std::to_string(::getpid()) + "_" +
                                        ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
    fs::copy_file(model_dir() + "/config.json", dir_ / "config.json");
  }
  void TearDown() override { fs::remove_all(dir_); }

  // Writes the tiny model into dir_ as one file after `edit` changes the tensor list.
  void write_model(const std::function<void(std::vector<std::pair<std::string, Tensor>>&)>& edit) {
    Expected<weights::Checkpoint> src = weights::Checkpoint::open(model_dir());
    ASSERT_TRUE(src.has_value());
    std::vector<std::pair<std::string, Tensor>> tensors;
    for (const std::string& name : src->names()) tensors.emplace_back(name, *src->get(name));
    edit(tensors);
    ASSERT_TRUE(weights::write_safetensors((dir_ / "model.safetensors").string(), tensors).is_ok());
  }
  Status load_status(int64_t stop = 3) { return qwen3vl::load_text_weights(dir_.string(), stop).status(); }

  fs::path dir_;
};

void expect_error(const Status& s, ErrorCode code, const std::string& mentions) {
  EXPECT_EQ(s.code(), code) << s.to_string();
  EXPECT_NE(s.message().find(mentions), std::string::npos)
      << "expected '" << mentions << "' in " << s.to_string();
}

TEST_F(Qwen3VLTextErrors, MissingFolder) {
  EXPECT_EQ(qwen3vl::load_text_weights((dir_ / "nope").string(), 3).status().code(), ErrorCode::kNotFound);
}

TEST_F(Qwen3VLTextErrors, MissingKeyIsNamed) {
  write_model([](auto& t) {
    std::erase_if(t, [](auto& p) { return p.first == kPrefix + "layers.1.mlp.up_proj.weight"; });
  });
  expect_error(load_status(), ErrorCode::kInvalidArgument,
               "missing key (" + kPrefix + "layers.1.mlp.up_proj.weight)");
}

TEST_F(Qwen3VLTextErrors, WrongShapeIsNamed) {
  write_model([](auto& t) {
    for (auto& [name, tensor] : t)
      if (name == kPrefix + "layers.2.self_attn.k_proj.weight") tensor = Tensor::zeros({16, 64}, DType::kF32);
  });
  const Status s = load_status();
  expect_error(s, ErrorCode::kShapeMismatch, kPrefix + "layers.2.self_attn.k_proj.weight");
  EXPECT_NE(s.message().find("expected [32, 64]"), std::string::npos) << s.to_string();
}

TEST_F(Qwen3VLTextErrors, NonFloatWeightIsNamed) {
  write_model([](auto& t) {
    for (auto& [name, tensor] : t)
      if (name == kPrefix + "layers.0.self_attn.q_norm.weight") tensor = Tensor::zeros({16}, DType::kI64);
  });
  expect_error(load_status(), ErrorCode::kShapeMismatch, kPrefix + "layers.0.self_attn.q_norm.weight");
}

TEST_F(Qwen3VLTextErrors, UnknownKeysInTheLanguageModelAreNamed) {
  // A bias the config does not have, in a layer that is read; and a layer past the config's count.
  write_model([](auto& t) {
    t.emplace_back(kPrefix + "layers.0.self_attn.q_proj.bias", Tensor::zeros({64}, DType::kF32));
    t.emplace_back(kPrefix + "layers.4.mlp.up_proj.weight", Tensor::zeros({2}, DType::kF32));
  });
  const Status s = load_status();
  expect_error(s, ErrorCode::kInvalidArgument, kPrefix + "layers.0.self_attn.q_proj.bias");
  EXPECT_NE(s.message().find(kPrefix + "layers.4.mlp.up_proj.weight"), std::string::npos) << s.to_string();
}

TEST_F(Qwen3VLTextErrors, NotAQwenCheckpoint) {
  write_model([](auto& t) { t = {{"proj_in.weight", Tensor::zeros({2, 2}, DType::kF32)}}; });
  expect_error(load_status(), ErrorCode::kInvalidArgument, "embed_tokens.weight");
}

TEST_F(Qwen3VLTextErrors, StopAfterLayersOutOfRange) {
  expect_error(qwen3vl::load_text_weights(model_dir(), 5).status(), ErrorCode::kInvalidArgument,
               "stop_after_layers 5");
  expect_error(qwen3vl::load_text_weights(model_dir(), -1).status(), ErrorCode::kInvalidArgument, "[0, 4]");
}

class Qwen3VLTextInputs : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    Expected<qwen3vl::TextWeights> w = qwen3vl::load_text_weights(model_dir(), 3);
    ASSERT_TRUE(w.has_value()) << w.status().to_string();
    weights_ = new qwen3vl::TextWeights(std::move(w).value());
  }
  static void TearDownTestSuite() { delete weights_; }
  static qwen3vl::TextWeights* weights_;
};
qwen3vl::TextWeights* Qwen3VLTextInputs::weights_ = nullptr;

TEST_F(Qwen3VLTextInputs, TokenIdPastTheVocabulary) {
  const Status s = qwen3vl::encode_text(*weights_, Tensor::from_ints({1, 2, 500, 3}, {4})).status();
  expect_error(s, ErrorCode::kInvalidArgument, "token id 500 at position 2");
  EXPECT_NE(s.message().find("[0, 500)"), std::string::npos) << s.to_string();
}

TEST_F(Qwen3VLTextInputs, NegativeTokenId) {
  expect_error(qwen3vl::encode_text(*weights_, Tensor::from_ints({-1}, {1})).status(),
               ErrorCode::kInvalidArgument, "token id -1 at position 0");
}

TEST_F(Qwen3VLTextInputs, EmptyPrompt) {
  expect_error(qwen3vl::encode_text(*weights_, Tensor::empty({0}, DType::kI64)).status(),
               ErrorCode::kInvalidArgument, "empty");
}

TEST_F(Qwen3VLTextInputs, WrongIdTensor) {
  expect_error(qwen3vl::encode_text(*weights_, Tensor::from_floats({1.0f}, {1})).status(),
               ErrorCode::kShapeMismatch, "i64 [L]");
  expect_error(qwen3vl::encode_text(*weights_, Tensor::from_ints({1, 2}, {1, 2})).status(),
               ErrorCode::kShapeMismatch, "i64 [L]");
  expect_error(qwen3vl::encode_text(*weights_, Tensor()).status(), ErrorCode::kShapeMismatch, "nothing");
}

TEST_F(Qwen3VLTextInputs, WrongPositions) {
  const Tensor ids = Tensor::from_ints({1, 2, 3}, {3});
  expect_error(qwen3vl::encode(*weights_, ids, qwen3vl::text_positions(2)).status(),
               ErrorCode::kShapeMismatch, "[3, 3]");
  expect_error(qwen3vl::encode(*weights_, ids, Tensor::zeros({3, 3}, DType::kF32)).status(),
               ErrorCode::kShapeMismatch, "i64");
}

TEST_F(Qwen3VLTextInputs, WrongDecoderInput) {
  expect_error(
      qwen3vl::run_decoder(*weights_, Tensor::zeros({3, 65}, DType::kF32), qwen3vl::text_positions(3))
          .status(),
      ErrorCode::kShapeMismatch, "[L, 64]");
}

}  // namespace
}  // namespace orochi
