// A ref2va request planned from its media's headers alone (issue 23): every reference's latent
// geometry equals what the run gets from the decoded media (engine::read_references), the packed
// rows equal build_ref2va_layout's, the conditioner's vision tokens follow Qwen's processors, and
// --ref-size match shrinks the rows and the memory.
#include <gtest/gtest.h>

#include <numeric>
#include <string>
#include <vector>

#include "engine/reference_inputs.h"
#include "engine/reference_plan.h"
#include "io/media_in.h"
#include "io/wav_writer.h"
#include "pipeline/ref2va_layout.h"
#include "pipeline/video_geometry.h"
#include "planner/plan_memory.h"
#include "support/media.h"
#include "support/planner_inputs.h"
#include "support/temp_dir.h"

namespace orochi {
namespace {

using engine::ReferenceInput;
using Kind = ReferenceInput::Kind;

#define SKIP_WITHOUT_FFMPEG() \
  if (!io::media_input_supported()) GTEST_SKIP() << "built without FFmpeg's libraries"

struct Media {
  testing::TempDir dir{"planref"};
  std::string wide, tall, square, big, clip30, clip24_long, silent, wav;
  Media() {
    wide = dir.file("wide.png");
    testing::write_png(wide, 96, 54);  // 16:9
    tall = dir.file("tall.png");
    testing::write_png(tall, 48, 64);  // 3:4
    square = dir.file("square.png");
    testing::write_png(square, 40, 40);
    big = dir.file("big.png");
    testing::write_png(big, 1280, 720);  // larger than an 832x480 target
    clip30 = dir.file("clip30.mp4");
    testing::write_clip(clip30, 60, 30, 64, 48, true);  // 2 s at 30 fps with AAC, 4:3
    clip24_long = dir.file("long.mp4");
    testing::write_clip(clip24_long, 150, 24, 96, 54, true);  // 6.25 s: longer than the target's 5.17 s
    silent = dir.file("silent.mp4");
    testing::write_clip(silent, 48, 24, 48, 64, false);
    wav = dir.file("tone.wav");
    OROCHI_CHECK(io::write_wav(wav, testing::stereo_sine(6.0, 48000)).is_ok());
  }
};

engine::GenerateRequest request_of(std::vector<ReferenceInput> refs, engine::RefSize size = engine::RefSize::k2048) {
  engine::GenerateRequest r;
  r.width = 320;
  r.height = 192;
  r.frames = 124;
  r.references = std::move(refs);
  r.ref_size = size;
  return r;
}

std::vector<engine::PlannedReference> planned(const engine::GenerateRequest& r, const pipeline::ReferenceRules& rules) {
  Expected<engine::ReferenceCheck> checked = engine::check_references(r);
  EXPECT_TRUE(checked.has_value()) << checked.status().to_string();
  if (!checked) return {};
  Expected<std::vector<engine::PlannedReference>> p = engine::plan_references_from_headers(*checked, r, rules);
  EXPECT_TRUE(p.has_value()) << p.status().to_string();
  return p.has_value() ? *p : std::vector<engine::PlannedReference>{};
}

void expect_same(const pipeline::ReferenceGeometry& a, const pipeline::ReferenceGeometry& b, const std::string& what) {
  EXPECT_EQ(a.kind, b.kind) << what;
  EXPECT_EQ(a.latent_frames, b.latent_frames) << what;
  EXPECT_EQ(a.latent_height, b.latent_height) << what;
  EXPECT_EQ(a.latent_width, b.latent_width) << what;
  EXPECT_EQ(a.audio_latents, b.audio_latents) << what;
}

// Three mixes under the demo's rules (small sizes, so the run's reading is quick): the headers give
// the run's geometry wherever the run cuts a reference to the target's length (and, for these files,
// also where it does not: their headers are exact).
TEST(PlannerRef2va, HeadersGiveTheRunsGeometry) {
  SKIP_WITHOUT_FFMPEG();
  Media m;
  const std::vector<std::vector<ReferenceInput>> mixes = {
      {{Kind::kImage, m.wide}, {Kind::kImage, m.tall}, {Kind::kVideo, m.clip30}, {Kind::kAudio, m.wav}},
      {{Kind::kVideo, m.clip24_long}, {Kind::kAudio, m.wav}, {Kind::kVideo, m.silent}},
      {{Kind::kImage, m.square}, {Kind::kVideo, m.clip30, false}, {Kind::kImage, m.wide}},
  };
  for (const engine::RefSize size : {engine::RefSize::k2048, engine::RefSize::kMatch}) {
    const pipeline::ReferenceRules rules = engine::reference_rules(size, /*demo=*/true);
    for (size_t i = 0; i < mixes.size(); ++i) {
      const engine::GenerateRequest r = request_of(mixes[i], size);
      const std::vector<engine::PlannedReference> plan = planned(r, rules);
      Expected<std::vector<pipeline::Ref2vaReference>> read = engine::read_references(r, rules);
      ASSERT_TRUE(read.has_value()) << read.status().to_string();
      const std::vector<pipeline::ReferenceGeometry> run = pipeline::reference_geometry(*read);
      ASSERT_EQ(plan.size(), run.size());
      for (size_t k = 0; k < run.size(); ++k) {
        const std::string what = "mix " + std::to_string(i + 1) + ", reference " + std::to_string(k + 1);
        expect_same(plan[k].geometry, run[k], what);
        const pipeline::Ref2vaReference& ref = (*read)[k];
        if (ref.kind == pipeline::ReferenceKind::kImage) {
          EXPECT_EQ(plan[k].width, ref.image.width) << what;
          EXPECT_EQ(plan[k].height, ref.image.height) << what;
        } else if (ref.kind == pipeline::ReferenceKind::kVideo) {
          EXPECT_EQ(plan[k].frames, ref.frames.frames) << what;
          EXPECT_EQ(plan[k].width, ref.frames.width) << what;
        }
        // A sound shorter than the target keeps its header's length: the same latents, within a hop.
        if (ref.has_audio() && !plan[k].length_from_header) EXPECT_EQ(plan[k].audio_samples, ref.waveform.dim(1)) << what;
        if (ref.has_audio()) EXPECT_NEAR(plan[k].audio_samples, ref.waveform.dim(1), 800) << what;
      }
    }
  }
}

// The plan's packed rows are build_ref2va_layout's for the same references, per kind too.
TEST(PlannerRef2va, RowsAreTheLayoutsRows) {
  SKIP_WITHOUT_FFMPEG();
  Media m;
  const engine::GenerateRequest r = request_of(
      {{Kind::kImage, m.wide}, {Kind::kVideo, m.clip24_long}, {Kind::kAudio, m.wav}, {Kind::kImage, m.tall}});
  const std::vector<engine::PlannedReference> plan = planned(r, engine::reference_rules(r.ref_size, false));
  planner::PlanInput in = testing::h3_plan_input(139);
  in.request.width = r.width;
  in.request.height = r.height;
  in.request.references = engine::reference_geometry(plan);
  in.request.text_rows = 300;
  const planner::MemoryPlan p = testing::plan_or_fail(in);
  const pipeline::VideoGeometry g = *pipeline::video_geometry(r.width, r.height, r.frames);
  pipeline::Ref2vaLayoutRequest lr;
  lr.text_tags.assign(300, 1);
  lr.latent_frames = g.latent_frames;
  lr.latent_height = g.latent_height;
  lr.latent_width = g.latent_width;
  lr.audio_latents = g.audio_latents;
  lr.references = in.request.references;
  Expected<pipeline::Ref2vaLayout> layout = pipeline::build_ref2va_layout(lr);
  ASSERT_TRUE(layout.has_value()) << layout.status().to_string();
  EXPECT_EQ(p.shape.rows, layout->packed.rows);
  const pipeline::RowCounts& n = p.shape.row_counts;
  EXPECT_EQ(n.image_rows + n.video_rows, layout->packed.condition_video_rows);
  EXPECT_EQ(n.soundtrack_rows + n.audio_clip_rows, layout->packed.condition_audio_rows);
  EXPECT_EQ(n.images, 2);
  EXPECT_EQ(n.videos, 1);
  EXPECT_EQ(n.audio_clips, 1);
  ASSERT_EQ(layout->blocks.size(), 4u);
  EXPECT_EQ(n.image_rows, layout->blocks[0].video_rows + layout->blocks[3].video_rows);
  EXPECT_EQ(n.video_rows, layout->blocks[1].video_rows);
  EXPECT_EQ(n.soundtrack_rows, layout->blocks[1].audio_rows);
  EXPECT_EQ(n.audio_clip_rows, layout->blocks[2].audio_rows);
  // The release's sizes: 16:9 at 2048 is 3648x2048 (7296 rows), 3:4 is 2048x2720 (5440 rows); the
  // 6.25 s video is cut to the target's 124 frames on the 1344x768 canvas (37 x 1008 rows) and its
  // soundtrack and the 6 s clip to 5.17 s (207 latents per channel).
  EXPECT_EQ(layout->blocks[0].video_rows, 7296);
  EXPECT_EQ(layout->blocks[3].video_rows, 5440);
  EXPECT_EQ(layout->blocks[1].video_rows, 37 * 1008);
  EXPECT_EQ(layout->blocks[1].audio_rows, 2 * 207);
  EXPECT_EQ(layout->blocks[2].audio_rows, 2 * 207);
  EXPECT_FALSE(plan[1].length_from_header);
  EXPECT_EQ(plan[1].vae_frames, 107 + 17);  // 124 frames snap down to 17·7 + 5
}

// What the conditioner reads (REF2VA.md §4): an image of H x W gives (H/32)(W/32) tokens; a video's
// canvas frames sampled at 2 fps, in pairs, each pair (H/32)(W/32) tokens; audio nothing.
TEST(PlannerRef2va, VisionTokensFollowTheProcessors) {
  SKIP_WITHOUT_FFMPEG();
  Media m;
  const engine::GenerateRequest r =
      request_of({{Kind::kImage, m.wide}, {Kind::kVideo, m.clip24_long}, {Kind::kAudio, m.wav}});
  const std::vector<engine::PlannedReference> plan = planned(r, engine::reference_rules(r.ref_size, false));
  ASSERT_EQ(plan.size(), 3u);
  EXPECT_EQ(plan[0].vision.grid, (pipeline::VisionGrid{1, 128, 228}));  // 3648x2048 / 16
  // 124 canvas frames: 0, 12, ..., 120 (11 frames) -> 6 blocks of 1344x768 / 16.
  EXPECT_EQ(plan[1].vision.grid, (pipeline::VisionGrid{6, 48, 84}));
  EXPECT_EQ(plan[1].vision.block_timestamps.size(), 6u);
  EXPECT_TRUE(plan[1].vision.has_audio);
  EXPECT_TRUE(plan[2].vision.has_audio);
  Expected<pipeline::PresentationSize> size = pipeline::ref2va_presentation_size(
      engine::presentation_references(plan), 256, pipeline::estimated_segment_tokens());
  ASSERT_TRUE(size.has_value()) << size.status().to_string();
  const int64_t image_tokens = 64 * 114, video_tokens = 6 * 24 * 42;
  EXPECT_EQ(size->vision_tokens, image_tokens + video_tokens);
  EXPECT_EQ(size->vision_patches, 4 * (image_tokens + video_tokens));
  // Labels: <Audio 1> <Video 1> + 6 timestamps, <Picture 1>, <Audio 2>: 10 segments; 7 vision blocks
  // with their start and end tokens.
  EXPECT_EQ(size->label_rows, 10 * pipeline::kEstimatedSegmentTokens);
  EXPECT_EQ(size->rows, 256 + size->label_rows + image_tokens + video_tokens + 7 * 2);
}

// --ref-size match: images at most the target's area and videos not upscaled, so far fewer rows, a
// smaller conditioner and denoiser, and a smaller encode.
TEST(PlannerRef2va, MatchCostsLessThan2048) {
  SKIP_WITHOUT_FFMPEG();
  Media m;
  std::vector<planner::MemoryPlan> plans;
  for (const engine::RefSize size : {engine::RefSize::k2048, engine::RefSize::kMatch}) {
    engine::GenerateRequest r = request_of({{Kind::kImage, m.big}, {Kind::kVideo, m.clip30}}, size);
    r.width = 832;
    r.height = 480;
    const std::vector<engine::PlannedReference> plan = planned(r, engine::reference_rules(size, false));
    planner::PlanInput in = testing::h3_plan_input(139);
    in.request.references = engine::reference_geometry(plan);
    const pipeline::PresentationSize p = *pipeline::ref2va_presentation_size(
        engine::presentation_references(plan), 256, pipeline::estimated_segment_tokens());
    in.request.text_rows = p.rows;
    in.request.vision_patches = p.vision_patches;
    plans.push_back(testing::plan_or_fail(in));
    if (size == engine::RefSize::kMatch) {
      EXPECT_EQ(plan[0].width, 832);  // 16:9 scaled to the 832x480 area: 832x468, snapped to 832x480
      EXPECT_EQ(plan[0].height, 480);
      EXPECT_EQ(plan[1].width, 64);                          // the 64x48 video is not upscaled
    } else {
      EXPECT_EQ(plan[1].width, 1024);  // 4:3 on the 768 canvas
    }
  }
  const planner::MemoryPlan &full = plans[0], &match = plans[1];
  EXPECT_EQ(full.shape.row_counts.image_rows, 7296);
  EXPECT_EQ(match.shape.row_counts.image_rows, 15 * 26);
  EXPECT_LT(match.shape.rows, full.shape.rows);
  EXPECT_LT(match.shape.text_rows, full.shape.text_rows);
  for (const char* phase : {"reference encode", "text encoder", "denoiser"})
    EXPECT_LT(match.phase(phase)->gpus[0].total(), full.phase(phase)->gpus[0].total()) << phase;
  EXPECT_LT(match.step_compute_s, full.step_compute_s);
}

}  // namespace
}  // namespace orochi
