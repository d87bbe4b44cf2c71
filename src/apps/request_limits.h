// The limits a request's numbers must keep, in one place: the option parsers check them and the
// help states them (tests/test_cli_options.cpp holds pipeline::video_geometry to the same canvas
// and frame limits).
#pragma once

#include <cstdint>

namespace orochi::apps::limits {

constexpr int64_t kCanvasMultiple = 32;    // px: the VAE's 16x downsampling times the 2x2 patch
constexpr int64_t kCanvasMinSide = 32;
constexpr int64_t kCanvasMaxSide = 8192;
constexpr int64_t kFramesMin = 5;          // frames are 17n + 5 (what the video VAE produces)
constexpr int64_t kFramesMax = 17 * 1000 + 5;
constexpr int64_t kStepsMin = 1, kStepsMax = 1000;
constexpr int64_t kTextRowsMin = 1, kTextRowsMax = 65536;
constexpr int64_t kCrfMin = 0, kCrfMax = 51;
constexpr int64_t kGpusMin = 1, kGpusMax = 64;
// --seed takes every uint64_t: [0, 2^64 - 1].

}  // namespace orochi::apps::limits
