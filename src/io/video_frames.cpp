#include "io/video_frames.h"

#include <algorithm>
#include <cmath>
#include <string>

namespace orochi::io {
namespace {

std::string dims(const VideoFrames& v) {
  return std::to_string(v.frames) + " frames of " + std::to_string(v.width) + "x" +
         std::to_string(v.height);
}

// A host fp32 contiguous copy (or view) of a float tensor, or the reason it cannot be one.
Expected<Tensor> host_floats(const Tensor& t, const char* what) {
  if (!t.defined()) return invalid_argument(std::string(what) + " tensor is empty");
  if (t.device().kind != DeviceKind::kCPU)
    return invalid_argument(std::string(what) + " tensor is on " + device_name(t.device()) +
                            ": copy it to the host first");
  if (!dtype_is_float(t.dtype()))
    return shape_mismatch(std::string(what) + " must be a float tensor, got " + t.describe());
  return t.dtype() == DType::kF32 ? t.contiguous() : t.to(DType::kF32);
}

}  // namespace

Status validate_video(const VideoFrames& v) {
  if (v.frames <= 0) return invalid_argument("the video has no frames (" + dims(v) + ")");
  if (v.width <= 0 || v.height <= 0)
    return invalid_argument("the video frame size must be positive, got " + dims(v));
  if (v.fps.num <= 0 || v.fps.den <= 0)
    return invalid_argument("the frame rate must be positive, got " + std::to_string(v.fps.num) +
                            "/" + std::to_string(v.fps.den));
  const uint64_t expected = static_cast<uint64_t>(v.frames) * v.frame_bytes();
  if (v.rgb.size() != expected)
    return invalid_argument("the video buffer holds " + std::to_string(v.rgb.size()) +
                            " bytes but " + dims(v) + " RGB needs " + std::to_string(expected) +
                            ": every frame must have the declared size");
  return Status::ok();
}

Status validate_audio(const AudioTrack& a) {
  if (a.sample_rate <= 0)
    return invalid_argument("the audio sample rate must be positive, got " +
                            std::to_string(a.sample_rate));
  if (a.channels <= 0)
    return invalid_argument("the audio must have at least one channel, got " +
                            std::to_string(a.channels));
  if (a.samples.size() % static_cast<size_t>(a.channels) != 0)
    return invalid_argument("the audio holds " + std::to_string(a.samples.size()) +
                            " values, not a whole number of samples for " +
                            std::to_string(a.channels) + " channels: check the channel count");
  if (a.samples.empty()) return invalid_argument("the audio track has no samples");
  const auto bad = std::find_if(a.samples.begin(), a.samples.end(),
                                [](float x) { return !std::isfinite(x); });
  if (bad != a.samples.end())
    return invalid_argument("audio value " + std::to_string(bad - a.samples.begin()) +
                            " is not finite (NaN or Inf)");
  return Status::ok();
}

Expected<VideoFrames> video_from_planar_floats(const Tensor& frames, FrameRate fps,
                                               PixelRange range) {
  OROCHI_ASSIGN_OR_RETURN(const Tensor src, host_floats(frames, "video"));
  if (src.ndim() != 4 || src.dim(1) != 3)
    return shape_mismatch("video frames must be [F, 3, H, W], got " + src.describe());
  VideoFrames out;
  out.frames = src.dim(0);
  out.height = src.dim(2);
  out.width = src.dim(3);
  out.fps = fps;
  out.rgb.resize(static_cast<size_t>(src.numel()));
  // [-1, 1] maps to [0, 1] by (x + 1) / 2, folded into one scale and offset.
  const float scale = range == PixelRange::kZeroToOne ? 255.0f : 127.5f;
  const float offset = range == PixelRange::kZeroToOne ? 0.0f : 127.5f;
  const float* in = src.data<float>();  // [F, 3, H, W]
  const int64_t plane = out.height * out.width;
  for (int64_t f = 0; f < out.frames; ++f) {
    for (int c = 0; c < 3; ++c) {
      const float* channel = in + (f * 3 + c) * plane;  // [H, W]
      uint8_t* dst = out.frame(f) + c;                   // [H, W, 3], stride 3
      for (int64_t p = 0; p < plane; ++p) {
        const float x = channel[p];
        if (!std::isfinite(x))
          return invalid_argument("video pixel (frame " + std::to_string(f) + ", channel " +
                                  std::to_string(c) + ", index " + std::to_string(p) +
                                  ") is not finite (NaN or Inf)");
        dst[p * 3] = static_cast<uint8_t>(std::clamp(std::lround(x * scale + offset), 0L, 255L));
      }
    }
  }
  return out;
}

Expected<AudioTrack> audio_from_planar_floats(const Tensor& waveform, int sample_rate) {
  OROCHI_ASSIGN_OR_RETURN(const Tensor src, host_floats(waveform, "audio"));
  if (src.ndim() != 2) return shape_mismatch("audio must be [C, N], got " + src.describe());
  AudioTrack out;
  out.sample_rate = sample_rate;
  out.channels = static_cast<int>(src.dim(0));
  out.layout = SampleLayout::kPlanar;
  out.samples.assign(src.data<float>(), src.data<float>() + src.numel());
  OROCHI_RETURN_IF_ERROR(validate_audio(out));
  return out;
}

}  // namespace orochi::io
