// On a machine of two GPUs or more (issue 23, "preprocessing on several GPUs"): a ref2va request with
// a prompt on the tiny checkpoint (tests/support/tiny_checkpoint.h) with --gpus 2 plans the conditioner
// on the last GPU beside the VAE encoders (RunPlan::pre_overlap) and runs them at once; the same plan
// run one after the other gives the same frames and waveform bit for bit, and the stage report shows
// the pair's wall time. The media are written here as PPM / Y4M + WAV (the FFmpeg-less device build
// reads them). Prints a PRE_OVERLAP line. Skips with fewer than 2 GPUs.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>

#include "engine/engine.h"
#include "io/wav_writer.h"
#include "io/y4m_writer.h"
#include "support/temp_dir.h"
#include "support/tiny_checkpoint.h"

namespace orochi::engine {
namespace {

using Kind = ReferenceInput::Kind;

std::vector<uint8_t> pattern(int64_t n, int seed) {
  std::vector<uint8_t> v(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) v[static_cast<size_t>(i)] = static_cast<uint8_t>((i * (7 + seed) + i / 101 * 13) % 256);
  return v;
}

bool same_bits(const Tensor& a, const Tensor& b) {
  return a.dtype() == b.dtype() && a.shape() == b.shape() &&
         std::memcmp(a.contiguous().raw_data(), b.contiguous().raw_data(), a.nbytes()) == 0;
}

TEST(EnginePreOverlapGpu, ConditionerOnTheLastGpuBesideTheEncodersGivesTheSameBits) {
  if (gpu_backend().device_count() < 2) GTEST_SKIP() << "needs 2 GPUs";
  testing::TempDir dir("pre_overlap_gpu");
  testing::assemble_tiny_checkpoint(dir.path / "model", testing::TinyRefPartition::kDistinct);
  {
    std::ofstream f(dir.file("image.ppm"), std::ios::binary);
    f << "P6\n96 64\n255\n";
    const std::vector<uint8_t> px = pattern(96 * 64 * 3, 1);
    f.write(reinterpret_cast<const char*>(px.data()), static_cast<std::streamsize>(px.size()));
  }
  io::VideoFrames v;
  v.frames = 36;
  v.height = 64;
  v.width = 96;
  v.fps = {30, 1};
  v.rgb = pattern(36 * 64 * 96 * 3, 3);
  ASSERT_TRUE(io::write_y4m(dir.file("video.y4m"), v).is_ok());
  io::AudioTrack a;
  a.sample_rate = 16000;
  a.channels = 2;
  a.samples.resize(2 * 24000);
  for (size_t i = 0; i < a.samples.size(); ++i) a.samples[i] = 0.4f * std::sin(0.02f * static_cast<float>(i));
  ASSERT_TRUE(io::write_wav(dir.file("clip.wav"), a).is_ok());

  ModelSource source;
  source.dir = (dir.path / "model").string();
  EngineOptions options;
  options.device = "cuda:0";
  options.gpus = 2;
  Expected<std::unique_ptr<Engine>> engine = Engine::open(source, options);
  ASSERT_TRUE(engine.has_value()) << engine.status().to_string();
  GenerateRequest r;
  r.prompt = "The girl from picture 1 dances as in video 1.";
  r.text_layer = testing::kTinyTextLayer;
  r.width = 128;
  r.height = 96;
  r.frames = 124;
  r.steps = 2;
  r.seed = 3;
  r.ref_size = RefSize::kMatch;
  r.references = {{Kind::kImage, dir.file("image.ppm")}, {Kind::kVideo, dir.file("video.y4m")},
                  {Kind::kAudio, dir.file("clip.wav")}};
  Expected<RunPlan> plan = (*engine)->plan(r);
  ASSERT_TRUE(plan.has_value()) << plan.status().to_string();
  ASSERT_TRUE(plan->pre_overlap);
  EXPECT_EQ(plan->text_placement.device, 1);
  ASSERT_TRUE(plan->memory.has_value());
  EXPECT_TRUE(plan->memory->pre_overlap);

  Expected<RunResult> at_once = (*engine)->run(*plan);
  ASSERT_TRUE(at_once.has_value()) << at_once.status().to_string();
  RunPlan in_turn_plan = *plan;
  in_turn_plan.pre_overlap = false;
  Expected<RunResult> in_turn = (*engine)->run(in_turn_plan);
  ASSERT_TRUE(in_turn.has_value()) << in_turn.status().to_string();
  EXPECT_TRUE(same_bits(at_once->result.frames, in_turn->result.frames));
  EXPECT_TRUE(same_bits(at_once->result.waveform, in_turn->result.waveform));
  RunReport b = at_once->report;
  b.result = at_once->result;
  EXPECT_GT(b.pre_pair_s, 0);
  EXPECT_EQ(in_turn->report.pre_pair_s, 0);
  std::printf("PRE_OVERLAP 2 GPUs: VAE encode %.3f s | vision + text %.3f s | at once %.3f s (encoders' weights %.3f s); "
              "one after the other %.3f + %.3f s; frames and waveform bit-identical\n",
              b.result.times.condition_encode_s, b.text_s, b.pre_pair_s, b.encoders_load_s,
              in_turn->result.times.condition_encode_s, in_turn->report.text_s);
}

}  // namespace
}  // namespace orochi::engine
