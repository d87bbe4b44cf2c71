// The engine's reference-encode phase (Engine::encode_conditions) on the CPU: the demo's keyframes
// and references through the encoder interfaces (pipeline/encoders.h) give exactly what the
// pipeline's encodes over the demo's host weights give; a t2va plan encodes nothing; the random
// encoder weights' rule (encoder_random.h, which --random-weights draws on the GPU) is the demo's,
// stream for stream; and --random-weights' text rows take the presentation's length.
#include <gtest/gtest.h>

#include "engine/engine.h"
#include "engine/random_presentation.h"
#include "models/h3_audio_vae/encoder_random.h"
#include "models/h3_video_vae/encoder_random.h"
#include "core/random.h"
#include "pipeline/fl2va.h"
#include "pipeline/ref2va.h"
#include "support/paths.h"

namespace orochi::engine {
namespace {

using Kind = ReferenceInput::Kind;

std::string ref2va_media(const std::string& name) { return testing::test_data_dir() + "/h3_ref2va/" + name; }
std::string image(const std::string& name) { return testing::test_data_dir() + "/reference_media/images/" + name; }

std::unique_ptr<Engine> demo_engine() {
  Expected<std::unique_ptr<Engine>> e = Engine::open(ModelSource{}, EngineOptions{.device = "cpu"});
  EXPECT_TRUE(e.has_value()) << e.status().to_string();
  return std::move(e).value();
}

GenerateRequest request_with(std::vector<ReferenceInput> refs) {
  GenerateRequest r;
  r.frames = 124;
  r.steps = 2;
  r.text_rows = 8;
  r.references = std::move(refs);
  return r;
}

void expect_bit_equal(const std::vector<Tensor>& got, const std::vector<Tensor>& want, const char* what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  for (size_t i = 0; i < got.size(); ++i) {
    ASSERT_EQ(got[i].shape(), want[i].shape()) << what << " " << i;
    const Tensor a = got[i].contiguous(), b = want[i].contiguous();
    EXPECT_EQ(std::memcmp(a.data<float>(), b.data<float>(), a.nbytes()), 0) << what << " " << i;
  }
}

TEST(EngineEncode, Ref2vaReferencesAsThePipelineEncodesThem) {
  if (!io::media_input_supported()) GTEST_SKIP() << "this build reads no media files";
  std::unique_ptr<Engine> engine = demo_engine();
  Expected<RunPlan> plan = engine->plan(request_with({{Kind::kImage, ref2va_media("image_wide.png")},
                                                      {Kind::kVideo, ref2va_media("video.mov")},
                                                      {Kind::kAudio, ref2va_media("clip.wav")}}));
  ASSERT_TRUE(plan.has_value()) << plan.status().to_string();
  std::vector<std::string> stages;
  Expected<EncodedConditions> got = engine->encode_conditions(*plan, [&](const Progress& p) { stages.push_back(p.stage); });
  ASSERT_TRUE(got.has_value()) << got.status().to_string();
  EXPECT_EQ(got->device, "CPU");
  EXPECT_GT(got->encode_s, 0.0);
  EXPECT_EQ(stages, (std::vector<std::string>(3, "reference encode")));

  const pipeline::T2vaModels demo = pipeline::demo_t2va_models(kDemoWeightSeed);
  pipeline::CpuVideoEncoder video(*demo.video_encoder);
  pipeline::CpuAudioEncoder audio(*demo.audio_encoder);
  Expected<pipeline::Ref2vaConditions> want = pipeline::encode_ref2va_references(video, audio, plan->references);
  ASSERT_TRUE(want.has_value()) << want.status().to_string();
  expect_bit_equal(got->video_latents, want->video_latents, "video latents");
  expect_bit_equal(got->audio_rows, want->audio_rows, "audio rows");
  ASSERT_EQ(got->video_latents.size(), 2u);   // the image, the video
  ASSERT_EQ(got->audio_rows.size(), 2u);      // the video's soundtrack, the clip

  // A cancel before the first reference stops the phase.
  std::atomic<bool> cancel{true};
  Expected<EncodedConditions> stopped = engine->encode_conditions(*plan, nullptr, &cancel);
  ASSERT_FALSE(stopped.has_value());
  EXPECT_EQ(stopped.status().code(), ErrorCode::kCancelled);
}

TEST(EngineEncode, Fl2vaKeyframesAndT2vaNothing) {
  if (!io::media_input_supported()) GTEST_SKIP() << "this build reads no media files";
  std::unique_ptr<Engine> engine = demo_engine();
  GenerateRequest r = request_with({{Kind::kFirstFrame, image("rgb_odd.png")}, {Kind::kLastFrame, image("rgb_odd.png")}});
  Expected<RunPlan> plan = engine->plan(r);
  ASSERT_TRUE(plan.has_value()) << plan.status().to_string();
  Expected<EncodedConditions> got = engine->encode_conditions(*plan);
  ASSERT_TRUE(got.has_value()) << got.status().to_string();
  const pipeline::T2vaModels demo = pipeline::demo_t2va_models(kDemoWeightSeed);
  pipeline::CpuVideoEncoder video(*demo.video_encoder);
  Expected<std::vector<Tensor>> want = pipeline::encode_keyframes(video, plan->keyframes);
  ASSERT_TRUE(want.has_value()) << want.status().to_string();
  expect_bit_equal(got->video_latents, *want, "keyframe latents");
  EXPECT_TRUE(got->audio_rows.empty());

  Expected<RunPlan> t2va = engine->plan(request_with({}));
  ASSERT_TRUE(t2va.has_value()) << t2va.status().to_string();
  Expected<EncodedConditions> none = engine->encode_conditions(*t2va);
  ASSERT_TRUE(none.has_value()) << none.status().to_string();
  EXPECT_TRUE(none->video_latents.empty());
  EXPECT_TRUE(none->audio_rows.empty());
  EXPECT_EQ(none->encode_s, 0.0);
}

// The host-drawn N(mean, std) the demo uses: what fill_normal draws on the GPU, element for element.
Expected<Tensor> cpu_draw(const Shape& shape, uint64_t seed, uint64_t stream, float mean, float stddev) {
  Tensor t = normal_tensor(shape, seed, stream);
  for (int64_t i = 0; i < t.numel(); ++i) t.data<float>()[i] = mean + stddev * t.data<float>()[i];
  return t;
}

TEST(EngineEncode, RandomEncoderRuleIsTheDemos) {
  const uint64_t seed = kDemoWeightSeed;
  const pipeline::T2vaModels demo = pipeline::demo_t2va_models(seed);
  Expected<h3vae::EncoderWeights> v = h3vae::random_encoder_weights(
      demo.video_encoder->config,
      [&](const Shape& s, uint64_t stream, h3vae::NormalInit i) { return cpu_draw(s, seed, stream, i.mean, i.stddev); });
  ASSERT_TRUE(v.has_value()) << v.status().to_string();
  expect_bit_equal({v->conv_in.weight, v->levels[0].resnets[0].norm1.weight, v->conv_out.bias, v->quant_conv.weight},
                   {demo.video_encoder->conv_in.weight, demo.video_encoder->levels[0].resnets[0].norm1.weight,
                    demo.video_encoder->conv_out.bias, demo.video_encoder->quant_conv.weight},
                   "video encoder");
  // GroupNorm weights about 1, kernels about 1/sqrt(fan_in).
  EXPECT_NEAR(v->levels[0].resnets[0].norm1.weight.data<float>()[0], 1.0f, 0.5f);
  Expected<h3_audio::AudioEncoderWeights> a = h3_audio::random_encoder_weights(
      demo.audio_encoder->config,
      [&](const Shape& s, uint64_t stream, h3_audio::NormalInit i) { return cpu_draw(s, seed, stream, i.mean, i.stddev); });
  ASSERT_TRUE(a.has_value()) << a.status().to_string();
  expect_bit_equal({a->conv_in.weight, a->blocks[0].alpha, a->pre_block.qkv_weight, a->mean_proj.weight},
                   {demo.audio_encoder->conv_in.weight, demo.audio_encoder->blocks[0].alpha,
                    demo.audio_encoder->pre_block.qkv_weight, demo.audio_encoder->mean_proj.weight},
                   "audio encoder");
  const h3_audio::NormalInit gain = h3_audio::encoder_random_init({"encoder.block.0.weight_g", {4, 1, 1}});
  EXPECT_EQ(gain.mean, 1.0f);
  EXPECT_EQ(gain.stddev, 0.0f);
}

TEST(EngineEncode, RandomTextRowsTakeThePresentationsLength) {
  if (!io::media_input_supported()) GTEST_SKIP() << "this build reads no media files";
  RunPlan plan;
  plan.workflow = "ref2va";
  plan.request = request_with({{Kind::kImage, ref2va_media("image_wide.png")}, {Kind::kVideo, ref2va_media("video.mov")},
                               {Kind::kAudio, ref2va_media("clip.wav")}});
  plan.request.width = 832;
  plan.request.height = 480;
  plan.request.text_rows = 256;  // the prompt's tokens
  Expected<int64_t> rows = random_presentation_rows(plan);
  ASSERT_TRUE(rows.has_value()) << rows.status().to_string();
  // The prompt, three labels and a timestamp per video block (about 6 tokens each), the vision tokens.
  EXPECT_GT(*rows, 256 + 3 * 6);
  plan.request.ref_size = RefSize::kMatch;  // smaller pictures: fewer vision tokens
  Expected<int64_t> match = random_presentation_rows(plan);
  ASSERT_TRUE(match.has_value()) << match.status().to_string();
  EXPECT_LT(*match, *rows);

  RunPlan fl2va;
  fl2va.workflow = "fl2va";
  fl2va.request = request_with({{Kind::kFirstFrame, image("rgb_odd.png")}});
  fl2va.request.width = 832;
  fl2va.request.height = 480;
  fl2va.request.text_rows = 100;
  fl2va.keyframes.resize(1);
  Expected<int64_t> one = random_presentation_rows(fl2va);
  ASSERT_TRUE(one.has_value()) << one.status().to_string();
  // 832x480 at Qwen's 32 px merged patches: 26 x 15 = 390 vision tokens, a label and the prompt.
  EXPECT_GE(*one, 100 + 390);
  fl2va.keyframes.resize(2);
  fl2va.request.references.push_back({Kind::kLastFrame, image("rgb_odd.png")});
  Expected<int64_t> two = random_presentation_rows(fl2va);
  ASSERT_TRUE(two.has_value()) << two.status().to_string();
  EXPECT_GE(*two - *one, 390);
}

}  // namespace
}  // namespace orochi::engine
