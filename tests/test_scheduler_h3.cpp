// The H3 scheduler against diffusers' MiniMaxH3Scheduler (tests/data/h3_scheduler, made by
// scripts/golden/make_h3_scheduler.py): schedules and Euler steps bit-equal, plus bad arguments.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <limits>
#include <string>

#include "pipeline/scheduler_h3.h"
#include "support/compare.h"
#include "support/paths.h"
#include "weights/checkpoint.h"

namespace orochi {
namespace {

using pipeline::H3Schedule;
using pipeline::make_h3_schedule;

weights::Checkpoint open_golden() {
  Expected<weights::Checkpoint> g =
      weights::Checkpoint::open(testing::test_data_dir() + "/h3_scheduler/golden.safetensors");
  OROCHI_CHECK(g.has_value(), g.status().to_string());
  return std::move(g).value();
}

Tensor get(const weights::Checkpoint& g, const std::string& name) {
  Expected<Tensor> t = g.get(name);
  OROCHI_CHECK(t.has_value(), t.status().to_string());
  return t->contiguous();
}

// Distance in units in the last place between two finite floats of one sign.
int64_t ulp_distance(float a, float b) {
  int32_t ia, ib;
  std::memcpy(&ia, &a, 4);
  std::memcpy(&ib, &b, 4);
  if (ia < 0) ia = std::numeric_limits<int32_t>::min() - ia;
  if (ib < 0) ib = std::numeric_limits<int32_t>::min() - ib;
  return std::llabs(static_cast<int64_t>(ia) - ib);
}

int64_t max_ulp(const float* a, const float* b, int64_t n) {
  int64_t worst = 0;
  for (int64_t i = 0; i < n; ++i) worst = std::max(worst, ulp_distance(a[i], b[i]));
  return worst;
}

void expect_bit_equal(const std::vector<float>& actual, const Tensor& expected, const std::string& what) {
  ASSERT_EQ(static_cast<int64_t>(actual.size()), expected.numel()) << what;
  EXPECT_EQ(max_ulp(actual.data(), expected.data<float>(), expected.numel()), 0) << what;
}

TEST(H3Scheduler, SchedulesAreBitEqualToDiffusers) {
  const weights::Checkpoint g = open_golden();
  const Tensor cases = get(g, "cases");  // f64 [n, 2]: (N, shift)
  ASSERT_EQ(cases.ndim(), 2);
  ASSERT_GE(cases.dim(0), 15);
  for (int64_t i = 0; i < cases.dim(0); ++i) {
    const int64_t n = static_cast<int64_t>(cases.data<double>()[2 * i]);
    const double shift = cases.data<double>()[2 * i + 1];
    const std::string what = "N=" + std::to_string(n) + " shift=" + std::to_string(shift);
    SCOPED_TRACE(what);
    Expected<H3Schedule> s = make_h3_schedule(n, shift);
    ASSERT_TRUE(s.has_value()) << s.status().to_string();
    expect_bit_equal(s->sigmas, get(g, "sigmas." + std::to_string(i)), what + " sigmas");
    expect_bit_equal(s->timesteps, get(g, "timesteps." + std::to_string(i)), what + " timesteps");
    EXPECT_EQ(s->sigmas.front(), 1.0f);
    EXPECT_EQ(s->sigmas.back(), 0.0f);
    if (shift < 100) {
      EXPECT_EQ(s->num_evaluations(), n - 1);
      for (size_t k = 0; k + 1 < s->sigmas.size(); ++k) EXPECT_GT(s->sigmas[k], s->sigmas[k + 1]);
    } else {
      // A huge shift rounds neighbours together (dropped) and, in diffusers too, can even leave one
      // pair rising by an ulp: the reference's behaviour, reproduced rather than "fixed".
      EXPECT_LT(s->num_evaluations(), n - 1) << "the collapse case must drop duplicates";
    }
  }
}

TEST(H3Scheduler, ReleaseExampleOfTheSpec) {
  // MODELS_H3.md section 6, N = 9: the numbers quoted there (5 decimals).
  const std::vector<double> video = {1, .98824, .97297, .95238, .92308, .87805, .8, .63158, 0};
  const std::vector<double> audio = {1, .95455, .9, .83333, .75, .64286, .5, .3, 0};
  for (const auto& [shift, expected] :
       {std::pair{pipeline::kH3VideoShift, video}, std::pair{pipeline::kH3AudioShift, audio}}) {
    Expected<H3Schedule> s = make_h3_schedule(9, shift);
    ASSERT_TRUE(s.has_value());
    ASSERT_EQ(s->sigmas.size(), expected.size());
    EXPECT_EQ(s->num_evaluations(), 8);
    for (size_t i = 0; i < expected.size(); ++i)
      EXPECT_NEAR(s->sigmas[i], expected[i], 5e-6) << "shift " << shift << " i " << i;
  }
}

TEST(H3Scheduler, EulerStepIsBitEqualToDiffusers) {
  const weights::Checkpoint g = open_golden();
  const Tensor cases = get(g, "cases");
  const Tensor which = get(g, "step.case"), index = get(g, "step.index");
  const Tensor sample = get(g, "step.sample"), velocity = get(g, "step.velocity");
  ASSERT_GE(which.numel(), 3);
  for (int64_t j = 0; j < which.numel(); ++j) {
    const int64_t c = which.data<int64_t>()[j], k = index.data<int64_t>()[j];
    Expected<H3Schedule> s =
        make_h3_schedule(static_cast<int64_t>(cases.data<double>()[2 * c]), cases.data<double>()[2 * c + 1]);
    ASSERT_TRUE(s.has_value());
    const Tensor out = pipeline::h3_euler_step(*s, k, sample, velocity);
    const Tensor expected = get(g, "step.out." + std::to_string(j));
    SCOPED_TRACE("step golden " + std::to_string(j) + " (step " + std::to_string(k) + ")");
    EXPECT_TENSOR_CLOSE(out, expected, 1e-7);
    const int64_t ulps = max_ulp(out.data<float>(), expected.data<float>(), out.numel());
    EXPECT_EQ(ulps, 0);
    std::printf("  step golden %lld (index %lld): %s, max %lld ulp\n", static_cast<long long>(j),
                static_cast<long long>(k), testing::compare(out, expected).summary().c_str(),
                static_cast<long long>(ulps));
  }
}

TEST(H3Scheduler, InPlaceStepEqualsCopyingStepAndLastStepLandsOnX0) {
  const weights::Checkpoint g = open_golden();
  const Tensor sample = get(g, "step.sample"), velocity = get(g, "step.velocity");
  Expected<H3Schedule> s = make_h3_schedule(9, 3.0);
  ASSERT_TRUE(s.has_value());
  Tensor x = sample.clone();
  pipeline::h3_euler_step_inplace(*s, 3, x, velocity);
  EXPECT_TENSOR_CLOSE(x, pipeline::h3_euler_step(*s, 3, sample, velocity), 0.0);
  // The last step has ratio 0: the result is the x0 estimate x + (1 − t)·v itself.
  const Tensor last = pipeline::h3_euler_step(*s, 7, sample, velocity);
  const float sigma_from_t = 1.0f - s->timesteps[7];
  for (int64_t i = 0; i < sample.numel(); ++i) {
    const float step = sigma_from_t * velocity.data<float>()[i];
    ASSERT_EQ(last.data<float>()[i], sample.data<float>()[i] + step) << i;
  }
}

TEST(H3Scheduler, ScaleNoiseIsBitEqualToDiffusers) {
  const weights::Checkpoint g = open_golden();
  const Tensor sample = get(g, "step.sample"), noise = get(g, "step.velocity"), levels = get(g, "noise.t");
  ASSERT_GE(levels.numel(), 2);
  for (int64_t j = 0; j < levels.numel(); ++j) {
    const Tensor out = pipeline::h3_scale_noise(sample, levels.data<float>()[j], noise);
    const Tensor expected = get(g, "noise.out." + std::to_string(j));
    EXPECT_EQ(max_ulp(out.data<float>(), expected.data<float>(), out.numel()), 0) << "t = " << levels.data<float>()[j];
  }
}

TEST(H3Scheduler, BadArgumentsAreClearErrors) {
  for (int64_t n : {int64_t{1}, int64_t{0}, int64_t{-4}, int64_t{1} << 40}) {
    Expected<H3Schedule> s = make_h3_schedule(n, 3.0);
    ASSERT_FALSE(s.has_value()) << n;
    EXPECT_EQ(s.status().code(), ErrorCode::kInvalidArgument);
    EXPECT_NE(s.status().message().find("num_inference_steps"), std::string::npos) << s.status().to_string();
  }
  for (double shift : {0.0, -1.0, std::nan(""), std::numeric_limits<double>::infinity()}) {
    Expected<H3Schedule> s = make_h3_schedule(9, shift);
    ASSERT_FALSE(s.has_value()) << shift;
    EXPECT_EQ(s.status().code(), ErrorCode::kInvalidArgument);
    EXPECT_NE(s.status().message().find("shift"), std::string::npos) << s.status().to_string();
  }
  EXPECT_TRUE(make_h3_schedule(2, 1e-3).has_value());
}

TEST(H3Scheduler, StepOutsideTheScheduleIsAnInvariantFailure) {
  Expected<H3Schedule> s = make_h3_schedule(3, 3.0);
  ASSERT_TRUE(s.has_value());
  const Tensor x = Tensor::zeros({2, 4}, DType::kF32);
  EXPECT_ANY_THROW(pipeline::h3_euler_step(*s, 2, x, x));
  EXPECT_ANY_THROW(pipeline::h3_euler_step(*s, -1, x, x));
  EXPECT_ANY_THROW(pipeline::h3_euler_step(*s, 0, x, Tensor::zeros({2, 5}, DType::kF32)));
}

}  // namespace
}  // namespace orochi
