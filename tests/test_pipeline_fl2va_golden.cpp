// fl2va end to end against diffusers' modular MiniMax-H3 pipeline (MiniMaxH3Blocks, fl2va branch, CPU,
// fp32): tests/data/h3_fl2va, made by scripts/golden/make_h3_fl2va.py. A first (80x48) and a last
// (48x72) PNG keyframe onto a 64x64 canvas, 124 frames, 3 evaluations, the tiny transformer of
// h3_tiny and the tiny VAEs written beside the golden. The script injected our request noise
// (Philox streams 1000 + i, 11, 12 under kSeed); the keyframe posterior is the pipeline's seed-42
// draw. Checked: the canvas keyframes, their latents, the noise, the packed inputs (rows, positions,
// tags, indices, per-step row timesteps), every step's rows, the final latents, the decode.
#include <gtest/gtest.h>

#include <cstdio>
#include <cstring>

#include "core/random.h"
#include "io/media_in.h"
#include "models/h3/denoiser.h"
#include "models/h3_audio_vae/weights.h"
#include "models/h3_video_vae/encoder_weights.h"
#include "models/h3_video_vae/weights.h"
#include "pipeline/decoders.h"
#include "pipeline/denoise_loop.h"
#include "pipeline/fl2va.h"
#include "pipeline/latent_packing.h"
#include "support/compare.h"
#include "support/golden.h"
#include "support/paths.h"

namespace orochi {
namespace {

using testing::golden_tensor;

constexpr uint64_t kSeed = 20261201;
constexpr int64_t kSteps = 3;  // num_inference_steps 4 in the script

std::string dir() { return testing::test_data_dir() + "/h3_fl2va"; }

void expect_equal_bytes(const Tensor& ours, const Tensor& theirs, const std::string& what) {
  ASSERT_EQ(ours.shape(), theirs.shape()) << what << ": " << ours.describe() << " vs " << theirs.describe();
  ASSERT_EQ(ours.dtype(), theirs.dtype()) << what;
  const Tensor a = ours.contiguous(), b = theirs.contiguous();
  EXPECT_EQ(std::memcmp(a.raw_data(), b.raw_data(), a.nbytes()), 0) << what << ": " << testing::compare(a.to(DType::kF64), b.to(DType::kF64)).summary();
}

double report(const char* what, const Tensor& ours, const Tensor& theirs) {
  const testing::Comparison c = testing::compare(ours, theirs);
  std::printf("fl2va golden: %-28s rel L2 %.3g, max |diff| %.3g\n", what, c.rel_l2, c.max_abs);
  return c.rel_l2;
}

struct World {
  h3::H3Weights transformer;
  h3vae::EncoderWeights encoder;
  h3vae::DecoderWeights video_vae;
  h3_audio::AudioDecoderWeights audio_vae;
  weights::Checkpoint golden;
  pipeline::Fl2vaKeyframes keyframes;
  pipeline::T2vaPlan plan;
  pipeline::T2vaRequest request;
};

class Fl2vaGolden : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    auto t = h3::load_weights(testing::h3_tiny_dir() + "/transformer");
    auto e = h3vae::load_encoder_weights(dir() + "/vae");
    auto d = h3vae::load_decoder_weights(dir() + "/vae");
    auto a = h3_audio::load_decoder(dir() + "/audio_vae");
    auto g = weights::Checkpoint::open(dir() + "/golden.safetensors");
    ASSERT_TRUE(t.has_value()) << t.status().to_string();
    ASSERT_TRUE(e.has_value()) << e.status().to_string();
    ASSERT_TRUE(d.has_value()) << d.status().to_string();
    ASSERT_TRUE(a.has_value()) << a.status().to_string();
    ASSERT_TRUE(g.has_value()) << g.status().to_string();
    w_ = new World{std::move(t).value(), std::move(e).value(), std::move(d).value(), std::move(a).value(),
                   std::move(g).value(), {}, {}, {}};
    auto first = io::read_image(dir() + "/first.png");
    auto last = io::read_image(dir() + "/last.png");
    ASSERT_TRUE(first.has_value() && last.has_value());
    // Given in the other order on purpose: the packed order is first, last.
    auto k = pipeline::prepare_fl2va_keyframes({{pipeline::KeyframeAnchor::kLast, *last},
                                                {pipeline::KeyframeAnchor::kFirst, *first}},
                                               pipeline::reference::Size{64, 64});
    ASSERT_TRUE(k.has_value()) << k.status().to_string();
    w_->keyframes = std::move(k).value();
    pipeline::T2vaShape shape;
    shape.width = 64;
    shape.height = 64;
    shape.frames = 124;
    shape.steps = kSteps;
    shape.text_rows = 6;
    shape.keyframes = w_->keyframes.anchors;
    auto plan = pipeline::plan_fl2va(w_->transformer.config, shape);
    ASSERT_TRUE(plan.has_value()) << plan.status().to_string();
    w_->plan = std::move(plan).value();
    pipeline::T2vaRequest& r = w_->request;
    r.width = 64;
    r.height = 64;
    r.frames = 124;
    r.steps = kSteps;
    r.seed = kSeed;
    r.text_features = golden_tensor(w_->golden, "text");
  }
  static void TearDownTestSuite() {
    delete w_;
    w_ = nullptr;
  }
  static World* w_;
};
World* Fl2vaGolden::w_ = nullptr;

TEST_F(Fl2vaGolden, KeyframesAndTheirLatentsMatch) {
  ASSERT_TRUE(w_);
  ASSERT_EQ(w_->keyframes.images.size(), 2u);
  for (int i = 0; i < 2; ++i) {
    const Tensor want = golden_tensor(w_->golden, "keyframe." + std::to_string(i));  // u8 [H, W, 3]
    const io::RgbImage& im = w_->keyframes.images[i];
    ASSERT_EQ(want.shape(), (Shape{im.height, im.width, 3}));
    int64_t differ = 0;  // golden_tensor gives f32: the u8 values exactly
    for (size_t j = 0; j < im.rgb.size(); ++j) differ += static_cast<float>(im.rgb[j]) != want.data<float>()[j];
    EXPECT_EQ(differ, 0) << "keyframe " << i << ": pixels that differ";
  }
  pipeline::CpuVideoEncoder encoder(w_->encoder);
  auto z = pipeline::encode_keyframes(encoder, w_->keyframes.images);
  ASSERT_TRUE(z.has_value()) << z.status().to_string();
  for (int i = 0; i < 2; ++i) {
    const Tensor want = golden_tensor(w_->golden, "condition_latents." + std::to_string(i));
    ASSERT_EQ((*z)[i].shape(), want.shape());
    const std::string what = "condition_latents." + std::to_string(i);
    EXPECT_LE(report(what.c_str(), (*z)[i], want), 1e-6);
  }
}

TEST_F(Fl2vaGolden, OurNoiseIsWhatWasInjected) {
  ASSERT_TRUE(w_);
  const Tensor cond0 = golden_tensor(w_->golden, "condition_noise.0");
  report("condition_noise.0", normal_tensor(cond0.shape(), kSeed, pipeline::kConditionNoiseStream), cond0);
  EXPECT_TENSOR_CLOSE(normal_tensor(cond0.shape(), kSeed, pipeline::kConditionNoiseStream), cond0, 1e-6);
  const Tensor cond1 = golden_tensor(w_->golden, "condition_noise.1");
  EXPECT_TENSOR_CLOSE(normal_tensor(cond1.shape(), kSeed, pipeline::kConditionNoiseStream + 1), cond1, 1e-6);
  const Tensor video = golden_tensor(w_->golden, "video_noise");
  report("video_noise", normal_tensor(video.shape(), kSeed, pipeline::kVideoNoiseStream), video);
  EXPECT_TENSOR_CLOSE(normal_tensor(video.shape(), kSeed, pipeline::kVideoNoiseStream), video, 1e-6);
  const Tensor audio = golden_tensor(w_->golden, "audio_noise");
  EXPECT_TENSOR_CLOSE(normal_tensor(audio.shape(), kSeed, pipeline::kAudioNoiseStream), audio, 1e-6);
}

TEST_F(Fl2vaGolden, PackedInputsMatch) {
  ASSERT_TRUE(w_);
  pipeline::T2vaRequest r = w_->request;
  for (int i = 0; i < 2; ++i) r.condition_latents.push_back(golden_tensor(w_->golden, "condition_latents." + std::to_string(i)));
  auto d = pipeline::denoise_inputs(r, w_->plan);
  ASSERT_TRUE(d.has_value()) << d.status().to_string();
  const pipeline::PackedLayout& layout = w_->plan.layout;
  EXPECT_EQ(layout.rows, 576);
  EXPECT_EQ(layout.condition_video_rows, 8);
  expect_equal_bytes(layout.positions, golden_tensor(w_->golden, "packed.position_ids"), "position_ids");
  expect_equal_bytes(layout.token_tags, golden_tensor(w_->golden, "packed.token_tags"), "token_tags");
  expect_equal_bytes(layout.video_indices, golden_tensor(w_->golden, "packed.video_indices"), "video_indices");
  expect_equal_bytes(layout.audio_indices, golden_tensor(w_->golden, "packed.audio_indices"), "audio_indices");
  expect_equal_bytes(layout.text_indices, golden_tensor(w_->golden, "packed.text_indices"), "text_indices");
  report("packed video rows (step 0)", d->video_rows, golden_tensor(w_->golden, "step.0.video_rows"));
  report("packed audio rows (step 0)", d->audio_rows, golden_tensor(w_->golden, "step.0.audio_rows"));
  EXPECT_TENSOR_CLOSE(d->video_rows, golden_tensor(w_->golden, "step.0.video_rows"), 1e-6);
  EXPECT_TENSOR_CLOSE(d->audio_rows, golden_tensor(w_->golden, "step.0.audio_rows"), 1e-6);
  // Per step, every row's timestep: ours index one request-wide table, diffusers' a per-step unique.
  const pipeline::TimestepPlan tp = pipeline::plan_timesteps(layout, w_->plan.video_schedule, w_->plan.audio_schedule);
  ASSERT_EQ(tp.steps(), kSteps);
  const float* table = tp.timesteps.data<float>();
  for (int64_t s = 0; s < kSteps; ++s) {
    const Tensor t = golden_tensor(w_->golden, "step." + std::to_string(s) + ".timestep");
    const Tensor idx = golden_tensor(w_->golden, "step." + std::to_string(s) + ".timestep_indices");
    ASSERT_EQ(idx.numel(), layout.rows);
    const int64_t* ours = tp.step_indices[static_cast<size_t>(s)].data<int64_t>();
    const int64_t* theirs = idx.data<int64_t>();
    int64_t differ = 0;
    for (int64_t row = 0; row < layout.rows; ++row)
      differ += table[ours[row]] != t.data<float>()[theirs[row]];
    EXPECT_EQ(differ, 0) << "step " << s << ": rows whose timestep differs";
  }
}

TEST_F(Fl2vaGolden, DenoiseLoopMatchesStepByStep) {
  ASSERT_TRUE(w_);
  // The golden's own packed rows in (the noise is checked above), so each step is compared alone.
  pipeline::DenoiseRequest req;
  req.layout = &w_->plan.layout;
  req.text = w_->request.text_features;
  req.video_rows = golden_tensor(w_->golden, "step.0.video_rows");
  req.audio_rows = golden_tensor(w_->golden, "step.0.audio_rows");
  h3::CpuDenoiser denoiser(w_->transformer);
  for (int64_t k = 1; k <= kSteps; ++k) {
    pipeline::H3Schedule v = w_->plan.video_schedule, a = w_->plan.audio_schedule;
    v.timesteps.resize(static_cast<size_t>(k));
    a.timesteps.resize(static_cast<size_t>(k));
    req.video_schedule = &v;
    req.audio_schedule = &a;
    auto out = pipeline::denoise(denoiser, req);
    ASSERT_TRUE(out.has_value()) << out.status().to_string();
    if (k < kSteps) {
      const std::string s = "step." + std::to_string(k);
      EXPECT_LE(report((s + " video rows").c_str(), out->video_rows, golden_tensor(w_->golden, s + ".video_rows")), 1e-5);
      EXPECT_LE(report((s + " audio rows").c_str(), out->audio_rows, golden_tensor(w_->golden, s + ".audio_rows")), 1e-5);
    } else {
      const pipeline::VideoGeometry& g = w_->plan.geometry;
      const Tensor target = out->video_rows.slice(0, w_->plan.layout.condition_video_rows, out->video_rows.dim(0));
      auto latents = pipeline::unpatchify_video_rows(target.contiguous(), 4, g.latent_frames, g.latent_height,
                                                     g.latent_width, {1, 2, 2});
      ASSERT_TRUE(latents.has_value());
      EXPECT_LE(report("final video latents", *latents, golden_tensor(w_->golden, "final.video_latents")), 1e-5);
      auto audio = pipeline::audio_rows_to_batch(out->audio_rows, 2);  // [2, A, C]
      ASSERT_TRUE(audio.has_value());
      const Tensor want = golden_tensor(w_->golden, "final.audio_latents");  // [2, C, A]
      ASSERT_EQ(want.shape(), (Shape{2, audio->dim(2), audio->dim(1)}));
      Tensor want_t = Tensor::empty(audio->shape(), DType::kF32);
      for (int64_t b = 0; b < 2; ++b)
        for (int64_t a = 0; a < want.dim(2); ++a)
          for (int64_t c = 0; c < want.dim(1); ++c)
            want_t.data<float>()[(b * want.dim(2) + a) * want.dim(1) + c] =
                want.data<float>()[(b * want.dim(1) + c) * want.dim(2) + a];
      EXPECT_LE(report("final audio latents", audio->contiguous(), want_t), 1e-5);
    }
  }
}

TEST_F(Fl2vaGolden, WholeRunDecodesAsDiffusers) {
  ASSERT_TRUE(w_);
  h3::CpuDenoiser denoiser(w_->transformer);
  pipeline::CpuVideoDecoder video(w_->video_vae);
  pipeline::CpuAudioDecoder audio(w_->audio_vae);
  pipeline::Fl2vaRequest request{w_->request, w_->keyframes.images};
  pipeline::CpuVideoEncoder encoder(w_->encoder);
  auto r = pipeline::run_fl2va(denoiser, video, audio, encoder, request, w_->plan);
  ASSERT_TRUE(r.has_value()) << r.status().to_string();
  ASSERT_EQ(r->frames.shape(), (Shape{124, 3, 64, 64}));
  // Per-frame channel means of all 124 frames, and three whole frames.
  Tensor means = Tensor::empty({124, 3}, DType::kF32);
  const float* px = r->frames.contiguous().data<float>();
  for (int64_t i = 0; i < 124 * 3; ++i) {
    double s = 0;
    for (int64_t j = 0; j < 64 * 64; ++j) s += px[i * 64 * 64 + j];
    means.data<float>()[i] = static_cast<float>(s / (64 * 64));
  }
  EXPECT_LE(report("decoded frame means", means, golden_tensor(w_->golden, "decode.frames_mean")), 1e-5);
  for (int64_t f : {0, 123}) {
    const std::string name = "decode.frame." + std::to_string(f);
    EXPECT_LE(report(name.c_str(), r->frames.slice(0, f, f + 1).contiguous().view({3, 64, 64}), golden_tensor(w_->golden, name)), 1e-5);
  }
  ASSERT_EQ(r->waveform.shape(), (Shape{2, 800 * 207}));
  const Tensor wave = r->waveform.contiguous();
  EXPECT_LE(report("waveform head", wave.slice(1, 0, 2048).contiguous(), golden_tensor(w_->golden, "decode.audio_head")), 1e-5);
  Tensor per_latent = Tensor::empty({2, 207}, DType::kF32);
  for (int64_t i = 0; i < 2 * 207; ++i) {
    double s = 0;
    for (int64_t j = 0; j < 800; ++j) s += wave.data<float>()[i * 800 + j];
    per_latent.data<float>()[i] = static_cast<float>(s / 800);
  }
  EXPECT_LE(report("waveform means per latent", per_latent, golden_tensor(w_->golden, "decode.audio_mean_per_latent")), 1e-5);
  EXPECT_LE(report("waveform tail", wave.slice(1, 800 * 207 - 2048, 800 * 207).contiguous(),
                   golden_tensor(w_->golden, "decode.audio_tail")), 1e-5);
}

}  // namespace
}  // namespace orochi
