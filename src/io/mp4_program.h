// MP4 through an external `ffmpeg` program, for builds without FFmpeg's libraries (the GPU machine
// has none): the frames go to a lossless Y4M file and the audio to a WAV file in a private temporary
// folder, and the program encodes them as write_mp4 does (H.264 yuv420p at the given crf/preset,
// AAC at the given bitrate) into `path`.
#pragma once

#include <string>

#include "io/mp4.h"

namespace orochi::io {

// The program to use: $OROCHI_FFMPEG when set (it must be an executable file), else `ffmpeg` on
// PATH; empty when there is none.
std::string find_ffmpeg_program();

// Errors: as write_mp4, plus io_error naming the program and the end of its log when it fails.
Status write_mp4_with_program(const std::string& program, const std::string& path, const VideoFrames& video,
                              const AudioTrack* audio, const Mp4Options& options = {});

}  // namespace orochi::io
