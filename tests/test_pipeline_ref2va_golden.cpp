// ref2va end to end against diffusers' modular MiniMax-H3 pipeline (MiniMaxH3Blocks, ref2va branch, CPU,
// fp32): tests/data/h3_ref2va, made by scripts/golden/make_h3_ref2va.py. The request, in order: an
// 80x48 and a 48x72 PNG (to a 64 px short edge: 96x64, 64x96), a 30 fps 80x48 H.264 video with a mono
// 44.1 kHz PCM soundtrack (29 frames at 24 fps on its own 96x64 canvas, 22 encoded: 7 latents; 48
// audio latents), a 1.5 s stereo 16 kHz WAV (60 audio latents); a 64x64 target of 124 frames, 6
// text rows (vision-tagged rows among them), 3 evaluations, the tiny transformer of h3_tiny and the
// tiny VAEs of h3_fl2va. The script injected our request noise (Philox streams 1000 + i per visual
// reference, 11, 12 under kSeed); the posteriors are the pipeline's seed-42 draws. Checked: the
// normalized references, their latents and audio rows, the noise, the packed inputs (positions,
// tags, indices, per-step row timesteps, rows), every step's rows, the final latents, the decode.
#include <gtest/gtest.h>

#include <cstdio>
#include <cstring>

#include "core/random.h"
#include "io/media_in.h"
#include "models/h3/denoiser.h"
#include "models/h3_audio_vae/encoder_weights.h"
#include "models/h3_audio_vae/weights.h"
#include "models/h3_video_vae/encoder_weights.h"
#include "models/h3_video_vae/weights.h"
#include "pipeline/decoders.h"
#include "pipeline/denoise_loop.h"
#include "pipeline/latent_packing.h"
#include "pipeline/ref2va.h"
#include "support/compare.h"
#include "support/golden.h"
#include "support/paths.h"

namespace orochi {
namespace {

using testing::golden_tensor;

constexpr uint64_t kSeed = 20261202;
constexpr int64_t kSteps = 3;  // num_inference_steps 4 in the script
constexpr int64_t kFrames = 124;

std::string dir() { return testing::test_data_dir() + "/h3_ref2va"; }
std::string vae_dir() { return testing::test_data_dir() + "/h3_fl2va"; }

// The golden's pipeline configs: canvas_short_edge 64, canvas_max_pixels 64*112, reference_image_short_edge 64.
pipeline::ReferenceRules golden_rules() {
  pipeline::ReferenceRules rules;
  rules.canvas = pipeline::reference::CanvasRule{32, 64, 64 * 112};
  rules.image_short_edge = 64;
  return rules;
}

void expect_equal_bytes(const Tensor& ours, const Tensor& theirs, const std::string& what) {
  ASSERT_EQ(ours.shape(), theirs.shape()) << what << ": " << ours.describe() << " vs " << theirs.describe();
  ASSERT_EQ(ours.dtype(), theirs.dtype()) << what;
  const Tensor a = ours.contiguous(), b = theirs.contiguous();
  EXPECT_EQ(std::memcmp(a.raw_data(), b.raw_data(), a.nbytes()), 0)
      << what << ": " << testing::compare(a.to(DType::kF64), b.to(DType::kF64)).summary();
}

double report(const std::string& what, const Tensor& ours, const Tensor& theirs) {
  const testing::Comparison c = testing::compare(ours, theirs);
  std::printf("ref2va golden: %-34s rel L2 %.3g, max |diff| %.3g\n", what.c_str(), c.rel_l2, c.max_abs);
  return c.rel_l2;
}

int64_t fnv1a64(const uint8_t* p, size_t n) {
  uint64_t h = 0xCBF29CE484222325ull;
  for (size_t i = 0; i < n; ++i) h = (h ^ p[i]) * 0x100000001B3ull;
  return static_cast<int64_t>(h);
}

// Pixels that differ between ours (u8) and the golden's (u8 stored, read as f32).
int64_t differing(const uint8_t* ours, const Tensor& theirs) {
  int64_t n = 0;
  for (int64_t i = 0; i < theirs.numel(); ++i) n += static_cast<float>(ours[i]) != theirs.data<float>()[i];
  return n;
}

// [2, N] -> per 800-sample hop means [2, N / 800] (whole hops only).
Tensor mean_per_hop(const Tensor& waveform) {
  const int64_t hops = waveform.dim(1) / 800;
  Tensor out = Tensor::empty({2, hops}, DType::kF32);
  const Tensor w = waveform.contiguous();
  for (int64_t c = 0; c < 2; ++c)
    for (int64_t h = 0; h < hops; ++h) {
      double s = 0;
      for (int64_t j = 0; j < 800; ++j) s += w.data<float>()[c * waveform.dim(1) + h * 800 + j];
      out.data<float>()[c * hops + h] = static_cast<float>(s / 800);
    }
  return out;
}

struct World {
  h3::H3Weights transformer;
  h3vae::EncoderWeights video_encoder;
  h3_audio::AudioEncoderWeights audio_encoder;
  h3vae::DecoderWeights video_vae;
  h3_audio::AudioDecoderWeights audio_vae;
  weights::Checkpoint golden;
  std::vector<pipeline::Ref2vaReference> references;
  pipeline::T2vaPlan plan;
  pipeline::T2vaRequest request;
};

template <typename T>
T take(Expected<T> e, const char* what) {
  OROCHI_CHECK(e.has_value(), what, ": ", e.status().to_string());
  return std::move(e).value();
}

class Ref2vaGolden : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    if (!io::media_input_supported()) return;
    w_ = new World{take(h3::load_weights(testing::h3_tiny_dir() + "/transformer"), "transformer"),
                   take(h3vae::load_encoder_weights(vae_dir() + "/vae"), "video encoder"),
                   take(h3_audio::load_encoder(vae_dir() + "/audio_vae"), "audio encoder"),
                   take(h3vae::load_decoder_weights(vae_dir() + "/vae"), "video decoder"),
                   take(h3_audio::load_decoder(vae_dir() + "/audio_vae"), "audio decoder"),
                   take(weights::Checkpoint::open(dir() + "/golden.safetensors"), "golden"),
                   {}, {}, {}};
    // The sources as the engine reads them, in request order.
    std::vector<pipeline::Ref2vaSource> sources(4);
    sources[0].image = take(io::read_image(dir() + "/image_wide.png"), "image_wide.png");
    sources[1].image = take(io::read_image(dir() + "/image_tall.png"), "image_tall.png");
    io::DecodedVideo video = take(io::read_video(dir() + "/video.mov"), "video.mov");
    sources[2].kind = pipeline::ReferenceKind::kVideo;
    sources[2].video = std::move(video.frames);
    sources[2].fps = video.fps;
    OROCHI_CHECK(video.has_soundtrack, "video.mov has its soundtrack");
    sources[2].audio = std::move(video.soundtrack);
    sources[3].kind = pipeline::ReferenceKind::kAudio;
    sources[3].audio = take(io::read_audio(dir() + "/clip.wav"), "clip.wav");
    for (const pipeline::Ref2vaSource& s : sources)
      w_->references.push_back(take(pipeline::prepare_ref2va_reference(s, kFrames, {64, 64}, golden_rules()),
                                    "prepare"));
    pipeline::T2vaShape shape;
    shape.width = 64;
    shape.height = 64;
    shape.frames = kFrames;
    shape.steps = kSteps;
    shape.text_rows = 6;
    shape.references = pipeline::reference_geometry(w_->references);
    const Tensor tags = golden_tensor(w_->golden, "text_tags");
    shape.text_tags.assign(tags.data<int64_t>(), tags.data<int64_t>() + tags.numel());
    w_->plan = take(pipeline::plan_ref2va(w_->transformer.config, shape), "plan");
    pipeline::T2vaRequest& r = w_->request;
    r.width = 64;
    r.height = 64;
    r.frames = kFrames;
    r.steps = kSteps;
    r.seed = kSeed;
    r.text_features = golden_tensor(w_->golden, "text");
  }
  static void TearDownTestSuite() {
    delete w_;
    w_ = nullptr;
  }
  void SetUp() override {
    if (!io::media_input_supported()) GTEST_SKIP() << "this build reads no media files";
    ASSERT_TRUE(w_);
  }
  static World* w_;
};
World* Ref2vaGolden::w_ = nullptr;

TEST_F(Ref2vaGolden, ReferencesPrepareAsDiffusers) {
  const std::vector<pipeline::Ref2vaReference>& refs = w_->references;
  ASSERT_EQ(refs.size(), 4u);
  for (int i = 0; i < 2; ++i) {
    const Tensor want = golden_tensor(w_->golden, "reference." + std::to_string(i) + ".image");  // [H, W, 3]
    ASSERT_EQ(want.shape(), (Shape{refs[i].image.height, refs[i].image.width, 3})) << "image " << i;
    EXPECT_EQ(differing(refs[i].image.rgb.data(), want), 0) << "image " << i << ": pixels that differ";
    EXPECT_FALSE(refs[i].has_audio());
  }
  EXPECT_EQ(refs[0].image.width, 96);
  EXPECT_EQ(refs[1].image.height, 96);
  const io::VideoFrames& frames = refs[2].frames;
  const Tensor shape = golden_tensor(w_->golden, "reference.2.frames_shape");
  ASSERT_EQ((std::vector<int64_t>{frames.frames, frames.height, frames.width, 3}),
            std::vector<int64_t>(shape.data<int64_t>(), shape.data<int64_t>() + 4));
  EXPECT_EQ(fnv1a64(frames.rgb.data(), frames.rgb.size()),
            golden_tensor(w_->golden, "reference.2.frames_fnv").data<int64_t>()[0]);
  for (int64_t f : {int64_t{0}, frames.frames - 1})
    EXPECT_EQ(differing(frames.frame(f), golden_tensor(w_->golden, "reference.2.frame." + std::to_string(f))), 0)
        << "video frame " << f;
  for (int i : {2, 3}) {
    const std::string key = "reference." + std::to_string(i) + ".waveform";
    const Tensor& wave = refs[i].waveform;  // [2, N] at 32 kHz
    ASSERT_TRUE(wave.defined());
    const Tensor s = golden_tensor(w_->golden, key + "_shape");
    ASSERT_EQ(wave.shape(), (Shape{s.data<int64_t>()[0], s.data<int64_t>()[1]}));
    EXPECT_LE(report(key + " head", wave.slice(1, 0, 2048).contiguous(), golden_tensor(w_->golden, key + "_head")),
              1e-6);
    EXPECT_LE(report(key + " means per hop", mean_per_hop(wave), golden_tensor(w_->golden, key + "_mean_per_hop")),
              1e-6);
  }
}

TEST_F(Ref2vaGolden, ConditionsEncodeAsDiffusers) {
  pipeline::CpuVideoEncoder video_encoder(w_->video_encoder);
  pipeline::CpuAudioEncoder audio_encoder(w_->audio_encoder);
  auto c = pipeline::encode_ref2va_references(video_encoder, audio_encoder, w_->references);
  ASSERT_TRUE(c.has_value()) << c.status().to_string();
  ASSERT_EQ(c->video_latents.size(), 3u);
  ASSERT_EQ(c->audio_rows.size(), 2u);
  for (size_t i = 0; i < 3; ++i) {
    const std::string name = "condition_latents." + std::to_string(i);
    const Tensor want = golden_tensor(w_->golden, name);
    ASSERT_EQ(c->video_latents[i].shape(), want.shape()) << name;
    EXPECT_LE(report(name, c->video_latents[i], want), 1e-5);
  }
  for (size_t i = 0; i < 2; ++i) {
    const std::string name = "audio_condition_rows." + std::to_string(i);
    const Tensor want = golden_tensor(w_->golden, name);
    ASSERT_EQ(c->audio_rows[i].shape(), want.shape()) << name;
    EXPECT_LE(report(name, c->audio_rows[i], want), 1e-5);
  }
}

TEST_F(Ref2vaGolden, OurNoiseIsWhatWasInjected) {
  for (uint64_t i = 0; i < 3; ++i) {
    const Tensor want = golden_tensor(w_->golden, "condition_noise." + std::to_string(i));
    EXPECT_TENSOR_CLOSE(normal_tensor(want.shape(), kSeed, pipeline::kConditionNoiseStream + i), want, 1e-6);
  }
  const Tensor video = golden_tensor(w_->golden, "video_noise");
  EXPECT_TENSOR_CLOSE(normal_tensor(video.shape(), kSeed, pipeline::kVideoNoiseStream), video, 1e-6);
  const Tensor audio = golden_tensor(w_->golden, "audio_noise");
  EXPECT_TENSOR_CLOSE(normal_tensor(audio.shape(), kSeed, pipeline::kAudioNoiseStream), audio, 1e-6);
}

TEST_F(Ref2vaGolden, PackedInputsMatch) {
  pipeline::T2vaRequest r = w_->request;
  for (int i = 0; i < 3; ++i) r.condition_latents.push_back(golden_tensor(w_->golden, "condition_latents." + std::to_string(i)));
  for (int i = 0; i < 2; ++i)
    r.condition_audio_rows.push_back(golden_tensor(w_->golden, "audio_condition_rows." + std::to_string(i)));
  auto d = pipeline::denoise_inputs(r, w_->plan);
  ASSERT_TRUE(d.has_value()) << d.status().to_string();
  const pipeline::PackedLayout& layout = w_->plan.layout;
  EXPECT_EQ(layout.rows, 838);
  EXPECT_EQ(layout.condition_video_rows, 6 + 6 + 7 * 6);
  EXPECT_EQ(layout.condition_audio_rows, 96 + 120);
  // diffusers keeps the positions in f64 on the CPU; the transformer reads them as f32.
  expect_equal_bytes(layout.positions, golden_tensor(w_->golden, "packed.position_ids"), "position_ids");
  expect_equal_bytes(layout.token_tags, golden_tensor(w_->golden, "packed.token_tags"), "token_tags");
  expect_equal_bytes(layout.video_indices, golden_tensor(w_->golden, "packed.video_indices"), "video_indices");
  expect_equal_bytes(layout.audio_indices, golden_tensor(w_->golden, "packed.audio_indices"), "audio_indices");
  expect_equal_bytes(layout.text_indices, golden_tensor(w_->golden, "packed.text_indices"), "text_indices");
  report("packed video rows (step 0)", d->video_rows, golden_tensor(w_->golden, "step.0.video_rows"));
  report("packed audio rows (step 0)", d->audio_rows, golden_tensor(w_->golden, "step.0.audio_rows"));
  EXPECT_TENSOR_CLOSE(d->video_rows, golden_tensor(w_->golden, "step.0.video_rows"), 1e-6);
  EXPECT_TENSOR_CLOSE(d->audio_rows, golden_tensor(w_->golden, "step.0.audio_rows"), 1e-6);
  // The reference audio rows go in as they were encoded, clean.
  expect_equal_bytes(d->audio_rows.slice(0, 0, 216), golden_tensor(w_->golden, "step.0.audio_rows").slice(0, 0, 216),
                     "reference audio rows (step 0)");
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
    for (int64_t row = 0; row < layout.rows; ++row) differ += table[ours[row]] != t.data<float>()[theirs[row]];
    EXPECT_EQ(differ, 0) << "step " << s << ": rows whose timestep differs";
  }
  const pipeline::RowCounts n = pipeline::row_counts(w_->plan);
  EXPECT_EQ(n.text, 6);
  EXPECT_EQ(n.images, 2);
  EXPECT_EQ(n.image_rows, 12);
  EXPECT_EQ(n.videos, 1);
  EXPECT_EQ(n.video_rows, 42);
  EXPECT_EQ(n.soundtrack_rows, 96);
  EXPECT_EQ(n.audio_clips, 1);
  EXPECT_EQ(n.audio_clip_rows, 120);
  EXPECT_EQ(n.target_video, 37 * 4);
  EXPECT_EQ(n.target_audio, 2 * 207);
}

TEST_F(Ref2vaGolden, DenoiseLoopMatchesStepByStep) {
  // The golden's own packed rows in (the noise is checked above), so each step is compared alone.
  pipeline::DenoiseRequest req;
  req.layout = &w_->plan.layout;
  req.text = w_->request.text_features;
  req.video_rows = golden_tensor(w_->golden, "step.0.video_rows");
  req.audio_rows = golden_tensor(w_->golden, "step.0.audio_rows");
  h3::CpuDenoiser denoiser(w_->transformer);
  const pipeline::PackedLayout& layout = w_->plan.layout;
  for (int64_t k = 1; k <= kSteps; ++k) {
    pipeline::H3Schedule v = w_->plan.video_schedule, a = w_->plan.audio_schedule;
    v.timesteps.resize(static_cast<size_t>(k));
    a.timesteps.resize(static_cast<size_t>(k));
    req.video_schedule = &v;
    req.audio_schedule = &a;
    auto out = pipeline::denoise(denoiser, req);
    ASSERT_TRUE(out.has_value()) << out.status().to_string();
    // The reference rows are never written.
    expect_equal_bytes(out->video_rows.slice(0, 0, layout.condition_video_rows),
                       req.video_rows.slice(0, 0, layout.condition_video_rows), "reference video rows");
    expect_equal_bytes(out->audio_rows.slice(0, 0, layout.condition_audio_rows),
                       req.audio_rows.slice(0, 0, layout.condition_audio_rows), "reference audio rows");
    if (k < kSteps) {
      const std::string s = "step." + std::to_string(k);
      EXPECT_LE(report(s + " video rows", out->video_rows, golden_tensor(w_->golden, s + ".video_rows")), 1e-5);
      EXPECT_LE(report(s + " audio rows", out->audio_rows, golden_tensor(w_->golden, s + ".audio_rows")), 1e-5);
      continue;
    }
    const pipeline::VideoGeometry& g = w_->plan.geometry;
    const Tensor target = out->video_rows.slice(0, layout.condition_video_rows, out->video_rows.dim(0));
    auto latents = pipeline::unpatchify_video_rows(target.contiguous(), 4, g.latent_frames, g.latent_height,
                                                   g.latent_width, {1, 2, 2});
    ASSERT_TRUE(latents.has_value());
    EXPECT_LE(report("final video latents", *latents, golden_tensor(w_->golden, "final.video_latents")), 1e-5);
    const Tensor target_audio = out->audio_rows.slice(0, layout.condition_audio_rows, out->audio_rows.dim(0));
    auto audio = pipeline::audio_rows_to_batch(target_audio.contiguous(), 2);  // [2, A, C]
    ASSERT_TRUE(audio.has_value());
    const Tensor want = golden_tensor(w_->golden, "final.audio_latents");  // [2, C, A]
    ASSERT_EQ(want.shape(), (Shape{2, audio->dim(2), audio->dim(1)}));
    Tensor want_t = Tensor::empty(audio->shape(), DType::kF32);
    for (int64_t b = 0; b < 2; ++b)
      for (int64_t t = 0; t < want.dim(2); ++t)
        for (int64_t c = 0; c < want.dim(1); ++c)
          want_t.data<float>()[(b * want.dim(2) + t) * want.dim(1) + c] =
              want.data<float>()[(b * want.dim(1) + c) * want.dim(2) + t];
    EXPECT_LE(report("final audio latents", audio->contiguous(), want_t), 1e-5);
  }
}

TEST_F(Ref2vaGolden, WholeRunDecodesAsDiffusers) {
  h3::CpuDenoiser denoiser(w_->transformer);
  pipeline::CpuVideoDecoder video(w_->video_vae);
  pipeline::CpuAudioDecoder audio(w_->audio_vae);
  std::vector<std::string> stages;
  pipeline::T2vaRunOptions options;
  options.progress = [&](const pipeline::T2vaProgress& p) {
    if (stages.empty() || stages.back() != p.stage) stages.push_back(p.stage);
  };
  pipeline::CpuVideoEncoder video_encoder(w_->video_encoder);
  pipeline::CpuAudioEncoder audio_encoder(w_->audio_encoder);
  auto r = pipeline::run_ref2va(denoiser, video, audio, video_encoder, audio_encoder,
                                {w_->request, w_->references}, w_->plan, options);
  ASSERT_TRUE(r.has_value()) << r.status().to_string();
  EXPECT_EQ(stages, (std::vector<std::string>{"reference encode", "denoise", "video decode", "audio decode"}));
  EXPECT_EQ(r->condition_rows, 54);
  EXPECT_EQ(r->condition_audio_rows, 216);
  EXPECT_GT(r->times.condition_encode_s, 0.0);
  ASSERT_EQ(r->frames.shape(), (Shape{kFrames, 3, 64, 64}));
  Tensor means = Tensor::empty({kFrames, 3}, DType::kF32);
  const float* px = r->frames.contiguous().data<float>();
  for (int64_t i = 0; i < kFrames * 3; ++i) {
    double s = 0;
    for (int64_t j = 0; j < 64 * 64; ++j) s += px[i * 64 * 64 + j];
    means.data<float>()[i] = static_cast<float>(s / (64 * 64));
  }
  EXPECT_LE(report("decoded frame means", means, golden_tensor(w_->golden, "decode.frames_mean")), 1e-5);
  for (int64_t f : {int64_t{0}, kFrames - 1}) {
    const std::string name = "decode.frame." + std::to_string(f);
    EXPECT_LE(report(name, r->frames.slice(0, f, f + 1).contiguous().view({3, 64, 64}), golden_tensor(w_->golden, name)),
              1e-5);
  }
  ASSERT_EQ(r->waveform.shape(), (Shape{2, 800 * 207}));
  const Tensor wave = r->waveform.contiguous();
  EXPECT_LE(report("waveform head", wave.slice(1, 0, 2048).contiguous(), golden_tensor(w_->golden, "decode.audio_head")),
            1e-5);
  EXPECT_LE(report("waveform means per latent", mean_per_hop(wave), golden_tensor(w_->golden, "decode.audio_mean_per_latent")),
            1e-5);
  EXPECT_LE(report("waveform tail", wave.slice(1, 800 * 207 - 2048, 800 * 207).contiguous(),
                   golden_tensor(w_->golden, "decode.audio_tail")),
            1e-5);
}

}  // namespace
}  // namespace orochi
