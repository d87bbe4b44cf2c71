// The ref2va workflow's own checks (pipeline/ref2va.h, t2va's plan and inputs with references), on
// in-memory media and the tiny demo model: each reference's geometry from its normalized media, the
// `match` policy, every refusal with what to change (a 5:1 image, an empty video, three audio
// channels, a target that is not 17n + 5, keyframes and references together, tags that do not fit,
// conditions that do not fit the plan, references that are not the plan's).
#include <gtest/gtest.h>

#include "models/h3/denoiser.h"
#include "pipeline/decoders.h"
#include "pipeline/ref2va.h"
#include "pipeline/t2va_models.h"

namespace orochi::pipeline {
namespace {

bool says(const Status& s, const std::string& what) { return s.message().find(what) != std::string::npos; }

io::RgbImage image(int64_t w, int64_t h) {
  io::RgbImage im;
  im.width = w;
  im.height = h;
  im.rgb.resize(static_cast<size_t>(w * h * 3));
  for (size_t i = 0; i < im.rgb.size(); ++i) im.rgb[i] = static_cast<uint8_t>(i * 7 % 251);
  return im;
}

Ref2vaSource image_source(int64_t w, int64_t h) {
  Ref2vaSource s;
  s.image = image(w, h);
  return s;
}

Ref2vaSource video_source(int64_t frames, int64_t w, int64_t h, double fps, int channels = 1, int64_t samples = 0) {
  Ref2vaSource s;
  s.kind = ReferenceKind::kVideo;
  s.video.frames = frames;
  s.video.width = w;
  s.video.height = h;
  s.video.rgb.assign(static_cast<size_t>(frames * w * h * 3), 90);
  s.fps = fps;
  if (samples > 0) s.audio = io::DecodedAudio{44100, Tensor::zeros({channels, samples}, DType::kF32)};
  return s;
}

Ref2vaSource audio_source(int channels, int64_t samples, int rate = 16000) {
  Ref2vaSource s;
  s.kind = ReferenceKind::kAudio;
  s.audio = io::DecodedAudio{rate, Tensor::zeros({channels, samples}, DType::kF32)};
  return s;
}

ReferenceRules small_rules() {
  ReferenceRules rules;
  rules.canvas = reference::CanvasRule{32, 64, 64 * 112};
  rules.image_short_edge = 64;
  return rules;
}

TEST(Ref2va, GeometryFollowsTheNormalizedMedia) {
  auto img = prepare_ref2va_reference(image_source(80, 48), 124, {64, 64}, small_rules());
  ASSERT_TRUE(img.has_value()) << img.status().to_string();
  EXPECT_EQ(img->geometry().latent_height, 4);  // 96x64
  EXPECT_EQ(img->geometry().latent_width, 6);
  EXPECT_EQ(img->geometry().latent_frames, 1);
  EXPECT_FALSE(img->has_audio());
  // 48 frames at 24 fps, snapped down to 39 (two 17-frame clips + 5): 12 latents; 1 s of 44.1 kHz
  // mono -> 32000 stereo samples: 40 latents.
  auto vid = prepare_ref2va_reference(video_source(48, 80, 48, 24.0, 1, 44100), 124, {64, 64}, small_rules());
  ASSERT_TRUE(vid.has_value()) << vid.status().to_string();
  EXPECT_EQ(vid->frames.frames, 48);
  EXPECT_EQ(vid->geometry().latent_frames, 12);
  EXPECT_EQ(vid->geometry().audio_latents, 40);
  EXPECT_EQ(vid->waveform.shape(), (Shape{2, 32000}));
  // Fewer frames than one clip stay (D pads them with the last one): 10 frames, 2 latents.
  auto brief = prepare_ref2va_reference(video_source(10, 64, 64, 24.0), 124, {64, 64}, small_rules());
  ASSERT_TRUE(brief.has_value()) << brief.status().to_string();
  EXPECT_EQ(brief->geometry().latent_frames, 2);
  // A clip longer than the target is cut to its duration at its own rate: 124 / 24 s of 16 kHz.
  auto clip = prepare_ref2va_reference(audio_source(2, 16000 * 8), 124, {64, 64}, small_rules());
  ASSERT_TRUE(clip.has_value()) << clip.status().to_string();
  EXPECT_EQ(clip->waveform.dim(1), 165332);  // ceil(int(124 / 24 * 16000) * 2)
  EXPECT_EQ(clip->geometry().audio_latents, 207);
}

TEST(Ref2va, MatchNeverUpscales) {
  ReferenceRules rules = small_rules();
  rules.policy = reference::ImageSizePolicy::kMatch;
  // A large image comes down to the target's area; a small one keeps its size.
  auto big = prepare_ref2va_reference(image_source(640, 384), 124, {64, 64}, rules);
  ASSERT_TRUE(big.has_value());
  EXPECT_LE(big->image.width * big->image.height, 96 * 64);
  auto small = prepare_ref2va_reference(image_source(32, 64), 124, {256, 256}, rules);
  ASSERT_TRUE(small.has_value());
  EXPECT_EQ(small->image.width, 32);
  EXPECT_EQ(small->image.height, 64);
  // A video larger than its own canvas comes down to it; a smaller one is not upscaled.
  auto large = prepare_ref2va_reference(video_source(24, 320, 192, 24.0), 124, {64, 64}, rules);
  ASSERT_TRUE(large.has_value());
  EXPECT_EQ(large->frames.width, 96);
  EXPECT_EQ(large->frames.height, 64);
  auto tiny = prepare_ref2va_reference(video_source(24, 64, 32, 24.0), 124, {64, 64}, rules);
  ASSERT_TRUE(tiny.has_value());
  EXPECT_EQ(tiny->frames.width, 64);
  EXPECT_EQ(tiny->frames.height, 32);
}

TEST(Ref2va, BadReferencesAreRefusedWithWhatToChange) {
  const ReferenceRules rules = small_rules();
  auto wide = prepare_ref2va_reference(image_source(500, 100), 124, {64, 64}, rules);
  ASSERT_FALSE(wide.has_value());
  EXPECT_TRUE(says(wide.status(), "1:4 and 4:1")) << wide.status().to_string();
  auto empty = prepare_ref2va_reference(video_source(0, 64, 64, 24.0), 124, {64, 64}, rules);
  ASSERT_FALSE(empty.has_value());
  EXPECT_TRUE(says(empty.status(), "at least one frame")) << empty.status().to_string();
  auto surround = prepare_ref2va_reference(audio_source(3, 32000), 124, {64, 64}, rules);
  ASSERT_FALSE(surround.has_value());
  EXPECT_TRUE(says(surround.status(), "mono or stereo")) << surround.status().to_string();
  auto silent = prepare_ref2va_reference(audio_source(2, 0), 124, {64, 64}, rules);
  EXPECT_FALSE(silent.has_value());
  Ref2vaSource no_samples;
  no_samples.kind = ReferenceKind::kAudio;
  EXPECT_FALSE(prepare_ref2va_reference(no_samples, 124, {64, 64}, rules).has_value());
  auto frames = prepare_ref2va_reference(image_source(64, 64), 120, {64, 64}, rules);
  ASSERT_FALSE(frames.has_value());
  EXPECT_TRUE(says(frames.status(), "17n + 5 (e.g. 124)")) << frames.status().to_string();
  auto rate = prepare_ref2va_reference(video_source(24, 64, 64, 0.0), 124, {64, 64}, rules);
  ASSERT_FALSE(rate.has_value());
  EXPECT_TRUE(says(rate.status(), "frame rate")) << rate.status().to_string();
}

struct Demo {
  T2vaModels models = demo_t2va_models(11);
  std::vector<Ref2vaReference> references;
  T2vaShape shape;

  Demo() {
    references.push_back(*prepare_ref2va_reference(image_source(80, 48), 124, {64, 64}, small_rules()));
    references.push_back(*prepare_ref2va_reference(audio_source(1, 8000), 124, {64, 64}, small_rules()));
    shape.width = 64;
    shape.height = 64;
    shape.frames = 124;
    shape.steps = 1;
    shape.text_rows = 4;
    shape.references = reference_geometry(references);
  }
};

TEST(Ref2va, PlanChecksItsShape) {
  Demo d;
  const h3::H3Config& config = d.models.transformer.config;
  auto plan = plan_ref2va(config, d.shape);
  ASSERT_TRUE(plan.has_value()) << plan.status().to_string();
  EXPECT_EQ(plan->layout.condition_video_rows, 6);
  EXPECT_EQ(plan->layout.condition_audio_rows, 2 * 20);
  T2vaShape none = d.shape;
  none.references.clear();
  EXPECT_TRUE(says(plan_ref2va(config, none).status(), "at least one reference"));
  T2vaShape both = d.shape;
  both.keyframes = {KeyframeAnchor::kFirst};
  EXPECT_TRUE(says(plan_t2va(config, both).status(), "not both"));
  T2vaShape tags = d.shape;
  tags.text_tags = {1, 0, 1};
  EXPECT_TRUE(says(plan_t2va(config, tags).status(), "one tag per row"));
  tags.text_tags = {1, 0, 0, 1};
  auto tagged = plan_t2va(config, tags);
  ASSERT_TRUE(tagged.has_value());
  EXPECT_EQ(tagged->layout.token_tags.data<int64_t>()[1], 0);
  // t2va takes tags too (a presentation's vision rows).
  T2vaShape t2va = tags;
  t2va.references.clear();
  auto plain = plan_t2va(config, t2va);
  ASSERT_TRUE(plain.has_value());
  EXPECT_EQ(plain->layout.token_tags.data<int64_t>()[2], 0);
  EXPECT_EQ(plain->layout.token_tags.data<int64_t>()[3], 1);
}

TEST(Ref2va, ConditionsThatDoNotFitThePlanAreRefused) {
  Demo d;
  const h3::H3Config& config = d.models.transformer.config;
  auto plan = plan_ref2va(config, d.shape);
  ASSERT_TRUE(plan.has_value());
  T2vaRequest r;
  r.width = 64;
  r.height = 64;
  r.frames = 124;
  r.steps = 1;
  r.text_features = Tensor::zeros({4, config.text_dim}, DType::kF32);
  auto missing = denoise_inputs(r, *plan);
  ASSERT_FALSE(missing.has_value());
  EXPECT_TRUE(says(missing.status(), "1 visual reference condition(s), the request carries 0")) << missing.status().to_string();
  r.condition_latents = {Tensor::zeros({config.in_channels, 1, 4, 4}, DType::kF32)};  // the target's grid, not its own
  EXPECT_TRUE(says(denoise_inputs(r, *plan).status(), "reference audio block")) << denoise_inputs(r, *plan).status().to_string();
  r.condition_audio_rows = {Tensor::zeros({40, config.audio_in_channels}, DType::kF32)};
  auto shape = denoise_inputs(r, *plan);
  ASSERT_FALSE(shape.has_value());
  EXPECT_TRUE(says(shape.status(), "visual reference 1's latent must be f32 [4, 1, 4, 6]")) << shape.status().to_string();
  r.condition_latents = {Tensor::zeros({config.in_channels, 1, 4, 6}, DType::kF32)};
  r.condition_audio_rows = {Tensor::zeros({38, config.audio_in_channels}, DType::kF32)};
  EXPECT_TRUE(says(denoise_inputs(r, *plan).status(), "reference audio block 1 must be f32 [40, 8]"));
  r.condition_audio_rows = {Tensor::zeros({40, config.audio_in_channels}, DType::kF32)};
  auto ok = denoise_inputs(r, *plan);
  ASSERT_TRUE(ok.has_value()) << ok.status().to_string();
  EXPECT_EQ(ok->audio_rows.dim(0), 40 + 2 * 207);
  // The reference audio rows go in as given (clean), before the target's noise.
  EXPECT_EQ(ok->audio_rows.data<float>()[0], 0.0f);

  // run_ref2va refuses references that are not the plan's, before any encode.
  h3::CpuDenoiser denoiser(d.models.transformer);
  CpuVideoDecoder video(d.models.video_vae);
  CpuAudioDecoder audio(d.models.audio_vae);
  CpuVideoEncoder video_encoder(*d.models.video_encoder);
  CpuAudioEncoder audio_encoder(*d.models.audio_encoder);
  Ref2vaRequest request{r, {d.references[0]}};
  auto fewer = run_ref2va(denoiser, video, audio, video_encoder, audio_encoder, request, *plan);
  ASSERT_FALSE(fewer.has_value());
  EXPECT_TRUE(says(fewer.status(), "2 reference(s), the request 1")) << fewer.status().to_string();
  request.references = {d.references[0], d.references[0]};
  auto other = run_ref2va(denoiser, video, audio, video_encoder, audio_encoder, request, *plan);
  ASSERT_FALSE(other.has_value());
  EXPECT_TRUE(says(other.status(), "reference 2 is not the one the plan was made for")) << other.status().to_string();
}

}  // namespace
}  // namespace orochi::pipeline
