// --parallel's choice for --gpus N: forced layouts checked against the heads, and auto picking
// sequence parallel when the whole model fits on each GPU, else the least tensor parallel that fits;
// then, by the step-time estimate at the link's speed, that layout or one GPU streaming from host.
#include <gtest/gtest.h>

#include "planner/parallel_choice.h"
#include "planner/plan_request.h"

namespace orochi {
namespace {

using planner::choose_parallel;

bool contains(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

TEST(ParallelOption, AutoPrefersSequenceParallelWhenTheModelFits) {
  const h3::H3Config c;  // 56 heads
  auto d = choose_parallel("auto", c, 2, 139.0, 37.4, 7.5);
  ASSERT_TRUE(d.has_value()) << d.status().to_string();
  EXPECT_EQ(d->tp, 1);
  EXPECT_EQ(d->sp, 2);
  EXPECT_TRUE(contains(d->why, "sequence parallel")) << d->why;
}

TEST(ParallelOption, AutoSplitsTheWeightsWhenTheyDoNotFit) {
  const h3::H3Config c;
  // 60 GiB of weights on 40 GiB GPUs: TP 2 needs 30 + 7.5/8, sp over the remaining 4.
  auto d = choose_parallel("auto", c, 8, 40.0, 60.0, 7.5);
  ASSERT_TRUE(d.has_value()) << d.status().to_string();
  EXPECT_EQ(d->tp, 2);
  EXPECT_EQ(d->sp, 4);
  auto none = choose_parallel("auto", c, 2, 10.0, 60.0, 7.5);
  ASSERT_FALSE(none.has_value());
  EXPECT_TRUE(contains(none.status().message(), "no layout of 2 GPUs fits")) << none.status().message();
}

TEST(ParallelOption, ForcedLayoutsAreCheckedAgainstTheHeads) {
  const h3::H3Config c;  // 56 = 2^3 x 7 heads
  auto tp = choose_parallel("tp7", c, 7, 139.0, 37.4, 7.5);
  ASSERT_TRUE(tp.has_value());
  EXPECT_EQ(tp->tp, 7);
  auto bad = choose_parallel("tp3", c, 3, 139.0, 37.4, 7.5);
  ASSERT_FALSE(bad.has_value());
  EXPECT_TRUE(contains(bad.status().message(), "1, 2, 4, 7, 8, 14, 28, 56")) << bad.status().message();
  auto both = choose_parallel("tp2xsp2", c, 4, 139.0, 37.4, 7.5);
  ASSERT_TRUE(both.has_value());
  EXPECT_EQ(both->tp, 2);
  EXPECT_EQ(both->sp, 2);
  EXPECT_FALSE(choose_parallel("tp2xsp2", c, 3, 139.0, 37.4, 7.5).has_value());  // 4 GPUs for 3
  for (const char* old_word : {"tp", "sp", "tpxsp"}) {  // the old vocabulary is refused with the new one named
    auto refused = choose_parallel(old_word, c, 2, 139.0, 37.4, 7.5);
    ASSERT_FALSE(refused.has_value()) << old_word;
    EXPECT_TRUE(contains(refused.status().message(), "auto, none, tpN")) << refused.status().message();
  }
  auto smaller = choose_parallel("sp2", c, 4, 139.0, 37.4, 7.5);  // a layout may use fewer GPUs than given
  ASSERT_TRUE(smaller.has_value());
  EXPECT_EQ(smaller->sp, 2);
  EXPECT_FALSE(choose_parallel("ring", c, 2, 139.0, 37.4, 7.5).has_value());
  auto one = choose_parallel("none", c, 1, 139.0, 37.4, 7.5);
  ASSERT_TRUE(one.has_value());
  EXPECT_EQ(one->tp * one->sp, 1);
}

// The generate case at 1344x768 without a prompt: the denoiser alone, weights streamed only when
// one GPU is all there is. `gbps` is the GPU link, as generate measures it.
planner::PlanInput request_on(int gpus, double vram_gib, double gbps) {
  planner::PlanInput in;
  in.models = *planner::load_model_configs("h3");
  in.models.text_layers = 0;
  in.gpus.count = gpus;
  in.gpus.vram_bytes = static_cast<uint64_t>(vram_gib * double(1 << 30));
  in.gpus.peer_gbps = gbps;
  in.tiers.peer = false;
  in.tiers.host = gpus == 1;
  return in;
}

TEST(ParallelOption, AutoWeighsTheLayoutAgainstOneGpuAtTheLinksSpeed) {
  // Two H200s over NVLink: SP2, its step about half of one GPU's.
  Expected<planner::LayoutPlan> nvlink = planner::plan_for_gpus(request_on(2, 139, 300), "auto");
  ASSERT_TRUE(nvlink.has_value()) << nvlink.status().to_string();
  EXPECT_EQ(nvlink->degrees.sp, 2);
  EXPECT_TRUE(contains(nvlink->degrees.why, "per step over a 300 GB/s link")) << nvlink->degrees.why;
  const double sp2 = planner::estimate_step(nvlink->plan, nvlink->degrees).total();
  const planner::StepEstimate one = planner::estimate_step(nvlink->plan, planner::ParallelDegrees{});
  EXPECT_NEAR(sp2, one.compute_s / 2, one.compute_s * 0.01);  // the exchanges hide under compute

  // Two 24 GiB GPUs: the weights need TP2, whose all_reduces cross the link.
  Expected<planner::LayoutPlan> fast = planner::plan_for_gpus(request_on(2, 24, 300), "auto");
  ASSERT_TRUE(fast.has_value()) << fast.status().to_string();
  EXPECT_EQ(fast->degrees.tp, 2) << fast->degrees.why;
  const planner::StepEstimate tp2 = planner::estimate_step(fast->plan, fast->degrees);
  EXPECT_GT(tp2.exposed_comm_s, 0.0);
  EXPECT_EQ(tp2.stream_s, 0.0);
  // Over a 2 GB/s link TP2 loses to one GPU streaming from host RAM; the plan says so and streams.
  Expected<planner::LayoutPlan> slow = planner::plan_for_gpus(request_on(2, 24, 2), "auto");
  ASSERT_TRUE(slow.has_value()) << slow.status().to_string();
  EXPECT_EQ(slow->degrees.tp * slow->degrees.sp, 1) << slow->degrees.why;
  EXPECT_TRUE(contains(slow->degrees.why, "one GPU (1 idle)")) << slow->degrees.why;
  EXPECT_TRUE(contains(slow->degrees.why, "streaming from host RAM")) << slow->degrees.why;
  EXPECT_TRUE(slow->plan.fits);
  EXPECT_GT(planner::estimate_step(slow->plan, slow->degrees).stream_s, 0.0);
  // A forced layout is taken as asked, whatever the link.
  Expected<planner::LayoutPlan> forced = planner::plan_for_gpus(request_on(2, 24, 2), "tp2");
  ASSERT_TRUE(forced.has_value()) << forced.status().to_string();
  EXPECT_EQ(forced->degrees.tp, 2);
}

}  // namespace
}  // namespace orochi
