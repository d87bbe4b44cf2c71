// fl2va on the CPU with the built-in demo model: the packed inputs of a first + last keyframe
// request (rows, tags, positions, timestep indices, conditioning rows = the encoded keyframe
// latents noised to 0.999), a whole run with the demo transformer (frames + waveform), and a run
// with an oracle denoiser that drives every target frame to the first keyframe's latent, whose
// output must be the decode of that latent (the conditioning rows are cut off, the target rows
// unpacked in order).
#include <gtest/gtest.h>

#include <cmath>
#include <algorithm>
#include <cstdio>
#include <cstring>

#include "core/random.h"
#include "models/h3/denoiser.h"
#include "models/h3_video_vae/encoder_posterior.h"
#include "models/h3_video_vae/pixels.h"
#include "pipeline/decoders.h"
#include "pipeline/denoise_loop.h"
#include "pipeline/fl2va.h"
#include "pipeline/latent_packing.h"
#include "pipeline/t2va_models.h"
#include "pipeline/text_features.h"
#include "support/compare.h"

namespace orochi::pipeline {
namespace {

const T2vaModels& demo() {
  static const T2vaModels m = demo_t2va_models(20261129);
  return m;
}

// A smooth colour picture with an edge, so the keyframes are not flat.
io::RgbImage picture(int64_t width, int64_t height, int salt) {
  io::RgbImage im;
  im.width = width;
  im.height = height;
  im.rgb.resize(static_cast<size_t>(width * height * 3));
  for (int64_t y = 0; y < height; ++y)
    for (int64_t x = 0; x < width; ++x) {
      uint8_t* p = im.rgb.data() + (y * width + x) * 3;
      p[0] = static_cast<uint8_t>((x * 255) / width);
      p[1] = static_cast<uint8_t>((y * 255) / height);
      p[2] = static_cast<uint8_t>(x > width / 2 ? 200 - salt : 40 + salt);
    }
  return im;
}

// The demo's canvas rule (short edge 192, at most 320·192 px): a 100x60 keyframe gives 320x192.
const reference::CanvasRule kDemoRule{32, 192, 192 * 320};

struct Fixture {
  Fl2vaKeyframes keyframes;
  T2vaPlan plan;
  T2vaRequest request;
};

Fixture make_fixture(bool last_too) {
  Fixture f;
  std::vector<Fl2vaKeyframe> in;
  if (last_too) in.push_back({KeyframeAnchor::kLast, picture(60, 80, 30)});  // order is not packed order
  in.push_back({KeyframeAnchor::kFirst, picture(100, 60, 0)});
  Expected<Fl2vaKeyframes> k = prepare_fl2va_keyframes(in, {}, kDemoRule);
  EXPECT_TRUE(k.has_value()) << k.status().to_string();
  f.keyframes = std::move(k).value();
  T2vaShape shape;
  shape.width = f.keyframes.canvas.width;
  shape.height = f.keyframes.canvas.height;
  shape.frames = 22;
  shape.steps = 2;
  shape.text_rows = 8;
  shape.keyframes = f.keyframes.anchors;
  Expected<T2vaPlan> plan = plan_fl2va(demo().transformer.config, shape);
  EXPECT_TRUE(plan.has_value()) << plan.status().to_string();
  f.plan = std::move(plan).value();
  f.request.width = shape.width;
  f.request.height = shape.height;
  f.request.frames = shape.frames;
  f.request.steps = shape.steps;
  f.request.seed = 7;
  f.request.text_features = random_text_features(8, demo().transformer.config.text_dim, 7);
  return f;
}

TEST(Fl2va, KeyframesGoOntoTheCanvasInPackedOrder) {
  const Fixture f = make_fixture(true);
  EXPECT_EQ(f.keyframes.canvas, (reference::Size{320, 192}));
  ASSERT_EQ(f.keyframes.anchors, (std::vector<KeyframeAnchor>{KeyframeAnchor::kFirst, KeyframeAnchor::kLast}));
  for (const io::RgbImage& im : f.keyframes.images) {
    EXPECT_EQ(im.width, 320);
    EXPECT_EQ(im.height, 192);
  }
  // Bad sets of keyframes.
  EXPECT_EQ(prepare_fl2va_keyframes({}).status().code(), ErrorCode::kInvalidArgument);
  EXPECT_EQ(prepare_fl2va_keyframes({{KeyframeAnchor::kFirst, picture(10, 10, 0)},
                                     {KeyframeAnchor::kFirst, picture(10, 10, 0)}})
                .status()
                .code(),
            ErrorCode::kInvalidArgument);
  EXPECT_EQ(prepare_fl2va_keyframes({{KeyframeAnchor::kFirst, picture(100, 20, 0)}}).status().code(),
            ErrorCode::kInvalidArgument);  // 5:1
  // A last keyframe alone is a request the reference takes: its canvas comes from it, stretched.
  Expected<Fl2vaKeyframes> last_only = prepare_fl2va_keyframes({{KeyframeAnchor::kLast, picture(60, 80, 0)}}, {}, kDemoRule);
  ASSERT_TRUE(last_only.has_value()) << last_only.status().to_string();
  EXPECT_EQ(last_only->anchors, std::vector<KeyframeAnchor>{KeyframeAnchor::kLast});
  EXPECT_EQ(last_only->canvas, (reference::Size{192, 256}));
}

TEST(Fl2va, PackedInputsHoldTheEncodedKeyframes) {
  Fixture f = make_fixture(true);
  const PackedLayout& layout = f.plan.layout;
  const VideoGeometry& g = f.plan.geometry;
  const int64_t L = 8, rpf = (g.latent_height / 2) * (g.latent_width / 2);
  ASSERT_EQ(rpf, 60);
  ASSERT_EQ(g.latent_frames, 7);
  EXPECT_EQ(layout.condition_video_rows, 2 * rpf);
  EXPECT_EQ(layout.rows, L + 2 * rpf + 2 * g.audio_latents + g.latent_frames * rpf);
  EXPECT_EQ(layout.video_indices.numel(), (2 + g.latent_frames) * rpf);
  // Tags: text 1, keyframe rows 0 (video), target audio 2, target video 0.
  const int64_t* tags = layout.token_tags.data<int64_t>();
  const float* pos = layout.positions.data<float>();
  for (int64_t s = 0; s < layout.rows; ++s) {
    const int64_t want = s < L ? 1 : (s >= L + 2 * rpf && s < L + 2 * rpf + 2 * g.audio_latents) ? 2 : 0;
    ASSERT_EQ(tags[s], want) << "row " << s;
  }
  // The video index list starts with the keyframe rows, right after the text.
  for (int64_t i = 0; i < 2 * rpf; ++i) ASSERT_EQ(layout.video_indices.data<int64_t>()[i], L + i);
  // Positions: the first keyframe at t = L, the last at L + (5/3)(F − 1), both on the target's grid
  // (the same (h, w) as target frame 0).
  const int64_t target0 = L + 2 * rpf + 2 * g.audio_latents;
  for (int64_t j = 0; j < rpf; ++j) {
    EXPECT_EQ(pos[(L + j) * 3], static_cast<float>(L));
    EXPECT_NEAR(pos[(L + rpf + j) * 3], L + 5.0 / 3.0 * (g.frames - 1), 1e-4);
    for (int a = 1; a < 3; ++a) {
      EXPECT_EQ(pos[(L + j) * 3 + a], pos[(target0 + j) * 3 + a]);
      EXPECT_EQ(pos[(L + rpf + j) * 3 + a], pos[(target0 + j) * 3 + a]);
    }
  }
  // Timestep indices: every step holds the keyframe rows at max(t_v, 0.999), the target video and
  // the text at t_v, the target audio at t_a.
  const TimestepPlan ts = plan_timesteps(layout, f.plan.video_schedule, f.plan.audio_schedule);
  ASSERT_EQ(ts.steps(), 2);
  for (int64_t i = 0; i < ts.steps(); ++i) {
    const int64_t* idx = ts.step_indices[static_cast<size_t>(i)].data<int64_t>();
    const float* t = ts.timesteps.data<float>();
    const float tv = f.plan.video_schedule.timesteps[static_cast<size_t>(i)];
    const float ta = f.plan.audio_schedule.timesteps[static_cast<size_t>(i)];
    for (int64_t s = 0; s < layout.rows; ++s) {
      const float want = s < L ? tv : s < L + 2 * rpf ? std::max(tv, kConditionTimestep) : s < target0 ? ta : tv;
      ASSERT_EQ(t[idx[s]], want) << "step " << i << " row " << s;
    }
  }

  // The conditioning rows: each keyframe encoded (one frame, posterior seed 42, fp16, normalized),
  // noised once as 0.999·z + 0.001·ε from the request's condition stream, patchified.
  CpuVideoEncoder encoder(*demo().video_encoder);
  Expected<std::vector<Tensor>> z = encode_keyframes(encoder, f.keyframes.images);
  ASSERT_TRUE(z.has_value()) << z.status().to_string();
  ASSERT_EQ(z->size(), 2u);
  const Shape latent = {demo().transformer.config.in_channels, 1, g.latent_height, g.latent_width};
  for (size_t i = 0; i < 2; ++i) {
    EXPECT_EQ((*z)[i].shape(), latent);
    Expected<Tensor> direct = h3vae::encode_condition(*demo().video_encoder, keyframe_pixels(f.keyframes.images[i]));
    ASSERT_TRUE(direct.has_value());
    EXPECT_TENSOR_CLOSE((*z)[i], *direct, 0.0);
  }
  f.request.condition_latents = *z;
  Expected<DenoiseRequest> inputs = denoise_inputs(f.request, f.plan);
  ASSERT_TRUE(inputs.has_value()) << inputs.status().to_string();
  ASSERT_EQ(inputs->video_rows.dim(0), (2 + g.latent_frames) * rpf);
  const PatchSize patch{1, 2, 2};
  for (size_t i = 0; i < 2; ++i) {
    const Tensor noise = normal_tensor(latent, 7, kConditionNoiseStream + i);
    Expected<Tensor> want = patchify_video_latents(h3_scale_noise((*z)[i], kConditionTimestep, noise), patch);
    ASSERT_TRUE(want.has_value());
    const Tensor got = inputs->video_rows.slice(0, static_cast<int64_t>(i) * rpf, static_cast<int64_t>(i + 1) * rpf).contiguous();
    EXPECT_TENSOR_CLOSE(got, *want, 0.0);  // bit-identical
    Expected<Tensor> clean = patchify_video_latents((*z)[i], patch);
    EXPECT_TENSOR_CLOSE(got, *clean, 5e-3);  // the anchors are 99.9 % the keyframe
  }
  // The target's noise is t2va's: the same rows a keyframe-less request of this seed draws.
  const Tensor target = inputs->video_rows.slice(0, 2 * rpf, inputs->video_rows.dim(0)).contiguous();
  Expected<Tensor> t2va_noise = patchify_video_latents(
      normal_tensor({latent[0], g.latent_frames, g.latent_height, g.latent_width}, 7, kVideoNoiseStream), patch);
  EXPECT_TENSOR_CLOSE(target, *t2va_noise, 0.0);

  // Wrong latents for the plan are refused by name.
  f.request.condition_latents.pop_back();
  EXPECT_EQ(denoise_inputs(f.request, f.plan).status().code(), ErrorCode::kShapeMismatch);
}

// Drives the target video rows to `target` (rows [N, width] of the whole video stream) and the
// audio to zero, exactly at the last step: v = (x0 − x) / (1 − t).
class OracleDenoiser final : public models::Denoiser {
 public:
  OracleDenoiser(const h3::H3Config& config, Tensor target) : config_(config), target_(std::move(target)) {}
  std::string device_name() const override { return "oracle"; }
  models::SequenceWidths widths() const override { return h3::sequence_widths(config_); }
  Status prepare(const Tensor& timesteps) override {
    table_ = timesteps.clone();
    return Status::ok();
  }
  Expected<std::vector<Tensor>> forward(const models::PackedSequence& in) override {
    std::vector<Tensor> out;
    for (size_t k = 0; k < in.streams.size(); ++k) {
      const Tensor& x = in.streams[k];
      Tensor v = Tensor::empty(x.shape(), DType::kF32);
      const int64_t width = x.dim(1);
      for (int64_t r = 0; r < x.dim(0); ++r) {
        const int64_t row = in.stream_indices[k].data<int64_t>()[r];
        const float t = table_.data<float>()[in.timestep_indices.data<int64_t>()[row]];
        for (int64_t c = 0; c < width; ++c) {
          const float x0 = k == 0 ? target_.data<float>()[r * width + c] : 0.0f;
          v.data<float>()[r * width + c] = (x0 - x.data<float>()[r * width + c]) / (1.0f - t);
        }
      }
      out.push_back(std::move(v));
    }
    return out;
  }

 private:
  h3::H3Config config_;
  Tensor target_, table_;
};

double rel_l2(const Tensor& a, const Tensor& b) {
  double num = 0, den = 0;
  for (int64_t i = 0; i < a.numel(); ++i) {
    const double d = a.data<float>()[i] - b.data<float>()[i];
    num += d * d;
    den += static_cast<double>(b.data<float>()[i]) * b.data<float>()[i];
  }
  return std::sqrt(num / std::max(den, 1e-30));
}

// A latent frame [C, 1, h, w] repeated over T latent frames: [C, T, h, w] (the decoder takes 5n + 2
// latent frames, so a keyframe's own decode is the decode of it held still).
Tensor still_latent(const Tensor& z, int64_t frames) {
  const int64_t C = z.dim(0), plane = z.dim(2) * z.dim(3);
  Tensor still = Tensor::empty({C, frames, z.dim(2), z.dim(3)}, DType::kF32);
  for (int64_t c = 0; c < C; ++c)
    for (int64_t t = 0; t < frames; ++t)
      std::memcpy(still.data<float>() + (c * frames + t) * plane, z.data<float>() + c * plane,
                  static_cast<size_t>(plane) * sizeof(float));
  return still;
}

// The first pixel frame of a decode: [3, H, W].
Tensor first_frame(const Tensor& frames) { return frames.slice(0, 0, 1).contiguous(); }

TEST(Fl2va, OracleRunDecodesTheKeyframeLatent) {
  const Fixture f = make_fixture(true);
  const VideoGeometry& g = f.plan.geometry;
  const int64_t rpf = f.plan.layout.rows_per_frame;
  CpuVideoEncoder encoder(*demo().video_encoder);
  Expected<std::vector<Tensor>> z = encode_keyframes(encoder, f.keyframes.images);
  ASSERT_TRUE(z.has_value());
  // Every target latent frame = the first keyframe's latent.
  const Tensor still = still_latent((*z)[0], g.latent_frames);
  Expected<Tensor> still_rows = patchify_video_latents(still, {1, 2, 2});
  ASSERT_TRUE(still_rows.has_value());
  Tensor target = Tensor::empty({(2 + g.latent_frames) * rpf, still_rows->dim(1)}, DType::kF32);
  std::memcpy(target.data<float>() + 2 * rpf * still_rows->dim(1), still_rows->data<float>(), still_rows->nbytes());

  OracleDenoiser oracle(demo().transformer.config, target);
  CpuVideoDecoder video(demo().video_vae);
  CpuAudioDecoder audio(demo().audio_vae);
  Fl2vaRequest request{f.request, f.keyframes.images};
  std::vector<std::string> stages;
  T2vaRunOptions options;
  options.progress = [&](const T2vaProgress& p) {
    if (stages.empty() || stages.back() != p.stage) stages.push_back(p.stage);
  };
  Expected<T2vaResult> r = run_fl2va(oracle, video, audio, encoder, request, f.plan, options);
  ASSERT_TRUE(r.has_value()) << r.status().to_string();
  EXPECT_EQ(stages.front(), "keyframe encode");
  EXPECT_EQ(r->condition_rows, 2 * rpf);
  EXPECT_GT(r->times.condition_encode_s, 0.0);
  ASSERT_EQ(r->frames.shape(), (Shape{22, 3, 192, 320}));

  // The run's video is the decode of the still latent: the keyframe rows were cut off and the
  // target rows unpacked in order.
  Expected<Tensor> decoded = video.decode(still, nullptr);
  ASSERT_TRUE(decoded.has_value());
  Expected<Tensor> want = h3vae::to_pixel_frames(*decoded);
  ASSERT_TRUE(want.has_value());
  const double whole = rel_l2(r->frames, *want);
  const double first = rel_l2(first_frame(r->frames), first_frame(*want));
  std::printf("oracle fl2va: frames vs the keyframe latent's decode rel L2 %.3g (first frame %.3g)\n", whole, first);
  EXPECT_LT(whole, 1e-5);
  EXPECT_LT(first, 1e-5);
}

TEST(Fl2va, DemoRunMakesFramesAndWaveform) {
  const Fixture f = make_fixture(false);
  h3::CpuDenoiser denoiser(demo().transformer);
  CpuVideoDecoder video(demo().video_vae);
  CpuAudioDecoder audio(demo().audio_vae);
  CpuVideoEncoder encoder(*demo().video_encoder);
  Expected<T2vaResult> r = run_fl2va(denoiser, video, audio, encoder, {f.request, f.keyframes.images}, f.plan);
  ASSERT_TRUE(r.has_value()) << r.status().to_string();
  EXPECT_EQ(r->frames.shape(), (Shape{22, 3, 192, 320}));
  EXPECT_EQ(r->waveform.dim(0), 2);
  EXPECT_EQ(r->waveform.dim(1), 800 * f.plan.geometry.audio_latents);
  EXPECT_EQ(r->condition_rows, f.plan.layout.rows_per_frame);
  // The demo transformer's weights are random: its first frame is not the keyframe. The distance
  // is printed for the record.
  Expected<std::vector<Tensor>> z = encode_keyframes(encoder, f.keyframes.images);
  ASSERT_TRUE(z.has_value());
  Expected<Tensor> alone = video.decode(still_latent((*z)[0], f.plan.geometry.latent_frames), nullptr);
  ASSERT_TRUE(alone.has_value());
  Expected<Tensor> alone_px = h3vae::to_pixel_frames(*alone);
  ASSERT_TRUE(alone_px.has_value());
  std::printf("demo fl2va (random transformer): first frame vs the keyframe latent's decode rel L2 %.3g\n",
              rel_l2(first_frame(r->frames), first_frame(*alone_px)));
  // A run without its keyframes is refused.
  EXPECT_FALSE(run_fl2va(denoiser, video, audio, encoder, {f.request, {}}, f.plan).has_value());
}

}  // namespace
}  // namespace orochi::pipeline
