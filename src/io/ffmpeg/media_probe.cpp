#include "io/ffmpeg/media_probe.h"

#include <cmath>
#include <filesystem>

#include "io/ffmpeg/av_common.h"

extern "C" {
#include <libavutil/imgutils.h>
#include <libavutil/pixdesc.h>
}

namespace orochi::io {
namespace {

struct StreamDecoder {
  av::CodecContextPtr context;  // null for streams we do not decode
  size_t info_index = 0;        // into MediaInfo::streams
};

StreamInfo describe_stream(const AVStream* st) {
  const AVCodecParameters* par = st->codecpar;
  StreamInfo s;
  s.codec = avcodec_get_name(par->codec_id);
  if (st->duration != AV_NOPTS_VALUE) s.duration_seconds = st->duration * av_q2d(st->time_base);
  if (par->codec_type == AVMEDIA_TYPE_VIDEO) {
    s.kind = StreamKind::kVideo;
    s.width = par->width;
    s.height = par->height;
    s.fps = av_q2d(st->avg_frame_rate);
    const char* name = av_get_pix_fmt_name(static_cast<AVPixelFormat>(par->format));
    s.pixel_format = name ? name : "unknown";
  } else if (par->codec_type == AVMEDIA_TYPE_AUDIO) {
    s.kind = StreamKind::kAudio;
    s.sample_rate = par->sample_rate;
    s.channels = par->ch_layout.nb_channels;
  }
  return s;
}

Expected<av::CodecContextPtr> open_decoder(const AVStream* st, const std::string& path) {
  const AVCodec* codec = avcodec_find_decoder(st->codecpar->codec_id);
  if (!codec)
    return unsupported("no decoder for the " + std::string(avcodec_get_name(st->codecpar->codec_id)) +
                       " stream of " + path);
  av::CodecContextPtr c(avcodec_alloc_context3(codec));
  if (!c) return av::failure(ErrorCode::kInternal, AVERROR(ENOMEM), "allocating a decoder");
  int err = avcodec_parameters_to_context(c.get(), st->codecpar);
  if (err >= 0) {
    c->pkt_timebase = st->time_base;
    err = avcodec_open2(c.get(), codec, nullptr);
  }
  if (err < 0) return av::failure(ErrorCode::kCorruptFile, err, "opening the decoder for " + path);
  return c;
}

// [H, W, 3] RGB of a decoded picture, converted with the matrix and range the stream is tagged with.
Expected<std::vector<uint8_t>> to_rgb(const AVFrame* f) {
  av::SwsPtr sws(sws_getContext(f->width, f->height, static_cast<AVPixelFormat>(f->format), f->width,
                                f->height, AV_PIX_FMT_RGB24, SWS_BICUBIC | SWS_ACCURATE_RND, nullptr,
                                nullptr, nullptr));
  if (!sws) return av::failure(ErrorCode::kInternal, AVERROR(EINVAL), "creating the RGB converter");
  const int matrix = f->colorspace == AVCOL_SPC_UNSPECIFIED ? SWS_CS_DEFAULT : f->colorspace;
  // Sources without a matrix (RGB, gray) refuse this and convert with the defaults, which is right.
  sws_setColorspaceDetails(sws.get(), sws_getCoefficients(matrix), f->color_range == AVCOL_RANGE_JPEG,
                           sws_getCoefficients(SWS_CS_DEFAULT), 1, 0, 1 << 16, 1 << 16);
  av::FramePtr out(av_frame_alloc());  // padded and aligned, as swscale's SIMD stores want
  int err = out ? 0 : AVERROR(ENOMEM);
  if (err >= 0) {
    out->format = AV_PIX_FMT_RGB24;
    out->width = f->width;
    out->height = f->height;
    err = av_frame_get_buffer(out.get(), 0);
  }
  if (err < 0) return av::failure(ErrorCode::kInternal, err, "allocating an RGB frame");
  err = sws_scale(sws.get(), f->data, f->linesize, 0, f->height, out->data, out->linesize);
  if (err < 0) return av::failure(ErrorCode::kInternal, err, "converting a frame to RGB");
  std::vector<uint8_t> rgb(static_cast<size_t>(f->width) * f->height * 3);  // [H, W, 3]
  av_image_copy_plane(rgb.data(), f->width * 3, out->data[0], out->linesize[0], f->width * 3,
                      f->height);
  return rgb;
}

// Adds the squares of each channel's samples to `sums` (float formats only; AAC decodes to fltp).
void add_squares(const AVFrame* f, std::vector<double>& sums) {
  const auto format = static_cast<AVSampleFormat>(f->format);
  if (format != AV_SAMPLE_FMT_FLTP && format != AV_SAMPLE_FMT_FLT) return;
  const int channels = f->ch_layout.nb_channels;
  sums.resize(channels, 0.0);
  for (int c = 0; c < channels; ++c)
    for (int i = 0; i < f->nb_samples; ++i) {
      const float x = format == AV_SAMPLE_FMT_FLTP
                          ? reinterpret_cast<const float*>(f->extended_data[c])[i]
                          : reinterpret_cast<const float*>(f->data[0])[i * channels + c];
      sums[c] += double(x) * x;
    }
}

// Sends `packet` (null flushes) and counts every frame that comes out.
Status decode(StreamDecoder& d, const AVPacket* packet, AVFrame* frame, MediaInfo& info,
              const std::string& path) {
  int err = avcodec_send_packet(d.context.get(), packet);
  if (err < 0 && err != AVERROR_EOF)
    return av::failure(ErrorCode::kCorruptFile, err, "decoding " + path);
  StreamInfo& s = info.streams[d.info_index];
  for (;;) {
    err = avcodec_receive_frame(d.context.get(), frame);
    if (err == AVERROR(EAGAIN) || err == AVERROR_EOF) return Status::ok();
    if (err < 0) return av::failure(ErrorCode::kCorruptFile, err, "decoding " + path);
    if (s.kind == StreamKind::kVideo) {
      if (s.decoded_frames == 0 && info.first_frame_rgb.empty()) {
        OROCHI_ASSIGN_OR_RETURN(info.first_frame_rgb, to_rgb(frame));
      }
      ++s.decoded_frames;
    } else {
      s.decoded_samples += frame->nb_samples;
      add_squares(frame, s.channel_rms);  // sums of squares until the end of read_back_media
    }
    av_frame_unref(frame);
  }
}

}  // namespace

const StreamInfo* MediaInfo::first(StreamKind kind) const {
  for (const StreamInfo& s : streams)
    if (s.kind == kind) return &s;
  return nullptr;
}

Expected<MediaInfo> read_back_media(const std::string& path) {
  std::error_code ec;
  if (!std::filesystem::exists(path, ec)) return not_found("no file at " + path);
  av::quiet_logs();
  AVFormatContext* raw = nullptr;
  int err = avformat_open_input(&raw, path.c_str(), nullptr, nullptr);  // frees `raw` on failure
  if (err < 0) return av::failure(ErrorCode::kCorruptFile, err, "cannot read " + path);
  av::InputFormatPtr input(raw);
  err = avformat_find_stream_info(input.get(), nullptr);
  if (err < 0) return av::failure(ErrorCode::kCorruptFile, err, "cannot find the streams of " + path);

  MediaInfo info;
  info.container = input->iformat->name;
  if (input->duration != AV_NOPTS_VALUE) info.duration_seconds = double(input->duration) / AV_TIME_BASE;
  std::vector<StreamDecoder> decoders(input->nb_streams);
  for (unsigned i = 0; i < input->nb_streams; ++i) {
    info.streams.push_back(describe_stream(input->streams[i]));
    decoders[i].info_index = i;
    if (info.streams[i].kind == StreamKind::kOther) continue;
    OROCHI_ASSIGN_OR_RETURN(decoders[i].context, open_decoder(input->streams[i], path));
  }

  av::PacketPtr packet(av_packet_alloc());
  av::FramePtr frame(av_frame_alloc());
  if (!packet || !frame) return av::failure(ErrorCode::kInternal, AVERROR(ENOMEM), "allocating");
  while ((err = av_read_frame(input.get(), packet.get())) >= 0) {
    StreamDecoder& d = decoders[packet->stream_index];
    Status decoded = d.context ? decode(d, packet.get(), frame.get(), info, path) : Status::ok();
    av_packet_unref(packet.get());
    OROCHI_RETURN_IF_ERROR(decoded);
  }
  if (err != AVERROR_EOF) return av::failure(ErrorCode::kCorruptFile, err, "reading " + path);
  for (StreamDecoder& d : decoders)
    if (d.context) OROCHI_RETURN_IF_ERROR(decode(d, nullptr, frame.get(), info, path));
  for (StreamInfo& s : info.streams)
    for (double& sum : s.channel_rms)
      sum = s.decoded_samples > 0 ? std::sqrt(sum / s.decoded_samples) : 0.0;
  return info;
}

}  // namespace orochi::io
