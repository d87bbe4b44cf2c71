// The reference-encode phase (issue 28): for fl2va keyframes and ref2va references the plan holds the
// video and audio VAE encoders' own arenas (models/*/encoder_memory.h, the functions
// GpuVideoEncoder::create and GpuAudioEncoder::create reserve with), on every computing GPU, first;
// a request whose encode does not fit is refused naming that phase.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "models/h3_audio_vae/encoder_memory.h"
#include "models/h3_video_vae/encoder_memory.h"
#include "planner/encode_memory.h"
#include "planner/plan_memory.h"
#include "planner/plan_report.h"
#include "support/planner_inputs.h"

namespace orochi::planner {
namespace {

using pipeline::ReferenceGeometry;

// REF2VA.md §0-§5's mix at an 832x480 target: a 3648x2048 image (2048 short edge), a 5 s video on
// its 1344x768 canvas (107 frames: 32 latents) with a 5 s soundtrack (200 latents), and a 5.17 s
// clip (207 latents).
PlanInput ref2va_input(double vram_gib = 139, int gpus = 1, const char* layout = "none") {
  PlanInput in = testing::h3_plan_input(vram_gib, gpus, layout);
  in.request.references = {ReferenceGeometry::image(128, 228), ReferenceGeometry::video(32, 48, 84, 200),
                           ReferenceGeometry::audio(207)};
  return in;
}

std::vector<std::string> phase_names(const MemoryPlan& plan) {
  std::vector<std::string> names;
  for (const PhasePlan& p : plan.phases) names.push_back(p.name);
  return names;
}

TEST(PlannerEncode, TheWorkOfEachReference) {
  const PlanInput in = ref2va_input();
  Expected<EncodeWork> work = encode_work(in.models, in.request, *pipeline::video_geometry(832, 480, 124));
  ASSERT_TRUE(work.has_value()) << work.status().to_string();
  ASSERT_EQ(work->visuals.size(), 2u);
  const VisualEncode& image = work->visuals[0];
  EXPECT_EQ(image.what, "image 1");
  EXPECT_EQ(image.frames, 1);
  EXPECT_EQ(image.width, 3648);
  EXPECT_EQ(image.height, 2048);
  EXPECT_EQ(image.tiles, 209);  // 19 x 11 (REF2VA.md §1.3's tile table)
  const VisualEncode& video = work->visuals[1];
  EXPECT_EQ(video.what, "video 1");
  EXPECT_EQ(video.frames, 107);  // 17·6 + 5: 7 clips of 5 latents, less the last 3 = 32
  EXPECT_EQ(video.clips, 7);
  EXPECT_EQ(video.tiles, 28);    // 1344x768
  ASSERT_EQ(work->audio.size(), 2u);
  EXPECT_EQ(work->audio[0].what, "video 1 soundtrack");
  EXPECT_EQ(work->audio[0].samples, 200 * 800);
  EXPECT_EQ(work->audio[1].what, "audio 1");
  EXPECT_EQ(audio_encoder_samples(*work), 207 * 800);
  // The tile shapes the GPU encoder is created for: 256 px tiles, the clip's whole frame on the GPU.
  EXPECT_EQ(*video_encoder_tile(in.models, image), (h3vae::EncoderTileShape{1, 256, 256, 2048, 3648}));
  EXPECT_EQ(*video_encoder_tile(in.models, video), (h3vae::EncoderTileShape{17, 256, 256, 768, 1344}));
  EXPECT_EQ(*largest_visual_encode(in.models, *work), 1);  // 17-frame tiles outweigh one big frame
}

// The phase's pools are the encoders' arenas: what create() reserves for the same tile shapes and
// samples (the same functions), the video encoder's for its largest input.
TEST(PlannerEncode, PlannedBytesAreWhatTheEncodersReserve) {
  const PlanInput in = ref2va_input();
  const MemoryPlan plan = testing::plan_or_fail(in);
  EXPECT_EQ(phase_names(plan), (std::vector<std::string>{"reference encode", "text encoder", "denoiser", "decode"}));
  const PhasePlan* encode = plan.phase("reference encode");
  ASSERT_NE(encode, nullptr);
  const GpuPlan& g = encode->gpus.at(0);
  const h3vae::VideoVaeConfig& v = in.models.video_vae;
  const h3_audio::AudioVaeConfig& a = in.models.audio_vae;
  EXPECT_EQ(g.pool_bytes(PoolKind::kWeights),
            h3vae::encoder_weight_arena_bytes(v) + h3_audio::audio_encoder_weight_bytes(a));
  const size_t image = h3vae::encoder_activation_arena_bytes(v, {1, 256, 256, 2048, 3648}, true);
  const size_t video = h3vae::encoder_activation_arena_bytes(v, {17, 256, 256, 768, 1344}, true);
  EXPECT_EQ(g.pool_bytes(PoolKind::kActivations),
            std::max(image, video) + h3_audio::audio_encoder_activation_bytes(a, 207 * 800, 2));
  EXPECT_EQ(g.pool_bytes(PoolKind::kRequestState) + g.pool_bytes(PoolKind::kStaging) + g.pool_bytes(PoolKind::kComm), 0u);
  // The release's encoder: 180.3 M fp32 parameters plus the single-frame taps; the audio encoder's 86.4 M.
  EXPECT_NEAR(static_cast<double>(h3vae::encoder_weight_arena_bytes(v)) / 1e9, 0.96, 0.05);
  EXPECT_NEAR(static_cast<double>(h3_audio::audio_encoder_weight_bytes(a)) / 1e6, 346, 10);
  // A 17-frame 256² tile: five buffers of its largest padded activation (128 x 19 x 258² f32) and
  // cuDNN's allowance, 2 GiB at most, plus the 1344x768 clip.
  EXPECT_GT(video, 5 * size_t{128} * 19 * 258 * 258 * 4);
  EXPECT_LT(video, 5 * size_t{256} * 19 * 258 * 258 * 4 + (size_t{2} << 30) + size_t{3} * 17 * 768 * 1344 * 4 + (1 << 20));
  for (const WeightGroup& w : encode->groups) EXPECT_EQ(w.tier, Tier::kResident) << w.name;
  // In host RAM: the decoded media the encoders read and the latents they give.
  EXPECT_EQ(plan.host_reference_media_bytes,
            uint64_t{3} * 3648 * 2048 + uint64_t{3} * 107 * 1344 * 768 + uint64_t{2} * (200 + 207) * 800 * 4);
  EXPECT_EQ(plan.host_reference_latent_bytes,
            uint64_t{4} * (24 * 128 * 228 + 24 * 32 * 48 * 84 + 2 * (200 + 207) * 32));
}

TEST(PlannerEncode, OnlyRequestsWithConditionsEncode) {
  PlanInput in = testing::h3_plan_input(139);
  const MemoryPlan t2va = testing::plan_or_fail(in);
  EXPECT_EQ(phase_names(t2va), (std::vector<std::string>{"text encoder", "denoiser", "decode"}));
  EXPECT_EQ(t2va.host_reference_media_bytes, 0u);
  // fl2va: each keyframe is one frame on the target canvas; no sound, no audio encoder.
  in.request.keyframes = {pipeline::KeyframeAnchor::kFirst, pipeline::KeyframeAnchor::kLast};
  const MemoryPlan fl2va = testing::plan_or_fail(in);
  const PhasePlan* encode = fl2va.phase("reference encode");
  ASSERT_NE(encode, nullptr);
  ASSERT_EQ(encode->groups.size(), 1u);
  EXPECT_EQ(encode->groups[0].name, "video VAE encoder");
  EXPECT_EQ(encode->gpus[0].pool_bytes(PoolKind::kActivations),
            h3vae::encoder_activation_arena_bytes(in.models.video_vae, {1, 256, 256, 480, 832}, true));
  EXPECT_EQ(fl2va.shape.workflow, "fl2va");
  EXPECT_EQ(fl2va.shape.row_counts.keyframes, 2 * 15 * 26);
}

// Every computing GPU of the layout holds the encoders whole: the same pools on each (without a
// prompt: the text encoder would take the last GPU, next test).
TEST(PlannerEncode, EveryComputingGpuHoldsTheEncoders) {
  const MemoryPlan one = testing::plan_or_fail(ref2va_input(139));
  PlanInput in = ref2va_input(139, 4, "sp4");
  in.models.text_layers = 0;
  const MemoryPlan four = testing::plan_or_fail(in);
  EXPECT_FALSE(four.pre_overlap);
  const PhasePlan* a = one.phase("reference encode");
  const PhasePlan* b = four.phase("reference encode");
  ASSERT_TRUE(a && b);
  ASSERT_EQ(b->gpus.size(), 4u);
  EXPECT_EQ(b->layout, "each of 4 GPUs");
  for (const GpuPlan& g : b->gpus) EXPECT_EQ(g.total(), a->gpus[0].total());
}

// A prompt through the conditioner on 2 or 4 GPUs: the text encoder alone on the last GPU, the
// encoders whole on the others, at once; a GPU's need is both phases' pools. One GPU, or no
// prompt, or t2va: one after the other as before.
TEST(PlannerEncode, TheConditionerRunsBesideTheEncodersOnTheLastGpu) {
  const MemoryPlan one = testing::plan_or_fail(ref2va_input(139));
  EXPECT_FALSE(one.pre_overlap);
  for (int gpus : {2, 4}) {
    const MemoryPlan plan = testing::plan_or_fail(ref2va_input(139, gpus, gpus == 2 ? "sp2" : "sp4"));
    EXPECT_TRUE(plan.pre_overlap) << gpus;
    const PhasePlan* encode = plan.phase("reference encode");
    const PhasePlan* text = plan.phase("text encoder");
    ASSERT_TRUE(encode && text);
    ASSERT_EQ(encode->gpus.size(), static_cast<size_t>(gpus));
    ASSERT_EQ(text->gpus.size(), static_cast<size_t>(gpus));
    for (int g = 0; g < gpus; ++g) {
      EXPECT_EQ(encode->gpus[g].gpu, g);
      EXPECT_EQ(text->gpus[g].gpu, g);
      const bool last = g == gpus - 1;
      EXPECT_EQ(encode->gpus[g].role, last ? "idle" : "compute") << g;
      EXPECT_EQ(text->gpus[g].role, last ? "compute" : "idle") << g;
      if (!last) EXPECT_EQ(encode->gpus[g].total(), one.phase("reference encode")->gpus[0].total());
      if (last) EXPECT_EQ(text->gpus[g].total(), one.phase("text encoder")->gpus[0].total());
    }
    EXPECT_EQ(encode->layout, gpus == 2 ? "GPU 0" : "each of 3 GPUs");
    EXPECT_TRUE(plan.fits);
    const std::string report = plan_text(plan);
    EXPECT_NE(report.find("run at the same time"), std::string::npos) << report;
    EXPECT_EQ(plan_json(plan)["pre_overlap"], true);
  }
  PlanInput t2va = testing::h3_plan_input(139, 2, "sp2");
  EXPECT_FALSE(testing::plan_or_fail(t2va).pre_overlap);
  PlanInput no_prompt = ref2va_input(139, 2, "sp2");
  no_prompt.models.text_layers = 0;
  EXPECT_FALSE(testing::plan_or_fail(no_prompt).pre_overlap);
}

// At once only where the pair fits: every GPU's two phases together within its memory; where the
// text encoder must store layers on the encoders' GPU (its peer tier) and the sum does not fit, the
// plan goes one after the other (and says why) instead of refusing the request.
TEST(PlannerEncode, TheTwoPhasesRunAtOnceOnlyWhereTheyFitTogether) {
  bool went_in_turn = false;
  for (double gib = 16; gib <= 80; gib += 2) {
    PlanInput in = ref2va_input(gib, 2, "sp2");
    in.text_encoder_tiers = TierPolicy{/*peer=*/true, /*host=*/false, 2};
    const MemoryPlan plan = testing::plan_or_fail(in);
    if (!plan.fits) continue;
    const PhasePlan* encode = plan.phase("reference encode");
    const PhasePlan* text = plan.phase("text encoder");
    ASSERT_TRUE(encode && text);
    if (plan.pre_overlap) {
      for (int g = 0; g < 2; ++g)
        EXPECT_LE(encode->gpus[g].total() + text->gpus[g].total(), in.gpus.vram_bytes) << gib << " GiB, GPU " << g;
    } else {
      went_in_turn = true;
      EXPECT_EQ(text->gpus[0].role, "compute") << gib;  // one after the other: the text encoder from GPU 0
      EXPECT_NE(plan_text(plan).find("do not fit at once"), std::string::npos) << gib;
    }
  }
  EXPECT_TRUE(went_in_turn) << "no size between 16 and 80 GiB made the pair too large at once";
}

// Eight 5.5 GiB GPUs split the denoiser (tp8) but each must hold a whole encoder and a 17-frame
// tile: the encode phase is the one that does not fit, and the refusal says so.
TEST(PlannerEncode, AnEncodeThatDoesNotFitIsRefusedNamingThePhase) {
  PlanInput in = testing::h3_plan_input(5.5, 8, "tp8");
  in.request.width = in.request.height = 256;
  in.request.references = {ReferenceGeometry::video(32, 48, 84)};
  in.request.text_rows = 5342;
  in.request.vision_patches = 5 * 1008 * 4;
  const MemoryPlan plan = testing::plan_or_fail(in);
  EXPECT_FALSE(plan.fits);
  EXPECT_FALSE(plan.pre_overlap);  // the pair at once fits even less: the plan shown is one after the other
  EXPECT_EQ(plan.tightest, "GPU 0, reference encode phase");
  const Status refused = check_fits(plan);
  EXPECT_FALSE(refused.is_ok());
  EXPECT_NE(refused.message().find("in the reference encode phase"), std::string::npos) << refused.message();
  // With room for the encoder it fits (the other phases did already).
  in.gpus.vram_bytes = from_gib(7);
  EXPECT_TRUE(testing::plan_or_fail(in).fits);
}

}  // namespace
}  // namespace orochi::planner
