// LoRAs against diffusers + PEFT (tests/data/h3_lora, scripts/golden/make_h3_lora.py): one PEFT LoRA on
// every linear of the h3_tiny transformer (attention, MLP, AdaLN, final AdaLN, refiner, embedders and
// heads; ranks 1..8, alphas != rank) written in the four published formats; our reader + merge and our
// unmerged adapters (PEFT's semantics) each give PEFT's forward at rel L2 <= 1e-5; two LoRAs with
// strengths likewise; a file of full-rank .diff / .diff_b deltas likewise.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <map>

#include "models/h3/lora.h"
#include "models/h3/transformer.h"
#include "support/compare.h"
#include "support/golden.h"
#include "support/paths.h"

namespace orochi {
namespace {

using testing::golden_inputs;
using testing::golden_tensor;

std::string lora_dir() { return testing::test_data_dir() + "/h3_lora"; }

struct Golden {
  weights::Checkpoint file;
  h3::H3Weights base;
};

const Golden& golden() {
  static const Golden* g = [] {
    Expected<weights::Checkpoint> file = weights::Checkpoint::open(lora_dir() + "/golden.safetensors");
    EXPECT_TRUE(file.has_value()) << file.status().to_string();
    Expected<h3::H3Weights> base = h3::load_weights(testing::h3_tiny_dir() + "/transformer");
    EXPECT_TRUE(base.has_value()) << base.status().to_string();
    return new Golden{std::move(file).value(), std::move(base).value()};
  }();
  return *g;
}

h3::H3Outputs run(const h3::H3Weights& w) {
  const h3::ModulationTables tables = h3::compute_modulation_tables(w, golden_tensor(golden().file, "in.timestep"));
  Expected<h3::H3Outputs> out = h3::forward(w, golden_inputs(golden().file), tables);
  EXPECT_TRUE(out.has_value()) << out.status().to_string();
  return out ? *out : h3::H3Outputs{};
}

h3::H3Lora read(const std::string& name) {
  Expected<h3::H3Lora> lora = h3::read_lora(lora_dir() + "/" + name, golden().base.config);
  EXPECT_TRUE(lora.has_value()) << name << ": " << lora.status().to_string();
  return lora ? *lora : h3::H3Lora{};
}

enum class Path { kMerged, kUnmerged };

// The base weights with `loras` (file, strength) merged or attached.
h3::H3Weights with_loras(const std::vector<std::pair<h3::H3Lora, float>>& loras, Path path) {
  h3::H3Weights w = golden().base;
  for (const auto& [lora, strength] : loras) {
    const Status s = path == Path::kMerged ? h3::merge_lora(w, lora, strength) : h3::attach_lora(w, lora, strength);
    EXPECT_TRUE(s.is_ok()) << s.to_string();
  }
  return w;
}

void expect_matches(const h3::H3Outputs& out, const std::string& prefix, const std::string& what) {
  SCOPED_TRACE(what);
  ASSERT_TRUE(out.video.defined());
  const Tensor video = golden_tensor(golden().file, prefix + ".video"), audio = golden_tensor(golden().file, prefix + ".audio");
  EXPECT_TENSOR_CLOSE(out.video, video, 1e-5);
  EXPECT_TENSOR_CLOSE(out.audio, audio, 1e-5);
  std::printf("  %-34s video %s\n  %-34s audio %s\n", what.c_str(), testing::compare(out.video, video).summary().c_str(),
              "", testing::compare(out.audio, audio).summary().c_str());
}

TEST(H3LoraGolden, WithoutALoraTheBaseOutputIsDiffusers) {
  expect_matches(run(golden().base), "out.base", "no LoRA");
}

TEST(H3LoraGolden, EveryFormatMergedAndUnmergedEqualsPeft) {
  const std::pair<const char*, h3::LoraFormat> files[] = {
      {"lora_diffusers.safetensors", h3::LoraFormat::kDiffusers},
      {"lora_original.safetensors", h3::LoraFormat::kOriginal},
      {"lora_diffsynth.safetensors", h3::LoraFormat::kDiffSynth},
      {"lora_kohya.safetensors", h3::LoraFormat::kKohya}};
  for (const auto& [name, format] : files) {
    const h3::H3Lora lora = read(name);
    EXPECT_EQ(lora.format, format) << name;
    // 41 PEFT modules: refiner 2 x 6, blocks 3 x 7 (AdaLN included), final AdaLN, embedders, heads.
    std::map<std::string, float> scale;
    for (const h3::LoraDelta& d : lora.deltas) scale[d.param] = d.scale;
    EXPECT_EQ(scale.size(), 41u) << name;
    if (format != h3::LoraFormat::kDiffSynth) {  // DiffSynth's file holds its scales folded into A
      EXPECT_FLOAT_EQ(scale["transformer_blocks.2.adaln_proj.linear.weight"], 1.5f) << name;   // alpha 3 / rank 2
      EXPECT_FLOAT_EQ(scale["transformer_blocks.0.ff.net.0.proj.weight"], 2.0f) << name;      // 6 / 3
      EXPECT_FLOAT_EQ(scale["token_refiner.refiner_blocks.1.attn.to_k.weight"], 0.5f) << name;  // 4 / 8
      EXPECT_FLOAT_EQ(scale["audio_proj_out.weight"], 0.125f) << name;                          // 0.5 / 4
      EXPECT_FLOAT_EQ(scale["norm_out.linear.weight"], 1.0f) << name;                           // 5 / 5
    }
    expect_matches(run(with_loras({{lora, 1.0f}}, Path::kMerged)), "out", std::string(name) + " merged");
    expect_matches(run(with_loras({{lora, 1.0f}}, Path::kUnmerged)), "out", std::string(name) + " unmerged");
  }
}

TEST(H3LoraGolden, TwoLorasWithStrengthsEqualPeftsWeightedAdapters) {
  // make_h3_lora.py's set_adapters(["first", "second"], weights=[0.75, -0.5]); the second file's
  // alpha is its __metadata__ network alpha (3: scale 1.5 at rank 2, 1 on the rank-3 AdaLN).
  const h3::H3Lora first = read("lora_diffusers.safetensors"), second = read("lora_second.safetensors");
  std::map<std::string, float> scale;
  for (const h3::LoraDelta& d : second.deltas) scale[d.param] = d.scale;
  EXPECT_FLOAT_EQ(scale["transformer_blocks.1.attn.to_v.weight"], 1.5f);
  EXPECT_FLOAT_EQ(scale["transformer_blocks.1.adaln_proj.linear.weight"], 1.0f);
  for (const Path path : {Path::kMerged, Path::kUnmerged})
    expect_matches(run(with_loras({{first, 0.75f}, {second, -0.5f}}, path)), "out2",
                   path == Path::kMerged ? "two LoRAs merged" : "two LoRAs unmerged");
  // Mixed: one merged, one attached.
  h3::H3Weights w = golden().base;
  ASSERT_TRUE(h3::merge_lora(w, first, 0.75f).is_ok());
  ASSERT_TRUE(h3::attach_lora(w, second, -0.5f).is_ok());
  expect_matches(run(w), "out2", "first merged, second unmerged");
}

// ComfyUI's full-rank deltas for all 64 parameters (linear weights and biases, norms; fused qkv in
// thirds, fc1 as [gate; value]) at strength 0.6 against diffusers' weights + 0.6 x the deltas as its
// single-file converter renames and unfolds them.
TEST(H3LoraGolden, FullRankDiffsEqualDiffusersWeightsPlusTheDeltas) {
  const h3::H3Lora diff = read("lora_diff.safetensors");
  EXPECT_TRUE(diff.deltas.empty());
  EXPECT_EQ(diff.full.size(), 64u + 2u * 5u);  // each of 5 fused qkv deltas becomes 3
  for (const Path path : {Path::kMerged, Path::kUnmerged})
    expect_matches(run(with_loras({{diff, 0.6f}}, path)), "out3", path == Path::kMerged ? ".diff merged" : ".diff attached");
}

TEST(H3LoraGolden, UnmergedLeavesTheWeightsAndStrengthZeroAddsNothing) {
  const h3::H3Lora lora = read("lora_original.safetensors");
  h3::H3Weights w = with_loras({{lora, 1.0f}}, Path::kUnmerged);
  h3::H3Weights base = golden().base;
  auto a = h3::linear_layers(w), b = h3::linear_layers(base);
  size_t adapters = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    EXPECT_EQ(a[i].second->weight.raw_data(), b[i].second->weight.raw_data()) << a[i].first;
    adapters += a[i].second->adapters.size();
  }
  EXPECT_EQ(adapters, 41u);
  EXPECT_TRUE(with_loras({{lora, 0.0f}}, Path::kUnmerged).blocks[0].attn.to_q.adapters.empty());
  EXPECT_FALSE(h3::attach_lora(w, lora, std::nanf("")).is_ok());
}

}  // namespace
}  // namespace orochi
