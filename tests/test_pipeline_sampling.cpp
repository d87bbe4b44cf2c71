// Few-step sampling (pipeline/sampling.h): given sigma lists and the turbo presets through the
// denoising loop against diffusers' MiniMaxH3Scheduler fed the same sigmas (tests/data/h3_custom_sigmas,
// made by scripts/golden/make_h3_custom_sigmas.py), and every rule of resolve_sampling.
#include <gtest/gtest.h>

#include <cstring>
#include <ostream>
#include <string>
#include <vector>

#include "models/h3/denoiser.h"
#include "pipeline/denoise_loop.h"
#include "pipeline/latent_packing.h"
#include "pipeline/sampling.h"
#include "pipeline/t2va.h"
#include "support/compare.h"
#include "support/denoise_loop_golden.h"
#include "support/golden.h"
#include "support/paths.h"

namespace orochi {
namespace {

using pipeline::Sampling;
using testing::golden_tensor;

bool contains(const std::string& s, const std::string& what) { return s.find(what) != std::string::npos; }

// An f64 tensor of the golden as it is (golden_tensor gives f32).
std::vector<double> f64_values(const weights::Checkpoint& golden, const std::string& name) {
  Expected<Tensor> t = golden.get(name);
  OROCHI_CHECK(t.has_value() && t->dtype() == DType::kF64, name, " must be an f64 tensor of the golden");
  const Tensor c = t->contiguous();
  return std::vector<double>(c.data<double>(), c.data<double>() + c.numel());
}

void expect_bit_equal(const std::vector<float>& actual, const Tensor& expected, const std::string& what) {
  ASSERT_EQ(static_cast<int64_t>(actual.size()), expected.numel()) << what;
  EXPECT_EQ(std::memcmp(actual.data(), expected.contiguous().data<float>(), actual.size() * sizeof(float)), 0) << what;
}

struct GoldenCase {
  std::string name;
  std::vector<pipeline::KeyframeAnchor> keyframes;
  int64_t steps;
};

void PrintTo(const GoldenCase& c, std::ostream* os) { *os << c.name; }

class CustomSigmasGolden : public ::testing::TestWithParam<GoldenCase> {
 protected:
  static void SetUpTestSuite() {
    Expected<h3::H3Weights> w = h3::load_weights(testing::h3_tiny_dir() + "/transformer");
    ASSERT_TRUE(w.has_value()) << w.status().to_string();
    weights_ = new h3::H3Weights(std::move(w).value());
    Expected<weights::Checkpoint> g =
        weights::Checkpoint::open(testing::test_data_dir() + "/h3_custom_sigmas/golden.safetensors");
    ASSERT_TRUE(g.has_value()) << g.status().to_string();
    golden_ = new weights::Checkpoint(std::move(g).value());
  }
  static void TearDownTestSuite() {
    delete weights_;
    delete golden_;
  }
  // The sampling as the command line asks it: the given lists, or the preset.
  static Sampling asked(const std::string& name) {
    Sampling s;
    if (name == "turbo4") s.preset = "turbo4";
    if (golden_->contains(name + ".given_video_sigmas"))
      s.video_sigmas = f64_values(*golden_, name + ".given_video_sigmas");
    if (golden_->contains(name + ".given_audio_sigmas"))
      s.audio_sigmas = f64_values(*golden_, name + ".given_audio_sigmas");
    return s;
  }
  static h3::H3Weights* weights_;
  static weights::Checkpoint* golden_;
};
h3::H3Weights* CustomSigmasGolden::weights_ = nullptr;
weights::Checkpoint* CustomSigmasGolden::golden_ = nullptr;

TEST_P(CustomSigmasGolden, SchedulesAndStepsEqualDiffusersFedTheSameSigmas) {
  const GoldenCase& gc = GetParam();
  const std::string p = gc.name + ".";
  // The decision, then the schedules as plan_t2va makes them (any valid canvas: the grid alone counts).
  Expected<Sampling> resolved = pipeline::resolve_sampling(asked(gc.name), 20);
  ASSERT_TRUE(resolved.has_value()) << resolved.status().to_string();
  EXPECT_EQ(resolved->steps, gc.steps);
  pipeline::T2vaShape shape;
  shape.width = shape.height = 64;
  shape.frames = 22;
  shape.text_rows = 5;
  shape.steps = resolved->steps;
  shape.video_shift = resolved->video_shift;
  shape.audio_shift = resolved->audio_shift;
  shape.video_sigmas = resolved->video_sigmas;
  shape.audio_sigmas = resolved->audio_sigmas;
  Expected<pipeline::T2vaPlan> plan = pipeline::plan_t2va(weights_->config, shape);
  ASSERT_TRUE(plan.has_value()) << plan.status().to_string();
  EXPECT_EQ(plan->steps, gc.steps);
  expect_bit_equal(plan->video_schedule.sigmas, golden_tensor(*golden_, p + "video_sigmas"), "video sigmas");
  expect_bit_equal(plan->video_schedule.timesteps, golden_tensor(*golden_, p + "video_timesteps"), "video timesteps");
  expect_bit_equal(plan->audio_schedule.sigmas, golden_tensor(*golden_, p + "audio_sigmas"), "audio sigmas");
  expect_bit_equal(plan->audio_schedule.timesteps, golden_tensor(*golden_, p + "audio_timesteps"), "audio timesteps");

  // Through the loop: after every step k, the rows diffusers' loop had.
  std::unique_ptr<testing::DenoiseLoopCase> c = testing::load_denoise_loop_case(*golden_, gc.name, gc.keyframes);
  ASSERT_TRUE(c);
  c->video_schedule = plan->video_schedule;
  c->audio_schedule = plan->audio_schedule;
  h3::CpuDenoiser denoiser(*weights_);
  for (int64_t k = 1; k <= gc.steps; ++k) {
    pipeline::H3Schedule v = c->video_schedule, a = c->audio_schedule;
    v.timesteps.resize(static_cast<size_t>(k));
    a.timesteps.resize(static_cast<size_t>(k));
    pipeline::DenoiseRequest partial = c->request;
    partial.video_schedule = &v;
    partial.audio_schedule = &a;
    Expected<pipeline::DenoiseResult> out = pipeline::denoise(denoiser, partial);
    ASSERT_TRUE(out.has_value()) << out.status().to_string();
    EXPECT_TENSOR_CLOSE(out->video_rows, golden_tensor(*golden_, p + "video_rows." + std::to_string(k)), 1e-5);
    EXPECT_TENSOR_CLOSE(out->audio_rows, golden_tensor(*golden_, p + "audio_rows." + std::to_string(k)), 1e-5);
    if (k == gc.steps) {
      const pipeline::PackedLayout& layout = c->layout;
      const Tensor target = out->video_rows.slice(0, layout.condition_video_rows, out->video_rows.dim(0)).contiguous();
      Expected<Tensor> latents = pipeline::unpatchify_video_rows(target, 4, 3, 4, 6, {1, 2, 2});
      ASSERT_TRUE(latents.has_value());
      EXPECT_TENSOR_CLOSE(*latents, golden_tensor(*golden_, p + "video_latents"), 1e-5);
    }
  }
}

INSTANTIATE_TEST_SUITE_P(
    Cases, CustomSigmasGolden,
    ::testing::Values(GoldenCase{"hyperflow", {}, 8}, GoldenCase{"lists", {pipeline::KeyframeAnchor::kFirst}, 4},
                      GoldenCase{"turbo4", {}, 4}),
    [](const ::testing::TestParamInfo<GoldenCase>& info) { return info.param.name; });

const std::vector<double> kHyperFlow = {1, 0.99391, 0.98429, 0.96606, 0.92308, 0.83494, 0.69685, 0.46875, 0};

TEST(Sampling, PresetsSetStepsAndShiftsOnTheQGrid) {
  Sampling s;
  s.preset = "turbo8";
  Expected<Sampling> r = pipeline::resolve_sampling(s, 20);
  ASSERT_TRUE(r.has_value()) << r.status().to_string();
  EXPECT_EQ(r->steps, 8);
  EXPECT_EQ(r->video_shift, 6.0);
  EXPECT_EQ(r->audio_shift, 3.0);
  EXPECT_EQ(r->preset, "turbo8");
  // q_i = (8 - i)/8 shifted by 6: sigma_i = 6q / (1 + 5q).
  Expected<pipeline::H3Schedule> v = pipeline::sampling_schedule(r->steps, r->video_shift, {}, "--sigmas");
  ASSERT_TRUE(v.has_value());
  ASSERT_EQ(v->sigmas.size(), 9u);
  for (int i = 0; i <= 8; ++i) {
    const double q = (8 - i) / 8.0;
    EXPECT_NEAR(v->sigmas[static_cast<size_t>(i)], 6 * q / (1 + 5 * q), 1e-6) << i;
  }
  s.preset = "turbo4";
  r = pipeline::resolve_sampling(s, 20);
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(r->steps, 4);
  EXPECT_EQ(pipeline::describe_sampling(*r), "turbo4: 4 evaluations, video grid shift 6, audio grid shift 3");
}

TEST(Sampling, DefaultsAndListsDecideTheStepCount) {
  Expected<Sampling> r = pipeline::resolve_sampling({}, 20);
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(r->steps, 20);
  EXPECT_EQ(r->video_shift, pipeline::kH3VideoShift);
  EXPECT_EQ(r->audio_shift, pipeline::kH3AudioShift);
  Sampling s;
  s.video_sigmas = kHyperFlow;
  r = pipeline::resolve_sampling(s, 20);
  ASSERT_TRUE(r.has_value()) << r.status().to_string();
  EXPECT_EQ(r->steps, 8);
  EXPECT_EQ(pipeline::describe_sampling(*r),
            "8 evaluations, video sigmas 1,0.99391,0.98429,0.96606,0.92308,0.83494,0.69685,0.46875,0, audio grid "
            "shift 3");
  s.steps = 8;  // agreeing with the list is fine
  EXPECT_TRUE(pipeline::resolve_sampling(s, 20).has_value());
  Sampling audio_only;
  audio_only.audio_sigmas = {1, 0.5, 0};
  audio_only.video_shift = 5;  // the other stream's shift still applies
  r = pipeline::resolve_sampling(audio_only, 20);
  ASSERT_TRUE(r.has_value()) << r.status().to_string();
  EXPECT_EQ(r->steps, 2);
  EXPECT_EQ(r->video_shift, 5.0);
}

// The message of resolve_sampling's refusal, "" when it accepts.
std::string refusal(const Sampling& s) {
  Expected<Sampling> r = pipeline::resolve_sampling(s, 20);
  if (r) return "";
  EXPECT_EQ(r.status().code(), ErrorCode::kInvalidArgument);
  return r.status().message();
}

TEST(Sampling, RefusesBadListsNamingTheFlagAndTheValue) {
  auto with_video = [](std::vector<double> v) {
    Sampling s;
    s.video_sigmas = std::move(v);
    return s;
  };
  std::string m = refusal(with_video({1, 0.5, 0.7, 0}));
  EXPECT_TRUE(contains(m, "--sigmas is not strictly decreasing at value 3 (0.5 then 0.7)")) << m;
  m = refusal(with_video({1, 0.5, 0.5, 0}));
  EXPECT_TRUE(contains(m, "not strictly decreasing at value 3")) << m;
  m = refusal(with_video({1, 0.5000000001, 0.5, 0}));  // two doubles, one fp32 value
  EXPECT_TRUE(contains(m, "one fp32 value")) << m;
  m = refusal(with_video({1, 1.5, 0}));
  EXPECT_TRUE(contains(m, "--sigmas value 2 is 1.5: every sigma must be in [0, 1]")) << m;
  m = refusal(with_video({1, -0.1}));
  EXPECT_TRUE(contains(m, "value 2 is -0.1")) << m;
  m = refusal(with_video({0.9, 0.5, 0}));
  EXPECT_TRUE(contains(m, "--sigmas starts at 0.9") && contains(m, "first sigma must be 1")) << m;
  m = refusal(with_video({1, 0.5, 0.1}));
  EXPECT_TRUE(contains(m, "--sigmas ends at 0.1") && contains(m, "last sigma must be 0")) << m;
  m = refusal(with_video({1}));
  EXPECT_TRUE(contains(m, "--sigmas has 1 value(s)") && contains(m, "N + 1")) << m;
  m = refusal(with_video(std::vector<double>(1003, 0.5)));
  EXPECT_TRUE(contains(m, "at most 1000 evaluations")) << m;
  Sampling audio;
  audio.audio_sigmas = {1, 0.3, 0.6, 0};
  m = refusal(audio);
  EXPECT_TRUE(contains(m, "--audio-sigmas is not strictly decreasing")) << m;
}

TEST(Sampling, RefusesFlagsThatContradictEachOther) {
  Sampling s;
  s.video_sigmas = kHyperFlow;
  s.steps = 4;
  std::string m = refusal(s);
  EXPECT_TRUE(contains(m, "--steps 4 but --sigmas has 9 values, 8 evaluations")) << m;
  s.steps = 0;
  s.audio_sigmas = {1, 0.5, 0};
  m = refusal(s);
  EXPECT_TRUE(contains(m, "--sigmas has 9 values and --audio-sigmas 3")) << m;
  s.audio_sigmas.clear();
  s.video_shift = 6;
  m = refusal(s);
  EXPECT_TRUE(contains(m, "--sigmas") && contains(m, "--video-shift") && contains(m, "pass one")) << m;
  Sampling a;
  a.audio_sigmas = {1, 0.5, 0};
  a.audio_shift = 2;
  m = refusal(a);
  EXPECT_TRUE(contains(m, "--audio-sigmas") && contains(m, "--audio-shift")) << m;

  Sampling p;
  p.preset = "turbo8";
  p.steps = 8;
  m = refusal(p);
  EXPECT_TRUE(contains(m, "--preset turbo8 sets 8 steps and shifts 6/3") && contains(m, "drop --steps")) << m;
  p.steps = 0;
  p.video_shift = 12;
  p.video_sigmas = kHyperFlow;
  m = refusal(p);
  EXPECT_TRUE(contains(m, "drop --video-shift, --sigmas")) << m;
  Sampling unknown;
  unknown.preset = "turbo6";
  m = refusal(unknown);
  EXPECT_TRUE(contains(m, "turbo6 is not a preset; the presets are turbo8, turbo4")) << m;

  Sampling steps;
  steps.steps = 1001;
  EXPECT_TRUE(contains(refusal(steps), "--steps must be in [1, 1000]"));
  Sampling shift;
  shift.video_shift = -1;
  EXPECT_TRUE(contains(refusal(shift), "--video-shift must be a finite number > 0"));
}

TEST(Sampling, ThePlanRefusesAListOfTheWrongLength) {
  Expected<pipeline::H3Schedule> s = pipeline::sampling_schedule(4, 12.0, {1, 0.5, 0}, "--sigmas");
  ASSERT_FALSE(s.has_value());
  EXPECT_TRUE(contains(s.status().message(), "--sigmas has 3 values for 4 steps")) << s.status().message();
  // diffusers' own rule for a list, at the scheduler.
  EXPECT_FALSE(pipeline::make_h3_schedule_from_sigmas({1, 0.5}).has_value());
  EXPECT_FALSE(pipeline::make_h3_schedule_from_sigmas({0}).has_value());
  Expected<pipeline::H3Schedule> ok = pipeline::make_h3_schedule_from_sigmas({1, 0.25, 0});
  ASSERT_TRUE(ok.has_value());
  EXPECT_EQ(ok->timesteps, (std::vector<float>{0.0f, 0.75f}));
}

}  // namespace
}  // namespace orochi
