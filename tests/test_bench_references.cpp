// `bench dit --refs`: reference blocks by encoded size, as pipeline/reference computes their latents
// (a video snapped down to 17n + 5 frames, 5n + 2 latents; audio at 40 latents a second), and
// clear usage errors for every malformed item.
#include <gtest/gtest.h>

#include <string>

#include "engine/gpu_backend.h"

namespace orochi::engine {
namespace {

TEST(BenchReferences, SizesBecomeLatentGeometryInOrder) {
  Expected<std::vector<pipeline::ReferenceGeometry>> refs =
      parse_bench_references("image:2048x3072,video:832x480x120+audio,audio:5,video:480x832x22");
  ASSERT_TRUE(refs) << refs.status().message();
  ASSERT_EQ(refs->size(), 4u);
  const auto& img = (*refs)[0];
  EXPECT_EQ(img.kind, pipeline::ReferenceKind::kImage);
  EXPECT_EQ(img.latent_height, 192);  // 3072 / 16
  EXPECT_EQ(img.latent_width, 128);
  const auto& vid = (*refs)[1];
  EXPECT_EQ(vid.kind, pipeline::ReferenceKind::kVideo);
  EXPECT_EQ(vid.latent_frames, 32);  // 120 frames -> 107 = 17*6 + 5 -> 5*6 + 2
  EXPECT_EQ(vid.latent_height, 30);
  EXPECT_EQ(vid.latent_width, 52);
  EXPECT_EQ(vid.audio_latents, 200);  // 5 s at 40 latents a second
  EXPECT_EQ((*refs)[2].kind, pipeline::ReferenceKind::kAudio);
  EXPECT_EQ((*refs)[2].audio_latents, 200);
  EXPECT_EQ((*refs)[3].latent_frames, 7);  // 22 frames -> 17 + 5 -> 7 latents
  EXPECT_EQ((*refs)[3].audio_latents, 0);
}

TEST(BenchReferences, MalformedItemsAreUsageErrorsNamingTheItem) {
  for (const std::string bad : {"", "image", "image:2048", "image:2048x3000", "image:0x32", "image:ax32",
                                "video:832x480", "video:832x480x0", "video:832x480x10+sound", "audio:0",
                                "audio:x", "audio:1000", "picture:32x32", "image:32x32,,image:32x32"}) {
    Expected<std::vector<pipeline::ReferenceGeometry>> refs = parse_bench_references(bad);
    ASSERT_FALSE(refs) << "'" << bad << "' was accepted";
    EXPECT_EQ(refs.status().code(), ErrorCode::kUsage) << bad;
    EXPECT_NE(refs.status().message().find("--refs"), std::string::npos) << refs.status().message();
  }
  std::string thirteen = "image:32x32";
  for (int i = 1; i < 13; ++i) thirteen += ",image:32x32";
  Expected<std::vector<pipeline::ReferenceGeometry>> refs = parse_bench_references(thirteen);
  ASSERT_FALSE(refs);
  EXPECT_NE(refs.status().message().find("12 at most"), std::string::npos) << refs.status().message();
}

}  // namespace
}  // namespace orochi::engine
