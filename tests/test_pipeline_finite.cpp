// Non-finite values are caught at the stage that made them: a denoising step (named by number),
// the video decode, the audio decode; and a cancel request stops the run before the next stage.
#include <gtest/gtest.h>

#include <atomic>
#include <cmath>
#include <limits>

#include "models/h3/denoiser.h"
#include "pipeline/finite_check.h"
#include "pipeline/t2va.h"
#include "pipeline/t2va_models.h"
#include "pipeline/text_features.h"

namespace orochi::pipeline {
namespace {

// The demo's denoiser, with one step's velocity poisoned.
class PoisonedDenoiser final : public models::Denoiser {
 public:
  PoisonedDenoiser(const h3::H3Weights& w, int64_t bad_step) : inner_(w), bad_step_(bad_step) {}
  std::string device_name() const override { return "CPU (poisoned)"; }
  models::SequenceWidths widths() const override { return inner_.widths(); }
  Status prepare(const Tensor& timesteps) override { return inner_.prepare(timesteps); }
  Expected<std::vector<Tensor>> forward(const models::PackedSequence& in) override {
    OROCHI_ASSIGN_OR_RETURN(std::vector<Tensor> out, inner_.forward(in));
    if (++step_ == bad_step_) out[h3::kVideoStream].data<float>()[3] = std::numeric_limits<float>::quiet_NaN();
    return out;
  }

 private:
  h3::CpuDenoiser inner_;
  int64_t bad_step_, step_ = 0;
};

class InfiniteAudio final : public AudioDecoder {
 public:
  explicit InfiniteAudio(const h3_audio::AudioDecoderWeights& w) : inner_(w) {}
  std::string device_name() const override { return "CPU (infinite)"; }
  int sample_rate() const override { return inner_.sample_rate(); }
  Expected<Tensor> decode(const Tensor& latents) override {
    OROCHI_ASSIGN_OR_RETURN(Tensor out, inner_.decode(latents));
    out.data<float>()[0] = std::numeric_limits<float>::infinity();
    return out;
  }

 private:
  CpuAudioDecoder inner_;
};

struct DemoRun {
  T2vaModels models = demo_t2va_models(5);
  T2vaRequest request;
  T2vaPlan plan;
  DemoRun() {
    request.width = 64;
    request.height = 64;
    request.frames = 22;
    request.steps = 3;
    request.text_features = random_text_features(4, models.transformer.config.text_dim, 1);
    plan = *plan_t2va(models.transformer.config, shape_of(request));
  }
};

TEST(PipelineFinite, TheStepThatMadeANanIsNamed) {
  DemoRun r;
  PoisonedDenoiser denoiser(r.models.transformer, 2);
  CpuVideoDecoder video(r.models.video_vae);
  CpuAudioDecoder audio(r.models.audio_vae);
  Expected<T2vaResult> out = run_t2va(denoiser, video, audio, r.request, r.plan);
  ASSERT_FALSE(out.has_value());
  EXPECT_EQ(out.status().code(), ErrorCode::kNonFinite);
  EXPECT_NE(out.status().message().find("denoising step 2 of 3 (video velocity)"), std::string::npos)
      << out.status().message();
}

TEST(PipelineFinite, TheAudioDecodeIsNamed) {
  DemoRun r;
  h3::CpuDenoiser denoiser(r.models.transformer);
  CpuVideoDecoder video(r.models.video_vae);
  InfiniteAudio audio(r.models.audio_vae);
  Expected<T2vaResult> out = run_t2va(denoiser, video, audio, r.request, r.plan);
  ASSERT_FALSE(out.has_value());
  EXPECT_EQ(out.status().code(), ErrorCode::kNonFinite);
  EXPECT_NE(out.status().message().find("the audio decode (CPU (infinite))"), std::string::npos)
      << out.status().message();
}

TEST(PipelineFinite, CheckFiniteCountsAndLocates) {
  Tensor t = Tensor::empty({2, 3}, DType::kF32);
  EXPECT_TRUE(check_finite(t, "x").is_ok());
  t.data<float>()[4] = -std::numeric_limits<float>::infinity();
  const Status s = check_finite(t, "the text encoder");
  EXPECT_EQ(s.code(), ErrorCode::kNonFinite);
  EXPECT_NE(s.message().find("the text encoder produced 1 non-finite value of 6 (the first at flat index 4)"),
            std::string::npos)
      << s.message();
}

TEST(PipelineCancel, ACancelRequestStopsBeforeTheNextStep) {
  DemoRun r;
  h3::CpuDenoiser denoiser(r.models.transformer);
  CpuVideoDecoder video(r.models.video_vae);
  CpuAudioDecoder audio(r.models.audio_vae);
  std::atomic<bool> cancel{false};
  T2vaRunOptions options;
  options.cancel = &cancel;
  int64_t steps_seen = 0;
  options.progress = [&](const T2vaProgress& p) {
    if (p.stage == "denoise" && p.done == 1) cancel = true;  // asked during the first step's report
    if (p.stage == "denoise" && p.done > 0) ++steps_seen;
  };
  Expected<T2vaResult> out = run_t2va(denoiser, video, audio, r.request, r.plan, options);
  ASSERT_FALSE(out.has_value());
  EXPECT_EQ(out.status().code(), ErrorCode::kCancelled);
  EXPECT_EQ(steps_seen, 1);
}

}  // namespace
}  // namespace orochi::pipeline
