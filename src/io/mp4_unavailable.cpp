// mp4_supported() for every build, and write_mp4 for a build without FFmpeg's libraries (with them,
// src/io/ffmpeg/mp4_writer.cpp defines it instead).
#include "io/mp4.h"

namespace orochi::io {

bool mp4_supported() {
#ifdef OROCHI_WITH_FFMPEG
  return true;
#else
  return false;
#endif
}

#ifndef OROCHI_WITH_FFMPEG
Status write_mp4(const std::string& path, const VideoFrames& video, const AudioTrack* audio,
                 const Mp4Options& options) {
  return unsupported("cannot write " + path +
                     ": Orochi was built without FFmpeg's libraries; install libavformat-dev, "
                     "libavcodec-dev, libavutil-dev, libswscale-dev and libswresample-dev and rebuild");
}
#endif

}  // namespace orochi::io
