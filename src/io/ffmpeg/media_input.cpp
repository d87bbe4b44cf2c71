#include "io/ffmpeg/media_input.h"

#include <cmath>
#include <cstring>
#include <filesystem>
#include <system_error>

extern "C" {
#include <libavutil/display.h>
#include <libavutil/pixdesc.h>
}

namespace orochi::io::av {

Expected<InputFormatPtr> open_media_input(const std::string& path, const std::string& kind) {
  std::error_code ec;
  const std::filesystem::file_status st = std::filesystem::status(path, ec);
  if (ec || !std::filesystem::exists(st)) return not_found("no " + kind + " file at " + path + "; check the path");
  if (std::filesystem::is_directory(st)) return not_found(path + " is a folder, not a " + kind + " file");
  const auto bytes = std::filesystem::file_size(path, ec);
  if (ec) return io_error("cannot read the size of " + path + ": " + ec.message());
  if (bytes == 0) return corrupt_file(path + " is empty (0 bytes); give the " + kind + " file itself");
  if (static_cast<int64_t>(bytes) > kMaxMediaFileBytes)
    return invalid_argument(path + " is " + std::to_string(bytes >> 20) + " MiB, more than the " +
                            std::to_string(kMaxMediaFileBytes >> 20) + " MiB a reference " + kind +
                            " may have; shorten or re-encode it");
  quiet_logs();
  AVFormatContext* raw = nullptr;
  int err = avformat_open_input(&raw, path.c_str(), nullptr, nullptr);  // frees `raw` on failure
  if (err < 0)
    return failure(ErrorCode::kCorruptFile, err, "cannot read " + path + " as a " + kind,
                   "the file is damaged, truncated or not a " + kind + " FFmpeg knows");
  InputFormatPtr input(raw);
  err = avformat_find_stream_info(input.get(), nullptr);
  if (err < 0)
    return failure(ErrorCode::kCorruptFile, err, "cannot find the streams of " + path,
                   "the file is damaged or truncated");
  return input;
}

int display_quarter_turns(const AVStream* stream) {
  size_t size = 0;
  const uint8_t* matrix = av_stream_get_side_data(stream, AV_PKT_DATA_DISPLAYMATRIX, &size);
  if (!matrix || size < 9 * sizeof(int32_t)) return 0;
  const double degrees = av_display_rotation_get(reinterpret_cast<const int32_t*>(matrix));
  if (!std::isfinite(degrees)) return 0;
  const int rotation = static_cast<int>(degrees);  // int() truncates toward zero
  const int turns = static_cast<int>(std::nearbyint(rotation / 90.0));
  return ((turns % 4) + 4) % 4;
}

Expected<CodecContextPtr> open_strict_decoder(const AVStream* stream, const std::string& path) {
  const AVCodec* codec = avcodec_find_decoder(stream->codecpar->codec_id);
  if (!codec)
    return unsupported("this FFmpeg has no decoder for the " +
                       std::string(avcodec_get_name(stream->codecpar->codec_id)) + " stream of " + path +
                       "; convert the file to a common format (PNG, JPEG, MP4/H.264, WAV, FLAC)");
  CodecContextPtr c(avcodec_alloc_context3(codec));
  if (!c) return failure(ErrorCode::kInternal, AVERROR(ENOMEM), "allocating a decoder");
  int err = avcodec_parameters_to_context(c.get(), stream->codecpar);
  if (err >= 0) {
    c->pkt_timebase = stream->time_base;
    // Damaged data is an error, not a picture with concealed blocks or a click of silence.
    c->err_recognition |= AV_EF_EXPLODE | AV_EF_CRCCHECK | AV_EF_BITSTREAM;
    c->thread_count = 0;  // FFmpeg's choice; frame order and values do not depend on it
    err = avcodec_open2(c.get(), codec, nullptr);
  }
  if (err < 0) return failure(ErrorCode::kCorruptFile, err, "cannot open the decoder for " + path);
  return c;
}

Status PlanarAudioCollector::start(const AVCodecContext* decoder, const std::string& path) {
  rate_ = decoder->sample_rate;
  const int channels = decoder->ch_layout.nb_channels;
  if (rate_ <= 0 || channels <= 0)
    return corrupt_file("the audio stream of " + path + " has no sample rate or no channels (rate " +
                        std::to_string(rate_) + ", " + std::to_string(channels) + " channels)");
  channels_.assign(channels, {});
  return Status::ok();
}

Status PlanarAudioCollector::append(const uint8_t* const* data, int samples) {
  for (size_t c = 0; c < channels_.size(); ++c) {
    const float* p = reinterpret_cast<const float*>(data[c]);
    channels_[c].insert(channels_[c].end(), p, p + samples);
  }
  return Status::ok();
}

Status PlanarAudioCollector::add(const AVFrame* frame) {
  if (frame->ch_layout.nb_channels != static_cast<int>(channels_.size()) || frame->sample_rate != rate_)
    return unsupported("the audio changes its channel count or rate midway (" + std::to_string(rate_) + " Hz, " +
                       std::to_string(channels_.size()) + " channels, then " + std::to_string(frame->sample_rate) +
                       " Hz, " + std::to_string(frame->ch_layout.nb_channels) +
                       " channels); re-encode it with one format throughout");
  if (frame->format == AV_SAMPLE_FMT_FLTP) return append(frame->extended_data, frame->nb_samples);
  if (!swr_) {
    // A format conversion only, as PyAV's AudioResampler(format="fltp", layout=<own>, rate=<own>).
    SwrContext* raw = nullptr;
    AVChannelLayout layout{};  // swr takes non-const layouts in FFmpeg 5.1, and copies them
    int err = av_channel_layout_copy(&layout, &frame->ch_layout);
    if (err >= 0)
      err = swr_alloc_set_opts2(&raw, &layout, AV_SAMPLE_FMT_FLTP, rate_, &layout,
                                static_cast<AVSampleFormat>(frame->format), rate_, 0, nullptr);
    av_channel_layout_uninit(&layout);
    if (err >= 0) err = swr_init(raw);
    swr_.reset(raw);
    if (err < 0) return failure(ErrorCode::kInternal, err, "creating the audio sample converter");
  }
  std::vector<std::vector<float>> out(channels_.size(), std::vector<float>(frame->nb_samples + 32));
  std::vector<uint8_t*> planes(channels_.size());
  for (size_t c = 0; c < out.size(); ++c) planes[c] = reinterpret_cast<uint8_t*>(out[c].data());
  const int got = swr_convert(swr_.get(), planes.data(), frame->nb_samples + 32,
                              const_cast<const uint8_t**>(frame->extended_data), frame->nb_samples);
  if (got < 0) return failure(ErrorCode::kInternal, got, "converting audio samples");
  return append(planes.data(), got);
}

Expected<DecodedAudio> PlanarAudioCollector::finish(const std::string& path) {
  if (swr_) {
    for (;;) {
      std::vector<std::vector<float>> out(channels_.size(), std::vector<float>(4096));
      std::vector<uint8_t*> planes(channels_.size());
      for (size_t c = 0; c < out.size(); ++c) planes[c] = reinterpret_cast<uint8_t*>(out[c].data());
      const int got = swr_convert(swr_.get(), planes.data(), 4096, nullptr, 0);
      if (got < 0) return failure(ErrorCode::kInternal, got, "draining the audio sample converter");
      if (got == 0) break;
      OROCHI_RETURN_IF_ERROR(append(planes.data(), got));
    }
  }
  const int64_t n = channels_.empty() ? 0 : static_cast<int64_t>(channels_[0].size());
  if (n == 0) return corrupt_file("the audio stream of " + path + " decodes to no samples (zero length); give a clip "
                                  "with sound in it");
  DecodedAudio audio;
  audio.sample_rate = rate_;
  audio.samples = Tensor::uninitialized({static_cast<int64_t>(channels_.size()), n}, DType::kF32);  // [C, N]
  for (size_t c = 0; c < channels_.size(); ++c)
    std::memcpy(audio.samples.data<float>() + c * n, channels_[c].data(), static_cast<size_t>(n) * sizeof(float));
  return audio;
}

namespace {

// Clipping a 16-bit sample to 8 bits as PIL's I;16 -> RGB conversion does (not a rescale).
inline uint8_t clip16(uint16_t v) { return v > 255 ? 255 : static_cast<uint8_t>(v); }

inline uint16_t read16(const uint8_t* p, bool big_endian) {
  return big_endian ? static_cast<uint16_t>(p[0] << 8 | p[1]) : static_cast<uint16_t>(p[1] << 8 | p[0]);
}

Expected<RgbImage> swscale_to_rgb(const AVFrame* f, SwsPtr* cache) {
  // PyAV's to_ndarray("rgb24"): bilinear, the frame's own matrix and range. A video's frames share one
  // converter (sws_getCachedContext rebuilds it only when the input changes).
  SwsPtr local;
  SwsPtr& sws = cache ? *cache : local;
  sws.reset(sws_getCachedContext(sws.release(), f->width, f->height, static_cast<AVPixelFormat>(f->format),
                                 f->width, f->height, AV_PIX_FMT_RGB24, SWS_BILINEAR, nullptr, nullptr, nullptr));
  if (!sws) return failure(ErrorCode::kUnsupported, AVERROR(EINVAL), "no converter from this pixel format to RGB");
  const int matrix = f->colorspace == AVCOL_SPC_UNSPECIFIED ? SWS_CS_DEFAULT : f->colorspace;
  sws_setColorspaceDetails(sws.get(), sws_getCoefficients(matrix), f->color_range == AVCOL_RANGE_JPEG,
                           sws_getCoefficients(SWS_CS_DEFAULT), 1, 0, 1 << 16, 1 << 16);
  FramePtr out(av_frame_alloc());
  int err = out ? 0 : AVERROR(ENOMEM);
  if (err >= 0) {
    out->format = AV_PIX_FMT_RGB24;
    out->width = f->width;
    out->height = f->height;
    err = av_frame_get_buffer(out.get(), 0);
  }
  if (err < 0) return failure(ErrorCode::kInternal, err, "allocating an RGB frame");
  err = sws_scale(sws.get(), f->data, f->linesize, 0, f->height, out->data, out->linesize);
  if (err < 0) return failure(ErrorCode::kInternal, err, "converting a frame to RGB");
  RgbImage img;
  img.height = f->height;
  img.width = f->width;
  img.rgb.resize(static_cast<size_t>(img.height * img.width * 3));
  for (int64_t y = 0; y < img.height; ++y)
    std::memcpy(img.rgb.data() + y * img.width * 3, out->data[0] + y * out->linesize[0],
                static_cast<size_t>(img.width * 3));
  return img;
}

}  // namespace

Expected<RgbImage> frame_to_rgb(const AVFrame* f, SwsPtr* cache) {
  const auto format = static_cast<AVPixelFormat>(f->format);
  // Per-pixel: bytes per pixel, where R, G, B (or gray) sit, and whether samples are 16-bit.
  int step = 0, r = 0, g = 0, b = 0;
  bool gray = false, sixteen = false, big_endian = false, palette = false;
  switch (format) {
    case AV_PIX_FMT_RGB24: step = 3, r = 0, g = 1, b = 2; break;
    case AV_PIX_FMT_BGR24: step = 3, r = 2, g = 1, b = 0; break;
    case AV_PIX_FMT_RGBA: case AV_PIX_FMT_RGB0: step = 4, r = 0, g = 1, b = 2; break;
    case AV_PIX_FMT_BGRA: case AV_PIX_FMT_BGR0: step = 4, r = 2, g = 1, b = 0; break;
    case AV_PIX_FMT_ARGB: case AV_PIX_FMT_0RGB: step = 4, r = 1, g = 2, b = 3; break;
    case AV_PIX_FMT_ABGR: case AV_PIX_FMT_0BGR: step = 4, r = 3, g = 2, b = 1; break;
    case AV_PIX_FMT_GRAY8: step = 1, gray = true; break;
    case AV_PIX_FMT_YA8: step = 2, gray = true; break;
    case AV_PIX_FMT_PAL8: step = 1, palette = true; break;
    case AV_PIX_FMT_RGB48BE: step = 6, r = 0, g = 2, b = 4, sixteen = big_endian = true; break;
    case AV_PIX_FMT_RGB48LE: step = 6, r = 0, g = 2, b = 4, sixteen = true; break;
    case AV_PIX_FMT_RGBA64BE: step = 8, r = 0, g = 2, b = 4, sixteen = big_endian = true; break;
    case AV_PIX_FMT_RGBA64LE: step = 8, r = 0, g = 2, b = 4, sixteen = true; break;
    case AV_PIX_FMT_GRAY16BE: step = 2, gray = sixteen = big_endian = true; break;
    case AV_PIX_FMT_GRAY16LE: step = 2, gray = sixteen = true; break;
    // PIL opens 16-bit gray+alpha as RGBA ("LA;16B"), keeping the high byte, unlike 16-bit gray alone.
    case AV_PIX_FMT_YA16BE: step = 4, r = g = b = 0, sixteen = big_endian = true; break;
    case AV_PIX_FMT_YA16LE: step = 4, r = g = b = 0, sixteen = true; break;
    default: return swscale_to_rgb(f, cache);
  }
  RgbImage img;
  img.height = f->height;
  img.width = f->width;
  img.rgb.resize(static_cast<size_t>(img.height * img.width * 3));
  const uint32_t* pal = palette ? reinterpret_cast<const uint32_t*>(f->data[1]) : nullptr;  // native-endian ARGB
  for (int64_t y = 0; y < img.height; ++y) {
    const uint8_t* src = f->data[0] + y * f->linesize[0];
    uint8_t* dst = img.rgb.data() + y * img.width * 3;
    for (int64_t x = 0; x < img.width; ++x, src += step, dst += 3) {
      if (palette) {
        const uint32_t argb = pal[src[0]];
        dst[0] = static_cast<uint8_t>(argb >> 16), dst[1] = static_cast<uint8_t>(argb >> 8),
        dst[2] = static_cast<uint8_t>(argb);
      } else if (gray && sixteen) {
        // PIL opens 16-bit gray as I;16, and its I;16 -> RGB conversion clips at 255.
        dst[0] = dst[1] = dst[2] = clip16(read16(src, big_endian));
      } else if (gray) {
        dst[0] = dst[1] = dst[2] = src[0];
      } else if (sixteen) {
        // PIL unpacks 16-bit RGB(A) PNGs to 8 bits by keeping each sample's high byte.
        dst[0] = src[r + (big_endian ? 0 : 1)], dst[1] = src[g + (big_endian ? 0 : 1)],
        dst[2] = src[b + (big_endian ? 0 : 1)];
      } else {
        dst[0] = src[r], dst[1] = src[g], dst[2] = src[b];
      }
    }
  }
  return img;
}

}  // namespace orochi::io::av
