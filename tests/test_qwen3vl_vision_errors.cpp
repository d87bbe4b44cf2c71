// The Qwen3-VL vision tower's refusals: config fields of the wrong type or value, checkpoints with
// missing, unknown, misshapen or non-float tensors, and inputs that do not match their grids. Each
// returns a Status naming what is wrong; none crashes.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <functional>
#include <nlohmann/json.hpp>

#include "models/qwen3vl/vision_model.h"
#include "support/paths.h"
#include "weights/safetensors_writer.h"

namespace orochi {
namespace {

namespace fs = std::filesystem;
using qwen3vl::VisionConfig;

std::string model_dir() { return testing::test_data_dir() + "/qwen3vl_vision/text_encoder"; }

nlohmann::json golden_config() {
  std::ifstream f(model_dir() + "/config.json");
  return nlohmann::json::parse(f);
}

Status config_status(const std::function<void(nlohmann::json&)>& edit) {
  nlohmann::json j = golden_config();
  edit(j);
  return VisionConfig::from_json(j).status();
}

void expect_error(const Status& s, ErrorCode code, const std::string& mentions) {
  EXPECT_EQ(s.code(), code) << s.to_string();
  EXPECT_NE(s.message().find(mentions), std::string::npos) << s.to_string();
}

TEST(Qwen3VLVisionConfig, ReadsTheGoldenAndTheReleaseDefaults) {
  Expected<VisionConfig> c = VisionConfig::from_json(golden_config());
  ASSERT_TRUE(c.has_value()) << c.status().to_string();
  EXPECT_EQ(c->head_dim(), 8);
  EXPECT_EQ(c->patch_values(), 96);
  EXPECT_EQ(c->rope_theta, 10000.0);
  // The released checkpoint's vision_config (transformers 4.57 spelling, no rope_parameters).
  const auto release = nlohmann::json::parse(R"({"model_type": "qwen3_vl", "text_config": {}, "vision_config": {
      "deepstack_visual_indexes": [8, 16, 24], "depth": 27, "hidden_act": "gelu_pytorch_tanh", "hidden_size": 1152,
      "in_channels": 3, "initializer_range": 0.02, "intermediate_size": 4304, "model_type": "qwen3_vl",
      "num_heads": 16, "num_position_embeddings": 2304, "out_hidden_size": 5120, "patch_size": 16,
      "spatial_merge_size": 2, "temporal_patch_size": 2}})");
  Expected<VisionConfig> r = VisionConfig::from_json(release);
  ASSERT_TRUE(r.has_value()) << r.status().to_string();
  const VisionConfig want = VisionConfig::qwen3vl_32b();
  EXPECT_EQ(r->depth, want.depth);
  EXPECT_EQ(r->out_hidden_size, want.out_hidden_size);
  EXPECT_EQ(r->merged_width(), 4608);
  EXPECT_EQ(r->patch_values(), 1536);
  EXPECT_EQ(r->head_dim(), 72);
  EXPECT_EQ(r->position_grid_side(), 48);
  EXPECT_EQ(r->deepstack_visual_indexes, want.deepstack_visual_indexes);
}

TEST(Qwen3VLVisionConfig, BadFieldsAreRefused) {
  expect_error(config_status([](auto& j) { j["vision_config"]["depth"] = "4"; }), ErrorCode::kInvalidArgument, "depth");
  expect_error(config_status([](auto& j) { j["vision_config"]["hidden_act"] = "relu"; }), ErrorCode::kUnsupported,
               "relu");
  expect_error(config_status([](auto& j) { j["vision_config"]["num_position_embeddings"] = 35; }),
               ErrorCode::kInvalidArgument, "square");
  expect_error(config_status([](auto& j) { j["vision_config"]["deepstack_visual_indexes"] = {0, 9}; }),
               ErrorCode::kInvalidArgument, "9");
  expect_error(config_status([](auto& j) { j["vision_config"]["deepstack_visual_indexes"] = {1, 1}; }),
               ErrorCode::kInvalidArgument, "twice");
  expect_error(config_status([](auto& j) { j["vision_config"]["num_heads"] = 8; }), ErrorCode::kInvalidArgument,
               "multiple of 4");
  expect_error(config_status([](auto& j) { j["vision_config"]["patch_size"] = {4, 4}; }),
               ErrorCode::kInvalidArgument, "patch_size");
  expect_error(config_status([](auto& j) { j["vision_config"]["in_channels"] = 4; }), ErrorCode::kUnsupported,
               "in_channels");
  expect_error(config_status([](auto& j) { j["vision_config"]["rope_parameters"]["rope_type"] = "default"; }),
               ErrorCode::kUnsupported, "axial");
  expect_error(config_status([](auto& j) { j.erase("vision_config"); }), ErrorCode::kInvalidArgument,
               "vision_config");
  expect_error(config_status([](auto& j) { j["model_type"] = "llama"; }), ErrorCode::kInvalidArgument, "llama");
}

// A copy of the tiny checkpoint in a temp folder, edited.
class EditedVisionCheckpoint : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("orochi_qwen3vl_vision_" + std::to_string(::getpid()) + "_" +
                                        ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
    fs::copy_file(model_dir() + "/config.json", dir_ / "config.json");
  }
  void TearDown() override { fs::remove_all(dir_); }

  Status load_edited(const std::function<void(std::vector<std::pair<std::string, Tensor>>&)>& edit) {
    Expected<weights::Checkpoint> src = weights::Checkpoint::open(model_dir());
    OROCHI_CHECK(src.has_value(), src.status().to_string());
    std::vector<std::pair<std::string, Tensor>> tensors;
    for (const std::string& name : src->names()) tensors.emplace_back(name, *src->get(name));
    edit(tensors);
    OROCHI_RETURN_IF_ERROR(weights::write_safetensors((dir_ / "model.safetensors").string(), tensors));
    return qwen3vl::load_vision_weights(dir_.string()).status();
  }
  fs::path dir_;
};

TEST_F(EditedVisionCheckpoint, MissingKeyIsNamed) {
  const std::string gone = "model.visual.blocks.2.mlp.linear_fc1.bias";
  const Status s = load_edited([&](auto& t) { std::erase_if(t, [&](const auto& kv) { return kv.first == gone; }); });
  expect_error(s, ErrorCode::kInvalidArgument, gone);
}

TEST_F(EditedVisionCheckpoint, UnknownKeyIsNamed) {
  const Status s = load_edited([](auto& t) { t.emplace_back("model.visual.blocks.9.norm1.weight", Tensor::zeros({16}, DType::kF32)); });
  expect_error(s, ErrorCode::kInvalidArgument, "model.visual.blocks.9.norm1.weight");
}

TEST_F(EditedVisionCheckpoint, WrongShapeIsNamed) {
  const std::string key = "model.visual.merger.linear_fc2.weight";
  const Status s = load_edited([&](auto& t) {
    for (auto& [name, tensor] : t)
      if (name == key) tensor = Tensor::zeros({3, 3}, DType::kF32);
  });
  expect_error(s, ErrorCode::kShapeMismatch, key);
}

TEST_F(EditedVisionCheckpoint, IntegerWeightIsRefused) {
  const std::string key = "model.visual.pos_embed.weight";
  const Status s = load_edited([&](auto& t) {
    for (auto& [name, tensor] : t)
      if (name == key) tensor = Tensor::zeros(tensor.shape(), DType::kI32);
  });
  expect_error(s, ErrorCode::kShapeMismatch, key);
}

TEST_F(EditedVisionCheckpoint, TextOnlyCheckpointHasNoTower) {
  const Status s = load_edited([](auto& t) {
    std::erase_if(t, [](const auto& kv) { return kv.first.starts_with("model.visual."); });
  });
  expect_error(s, ErrorCode::kInvalidArgument, "no Qwen3-VL vision tower");
}

TEST_F(EditedVisionCheckpoint, Bf16CheckpointLoads) {
  const Status s = load_edited([](auto& t) {
    for (auto& [name, tensor] : t) tensor = tensor.to(DType::kBF16);
  });
  EXPECT_TRUE(s.is_ok()) << s.to_string();
}

TEST(Qwen3VLVisionInputs, MismatchedInputsAreRefused) {
  Expected<qwen3vl::VisionWeights> w = qwen3vl::load_vision_weights(model_dir());
  ASSERT_TRUE(w.has_value()) << w.status().to_string();
  const Tensor pixels = Tensor::zeros({16, 96}, DType::kF32);
  EXPECT_EQ(qwen3vl::run_vision_tower(*w, pixels, {}).status().code(), ErrorCode::kInvalidArgument);
  expect_error(qwen3vl::run_vision_tower(*w, pixels, {{1, 4, 8}}).status(), ErrorCode::kShapeMismatch, "32");
  expect_error(qwen3vl::run_vision_tower(*w, Tensor::zeros({16, 95}, DType::kF32), {{1, 4, 4}}).status(),
               ErrorCode::kShapeMismatch, "96");
  expect_error(qwen3vl::run_vision_tower(*w, Tensor::zeros({12, 96}, DType::kF32), {{1, 3, 4}}).status(),
               ErrorCode::kInvalidArgument, "merge size");
  expect_error(qwen3vl::run_vision_tower(*w, Tensor::zeros({16, 96}, DType::kI64), {{1, 4, 4}}).status(),
               ErrorCode::kShapeMismatch, "pixel_values");
  EXPECT_TRUE(qwen3vl::run_vision_tower(*w, pixels, {{1, 4, 4}}).has_value());
}

}  // namespace
}  // namespace orochi
