// The text-encoder phase as the runtime runs it: on GPU 0 alone under every layout, with its own
// tier policy, and what the GPU streamers take from a plan (streamed_groups and its wrappers).
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <utility>
#include <vector>

#include "planner/plan_memory.h"
#include "planner/text_encoder_memory.h"
#include "support/planner_inputs.h"

namespace orochi::planner {
namespace {

PlanInput base(double vram_gib, int gpus = 1, const char* layout = "none") {
  return testing::h3_plan_input(vram_gib, gpus, layout);
}
MemoryPlan plan_of(const PlanInput& in) { return testing::plan_or_fail(in); }

int count_tier(const PhasePlan& phase, Tier tier, const std::string& prefix) {
  int n = 0;
  for (const WeightGroup& g : phase.groups) n += g.tier == tier && g.name.starts_with(prefix);
  return n;
}

bool has_note(const PhasePlan& phase, const std::string& text) {
  for (const std::string& note : phase.notes)
    if (note.find(text) != std::string::npos) return true;
  return false;
}

// Keyframes and references reach the conditioner through the vision tower: its weights (595.3 M
// parameters in the release, REF2VA.md §9) and its patches' activations are in the text phase.
TEST(PlannerTextEncoder, CountsTheVisionTowerAndItsPatches) {
  EXPECT_NEAR(static_cast<double>(vision_tower_parameters(qwen3vl::VisionConfig::qwen3vl_32b())) / 1e6, 595.3, 0.5);
  PlanInput in = base(139);
  in.request.text_rows = 35924;  // REF2VA.md §6: 4 images at 2048 + a 5 s video, as presented
  const MemoryPlan text_only = plan_of(in);
  in.request.vision_patches = 4 * 7296 * 4 + 6 * 1008 * 4;  // the images' and the video blocks' merged tokens x 4
  const MemoryPlan with_vision = plan_of(in);
  const PhasePlan& a = text_only.phases[0];
  const PhasePlan& b = with_vision.phases[0];
  EXPECT_EQ(count_tier(a, Tier::kResident, "vision tower"), 0);
  EXPECT_EQ(count_tier(b, Tier::kResident, "vision tower"), 1);
  const uint64_t tower_bytes = 2 * static_cast<uint64_t>(vision_tower_parameters(in.models.vision));
  EXPECT_GT(b.gpus[0].total(), a.gpus[0].total() + tower_bytes);  // weights, and the patches' activations
  EXPECT_NE(b.about.find("vision tower over"), std::string::npos) << b.about;
  // The denoiser and decode phases do not change.
  EXPECT_EQ(with_vision.phases[1].gpus[0].total(), text_only.phases[1].gpus[0].total());
}

TEST(PlannerTextEncoder, RunsWholeOnGpuZeroUnderEveryLayout) {
  const MemoryPlan one = plan_of(base(139));
  const PhasePlan& alone = one.phases[0];
  ASSERT_EQ(alone.name, "text encoder");
  EXPECT_EQ(alone.layout, "one GPU");
  EXPECT_FALSE(has_note(alone, "other GPUs wait"));  // there are none
  const std::vector<std::pair<int, std::string>> layouts = {
      {2, "tp2"}, {2, "sp2"}, {4, "tp2xsp2"}, {4, "tp4"}, {4, "sp4"}};
  for (const auto& [gpus, layout] : layouts) {
    const MemoryPlan plan = plan_of(base(139, gpus, layout.c_str()));
    const PhasePlan& te = plan.phases[0];
    EXPECT_EQ(te.layout, "one GPU") << layout;
    EXPECT_EQ(plan.phases[1].layout, layout);  // the denoiser keeps the request's layout
    ASSERT_EQ(te.gpus.size(), static_cast<size_t>(gpus)) << layout;
    EXPECT_EQ(te.gpus[0].role, "compute") << layout;
    for (int g = 1; g < gpus; ++g) EXPECT_EQ(te.gpus[static_cast<size_t>(g)].role, "idle") << layout;
    // Not split: GPU 0 holds what a single GPU holds, with no collective buffers.
    EXPECT_EQ(te.gpus[0].total(), alone.gpus[0].total()) << layout;
    EXPECT_EQ(te.gpus[0].pool_bytes(PoolKind::kComm), 0u) << layout;
    EXPECT_TRUE(has_note(te, "runs on GPU 0")) << layout;
    EXPECT_TRUE(has_note(te, "the other GPUs wait in this phase")) << layout;
  }
}

TEST(PlannerTextEncoder, OtherGpusStoreItsLayersWhenPeerIsAllowed) {
  const MemoryPlan plan = plan_of(base(24, 2, "tp2"));  // tiers resident, peer, host
  const PhasePlan& te = plan.phases[0];
  EXPECT_TRUE(plan.fits) << plan.tightest;
  ASSERT_EQ(te.gpus.size(), 2u);
  EXPECT_EQ(te.gpus[1].role, "store");
  EXPECT_GT(count_tier(te, Tier::kPeer, "layer "), 0);
  for (const WeightGroup& g : te.groups)
    if (g.tier == Tier::kPeer) {
      EXPECT_EQ(g.peer_gpu, 1) << g.name;
    }
  // The runtime streams the text encoder from host RAM only: a peer layer is refused, with why.
  Expected<std::vector<bool>> layers = streamed_text_encoder_layers(plan);
  ASSERT_FALSE(layers.has_value());
  EXPECT_EQ(layers.status().code(), ErrorCode::kUnsupported);
  EXPECT_NE(layers.status().message().find("the text encoder streams from pinned host RAM only"), std::string::npos)
      << layers.status().message();
  EXPECT_NE(layers.status().message().find("on GPU 1"), std::string::npos) << layers.status().message();
}

// generate on several GPUs: the denoiser's weights are split (no streaming), while the text
// encoder, alone on GPU 0, streams what does not fit from host RAM.
TEST(PlannerTextEncoder, ItsOwnTiersLetItStreamWhileTheDenoiserSplits) {
  PlanInput in = base(24, 2, "tp2");
  in.tiers.peer = in.tiers.host = false;
  const MemoryPlan shared = plan_of(in);  // without its own tiers the text encoder takes `tiers`
  EXPECT_EQ(count_tier(shared.phases[0], Tier::kHost, "layer "), 0);
  EXPECT_FALSE(shared.fits);
  EXPECT_EQ(shared.tightest, "GPU 0, text encoder phase");

  in.text_encoder_tiers = TierPolicy{false, true, 3};
  const MemoryPlan plan = plan_of(in);
  EXPECT_TRUE(plan.fits) << plan.tightest;
  const PhasePlan& te = plan.phases[0];
  const PhasePlan& denoiser = plan.phases[1];
  const int host_layers = count_tier(te, Tier::kHost, "layer ");
  EXPECT_GT(host_layers, 25);  // most of the 45 GiB does not fit 24 GiB
  EXPECT_EQ(count_tier(te, Tier::kPeer, ""), 0);
  EXPECT_EQ(te.gpus[1].role, "idle");
  EXPECT_EQ(count_tier(denoiser, Tier::kHost, ""), 0);
  EXPECT_EQ(count_tier(denoiser, Tier::kPeer, ""), 0);
  EXPECT_EQ(denoiser.gpus[0].pool_bytes(PoolKind::kWeights), shared.phases[1].gpus[0].pool_bytes(PoolKind::kWeights));
  for (const Pool& p : te.gpus[0].pools)  // its own K slots
    if (p.kind == PoolKind::kStaging) {
      ASSERT_EQ(p.items.size(), 1u);
      EXPECT_NE(p.items[0].name.find("3 slots"), std::string::npos) << p.items[0].name;
    }
  EXPECT_GT(te.gpus[0].pool_bytes(PoolKind::kStaging), 0u);

  Expected<std::vector<bool>> layers = streamed_text_encoder_layers(plan);
  ASSERT_TRUE(layers.has_value()) << layers.status().to_string();
  ASSERT_EQ(layers->size(), 50u);
  EXPECT_EQ(std::count(layers->begin(), layers->end(), true), host_layers);
  EXPECT_FALSE(layers->front());
  EXPECT_TRUE(layers->back());
  Expected<std::vector<bool>> blocks = streamed_denoiser_blocks(plan, 50);
  ASSERT_TRUE(blocks.has_value()) << blocks.status().to_string();
  EXPECT_EQ(std::count(blocks->begin(), blocks->end(), true), 0);
}

TEST(PlannerTextEncoder, WithoutAPromptThereAreNoLayersToStream) {
  PlanInput in = base(24);
  in.models.text_layers = 0;
  Expected<std::vector<bool>> layers = streamed_text_encoder_layers(plan_of(in));
  ASSERT_TRUE(layers.has_value()) << layers.status().to_string();
  EXPECT_TRUE(layers->empty());
}

TEST(PlannerStreamedGroups, RefusesWhatTheRuntimeCannotStream) {
  const MemoryPlan plan = plan_of(base(24));
  Expected<std::vector<bool>> all = streamed_groups(plan, "denoiser", "block ", 50);
  ASSERT_TRUE(all.has_value()) << all.status().to_string();
  // An index past the count is the caller's or the planner's bug, not the user's.
  Expected<std::vector<bool>> short_count = streamed_groups(plan, "denoiser", "block ", 10);
  ASSERT_FALSE(short_count.has_value());
  EXPECT_EQ(short_count.status().code(), ErrorCode::kInternal);
  Expected<std::vector<bool>> no_phase = streamed_groups(plan, "upsampler", "block ", 10);
  ASSERT_FALSE(no_phase.has_value());
  EXPECT_EQ(no_phase.status().code(), ErrorCode::kInternal);
  // A streamed group of another name than the stem: the runtime streams only the numbered ones.
  Expected<std::vector<bool>> other_stem = streamed_groups(plan, "denoiser", "layer ", 50);
  ASSERT_FALSE(other_stem.has_value());
  EXPECT_EQ(other_stem.status().code(), ErrorCode::kUnsupported);
  EXPECT_NE(other_stem.status().message().find("of the denoiser phase"), std::string::npos)
      << other_stem.status().message();

  // The decoders do not stream at run time: a plan that streams one of their groups is refused
  // before any weight is read (the planner keeps them resident; this guards the runtime).
  MemoryPlan decode_streams = plan;
  ASSERT_EQ(decode_streams.phases[2].name, "decode");
  decode_streams.phases[2].groups.at(0).tier = Tier::kHost;
  Expected<std::vector<bool>> refused = streamed_denoiser_blocks(decode_streams, 50);
  ASSERT_FALSE(refused.has_value());
  EXPECT_EQ(refused.status().code(), ErrorCode::kUnsupported);
  EXPECT_NE(refused.status().message().find("decode phase"), std::string::npos) << refused.status().message();
  // So is a denoiser group other than a block (the embedders, say).
  MemoryPlan embedders_stream = plan;
  embedders_stream.phases[1].groups.at(0).tier = Tier::kHost;
  Expected<std::vector<bool>> embedders = streamed_denoiser_blocks(embedders_stream, 50);
  ASSERT_FALSE(embedders.has_value());
  EXPECT_EQ(embedders.status().code(), ErrorCode::kUnsupported);
  EXPECT_NE(embedders.status().message().find(embedders_stream.phases[1].groups[0].name), std::string::npos);
}

}  // namespace
}  // namespace orochi::planner
