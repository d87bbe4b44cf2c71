// The video half of the MP4 writer: RGB frames -> yuv420p (swscale, BT.709 limited range, tagged as
// such) -> H.264 (libx264 when libavcodec has it, else its default H.264 encoder) -> the muxer.
#pragma once

#include "io/ffmpeg/av_common.h"
#include "io/mp4.h"

namespace orochi::io::av {

class H264Encoder {
 public:
  // Opens the encoder for `video`'s size and rate and adds its stream to `muxer` (before the header).
  static Expected<H264Encoder> open(AVFormatContext* muxer, const VideoFrames& video,
                                    const Mp4Options& options);

  // Encodes frame `index` of `video` (pts = index in 1/fps) and writes whatever packets are ready.
  Status encode(const VideoFrames& video, int64_t index);
  // Drains the encoder's delayed frames into the muxer.
  Status flush();
  const char* encoder_name() const { return context_->codec->name; }

 private:
  CodecContextPtr context_;
  SwsPtr to_yuv_;
  FramePtr rgb_;    // padded, aligned copy of the input: swscale's SIMD reads past a row's end
  FramePtr frame_;  // yuv420p
  PacketPtr packet_;
  AVStream* stream_ = nullptr;  // owned by the muxer
  AVFormatContext* muxer_ = nullptr;
};

}  // namespace orochi::io::av
