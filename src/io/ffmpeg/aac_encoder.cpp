#include "io/ffmpeg/aac_encoder.h"

#include <algorithm>

extern "C" {
#include <libavutil/channel_layout.h>
#include <libavutil/samplefmt.h>
}

namespace orochi::io::av {
namespace {

// The native encoder ("aac") ships with every libavcodec; any other AAC encoder is a fallback.
Expected<const AVCodec*> find_aac_encoder() {
  if (const AVCodec* native = avcodec_find_encoder_by_name("aac")) return native;
  if (const AVCodec* any = avcodec_find_encoder(AV_CODEC_ID_AAC)) return any;
  return unsupported("this libavcodec has no AAC encoder; install a complete libavcodec and rebuild");
}

Status check_sample_rate(const AVCodec* codec, int rate) {
  if (codec->supported_samplerates == nullptr) return Status::ok();
  std::string known;
  for (const int* r = codec->supported_samplerates; *r != 0; ++r) {
    if (*r == rate) return Status::ok();
    known += (known.empty() ? "" : ", ") + std::to_string(*r);
  }
  return invalid_argument("the " + std::string(codec->name) + " encoder cannot take " +
                          std::to_string(rate) + " Hz audio; resample to one of " + known);
}

}  // namespace

Expected<AacEncoder> AacEncoder::open(AVFormatContext* muxer, const AudioTrack& audio,
                                      const Mp4Options& options) {
  OROCHI_ASSIGN_OR_RETURN(const AVCodec* codec, find_aac_encoder());
  OROCHI_RETURN_IF_ERROR(check_sample_rate(codec, audio.sample_rate));
  AacEncoder enc;
  enc.audio_ = &audio;
  enc.muxer_ = muxer;
  enc.context_.reset(avcodec_alloc_context3(codec));
  enc.frame_.reset(av_frame_alloc());
  enc.packet_.reset(av_packet_alloc());
  if (!enc.context_ || !enc.frame_ || !enc.packet_)
    return failure(ErrorCode::kInternal, AVERROR(ENOMEM), "allocating the AAC encoder");
  AVCodecContext* c = enc.context_.get();
  c->sample_fmt = codec->sample_fmts ? codec->sample_fmts[0] : AV_SAMPLE_FMT_FLTP;
  c->sample_rate = audio.sample_rate;
  av_channel_layout_default(&c->ch_layout, audio.channels);
  c->bit_rate = options.audio_bitrate;
  c->time_base = AVRational{1, audio.sample_rate};  // pts counts samples
  if (muxer->oformat->flags & AVFMT_GLOBALHEADER) c->flags |= AV_CODEC_FLAG_GLOBAL_HEADER;
  int err = avcodec_open2(c, codec, nullptr);
  if (err < 0)
    return failure(ErrorCode::kInvalidArgument, err,
                   std::string("opening the ") + codec->name + " encoder for " +
                       std::to_string(audio.channels) + " channels at " +
                       std::to_string(audio.sample_rate) + " Hz, " +
                       std::to_string(options.audio_bitrate) + " b/s",
                   "check the sample rate and bitrate");
  // Encoders with variable frame sizes report 0; 1024 is AAC's own frame.
  enc.frame_size_ = c->frame_size > 0 ? c->frame_size : 1024;
  enc.chunk_.resize(static_cast<size_t>(enc.frame_size_) * audio.channels);

  enc.stream_ = avformat_new_stream(muxer, nullptr);
  if (!enc.stream_) return failure(ErrorCode::kInternal, AVERROR(ENOMEM), "adding the audio stream");
  enc.stream_->time_base = c->time_base;
  err = avcodec_parameters_from_context(enc.stream_->codecpar, c);
  if (err < 0) return failure(ErrorCode::kInternal, err, "describing the audio stream");

  AVFrame* f = enc.frame_.get();
  f->format = c->sample_fmt;
  f->sample_rate = c->sample_rate;
  f->nb_samples = enc.frame_size_;
  err = av_channel_layout_copy(&f->ch_layout, &c->ch_layout);
  if (err >= 0) err = av_frame_get_buffer(f, 0);
  if (err < 0) return failure(ErrorCode::kInternal, err, "allocating an audio frame");

  // Same rate in and out: this only converts interleaved float to the encoder's format.
  SwrContext* swr = nullptr;
  err = swr_alloc_set_opts2(&swr, &c->ch_layout, c->sample_fmt, c->sample_rate, &c->ch_layout,
                            AV_SAMPLE_FMT_FLT, audio.sample_rate, 0, nullptr);
  enc.converter_.reset(swr);
  if (err >= 0) err = swr_init(swr);
  if (err < 0) return failure(ErrorCode::kInternal, err, "creating the audio sample converter");
  return enc;
}

Status AacEncoder::encode_next_frame() {
  const int channels = audio_->channels;
  const int n = static_cast<int>(std::min<int64_t>(frame_size_, audio_->sample_count() - sent_));
  for (int i = 0; i < n; ++i)
    for (int ch = 0; ch < channels; ++ch)
      chunk_[static_cast<size_t>(i) * channels + ch] =
          std::clamp(audio_->at(sent_ + i, ch), -1.0f, 1.0f);

  AVFrame* f = frame_.get();
  int err = av_frame_make_writable(f);
  if (err < 0) return failure(ErrorCode::kInternal, err, "reusing the audio frame");
  const uint8_t* in[1] = {reinterpret_cast<const uint8_t*>(chunk_.data())};
  const int converted = swr_convert(converter_.get(), f->data, frame_size_, in, n);
  if (converted < 0) return failure(ErrorCode::kInternal, converted, "converting audio samples");
  if (converted != n)
    return Status(ErrorCode::kInternal, "the audio converter returned " + std::to_string(converted) +
                                            " of " + std::to_string(n) + " samples");
  if (n < frame_size_)  // the last frame: pad to a whole frame
    av_samples_set_silence(f->data, n, frame_size_ - n, channels,
                           static_cast<AVSampleFormat>(f->format));
  f->nb_samples = frame_size_;
  f->pts = sent_;
  sent_ += n;
  err = avcodec_send_frame(context_.get(), f);
  if (err < 0)
    return failure(ErrorCode::kInternal, err,
                   std::string("the ") + encoder_name() + " encoder refused " +
                       std::to_string(frame_size_) + " samples at pts " + std::to_string(f->pts));
  return write_encoded_packets(context_.get(), stream_, muxer_, packet_.get());
}

Status AacEncoder::flush() {
  const int err = avcodec_send_frame(context_.get(), nullptr);
  if (err < 0) return failure(ErrorCode::kInternal, err, "flushing the AAC encoder");
  return write_encoded_packets(context_.get(), stream_, muxer_, packet_.get());
}

}  // namespace orochi::io::av
