// engine::check_references (issue 23): every limit and bad reference refused with a message that
// names the flag and the file and says what to change, from headers alone; valid requests pass with
// their probes in request order and fl2va's canvas from its first keyframe.
#include <gtest/gtest.h>

#include <string>

#include "engine/reference_checks.h"
#include "io/wav_writer.h"
#include "support/media.h"
#include "support/temp_dir.h"

namespace orochi {
namespace {

using Kind = engine::ReferenceInput::Kind;
bool contains(const std::string& s, const std::string& what) { return s.find(what) != std::string::npos; }

struct Media {
  testing::TempDir dir{"refcheck"};
  std::string png, wide, video, short_video, empty_video, wav;
  Media() {
    png = dir.file("a.png");
    testing::write_png(png, 64, 48);
    wide = dir.file("wide.png");
    testing::write_png(wide, 500, 100);
    video = dir.file("v.mp4");
    testing::write_clip(video, 48, 24, 64, 48, true);
    short_video = dir.file("short.mp4");
    testing::write_clip(short_video, 12, 24, 64, 48, false);
    empty_video = dir.file("empty.y4m");
    testing::write_file(empty_video, "YUV4MPEG2 W64 H48 F24:1 Ip A1:1 C420jpeg\n");
    wav = dir.file("a.wav");
    OROCHI_CHECK(io::write_wav(wav, testing::stereo_sine(2.0, 44100)).is_ok());
  }
};

engine::GenerateRequest request(std::vector<std::pair<Kind, std::string>> refs, int64_t frames = 124) {
  engine::GenerateRequest r;
  r.frames = frames;
  for (auto& [kind, path] : refs) r.references.push_back({kind, path, true});
  return r;
}

Status refused(const engine::GenerateRequest& r) {
  Expected<engine::ReferenceCheck> c = engine::check_references(r);
  return c.has_value() ? Status::ok() : c.status();
}

#define SKIP_WITHOUT_FFMPEG() \
  if (!io::media_input_supported()) GTEST_SKIP() << "built without FFmpeg's libraries"

TEST(ReferenceChecks, ValidRequestsKeepTheirOrder) {
  SKIP_WITHOUT_FFMPEG();
  Media m;
  Expected<engine::ReferenceCheck> c = engine::check_references(
      request({{Kind::kVideo, m.video}, {Kind::kImage, m.png}, {Kind::kAudio, m.wav}}));
  ASSERT_TRUE(c.has_value()) << c.status().to_string();
  EXPECT_EQ(c->workflow, "ref2va");
  ASSERT_EQ(c->references.size(), 3u);
  EXPECT_EQ(c->references[0].input.kind, Kind::kVideo);
  EXPECT_EQ(c->references[0].frames_at_24fps, 48);
  EXPECT_EQ(c->references[1].probe.width, 64);
  EXPECT_EQ(c->references[2].probe.kind, io::MediaKind::kAudio);
  EXPECT_TRUE(contains(engine::describe_reference(c->references[0]), "soundtrack 44100 Hz x 2")) <<
      engine::describe_reference(c->references[0]);

  // fl2va without a canvas: the first keyframe's (--image's, wherever it stands) aspect.
  testing::write_png(m.dir.file("tall.png"), 48, 96);
  engine::GenerateRequest fl = request({{Kind::kLastFrame, m.png}, {Kind::kFirstFrame, m.dir.file("tall.png")}});
  Expected<engine::ReferenceCheck> f = engine::check_references(fl);
  ASSERT_TRUE(f.has_value()) << f.status().to_string();
  EXPECT_EQ(f->workflow, "fl2va");
  ASSERT_TRUE(f->keyframe_canvas.has_value());
  EXPECT_LT(f->keyframe_canvas->width, f->keyframe_canvas->height);
  EXPECT_TRUE(engine::check_references(engine::GenerateRequest{}).has_value());  // t2va
}

TEST(ReferenceChecks, CountsAndMixesBeforeAnyFileIsRead) {
  // No file exists: the counts are refused first.
  auto many = [](Kind kind, int n) {
    std::vector<std::pair<Kind, std::string>> v;
    for (int i = 0; i < n; ++i) v.push_back({kind, "/nonexistent/" + std::to_string(i)});
    return v;
  };
  std::vector<std::pair<Kind, std::string>> thirteen = many(Kind::kImage, 9);
  for (auto& r : many(Kind::kVideo, 3)) thirteen.push_back(r);
  thirteen.push_back({Kind::kAudio, "/nonexistent/a.wav"});
  Status s = refused(request(thirteen));
  EXPECT_EQ(s.code(), ErrorCode::kInvalidArgument);
  EXPECT_TRUE(contains(s.message(), "at most 12 in all")) << s.to_string();
  EXPECT_TRUE(contains(s.message(), "has 13")) << s.to_string();
  EXPECT_TRUE(contains(refused(request(many(Kind::kImage, 10))).message(), "10 images")) ;
  EXPECT_TRUE(contains(refused(request(many(Kind::kVideo, 4))).message(), "4 videos"));
  EXPECT_TRUE(contains(refused(request(many(Kind::kAudio, 4))).message(), "4 audio clips"));
  EXPECT_TRUE(contains(refused(request(many(Kind::kAudio, 2))).message(), "audio references alone"));
  EXPECT_TRUE(contains(refused(request(many(Kind::kFirstFrame, 2))).message(), "--image is given 2 times"));
  EXPECT_TRUE(contains(refused(request(many(Kind::kLastFrame, 2))).message(), "--last-image is given 2 times"));
  EXPECT_TRUE(contains(refused(request({{Kind::kFirstFrame, "/x"}, {Kind::kImage, "/y"}})).message(),
                       "cannot be combined"));
  // The target frame rule with references: 5..15 s.
  EXPECT_TRUE(contains(refused(request({{Kind::kImage, "/y"}}, 107)).message(), "--frames 124..345"));
  EXPECT_TRUE(contains(refused(request({{Kind::kImage, "/y"}}, 362)).message(), "--frames 124..345"));
}

TEST(ReferenceChecks, BadFilesNameTheFlagAndTheFile) {
  SKIP_WITHOUT_FFMPEG();
  Media m;
  auto says = [](const engine::GenerateRequest& r, ErrorCode code, const std::vector<std::string>& parts) {
    const Status s = refused(r);
    EXPECT_EQ(s.code(), code) << s.to_string();
    for (const std::string& p : parts) EXPECT_TRUE(contains(s.message(), p)) << s.to_string();
  };
  says(request({{Kind::kImage, m.dir.file("gone.png")}}), ErrorCode::kNotFound,
       {"--ref-image " + m.dir.file("gone.png"), "check the path"});
  testing::write_file(m.dir.file("empty.png"), "");
  says(request({{Kind::kFirstFrame, m.dir.file("empty.png")}}), ErrorCode::kCorruptFile, {"--image", "empty"});
  testing::write_file(m.dir.file("junk.jpg"), std::string(1000, 'x'));
  says(request({{Kind::kImage, m.dir.file("junk.jpg")}}), ErrorCode::kCorruptFile, {"--ref-image", "junk.jpg"});
  says(request({{Kind::kImage, m.wide}}), ErrorCode::kInvalidArgument, {"--ref-image", "500x100 (5.00:1)", "1:4 to 4:1"});
  says(request({{Kind::kVideo, m.short_video}}), ErrorCode::kInvalidArgument,
       {"--ref-video", "0.50 s", "at least 22 frames at 24 fps", "longer clip"});
  says(request({{Kind::kVideo, m.empty_video}}), ErrorCode::kInvalidArgument, {"--ref-video", "no frames"});
  says(request({{Kind::kImage, m.video}}), ErrorCode::kInvalidArgument, {"not a picture", "--ref-video"});
  says(request({{Kind::kVideo, m.png}}), ErrorCode::kInvalidArgument, {"not a video", "--ref-image"});
  says(request({{Kind::kImage, m.png}, {Kind::kAudio, m.png}}), ErrorCode::kInvalidArgument, {"--ref-audio", "without sound"});
}

}  // namespace
}  // namespace orochi
