// Small synthetic media for the MP4 and reference tests: frames with motion, a stereo tone, PNGs.
#pragma once

#include <cstdint>
#include <string>

#include "io/video_frames.h"

namespace orochi::testing {

// A smooth pattern that moves each frame, so the encoder has real motion to code (height >= 2).
io::VideoFrames moving_gradient(int64_t frames, int64_t height, int64_t width);

// Interleaved stereo: 440 Hz at half scale left, 660 Hz at quarter scale right.
io::AudioTrack stereo_sine(double seconds, int rate);

// A width x height RGB PNG (a gradient), written with stored deflate blocks: no zlib needed.
void write_png(const std::string& path, int64_t width, int64_t height);

// An MP4 (H.264, and AAC stereo 44.1 kHz when `sound`) of `frames` moving frames at `fps`.
// Needs a build with FFmpeg (io::mp4_supported()); aborts the test program otherwise.
void write_clip(const std::string& path, int64_t frames, int fps, int64_t width, int64_t height, bool sound);

// Bytes to a file (for truncated and corrupt copies).
void write_file(const std::string& path, const std::string& bytes);
std::string read_file(const std::string& path);

}  // namespace orochi::testing
