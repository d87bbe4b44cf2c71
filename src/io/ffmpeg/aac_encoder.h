// The audio half of the MP4 writer: float samples -> the encoder's sample format (swresample; the
// native AAC encoder wants planar float) -> AAC in frames of exactly frame_size samples (the last one
// padded with silence: AAC refuses any other size with EINVAL) -> the muxer.
#pragma once

#include <vector>

#include "io/ffmpeg/av_common.h"
#include "io/mp4.h"

namespace orochi::io::av {

class AacEncoder {
 public:
  // Opens the encoder for `audio` and adds its stream to `muxer` (before the header). `audio` must
  // outlive the encoder.
  static Expected<AacEncoder> open(AVFormatContext* muxer, const AudioTrack& audio,
                                   const Mp4Options& options);

  bool done() const { return sent_ >= audio_->sample_count(); }
  // Start time of the next frame to encode, in seconds (for interleaving with the video).
  double next_time_seconds() const { return static_cast<double>(sent_) / audio_->sample_rate; }
  // Encodes the next frame_size samples (or the padded remainder).
  Status encode_next_frame();
  Status flush();
  const char* encoder_name() const { return context_->codec->name; }

 private:
  const AudioTrack* audio_ = nullptr;
  int64_t sent_ = 0;  // samples per channel handed to the encoder so far
  int frame_size_ = 0;
  std::vector<float> chunk_;  // [frame_size, C] interleaved, clipped to [-1, 1]
  CodecContextPtr context_;
  SwrPtr converter_;
  FramePtr frame_;
  PacketPtr packet_;
  AVStream* stream_ = nullptr;  // owned by the muxer
  AVFormatContext* muxer_ = nullptr;
};

}  // namespace orochi::io::av
