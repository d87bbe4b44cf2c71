#include "io/ffmpeg/av_common.h"

namespace orochi::io::av {

std::string error_text(int err) {
  char text[AV_ERROR_MAX_STRING_SIZE] = {};
  if (av_strerror(err, text, sizeof text) < 0) return "unknown FFmpeg error (" + std::to_string(err) + ")";
  return std::string(text) + " (" + std::to_string(err) + ")";
}

Status failure(ErrorCode code, int err, const std::string& what, const std::string& advice) {
  std::string message = what + ": " + error_text(err);
  if (!advice.empty()) message += "; " + advice;
  return Status(code, std::move(message));
}

void quiet_logs() {
  if (av_log_get_level() > AV_LOG_ERROR) av_log_set_level(AV_LOG_ERROR);
}

Status write_encoded_packets(AVCodecContext* encoder, AVStream* stream, AVFormatContext* muxer,
                             AVPacket* packet) {
  for (;;) {
    int err = avcodec_receive_packet(encoder, packet);
    if (err == AVERROR(EAGAIN) || err == AVERROR_EOF) return Status::ok();
    if (err < 0)
      return failure(ErrorCode::kInternal, err,
                     std::string("the ") + encoder->codec->name + " encoder failed");
    av_packet_rescale_ts(packet, encoder->time_base, stream->time_base);
    packet->stream_index = stream->index;
    err = av_interleaved_write_frame(muxer, packet);  // takes the packet's data, leaves it blank
    if (err < 0)
      return failure(ErrorCode::kIo, err, std::string("writing ") + encoder->codec->name +
                                              " data to " + muxer->url + " failed",
                     "check the free disk space");
  }
}

}  // namespace orochi::io::av
