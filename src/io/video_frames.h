// Decoded media held in memory, independent of FFmpeg: RGB video frames and a PCM audio track, their
// validation, and converters from the model's float tensors. The MP4 writer (io/mp4.h) takes these.
#pragma once

#include <cstdint>
#include <vector>

#include "core/status.h"
#include "core/tensor.h"

namespace orochi::io {

// Frames per second as a fraction, so 24000/1001 is exact; H3 renders at 24/1.
struct FrameRate {
  int num = 24;
  int den = 1;
  double value() const { return static_cast<double>(num) / den; }
};

// RGB video, 8 bits per channel. The one layout is uint8 [F, H, W, 3]: frame-major, then rows top to
// bottom, pixels left to right, channels R, G, B interleaved (what encoders and image files expect).
struct VideoFrames {
  int64_t frames = 0;
  int64_t height = 0;
  int64_t width = 0;
  FrameRate fps;
  std::vector<uint8_t> rgb;  // [F, H, W, 3]

  int64_t frame_bytes() const { return height * width * 3; }
  const uint8_t* frame(int64_t f) const { return rgb.data() + f * frame_bytes(); }
  uint8_t* frame(int64_t f) { return rgb.data() + f * frame_bytes(); }
  double duration_seconds() const { return static_cast<double>(frames) / fps.value(); }
};

// How sample values of an audio track are arranged.
enum class SampleLayout {
  kInterleaved,  // [N, C]: L0 R0 L1 R1 ...
  kPlanar,       // [C, N]: all of channel 0, then all of channel 1 (the audio VAE's output)
};

// PCM audio as float samples in [-1, 1] (values outside are clipped when written).
struct AudioTrack {
  int sample_rate = 32000;  // H3's audio VAE
  int channels = 2;
  SampleLayout layout = SampleLayout::kInterleaved;
  std::vector<float> samples;  // channels * sample_count() values in `layout`

  int64_t sample_count() const {  // per channel
    return channels > 0 ? static_cast<int64_t>(samples.size()) / channels : 0;
  }
  double duration_seconds() const {
    return sample_rate > 0 ? static_cast<double>(sample_count()) / sample_rate : 0.0;
  }
  // Sample `i` of channel `c`, whatever the layout.
  float at(int64_t i, int c) const {
    return layout == SampleLayout::kInterleaved ? samples[i * channels + c]
                                                : samples[c * sample_count() + i];
  }
};

// Checks the dimensions against the buffer: frames, height, width > 0, rgb holds exactly F*H*W*3
// bytes, fps positive. invalid_argument naming the first problem otherwise.
Status validate_video(const VideoFrames& video);

// Checks rate and channels > 0, a whole number of samples per channel, at least one sample, and
// finite values (a NaN would encode as noise or silence without telling anyone).
Status validate_audio(const AudioTrack& audio);

// The value range of float pixels: [0, 1] (image convention) or [-1, 1] (what VAE decoders emit).
enum class PixelRange { kZeroToOne, kMinusOneToOne };

// Float frames [F, 3, H, W] (any float dtype) -> uint8 [F, H, W, 3], rounding to nearest and clipping
// out-of-range values. shape_mismatch for another rank or channel count, invalid_argument for NaN/Inf.
Expected<VideoFrames> video_from_planar_floats(const Tensor& frames, FrameRate fps = {},
                                               PixelRange range = PixelRange::kZeroToOne);

// Float waveform [C, N] (any float dtype) -> a planar AudioTrack at `sample_rate`.
Expected<AudioTrack> audio_from_planar_floats(const Tensor& waveform, int sample_rate = 32000);

}  // namespace orochi::io
