// mp4_supported() for every build, and write_mp4 for a build without FFmpeg's libraries (with them,
// src/io/ffmpeg/mp4_writer.cpp defines it instead): it falls back to an `ffmpeg` program.
#include "io/mp4.h"
#include "io/mp4_program.h"

namespace orochi::io {

bool mp4_supported() {
#ifdef OROCHI_WITH_FFMPEG
  return true;
#else
  return !find_ffmpeg_program().empty();
#endif
}

#ifndef OROCHI_WITH_FFMPEG
Status write_mp4(const std::string& path, const VideoFrames& video, const AudioTrack* audio,
                 const Mp4Options& options) {
  if (const std::string program = find_ffmpeg_program(); !program.empty())
    return write_mp4_with_program(program, path, video, audio, options);
  return unsupported("cannot write " + path +
                     ": Orochi was built without FFmpeg's libraries and found no ffmpeg program; install "
                     "libavformat-dev, libavcodec-dev, libavutil-dev, libswscale-dev and libswresample-dev and "
                     "rebuild, or put ffmpeg on PATH (or name it in OROCHI_FFMPEG)");
}
#endif

}  // namespace orochi::io
