// Weight tiers under a VRAM cap, parallel layouts, the capacity table, and the refusals a user sees.
#include <gtest/gtest.h>

#include <algorithm>

#include "planner/h3_denoiser_memory.h"
#include "planner/plan_memory.h"
#include "planner/tier_placement.h"
#include "support/planner_inputs.h"

namespace orochi::planner {
namespace {

PlanInput base(double vram_gib, int gpus = 1, const char* layout = "none") {
  return testing::h3_plan_input(vram_gib, gpus, layout);
}
MemoryPlan plan_of(const PlanInput& in) { return testing::plan_or_fail(in); }

int count_tier(const PhasePlan& phase, Tier tier, const std::string& prefix = "block ") {
  int n = 0;
  for (const WeightGroup& g : phase.groups) n += g.tier == tier && g.name.rfind(prefix, 0) == 0;
  return n;
}

TEST(PlannerPlacement, FirstGroupsStayAndTheRestStreamInOrder) {
  std::vector<WeightGroup> groups = {{"embedders", 10, false}, {"block 0", 100}, {"block 1", 100},
                                     {"block 2", 100},         {"block 3", 100}, {"adaln", 500, false, Tier::kStreamedOnce}};
  PlacementInput in;
  in.cap = 480;  // 90 + 410 of weights does not fit
  in.other_pools = 90;
  in.policy.staging_slots = 2;
  const Placement p = place_weights(groups, in);  // budget 480 - 90 - 200 staging - 10 = 180
  EXPECT_EQ(p.staging, 200u);
  EXPECT_EQ(p.groups[0].tier, Tier::kResident);
  EXPECT_EQ(p.groups[1].tier, Tier::kResident);
  EXPECT_EQ(p.groups[2].tier, Tier::kHost);
  EXPECT_EQ(p.groups[4].tier, Tier::kHost);
  EXPECT_EQ(p.groups[5].tier, Tier::kStreamedOnce);
  EXPECT_EQ(p.resident, 110u);
  EXPECT_EQ(p.host, 300u);
  // A store GPU with room takes what the budget cannot; the host gets the rest.
  in.stores = {{1, 150}};
  const Placement peer = place_weights(groups, in);
  EXPECT_EQ(peer.groups[2].tier, Tier::kPeer);
  EXPECT_EQ(peer.groups[2].peer_gpu, 1);
  EXPECT_EQ(peer.groups[3].tier, Tier::kHost);
  EXPECT_EQ(peer.stored[0], 100u);
  in.stores.clear();
  // Everything fits: no staging, all resident.
  in.cap = 1000;
  const Placement all = place_weights(groups, in);
  EXPECT_EQ(all.staging, 0u);
  EXPECT_EQ(all.resident, 410u);
  // No tier but resident allowed: the overflow stays resident (a shortfall, not a silent stream).
  in.cap = 300;
  in.policy.peer = in.policy.host = false;
  const Placement none = place_weights(groups, in);
  EXPECT_EQ(none.resident, 410u);
  EXPECT_EQ(none.host + none.peer + none.staging, 0u);
}

TEST(PlannerTiers, A24GiBGpuStreamsMostBlocksFromHostAndKeepsActivations) {
  const MemoryPlan roomy = plan_of(base(139));
  const MemoryPlan capped = plan_of(base(24));
  ASSERT_EQ(capped.phases.size(), 3u);
  const PhasePlan& d = capped.phases[1];
  EXPECT_TRUE(capped.fits) << capped.tightest;
  EXPECT_GT(count_tier(d, Tier::kHost), 25);  // most of the 50 blocks
  EXPECT_GT(count_tier(d, Tier::kResident), 0);
  EXPECT_EQ(count_tier(d, Tier::kResident, "embedders"), 1);
  EXPECT_GT(d.gpus[0].pool_bytes(PoolKind::kStaging), 0u);
  EXPECT_EQ(d.gpus[0].pool_bytes(PoolKind::kActivations), roomy.phases[1].gpus[0].pool_bytes(PoolKind::kActivations));
  EXPECT_LE(d.gpus[0].total(), from_gib(24));
  EXPECT_GT(d.host_read_bytes, 0u);
  EXPECT_GT(capped.step_stream_s, 0.0);
  // The text encoder streams as well; the decoders stay resident.
  EXPECT_GT(count_tier(capped.phases[0], Tier::kHost, "layer "), 25);
  EXPECT_EQ(count_tier(capped.phases[2], Tier::kHost, ""), 0);
}

TEST(PlannerTiers, TheRunTakesTheDenoiserBlocksThePlanStreams) {
  PlanInput in = base(24);
  in.models.text_layers = 0;  // features given: no text-encoder phase to stream
  const MemoryPlan capped = plan_of(in);
  Expected<std::vector<bool>> streamed = streamed_denoiser_blocks(capped, in.models.transformer.num_layers);
  ASSERT_TRUE(streamed.has_value()) << streamed.status().to_string();
  ASSERT_EQ(streamed->size(), 50u);
  const int count = static_cast<int>(std::count(streamed->begin(), streamed->end(), true));
  EXPECT_EQ(count, count_tier(capped.phases[1], Tier::kHost));
  EXPECT_FALSE(streamed->front());  // the first blocks stay, the last stream
  EXPECT_TRUE(streamed->back());
  const MemoryPlan roomy = plan_of(base(139));
  Expected<std::vector<bool>> none = streamed_denoiser_blocks(roomy, 50);
  ASSERT_TRUE(none.has_value());
  EXPECT_EQ(std::count(none->begin(), none->end(), true), 0);
  // With a prompt the text encoder streams too: the denoiser's blocks are the same question, and
  // the text encoder's layers come from their own phase (the first stay, the last stream).
  const MemoryPlan prompted = plan_of(base(24));
  Expected<std::vector<bool>> with_prompt = streamed_denoiser_blocks(prompted, 50);
  ASSERT_TRUE(with_prompt.has_value()) << with_prompt.status().to_string();
  EXPECT_EQ(std::count(with_prompt->begin(), with_prompt->end(), true), count_tier(prompted.phases[1], Tier::kHost));
  Expected<std::vector<bool>> layers = streamed_text_encoder_layers(prompted);
  ASSERT_TRUE(layers.has_value()) << layers.status().to_string();
  ASSERT_EQ(layers->size(), static_cast<size_t>(prompted.input.models.text_layers));
  const int streamed_layers = static_cast<int>(std::count(layers->begin(), layers->end(), true));
  EXPECT_GT(streamed_layers, 0);
  EXPECT_EQ(streamed_layers, count_tier(prompted.phases[0], Tier::kHost, "layer "));
  EXPECT_FALSE(layers->front());
  EXPECT_TRUE(layers->back());
}

TEST(PlannerTiers, ASecondGpuStoresWeightsForTheFirst) {
  const MemoryPlan plan = plan_of(base(24, 2));
  const PhasePlan& d = plan.phases[1];
  ASSERT_EQ(d.gpus.size(), 2u);
  EXPECT_EQ(d.gpus[1].role, "store");
  EXPECT_GT(count_tier(d, Tier::kPeer), 0);
  for (const WeightGroup& g : d.groups)
    if (g.tier == Tier::kPeer) {
      EXPECT_EQ(g.peer_gpu, 1);
    }
  uint64_t peer = 0;
  for (const WeightGroup& g : d.groups) peer += g.tier == Tier::kPeer ? g.bytes : 0;
  EXPECT_EQ(d.gpus[1].pool_bytes(PoolKind::kWeights), peer);
  EXPECT_LE(d.gpus[1].total(), from_gib(24));
  // With peer copies disallowed, the same blocks go to the host instead.
  PlanInput no_peer = base(24, 2);
  no_peer.tiers.peer = false;
  EXPECT_EQ(count_tier(plan_of(no_peer).phases[1], Tier::kPeer), 0);
}

TEST(PlannerLayouts, TensorParallelHalvesBlockWeightsSequenceParallelSplitsRows) {
  const h3::H3Config c;
  const auto none = h3_weight_groups(c, ParallelLayout{});
  const auto tp2 = h3_weight_groups(c, *parse_parallel_layout("tp2"));
  ASSERT_EQ(none.size(), tp2.size());
  for (size_t i = 0; i < none.size(); ++i) {
    if (none[i].name.rfind("block ", 0) != 0) continue;
    EXPECT_NEAR(static_cast<double>(tp2[i].bytes), none[i].bytes / 2.0, none[i].bytes * 1e-4) << none[i].name;
  }
  const MemoryPlan one = plan_of(base(139)), sp2 = plan_of(base(139, 2, "sp2")), t2 = plan_of(base(139, 2, "tp2"));
  const auto act = [](const MemoryPlan& p) { return static_cast<double>(p.phases[1].gpus[0].pool_bytes(PoolKind::kActivations)); };
  EXPECT_NEAR(act(sp2), act(one) / 2, act(one) * 0.01);
  EXPECT_LT(act(t2), act(one));
  EXPECT_GT(t2.phases[1].gpus[0].pool_bytes(PoolKind::kComm), 0u);
  EXPECT_GT(sp2.phases[1].gpus[0].pool_bytes(PoolKind::kComm), 0u);
  EXPECT_EQ(sp2.phases[1].gpus[0].pool_bytes(PoolKind::kWeights), one.phases[1].gpus[0].pool_bytes(PoolKind::kWeights));
}

TEST(PlannerLayouts, TensorTimesSequenceParallelSplitsWeightsByTpAndRowsBySp) {
  const MemoryPlan t2 = plan_of(base(139, 2, "tp2")), both = plan_of(base(139, 4, "tp2xsp2"));
  const auto pool = [](const MemoryPlan& p, PoolKind k) { return static_cast<double>(p.phases[1].gpus[0].pool_bytes(k)); };
  EXPECT_EQ(both.phases[1].layout, "tp2xsp2");
  EXPECT_EQ(both.phases[1].gpus.size(), 4u);
  EXPECT_EQ(pool(both, PoolKind::kWeights), pool(t2, PoolKind::kWeights));  // TP's share of the weights
  EXPECT_NEAR(pool(both, PoolKind::kActivations), pool(t2, PoolKind::kActivations) / 2,
              pool(t2, PoolKind::kActivations) * 0.01);  // SP's share of the rows
  Expected<ParallelLayout> parsed = parse_parallel_layout("tp 4 x sp 2");
  ASSERT_TRUE(parsed.has_value()) << parsed.status().to_string();
  EXPECT_EQ(parsed->tp(), 4);
  EXPECT_EQ(parsed->sp(), 2);
  EXPECT_EQ(parsed->degree, 8);
  EXPECT_EQ(parse_parallel_layout("tp1xsp4")->name(), "sp4");
  EXPECT_FALSE(parse_parallel_layout("tp2xsp").has_value());
  PlanInput bad = base(139, 6, "tp2xsp3");  // 28 heads per TP rank do not split over 3
  Expected<MemoryPlan> refused = plan_memory(bad);
  ASSERT_FALSE(refused.has_value());
  EXPECT_NE(refused.status().message().find("use one of: 1, 2, 4, 7, 14, 28"), std::string::npos)
      << refused.status().message();
}

TEST(PlannerCapacity, MoreGpusBehaveLikeOneLargerGpu) {
  const MemoryPlan plan = plan_of(base(32, 4));
  ASSERT_FALSE(plan.capacity.empty());
  EXPECT_EQ(plan.capacity[0].gpus, 1);
  EXPECT_EQ(plan.capacity[0].equivalent, static_cast<int64_t>(from_gib(32)));
  for (const CapacityRow& r : plan.capacity) {
    EXPECT_EQ(r.equivalent, static_cast<int64_t>(r.gpus * from_gib(32)) - static_cast<int64_t>(r.overhead));
    // Fits the N GPUs exactly when the single-GPU need fits the equivalent GPU.
    EXPECT_EQ(r.per_gpu <= from_gib(32), static_cast<int64_t>(plan.capacity[0].per_gpu) <= r.equivalent) << r.layout;
    // Tensor parallelism shards the denoiser, the fullest phase the rows count.
    if (r.layout.rfind("tp", 0) == 0) {
      EXPECT_LT(r.per_gpu, plan.capacity[0].per_gpu) << r.layout;
    }
  }
  // The text encoder (45 GiB, on GPU 0 alone in every layout) is not what the rows measure: the
  // same request without a prompt has the same table.
  PlanInput features = base(32, 4);
  features.models.text_layers = 0;
  const MemoryPlan denoiser_only = plan_of(features);
  ASSERT_EQ(denoiser_only.capacity.size(), plan.capacity.size());
  for (size_t i = 0; i < plan.capacity.size(); ++i)
    EXPECT_EQ(denoiser_only.capacity[i].per_gpu, plan.capacity[i].per_gpu) << plan.capacity[i].layout;
  EXPECT_EQ(plan.capacity.size(), 1u + 2 + 2);  // none; tp and sp for 2 and 4 (3 does not divide 56 heads)
}

TEST(PlannerRefusal, TheMessageNamesTheShortfallAndTheFixes) {
  PlanInput in = base(24);
  in.tiers.peer = in.tiers.host = false;
  const MemoryPlan plan = plan_of(in);
  ASSERT_FALSE(plan.fits);
  EXPECT_GT(plan.shortfall, from_gib(13));  // 37 GiB of weights alone
  const Status s = check_fits(plan);
  ASSERT_FALSE(s.is_ok());
  EXPECT_EQ(s.code(), ErrorCode::kInvalidArgument);
  char shortfall[32];
  std::snprintf(shortfall, sizeof shortfall, "%.2f GiB short", to_gib(plan.shortfall));
  EXPECT_NE(s.message().find(shortfall), std::string::npos) << s.message();
  EXPECT_NE(s.message().find("has 24.00 GiB"), std::string::npos) << s.message();
  EXPECT_NE(s.message().find(plan.tightest.substr(plan.tightest.find(", ") + 2)), std::string::npos) << s.message();
  EXPECT_NE(s.message().find("--tiers resident,peer,host"), std::string::npos) << s.message();
  // More GPUs cannot help while the 45 GiB text encoder must sit whole on GPU 0; without a prompt
  // they can.
  EXPECT_EQ(s.message().find("--parallel"), std::string::npos) << s.message();
  in.models.text_layers = 0;
  const Status features = check_fits(plan_of(in));
  ASSERT_FALSE(features.is_ok());
  EXPECT_NE(features.message().find("--parallel"), std::string::npos) << features.message();
  EXPECT_TRUE(check_fits(plan_of(base(139))).is_ok());
}

TEST(PlannerErrors, BadInputIsRefusedWithAdvice) {
  PlanInput in = base(139);
  in.request.frames = 100;
  Expected<MemoryPlan> p = plan_memory(in);
  ASSERT_FALSE(p.has_value());
  EXPECT_NE(p.status().message().find("90 and 107"), std::string::npos) << p.status().message();
  in = base(139, 4, "sp3");
  p = plan_memory(in);
  ASSERT_FALSE(p.has_value());
  EXPECT_NE(p.status().message().find("56 attention heads"), std::string::npos) << p.status().message();
  in = base(139, 2, "tp4");
  p = plan_memory(in);
  ASSERT_FALSE(p.has_value());
  EXPECT_NE(p.status().message().find("--gpus 4"), std::string::npos) << p.status().message();
  in = base(0);
  EXPECT_FALSE(plan_memory(in).has_value());
  EXPECT_FALSE(request_for_resolution("720").has_value());
  EXPECT_FALSE(parse_parallel_layout("pp2").has_value());
  EXPECT_EQ(parse_parallel_layout("tp 2")->degree, 2);
  Expected<ModelConfigs> m = load_model_configs("/nonexistent/folder");
  ASSERT_FALSE(m.has_value());
  EXPECT_EQ(m.status().code(), ErrorCode::kNotFound);
}

}  // namespace
}  // namespace orochi::planner
