// The H3 denoiser against diffusers' forward on the tiny config (fp32): every named intermediate
// (time embedding, RoPE, refiner blocks, each block's AdaLN table and output, norm_out, both heads)
// within relative L2 1e-5 and with identical NaN positions.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <map>
#include <set>

#include "models/h3/transformer.h"
#include "support/compare.h"
#include "support/golden.h"

namespace orochi {
namespace {

using testing::golden_inputs;
using testing::golden_tensor;
using testing::h3_tiny_dir;

struct ModelRun {
  std::map<std::string, Tensor> seen;
  h3::H3Outputs out;
};

ModelRun run_model(const std::string& folder, const weights::Checkpoint& golden) {
  Expected<h3::H3Weights> w = h3::load_weights(folder);
  EXPECT_TRUE(w.has_value()) << w.status().to_string();
  if (!w) return {};
  ModelRun run;
  auto observer = [&](const std::string& name, const Tensor& t) { run.seen[name] = t.clone(); };
  const h3::ModulationTables tables =
      h3::compute_modulation_tables(*w, golden_tensor(golden, "in.timestep"), observer);
  Expected<h3::H3Outputs> out = h3::forward(*w, golden_inputs(golden), tables, observer);
  EXPECT_TRUE(out.has_value()) << out.status().to_string();
  if (out) run.out = *out;
  return run;
}

TEST(H3Golden, EveryIntermediateMatchesDiffusers) {
  Expected<weights::Checkpoint> golden = weights::Checkpoint::open(h3_tiny_dir() + "/golden.safetensors");
  ASSERT_TRUE(golden.has_value()) << golden.status().to_string();
  const ModelRun run = run_model(h3_tiny_dir() + "/transformer", *golden);
  int compared = 0;
  std::set<std::string> expected_names;
  for (const std::string& name : golden->names()) {
    if (name.rfind("in.", 0) == 0) continue;
    expected_names.insert(name);
    auto it = run.seen.find(name);
    ASSERT_NE(it, run.seen.end()) << "the forward never produced " << name;
    const Tensor expected = golden_tensor(*golden, name);
    SCOPED_TRACE(name);
    EXPECT_TENSOR_CLOSE(it->second, expected, 1e-5);
    std::printf("  %-22s %s\n", name.c_str(), testing::compare(it->second, expected).summary().c_str());
    ++compared;
  }
  // 3 blocks + 3 tables, 2 refiner blocks, temb, rope x2, text_embeds, packed, norm_out, 2 heads.
  EXPECT_EQ(compared, 16);
  // The outputs returned equal the observed ones.
  EXPECT_TENSOR_CLOSE(run.out.video, golden_tensor(*golden, "out.video"), 1e-5);
  EXPECT_TENSOR_CLOSE(run.out.audio, golden_tensor(*golden, "out.audio"), 1e-5);
}

TEST(H3Golden, OriginalReleaseNamesGiveIdenticalOutputs) {
  // Same weights stored with the release's names: fused per-head-interleaved qkv, [gate; value]
  // fc1, final_layer.*, under a ComfyUI "model.diffusion_model." prefix, plus rope.inv_freq.
  Expected<weights::Checkpoint> golden = weights::Checkpoint::open(h3_tiny_dir() + "/golden.safetensors");
  ASSERT_TRUE(golden.has_value());
  const ModelRun diffusers = run_model(h3_tiny_dir() + "/transformer", *golden);
  const ModelRun original = run_model(h3_tiny_dir() + "/transformer_original", *golden);
  ASSERT_TRUE(original.out.video.defined());
  EXPECT_TENSOR_CLOSE(original.out.video, diffusers.out.video, 0.0);
  EXPECT_TENSOR_CLOSE(original.out.audio, diffusers.out.audio, 0.0);
}

TEST(H3Golden, NanInputPropagatesLikeTheReference) {
  // A NaN in one video row reaches every row through attention; the reference then yields NaN
  // everywhere. We must not hide it (no silent wrong video).
  Expected<weights::Checkpoint> golden = weights::Checkpoint::open(h3_tiny_dir() + "/golden.safetensors");
  ASSERT_TRUE(golden.has_value());
  Expected<h3::H3Weights> w = h3::load_weights(h3_tiny_dir() + "/transformer");
  ASSERT_TRUE(w.has_value());
  h3::H3Inputs in = golden_inputs(*golden);
  in.video.data<float>()[3] = NAN;
  const auto tables = h3::compute_modulation_tables(*w, golden_tensor(*golden, "in.timestep"));
  Expected<h3::H3Outputs> out = h3::forward(*w, in, tables);
  ASSERT_TRUE(out.has_value());
  EXPECT_TRUE(std::isnan(out->audio.data<float>()[0]));
}

}  // namespace
}  // namespace orochi
