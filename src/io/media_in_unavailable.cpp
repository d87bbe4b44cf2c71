// media_input_supported() and media_kind_name() for every build; the readers and probe_media for a
// build without FFmpeg's libraries, which reads uncompressed files only (io/raw_media_in.h); with
// them, src/io/ffmpeg/{image,video,audio}_reader.cpp and media_header_probe.cpp define them instead.
#include "io/media_in.h"
#include "io/raw_media_in.h"

namespace orochi::io {

const char* media_kind_name(MediaKind kind) {
  switch (kind) {
    case MediaKind::kImage: return "image";
    case MediaKind::kVideo: return "video";
    case MediaKind::kAudio: return "audio";
  }
  return "?";
}

bool media_input_supported() {
#ifdef OROCHI_WITH_FFMPEG
  return true;
#else
  return false;
#endif
}

#ifndef OROCHI_WITH_FFMPEG
namespace {

Status no_ffmpeg(const std::string& path) {
  return unsupported("cannot read " + path +
                     ": Orochi was built without FFmpeg's libraries, which decode reference media; install "
                     "libavformat-dev, libavcodec-dev, libavutil-dev, libswscale-dev and libswresample-dev and "
                     "rebuild (scripts/install_deps.sh does), or give uncompressed media, which this build reads: "
                     "PPM pictures, WAV sound, Y4M 4:4:4 videos with their soundtrack as a WAV of the same name");
}

}  // namespace

// Uncompressed files need no codec (io/raw_media_in.h); anything else needs FFmpeg.
Expected<RgbImage> read_image(const std::string& path) { return is_raw_media(path) ? read_ppm(path) : no_ffmpeg(path); }
Expected<DecodedVideo> read_video(const std::string& path, const VideoReadOptions& options) {
  return is_raw_media(path) ? read_y4m(path, options) : no_ffmpeg(path);
}
Expected<DecodedAudio> read_audio(const std::string& path) { return is_raw_media(path) ? read_wav(path) : no_ffmpeg(path); }
Expected<MediaProbe> probe_media(const std::string& path) {
  return is_raw_media(path) ? probe_raw_media(path) : no_ffmpeg(path);
}
#endif

}  // namespace orochi::io
