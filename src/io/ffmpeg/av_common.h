// Owning handles for FFmpeg's C objects (so every early return frees them) and error text for
// failed FFmpeg calls. Only src/io/ffmpeg includes this.
#pragma once

extern "C" {
#include <libavcodec/avcodec.h>
#include <libavformat/avformat.h>
#include <libavutil/avutil.h>
#include <libswresample/swresample.h>
#include <libswscale/swscale.h>
}

#include <memory>
#include <string>

#include "core/status.h"

namespace orochi::io::av {

struct CodecContextDeleter {
  void operator()(AVCodecContext* c) const { avcodec_free_context(&c); }
};
struct FrameDeleter {
  void operator()(AVFrame* f) const { av_frame_free(&f); }
};
struct PacketDeleter {
  void operator()(AVPacket* p) const { av_packet_free(&p); }
};
struct SwsDeleter {
  void operator()(SwsContext* s) const { sws_freeContext(s); }
};
struct SwrDeleter {
  void operator()(SwrContext* s) const { swr_free(&s); }
};
// An output context closes the file it opened, then frees itself.
struct OutputFormatDeleter {
  void operator()(AVFormatContext* f) const {
    if (!(f->oformat->flags & AVFMT_NOFILE)) avio_closep(&f->pb);
    avformat_free_context(f);
  }
};
struct InputFormatDeleter {
  void operator()(AVFormatContext* f) const { avformat_close_input(&f); }
};

using CodecContextPtr = std::unique_ptr<AVCodecContext, CodecContextDeleter>;
using FramePtr = std::unique_ptr<AVFrame, FrameDeleter>;
using PacketPtr = std::unique_ptr<AVPacket, PacketDeleter>;
using SwsPtr = std::unique_ptr<SwsContext, SwsDeleter>;
using SwrPtr = std::unique_ptr<SwrContext, SwrDeleter>;
using OutputFormatPtr = std::unique_ptr<AVFormatContext, OutputFormatDeleter>;
using InputFormatPtr = std::unique_ptr<AVFormatContext, InputFormatDeleter>;

// av_strerror's text for an AVERROR code, with the code: "Invalid argument (-22)".
std::string error_text(int err);

// A Status for a failed FFmpeg call: "<what>: <error text>". `advice`, when given, follows.
Status failure(ErrorCode code, int err, const std::string& what, const std::string& advice = "");

// Keeps FFmpeg's log (encoder statistics at info level) to errors; a library stays quiet unless asked.
void quiet_logs();

// Receives every packet `encoder` has ready (all of them after a flush), stamps it for `stream` and
// hands it to the interleaving muxer.
Status write_encoded_packets(AVCodecContext* encoder, AVStream* stream, AVFormatContext* muxer,
                             AVPacket* packet);

}  // namespace orochi::io::av
