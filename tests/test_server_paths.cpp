// What a client's strings may reach in orochi serve: reference paths only inside --media-root
// (relative, no '..', symlinks followed and held inside, regular files only), the API key compared
// whole, byte ranges checked against the file, and upload names never used beyond an extension.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "apps/server/auth.h"
#include "apps/server/media_root.h"
#include "support/temp_dir.h"
#ifdef OROCHI_WITH_HTTP
#include "apps/server/http/http_util.h"
#include "apps/server/http/upload_receiver.h"
#endif

namespace orochi::apps::server {
namespace {

namespace fs = std::filesystem;

TEST(ServerMediaRoot, PathsStayInsideIt) {
  testing::TempDir dir("server_media");
  fs::create_directories(dir.path / "media" / "keyframes");
  fs::create_directories(dir.path / "media2");
  std::ofstream(dir.path / "media" / "keyframes" / "first.png") << "png";
  std::ofstream(dir.path / "media2" / "secret.png") << "secret";
  std::ofstream(dir.path / "outside.png") << "outside";
  ASSERT_EQ(::symlink((dir.path / "outside.png").c_str(), (dir.path / "media" / "escape.png").c_str()), 0);
  ASSERT_EQ(::symlink((dir.path / "media" / "keyframes" / "first.png").c_str(), (dir.path / "media" / "inside.png").c_str()), 0);
  ASSERT_EQ(::symlink(dir.path.c_str(), (dir.path / "media" / "up").c_str()), 0);

  Expected<MediaRoot> media = MediaRoot::open(dir.file("media"));
  ASSERT_TRUE(media) << media.status().to_string();
  EXPECT_TRUE(media->enabled());
  Expected<std::string> ok = media->resolve("keyframes/first.png");
  ASSERT_TRUE(ok) << ok.status().to_string();
  EXPECT_EQ(*ok, fs::canonical(dir.path / "media" / "keyframes" / "first.png").string());
  Expected<std::string> link_inside = media->resolve("inside.png");
  ASSERT_TRUE(link_inside);
  EXPECT_EQ(*link_inside, *ok);

  struct Case {
    std::string path, says;
  };
  for (const Case& c : std::vector<Case>{
           {"../outside.png", "'..'"},
           {"keyframes/../../outside.png", "'..'"},
           {"keyframes/../first.png", "'..'"},  // no '..' at all, even one that stays inside
           {(dir.path / "outside.png").string(), "absolute"},
           {"/etc/passwd", "absolute"},
           {"escape.png", "outside the media root"},
           {"up/outside.png", "outside the media root"},
           {"up/media2/secret.png", "outside the media root"},
           {"keyframes", "not a regular file"},
           {".", "not a regular file"},
           {"missing.png", "no file"},
           {"", "empty"},
           {std::string("first") + '\0' + ".png", "NUL"},
       }) {
    Expected<std::string> r = media->resolve(c.path);
    ASSERT_FALSE(r) << c.path << " resolved to " << *r;
    EXPECT_NE(r.status().message().find(c.says), std::string::npos) << c.path << ": " << r.status().message();
  }
  // No root: every path refused, with the way to send the file instead.
  Expected<std::string> none = MediaRoot().resolve("keyframes/first.png");
  ASSERT_FALSE(none);
  EXPECT_NE(none.status().message().find("--media-root"), std::string::npos);
  EXPECT_NE(none.status().message().find("upload"), std::string::npos);
  EXPECT_FALSE(MediaRoot::open(dir.file("nope")));
  EXPECT_FALSE(MediaRoot::open(dir.file("outside.png")));
}

TEST(ServerAuth, TheBearerKeyWhole) {
  EXPECT_TRUE(bearer_matches("Bearer s3cret", "s3cret"));
  EXPECT_TRUE(bearer_matches("bearer s3cret", "s3cret"));  // the scheme is case-insensitive
  EXPECT_FALSE(bearer_matches("Bearer s3cre", "s3cret"));
  EXPECT_FALSE(bearer_matches("Bearer s3cretx", "s3cret"));
  EXPECT_FALSE(bearer_matches("Bearer S3cret", "s3cret"));
  EXPECT_FALSE(bearer_matches("s3cret", "s3cret"));
  EXPECT_FALSE(bearer_matches("Basic s3cret", "s3cret"));
  EXPECT_FALSE(bearer_matches("Bearer  s3cret", "s3cret"));
  EXPECT_FALSE(bearer_matches("", "s3cret"));
  EXPECT_FALSE(bearer_matches("Bearer ", ""));  // no key configured never matches
}

#ifdef OROCHI_WITH_HTTP
TEST(ServerByteRanges, CheckedAgainstTheFile) {
  bool unsatisfiable = false;
  using R = httplib::Ranges;
  auto range = [&](R r, uint64_t size) { return byte_range(r, size, unsatisfiable); };
  EXPECT_EQ(range({{0, 99}}, 1000), (std::pair<uint64_t, uint64_t>{0, 99}));
  EXPECT_EQ(range({{900, -1}}, 1000), (std::pair<uint64_t, uint64_t>{900, 999}));
  EXPECT_EQ(range({{-1, 100}}, 1000), (std::pair<uint64_t, uint64_t>{900, 999}));  // the last 100 bytes
  EXPECT_EQ(range({{-1, 5000}}, 1000), (std::pair<uint64_t, uint64_t>{0, 999}));
  EXPECT_EQ(range({{10, 5000}}, 1000), (std::pair<uint64_t, uint64_t>{10, 999}));  // clamped to the end
  EXPECT_FALSE(unsatisfiable);
  EXPECT_FALSE(range({{1000, 1200}}, 1000));
  EXPECT_TRUE(unsatisfiable);
  EXPECT_FALSE(range({{-1, 0}}, 1000));
  EXPECT_TRUE(unsatisfiable);
  EXPECT_FALSE(range({}, 1000));  // the whole file
  EXPECT_FALSE(unsatisfiable);
  EXPECT_FALSE(range({{0, 1}, {5, 6}}, 1000));  // several: the whole file (RFC 9110 lets a server ignore them)
  EXPECT_FALSE(unsatisfiable);
}

TEST(ServerUploads, OnlyAnExtensionOfTheClientsNameIsKept) {
  EXPECT_EQ(upload_extension("first.PNG", "image/png"), ".png");
  EXPECT_EQ(upload_extension("clip.mp4", "application/octet-stream"), ".mp4");
  EXPECT_EQ(upload_extension("../../etc/passwd", "image/jpeg"), ".jpg");
  EXPECT_EQ(upload_extension("a.b/c", "video/mp4"), ".mp4");
  EXPECT_EQ(upload_extension("x.p/ng", "audio/wav"), ".wav");
  EXPECT_EQ(upload_extension("noext", "application/octet-stream"), "");
  EXPECT_EQ(upload_extension("x.verylongext", "image/webp; q=1"), ".webp");
}
#endif

}  // namespace
}  // namespace orochi::apps::server
