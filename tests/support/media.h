// Small synthetic media for the MP4 tests: frames with motion and a stereo tone.
#pragma once

#include <cstdint>

#include "io/video_frames.h"

namespace orochi::testing {

// A smooth pattern that moves each frame, so the encoder has real motion to code (height >= 2).
io::VideoFrames moving_gradient(int64_t frames, int64_t height, int64_t width);

// Interleaved stereo: 440 Hz at half scale left, 660 Hz at quarter scale right.
io::AudioTrack stereo_sine(double seconds, int rate);

}  // namespace orochi::testing
