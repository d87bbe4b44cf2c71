#include "io/ffmpeg/h264_encoder.h"

extern "C" {
#include <libavutil/imgutils.h>
#include <libavutil/opt.h>
}

#include "core/log.h"

namespace orochi::io::av {
namespace {

// libx264 honours crf and preset; libavcodec's own fallback might be anything (openh264, a
// hardware encoder), so it is only the second choice.
Expected<const AVCodec*> find_h264_encoder() {
  if (const AVCodec* x264 = avcodec_find_encoder_by_name("libx264")) return x264;
  if (const AVCodec* any = avcodec_find_encoder(AV_CODEC_ID_H264)) {
    log_warn("libavcodec has no libx264; encoding H.264 with ", any->name,
             " (crf and preset are x264 options and are ignored)");
    return any;
  }
  return unsupported(
      "this libavcodec has no H.264 encoder; install one built with libx264 (Debian: "
      "libavcodec59 or libavcodec-extra) and rebuild");
}

}  // namespace

Expected<H264Encoder> H264Encoder::open(AVFormatContext* muxer, const VideoFrames& video,
                                        const Mp4Options& options) {
  OROCHI_ASSIGN_OR_RETURN(const AVCodec* codec, find_h264_encoder());
  H264Encoder enc;
  enc.muxer_ = muxer;
  enc.context_.reset(avcodec_alloc_context3(codec));
  enc.rgb_.reset(av_frame_alloc());
  enc.frame_.reset(av_frame_alloc());
  enc.packet_.reset(av_packet_alloc());
  if (!enc.context_ || !enc.rgb_ || !enc.frame_ || !enc.packet_)
    return failure(ErrorCode::kInternal, AVERROR(ENOMEM), "allocating the H.264 encoder");
  AVCodecContext* c = enc.context_.get();
  c->width = static_cast<int>(video.width);
  c->height = static_cast<int>(video.height);
  c->time_base = AVRational{video.fps.den, video.fps.num};  // pts counts frames
  c->framerate = AVRational{video.fps.num, video.fps.den};
  c->pix_fmt = AV_PIX_FMT_YUV420P;
  // Tag what swscale writes below, so players convert back with the same matrix.
  c->color_range = AVCOL_RANGE_MPEG;
  c->colorspace = AVCOL_SPC_BT709;
  c->color_primaries = AVCOL_PRI_BT709;
  c->color_trc = AVCOL_TRC_BT709;
  if (muxer->oformat->flags & AVFMT_GLOBALHEADER) c->flags |= AV_CODEC_FLAG_GLOBAL_HEADER;
  if (std::string(codec->name) == "libx264") {
    int err = av_opt_set_int(c->priv_data, "crf", options.crf, 0);
    if (err >= 0) err = av_opt_set(c->priv_data, "preset", options.preset.c_str(), 0);
    if (err < 0) return failure(ErrorCode::kInvalidArgument, err, "setting libx264 crf/preset");
  }
  int err = avcodec_open2(c, codec, nullptr);
  if (err < 0)
    return failure(ErrorCode::kInvalidArgument, err,
                   std::string("opening the ") + codec->name + " encoder for " +
                       std::to_string(c->width) + "x" + std::to_string(c->height) + " at " +
                       std::to_string(video.fps.num) + "/" + std::to_string(video.fps.den) + " fps",
                   "check the preset name ('" + options.preset +
                       "'; x264 knows ultrafast, superfast, veryfast, faster, fast, medium, slow, "
                       "slower, veryslow, placebo) and the frame size");

  enc.stream_ = avformat_new_stream(muxer, nullptr);
  if (!enc.stream_) return failure(ErrorCode::kInternal, AVERROR(ENOMEM), "adding the video stream");
  enc.stream_->time_base = c->time_base;  // a hint; the muxer may pick a finer one
  enc.stream_->avg_frame_rate = c->framerate;
  err = avcodec_parameters_from_context(enc.stream_->codecpar, c);
  if (err < 0) return failure(ErrorCode::kInternal, err, "describing the video stream");

  AVFrame* f = enc.frame_.get();
  f->format = c->pix_fmt;
  f->width = c->width;
  f->height = c->height;
  f->color_range = c->color_range;
  f->colorspace = c->colorspace;
  f->color_primaries = c->color_primaries;
  f->color_trc = c->color_trc;
  err = av_frame_get_buffer(f, 0);
  AVFrame* rgb = enc.rgb_.get();
  rgb->format = AV_PIX_FMT_RGB24;
  rgb->width = c->width;
  rgb->height = c->height;
  if (err >= 0) err = av_frame_get_buffer(rgb, 0);
  if (err < 0) return failure(ErrorCode::kInternal, err, "allocating a video frame");

  enc.to_yuv_.reset(sws_getContext(c->width, c->height, AV_PIX_FMT_RGB24, c->width, c->height,
                                   c->pix_fmt, SWS_BICUBIC | SWS_ACCURATE_RND, nullptr, nullptr,
                                   nullptr));
  if (!enc.to_yuv_)
    return failure(ErrorCode::kInternal, AVERROR(EINVAL), "creating the RGB -> yuv420p converter");
  // Source: full-range RGB. Destination: BT.709 limited range, as tagged above.
  const int* bt709 = sws_getCoefficients(SWS_CS_ITU709);
  err = sws_setColorspaceDetails(enc.to_yuv_.get(), bt709, 1, bt709, 0, 0, 1 << 16, 1 << 16);
  if (err < 0) return failure(ErrorCode::kInternal, err, "setting the BT.709 conversion matrix");
  return enc;
}

Status H264Encoder::encode(const VideoFrames& video, int64_t index) {
  AVFrame* f = frame_.get();
  int err = av_frame_make_writable(f);  // the encoder may still hold the previous picture
  if (err < 0) return failure(ErrorCode::kInternal, err, "reusing the video frame");
  const int row_bytes = static_cast<int>(video.width * 3);
  av_image_copy_plane(rgb_->data[0], rgb_->linesize[0], video.frame(index), row_bytes, row_bytes,
                      f->height);
  err = sws_scale(to_yuv_.get(), rgb_->data, rgb_->linesize, 0, f->height, f->data, f->linesize);
  if (err < 0) return failure(ErrorCode::kInternal, err, "converting frame " + std::to_string(index));
  f->pts = index;
  err = avcodec_send_frame(context_.get(), f);
  if (err < 0)
    return failure(ErrorCode::kInternal, err,
                   std::string("the ") + encoder_name() + " encoder refused frame " + std::to_string(index));
  return write_encoded_packets(context_.get(), stream_, muxer_, packet_.get());
}

Status H264Encoder::flush() {
  const int err = avcodec_send_frame(context_.get(), nullptr);
  if (err < 0) return failure(ErrorCode::kInternal, err, "flushing the H.264 encoder");
  return write_encoded_packets(context_.get(), stream_, muxer_, packet_.get());
}

}  // namespace orochi::io::av
