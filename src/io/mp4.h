// MP4 output: H.264 video (yuv420p) and optional AAC audio. Safe to include in any build: without
// FFmpeg's libraries write_mp4 returns `unsupported` and mp4_supported() says false.
#pragma once

#include <string>

#include "core/status.h"
#include "io/video_frames.h"

namespace orochi::io {

struct Mp4Options {
  int crf = 18;                    // x264 quality, 0 (lossless) .. 51; 18 is visually near-lossless
  std::string preset = "medium";   // x264 speed/size trade-off: ultrafast .. veryslow
  int audio_bitrate = 192000;      // AAC bits per second (all channels)
};

// True when this build writes MP4 (it was built with FFmpeg's libraries).
bool mp4_supported();

// Checks a request before anything is opened: valid video and audio (io/video_frames.h), even width
// and height (yuv420p halves the chroma planes; we refuse rather than pad, so the output is never
// silently larger than asked: crop or pad the frames yourself), mono or stereo audio, crf in 0..51.
Status validate_mp4_request(const VideoFrames& video, const AudioTrack* audio,
                            const Mp4Options& options);

// Encodes `video` (and `audio` when not null) into the MP4 file `path`. The file is written under a
// temporary name in the same folder and renamed into place at the end, so a failure never leaves a
// half-written file at `path`. Video pts run in 1/fps; audio in 1/sample_rate; audio shorter or
// longer than the video is kept as it is. Errors: invalid_argument for bad input, io_error for an
// unwritable path (reported before any encoding), unsupported when no encoder is available.
Status write_mp4(const std::string& path, const VideoFrames& video, const AudioTrack* audio,
                 const Mp4Options& options = {});

}  // namespace orochi::io
