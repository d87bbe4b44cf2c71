// The Qwen3-VL text decoder against transformers 5.24 on a tiny random model (fp32, made by
// scripts/golden/make_qwen3vl_text.py): every hidden state up to the one read (hidden_states[3] of a
// 4-layer stack, as H3 reads hidden_states[50] of 64) within relative L2 1e-5, for text positions,
// for vision-like 3-axis M-RoPE positions and for a bf16 checkpoint; and the 4th layer, final norm,
// LM head and vision tower are never read.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <functional>
#include <fstream>
#include <map>

#include "models/qwen3vl/text_model.h"
#include "support/compare.h"
#include "support/golden.h"
#include "support/paths.h"
#include "weights/safetensors_writer.h"

namespace orochi {
namespace {

namespace fs = std::filesystem;
using testing::golden_tensor;

constexpr int64_t kStop = 3;  // the golden's STOP_AFTER_LAYERS
const std::string kPrefix = "model.language_model.";

std::string data_dir() { return testing::test_data_dir() + "/qwen3vl_text"; }
std::string model_dir() { return data_dir() + "/text_encoder"; }

weights::Checkpoint open_golden() {
  Expected<weights::Checkpoint> g = weights::Checkpoint::open(data_dir() + "/golden.safetensors");
  OROCHI_CHECK(g.has_value(), g.status().to_string());
  return std::move(g).value();
}

// transformers' position_ids [3, L] -> ours [L, 3].
Tensor positions_from_golden(const weights::Checkpoint& g) {
  const Tensor p = golden_tensor(g, "in.position_ids_3d");
  const int64_t L = p.dim(1);
  Tensor out = Tensor::empty({L, 3}, DType::kI64);
  for (int64_t i = 0; i < L; ++i)
    for (int a = 0; a < 3; ++a) out.data<int64_t>()[i * 3 + a] = p.data<int64_t>()[a * L + i];
  return out;
}

struct Observed {
  std::map<std::string, Tensor> seen;
  Tensor out;
};

Observed run(const qwen3vl::TextWeights& w, const Tensor& ids, const Tensor* positions = nullptr) {
  Observed r;
  auto observer = [&](const std::string& name, const Tensor& t) { r.seen[name] = t.clone(); };
  Expected<Tensor> out =
      positions ? qwen3vl::encode(w, ids, *positions, observer) : qwen3vl::encode_text(w, ids, observer);
  EXPECT_TRUE(out.has_value()) << out.status().to_string();
  if (out) r.out = *out;
  return r;
}

// Compares rope.{cos,sin} and hidden_states.{0..kStop} against the golden names under `prefix`.
void expect_matches(const Observed& r, const weights::Checkpoint& g, const std::string& prefix,
                    const std::string& rope) {
  std::vector<std::pair<std::string, std::string>> pairs;
  if (!rope.empty()) pairs = {{"rope.cos", rope + ".cos"}, {"rope.sin", rope + ".sin"}};
  for (int64_t i = 0; i <= kStop; ++i)
    pairs.emplace_back("hidden_states." + std::to_string(i), prefix + "hidden_states." + std::to_string(i));
  for (const auto& [ours, theirs] : pairs) {
    auto it = r.seen.find(ours);
    ASSERT_NE(it, r.seen.end()) << "the forward never produced " << ours;
    const Tensor expected = golden_tensor(g, theirs);
    SCOPED_TRACE(theirs);
    EXPECT_TENSOR_CLOSE(it->second, expected, 1e-5);
    std::printf("  %-26s %s\n", theirs.c_str(), testing::compare(it->second, expected).summary().c_str());
  }
  EXPECT_EQ(r.seen.size(), pairs.size() + (rope.empty() ? 2 : 0)) << "unexpected extra observations";
  EXPECT_TENSOR_CLOSE(r.out, golden_tensor(g, prefix + "hidden_states." + std::to_string(kStop)), 1e-5);
}

qwen3vl::TextWeights load(const std::string& folder, int64_t stop = kStop) {
  Expected<qwen3vl::TextWeights> w = qwen3vl::load_text_weights(folder, stop);
  OROCHI_CHECK(w.has_value(), w.status().to_string());
  return std::move(w).value();
}

TEST(Qwen3VLTextGolden, EveryLayerMatchesTransformers) {
  const weights::Checkpoint g = open_golden();
  const qwen3vl::TextWeights w = load(model_dir());
  EXPECT_EQ(w.prefix, kPrefix);
  const Observed r = run(w, golden_tensor(g, "in.input_ids"));
  expect_matches(r, g, "", "rope");
}

TEST(Qwen3VLTextGolden, ThreeAxisPositionsMatchTransformers) {
  // A vision-like layout (t fixed, h and w varying over an image grid) exercises the interleaved slots.
  const weights::Checkpoint g = open_golden();
  const qwen3vl::TextWeights w = load(model_dir());
  const Tensor positions = positions_from_golden(g);
  const Observed r = run(w, golden_tensor(g, "in.input_ids"), &positions);
  expect_matches(r, g, "mrope.", "mrope");
}

TEST(Qwen3VLTextGolden, StopsAfterTheRequestedLayer) {
  const weights::Checkpoint g = open_golden();
  for (int64_t stop : {0, 1, 2}) {
    const qwen3vl::TextWeights w = load(model_dir(), stop);
    EXPECT_EQ(w.stop_after_layers(), stop);
    Expected<Tensor> out = qwen3vl::encode_text(w, golden_tensor(g, "in.input_ids"));
    ASSERT_TRUE(out.has_value()) << out.status().to_string();
    EXPECT_TENSOR_CLOSE(*out, golden_tensor(g, "hidden_states." + std::to_string(stop)), 1e-5);
  }
}

TEST(Qwen3VLTextGolden, ReadsOnlyTheLayersItNeeds) {
  const qwen3vl::TextWeights w = load(model_dir());
  EXPECT_EQ(w.loaded_keys, qwen3vl::text_weight_keys(kPrefix, kStop));
  EXPECT_EQ(w.loaded_keys.size(), 1u + 11u * kStop);
  for (const std::string& k : w.loaded_keys) {
    EXPECT_EQ(k.find("layers.3."), std::string::npos) << k;
    EXPECT_NE(k, kPrefix + "norm.weight");
    EXPECT_EQ(k.find("lm_head"), std::string::npos) << k;
    EXPECT_EQ(k.find("visual"), std::string::npos) << k;
  }
}

// A copy of the tiny checkpoint in a temp folder, edited, in one safetensors file.
class EditedCheckpoint : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("orochi_qwen3vl_golden_" + std::to_string(::getpid()) + "_" +
                                        ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
    fs::copy_file(model_dir() + "/config.json", dir_ / "config.json");
  }
  void TearDown() override { fs::remove_all(dir_); }

  void write(const std::function<void(std::vector<std::pair<std::string, Tensor>>&)>& edit) {
    Expected<weights::Checkpoint> src = weights::Checkpoint::open(model_dir());
    ASSERT_TRUE(src.has_value()) << src.status().to_string();
    std::vector<std::pair<std::string, Tensor>> tensors;
    for (const std::string& name : src->names()) tensors.emplace_back(name, *src->get(name));
    edit(tensors);
    const Status s = weights::write_safetensors((dir_ / "model.safetensors").string(), tensors);
    ASSERT_TRUE(s.is_ok()) << s.to_string();
  }
  fs::path dir_;
};

TEST_F(EditedCheckpoint, LaterLayersNormHeadAndVisionAreNeverRead) {
  // Layer 3 is damaged (wrong shapes, NaN) or gone, the final norm, LM head and vision tower are
  // gone: the output must not change. Loading layer 3 then fails, naming what is wrong.
  write([](auto& t) {
    std::vector<std::pair<std::string, Tensor>> kept;
    for (auto& [name, tensor] : t) {
      if (name == kPrefix + "layers.3.self_attn.q_proj.weight") {
        kept.emplace_back(name, Tensor::zeros({3, 3}, DType::kF32));
      } else if (name == kPrefix + "layers.3.mlp.up_proj.weight") {
        Tensor nan = tensor.clone();
        nan.data<float>()[0] = NAN;
        kept.emplace_back(name, nan);
      } else if (name.find("layers.3.mlp.down_proj") == std::string::npos &&
                 name != kPrefix + "norm.weight" && name.rfind("lm_head.", 0) != 0 &&
                 name.rfind("model.visual.", 0) != 0) {
        kept.emplace_back(name, tensor);
      }
    }
    t = kept;
  });
  const weights::Checkpoint g = open_golden();
  const qwen3vl::TextWeights w = load(dir_.string());
  Expected<Tensor> out = qwen3vl::encode_text(w, golden_tensor(g, "in.input_ids"));
  ASSERT_TRUE(out.has_value());
  EXPECT_TENSOR_CLOSE(*out, golden_tensor(g, "hidden_states.3"), 1e-5);

  const Status all = qwen3vl::load_text_weights(dir_.string(), 4).status();
  EXPECT_FALSE(all.is_ok());
  EXPECT_NE(all.message().find("layers.3.mlp.down_proj.weight"), std::string::npos) << all.to_string();
}

TEST_F(EditedCheckpoint, Bf16CheckpointMatchesTransformersWithRoundedWeights) {
  // The release is bf16; weights stay bf16 views and are widened to fp32 per layer.
  write([](auto& t) {
    for (auto& [name, tensor] : t) tensor = tensor.to(DType::kBF16);
  });
  const qwen3vl::TextWeights w = load(dir_.string());
  EXPECT_EQ(w.layers[0].q_proj.dtype(), DType::kBF16);
  EXPECT_EQ(w.embed_tokens.dtype(), DType::kBF16);
  const weights::Checkpoint g = open_golden();
  const Observed r = run(w, golden_tensor(g, "in.input_ids"));
  expect_matches(r, g, "bf16.", "");
}

TEST_F(EditedCheckpoint, BareTextModelKeysLoad) {
  // A Qwen3VLTextModel saved on its own has no prefix; other components are absent.
  write([](auto& t) {
    std::vector<std::pair<std::string, Tensor>> kept;
    for (auto& [name, tensor] : t)
      if (name.rfind(kPrefix, 0) == 0) kept.emplace_back(name.substr(kPrefix.size()), tensor);
    t = kept;
  });
  const qwen3vl::TextWeights w = load(dir_.string());
  EXPECT_EQ(w.prefix, "");
  const weights::Checkpoint g = open_golden();
  Expected<Tensor> out = qwen3vl::encode_text(w, golden_tensor(g, "in.input_ids"));
  ASSERT_TRUE(out.has_value());
  EXPECT_TENSOR_CLOSE(*out, golden_tensor(g, "hidden_states.3"), 1e-5);
}

}  // namespace
}  // namespace orochi
