// On the device machine (issue 23's preprocessing goal): the ref2va media decode of the benchmark
// request at its real sizes (scripts/device/make_ref2va_media.py: 4 PPM pictures at the 2048 rule, a
// 5 s 1280x720 30 fps Y4M with its WAV, a WAV clip; 832x480x124 target), through the engine's own
// path (engine::read_references: header checks, reads, Y4M colours, LANCZOS resizes, resampling),
// on one thread and on every core: the same bytes and samples, and the times on MEDIA_DECODE lines.
// Needs OROCHI_REF2VA_MEDIA=DIR (scripts/device/run_media_decode.sh sets it); skips without it. No
// GPU is used: it sits with the GPU tests because those are what the device build carries.
#include <gtest/gtest.h>
#include <omp.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "engine/reference_inputs.h"

namespace orochi::engine {
namespace {

using Kind = ReferenceInput::Kind;

struct Decoded {
  std::vector<pipeline::Ref2vaReference> refs;
  double seconds = 0;
};

Decoded decode(const GenerateRequest& r, int threads) {
  omp_set_num_threads(threads);
  const auto t0 = std::chrono::steady_clock::now();
  Expected<std::vector<pipeline::Ref2vaReference>> refs = read_references(r, reference_rules(r.ref_size, false));
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  EXPECT_TRUE(refs.has_value()) << refs.status().to_string();
  return {refs.has_value() ? std::move(refs).value() : std::vector<pipeline::Ref2vaReference>{}, s};
}

bool same(const pipeline::Ref2vaReference& a, const pipeline::Ref2vaReference& b) {
  if (a.image.rgb != b.image.rgb || a.frames.rgb != b.frames.rgb || a.has_audio() != b.has_audio()) return false;
  if (!a.has_audio()) return true;
  return a.waveform.shape() == b.waveform.shape() &&
         std::memcmp(a.waveform.raw_data(), b.waveform.raw_data(), a.waveform.nbytes()) == 0;
}

TEST(MediaDecodeDevice, Ref2vaBenchmarkMediaOnOneThreadAndEveryCore) {
  const char* dir = std::getenv("OROCHI_REF2VA_MEDIA");
  if (!dir) GTEST_SKIP() << "set OROCHI_REF2VA_MEDIA to make_ref2va_media.py's folder";
  const std::string d = std::string(dir) + "/";
  for (const char* size : {"2048", "match"}) {
    GenerateRequest r;
    r.width = 832;
    r.height = 480;
    r.frames = 124;
    r.ref_size = std::string(size) == "match" ? RefSize::kMatch : RefSize::k2048;
    r.references = {{Kind::kImage, d + "wide.ppm"},   {Kind::kImage, d + "square.ppm"}, {Kind::kImage, d + "tall.ppm"},
                    {Kind::kImage, d + "landscape.ppm"}, {Kind::kVideo, d + "clip.y4m"},  {Kind::kAudio, d + "voice.wav"}};
    const int cores = omp_get_num_procs();
    decode(r, cores);  // the files into the page cache, as a run finds them after make_ref2va_media.py
    const Decoded one = decode(r, 1), all = decode(r, cores), two = decode(r, 2);
    ASSERT_EQ(one.refs.size(), 6u);
    ASSERT_EQ(all.refs.size(), 6u);
    for (size_t i = 0; i < 6; ++i) {
      EXPECT_TRUE(same(one.refs[i], all.refs[i])) << "reference " << i + 1 << " differs on " << cores << " threads";
      EXPECT_TRUE(same(one.refs[i], two.refs[i])) << "reference " << i + 1 << " differs on 2 threads";
    }
    std::printf("MEDIA_DECODE ref-size %s: 1 thread %.3f s, 2 threads %.3f s, %d threads %.3f s; bytes identical\n",
                size, one.seconds, two.seconds, cores, all.seconds);
  }
}

}  // namespace
}  // namespace orochi::engine
