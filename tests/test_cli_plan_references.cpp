// `orochi plan` with references through the binary (issues 23, 28): a ref2va request is planned from
// its media's headers with every phase (reference encode, text encoder with the vision tower at the
// presentation's L, the denoiser at the long S, decode), rows per reference kind, the other
// --ref-size's cost, --json fields, several GPUs, and a refusal that names the encode phase.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <string>

#include "io/media_in.h"
#include "io/wav_writer.h"
#include "support/cli.h"
#include "support/media.h"
#include "support/temp_dir.h"

namespace orochi {
namespace {

#define SKIP_WITHOUT_FFMPEG() \
  if (!io::media_input_supported()) GTEST_SKIP() << "built without FFmpeg's libraries"

bool contains(const std::string& s, const std::string& what) { return s.find(what) != std::string::npos; }

struct Media {
  testing::TempDir dir{"cliplanref"};
  std::string image, video, video5, wav, refs;
  Media() {
    image = dir.file("image.png");
    testing::write_png(image, 1280, 720);
    video = dir.file("video.mp4");
    testing::write_clip(video, 150, 24, 96, 54, true);  // 6.25 s with sound: cut to the target's 5.17 s
    video5 = dir.file("video5.mp4");
    testing::write_clip(video5, 120, 24, 96, 54, false);  // 5 s, silent
    wav = dir.file("tone.wav");
    OROCHI_CHECK(io::write_wav(wav, testing::stereo_sine(6.0, 48000)).is_ok());
    refs = " --ref-image " + image + " --ref-video " + video + " --ref-audio " + wav;
  }
};

nlohmann::json plan_json(const std::string& args) {
  const testing::CliResult r = testing::run_orochi("plan --json " + args, false);
  EXPECT_EQ(r.code, 0) << args << "\n" << r.output;
  return r.code == 0 ? nlohmann::json::parse(r.output) : nlohmann::json::object();
}

const nlohmann::json& phase(const nlohmann::json& plan, const std::string& name) {
  for (const nlohmann::json& p : plan["phases"])
    if (p["name"] == name) return p;
  static const nlohmann::json none = nlohmann::json::object();
  ADD_FAILURE() << "no " << name << " phase";
  return none;
}

TEST(CliPlanReferences, TextShowsEveryPhaseAndTheRows) {
  SKIP_WITHOUT_FFMPEG();
  Media m;
  const testing::CliResult r = testing::run_orochi("plan --res 832x480" + m.refs);
  ASSERT_EQ(r.code, 0) << r.output;
  for (const char* text :
       {"ref2va references, in request order", "as encoded (--ref-size 2048", "3648x2048", "1344x768, 124 f",
        "37x48x84", "7,296", "37,296 + 414 sound", "6,048 (6 blocks)", "conditioner: L = ",
        "phase 1/4  reference encode (one GPU): video VAE encoder (fp32) over 1 picture and 1 video",
        "audio VAE encoder (fp32) over 2 soundtracks and clips", "phase 2/4  text encoder", "vision tower over",
        "phase 3/4  denoiser", "phase 4/4  decode", "images 1 (7,296); videos 1 (37,296 + soundtracks 414); audio clips 1 (414)",
        "decoded references", "--ref-size match instead: S = "})
    EXPECT_TRUE(contains(r.output, text)) << text << "\n" << r.output;
}

TEST(CliPlanReferences, JsonHasTheReferencesRowsAndPhases) {
  SKIP_WITHOUT_FFMPEG();
  Media m;
  const nlohmann::json j = plan_json("--res 832x480" + m.refs);
  const nlohmann::json& req = j["request"];
  EXPECT_EQ(req["workflow"], "ref2va");
  EXPECT_EQ(req["rows"]["images"], 1);
  EXPECT_EQ(req["rows"]["image_rows"], 7296);
  EXPECT_EQ(req["rows"]["video_rows"], 37 * 1008);
  EXPECT_EQ(req["rows"]["soundtrack_rows"], 414);
  EXPECT_EQ(req["rows"]["audio_clip_rows"], 414);
  EXPECT_EQ(req["rows"]["target_video"], 37 * 15 * 26);
  EXPECT_EQ(req["rows"]["target_audio"], 414);
  EXPECT_EQ(req["packed_rows"].get<int64_t>(),
            req["text_rows"].get<int64_t>() + 7296 + 37 * 1008 + 414 + 414 + 37 * 15 * 26 + 414);
  ASSERT_EQ(j["phases"].size(), 4u);
  EXPECT_EQ(j["phases"][0]["name"], "reference encode");
  EXPECT_GT(j["host_reference_media_bytes"].get<uint64_t>(), 0u);
  const nlohmann::json& refs = j["references"];
  EXPECT_EQ(refs["workflow"], "ref2va");
  EXPECT_EQ(refs["ref_size"], "2048");
  ASSERT_EQ(refs["references"].size(), 3u);
  EXPECT_EQ(refs["references"][0]["flag"], "--ref-image");
  EXPECT_EQ(refs["references"][0]["vision_tokens"], 7296);
  EXPECT_EQ(refs["references"][1]["vae_frames"], 124);
  EXPECT_EQ(refs["references"][1]["audio_rows"], 414);
  EXPECT_EQ(refs["references"][1]["length_from_header"], false);
  EXPECT_EQ(refs["conditioner"]["rows"], req["text_rows"]);
  EXPECT_EQ(refs["conditioner"]["vision_patches"], req["vision_patches"]);
  EXPECT_EQ(refs["conditioner"]["prompt_rows"], 256);
  const nlohmann::json& other = j["ref_size_alternative"];
  EXPECT_EQ(other["ref_size"], "match");
  EXPECT_LT(other["packed_rows"].get<int64_t>(), req["packed_rows"].get<int64_t>());

  // --ref-size match, the other way round.
  const nlohmann::json match = plan_json("--res 832x480 --ref-size match" + m.refs);
  EXPECT_EQ(match["request"]["rows"]["image_rows"], 15 * 26);   // at the 832x480 area
  // The 96x54 video is not upscaled: 96x64 (54 snaps to 64), 6 x 4 latents, 3 x 2 rows a frame.
  EXPECT_EQ(match["request"]["rows"]["video_rows"], 37 * 3 * 2);
  EXPECT_EQ(match["request"]["packed_rows"], other["packed_rows"]);
  EXPECT_EQ(match["ref_size_alternative"]["packed_rows"], req["packed_rows"]);
}

// Sequence parallel shares every row, the references' too: each GPU's denoiser activations shrink.
// With the prompt's text encoder on GPU 1 at the same time (pre_overlap), GPU 0 holds the encoders
// whole, as one GPU does; on 3 GPUs, GPUs 0 and 1 each hold them.
TEST(CliPlanReferences, SeveralGpusShareTheLongSequence) {
  SKIP_WITHOUT_FFMPEG();
  Media m;
  const nlohmann::json one = plan_json("--res 832x480 --parallel none" + m.refs);
  const nlohmann::json two = plan_json("--res 832x480 --gpus 2 --parallel sp2" + m.refs);
  EXPECT_EQ(two["layout"], "sp2");
  EXPECT_EQ(two["request"]["packed_rows"], one["request"]["packed_rows"]);
  auto pool = [](const nlohmann::json& p, const char* name) {
    for (const nlohmann::json& pool : p["gpus"][0]["pools"])
      if (pool["pool"] == name) return pool["bytes"].get<uint64_t>();
    return uint64_t{0};
  };
  EXPECT_LT(pool(phase(two, "denoiser"), "activations"), pool(phase(one, "denoiser"), "activations"));
  EXPECT_EQ(phase(two, "reference encode")["gpus"].size(), 2u);
  EXPECT_EQ(two["pre_overlap"], true);
  EXPECT_EQ(phase(two, "reference encode")["gpus"][0]["total_bytes"], phase(one, "reference encode")["gpus"][0]["total_bytes"]);
  EXPECT_EQ(phase(two, "text encoder")["gpus"][1]["total_bytes"], phase(one, "text encoder")["gpus"][0]["total_bytes"]);
  const nlohmann::json three = plan_json("--res 832x480 --gpus 3 --parallel none" + m.refs);
  EXPECT_EQ(phase(three, "reference encode")["gpus"][1]["total_bytes"], phase(one, "reference encode")["gpus"][0]["total_bytes"]);
}

// Eight 5.5 GiB GPUs hold a tp8 denoiser (and the text encoder, streaming) but not a whole encoder
// with a 17-frame tile of a 5 s video's 1344x768 canvas: refused (exit 1) naming the encode phase.
TEST(CliPlanReferences, AnEncodeThatDoesNotFitIsNamed) {
  SKIP_WITHOUT_FFMPEG();
  Media m;
  const testing::CliResult r = testing::run_orochi("plan --res 256x256 --gpus 8 --parallel tp8 --vram-per-gpu 5.5 "
                                                   "--ref-video " + m.video5);
  EXPECT_EQ(r.code, 1) << r.output;
  EXPECT_TRUE(contains(r.output, "does not fit by")) << r.output;
  EXPECT_TRUE(contains(r.output, "(GPU 0, reference encode phase)")) << r.output;
}

}  // namespace
}  // namespace orochi
