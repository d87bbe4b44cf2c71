// read_image: a still image through libavformat/libavcodec, with the checks of its header first and
// PIL's EXIF transpose + convert("RGB") after. Lossless formats (PNG, lossless WebP, BMP, GIF) give
// PIL's pixels exactly. JPEG gets libjpeg's chroma upsampling and colour conversion (jpeg_color.h),
// so only the IDCT's rounding differs from PIL's; lossy WebP gets libwebp's upsampling and conversion
// (webp_color.h) on FFmpeg's VP8 planes (tests/test_io_media_in.cpp measures both).
#include <algorithm>
#include <filesystem>
#include <fstream>

#include "io/ffmpeg/jpeg_color.h"
#include "io/ffmpeg/media_input.h"
#include "io/ffmpeg/webp_color.h"
#include "io/image_header.h"
#include "io/media_in.h"

namespace orochi::io {
namespace {

Expected<std::vector<uint8_t>> read_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return io_error("cannot open " + path + " for reading; check its permissions");
  std::vector<uint8_t> bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (in.bad()) return io_error("reading " + path + " failed");
  return bytes;
}

Status check_size(int64_t width, int64_t height, const std::string& path) {
  if (width <= 0 || height <= 0)
    return corrupt_file(path + " declares a " + std::to_string(width) + "x" + std::to_string(height) +
                        " image; the file is damaged");
  if (width > kMaxImagePixels / height)
    return invalid_argument(path + " is " + std::to_string(width) + "x" + std::to_string(height) + " (" +
                            std::to_string(width * height) + " pixels), more than the " +
                            std::to_string(kMaxImagePixels) +
                            " pixels a reference image may have (Pillow's limit, which the reference pipeline "
                            "applies too); downscale it first");
  return Status::ok();
}

// PIL's ImageOps.exif_transpose for orientation 2..8, on [H, W, 3].
RgbImage apply_orientation(const RgbImage& in, int orientation) {
  if (orientation <= 1 || orientation > 8) return in;
  const bool swap = orientation >= 5;  // transpose, rotate 90, transverse, rotate 270
  RgbImage out;
  out.height = swap ? in.width : in.height;
  out.width = swap ? in.height : in.width;
  out.rgb.resize(in.rgb.size());
  const int64_t H = in.height, W = in.width;
  for (int64_t y = 0; y < out.height; ++y)
    for (int64_t x = 0; x < out.width; ++x) {
      int64_t sy = y, sx = x;
      switch (orientation) {
        case 2: sx = W - 1 - x; break;                        // mirror left-right
        case 3: sy = H - 1 - y, sx = W - 1 - x; break;        // rotate 180
        case 4: sy = H - 1 - y; break;                        // mirror top-bottom
        case 5: sy = x, sx = y; break;                        // transpose
        case 6: sy = H - 1 - x, sx = y; break;                // rotate 90 clockwise (PIL ROTATE_270)
        case 7: sy = H - 1 - x, sx = W - 1 - y; break;        // transverse
        case 8: sy = x, sx = W - 1 - y; break;                // rotate 90 counter-clockwise (PIL ROTATE_90)
      }
      std::copy_n(in.pixel(sy, sx), 3, out.rgb.data() + (y * out.width + x) * 3);
    }
  return out;
}

}  // namespace

Expected<RgbImage> read_image(const std::string& path) {
  // The header is read and checked before FFmpeg sees the file, so an absurd size never reaches a decoder.
  std::error_code ec;
  if (!std::filesystem::exists(path, ec)) return not_found("no image file at " + path + "; check the path");
  if (std::filesystem::is_directory(path, ec)) return not_found(path + " is a folder, not an image file");
  const auto size = std::filesystem::file_size(path, ec);
  if (ec) return io_error("cannot read the size of " + path + ": " + ec.message());
  if (size == 0) return corrupt_file(path + " is empty (0 bytes); give the image file itself");
  if (static_cast<int64_t>(size) > kMaxMediaFileBytes)
    return invalid_argument(path + " is larger than " + std::to_string(kMaxMediaFileBytes >> 20) +
                            " MiB; that is no reference image");
  OROCHI_ASSIGN_OR_RETURN(const std::vector<uint8_t> bytes, read_bytes(path));
  const ImageHeader header = parse_image_header(bytes);
  if (header.container != ImageContainer::kUnknown) {
    if (header.width > 0 || header.height > 0) OROCHI_RETURN_IF_ERROR(check_size(header.width, header.height, path));
    if (!header.complete)
      return corrupt_file(path + " is a truncated " + std::string(image_container_name(header.container)) +
                          " file (it ends before the image does); give the complete file");
  }

  OROCHI_ASSIGN_OR_RETURN(av::InputFormatPtr input, av::open_media_input(path, "image"));
  int stream_index = -1;
  for (unsigned i = 0; i < input->nb_streams; ++i)
    if (input->streams[i]->codecpar->codec_type == AVMEDIA_TYPE_VIDEO) { stream_index = static_cast<int>(i); break; }
  if (stream_index < 0) return corrupt_file(path + " holds no image FFmpeg can find; give a PNG, JPEG or WebP file");
  const AVStream* stream = input->streams[stream_index];
  if (stream->codecpar->width > 0 && stream->codecpar->height > 0)
    OROCHI_RETURN_IF_ERROR(check_size(stream->codecpar->width, stream->codecpar->height, path));
  OROCHI_ASSIGN_OR_RETURN(av::CodecContextPtr decoder, av::open_strict_decoder(stream, path));

  av::PacketPtr packet(av_packet_alloc());
  av::FramePtr frame(av_frame_alloc());
  if (!packet || !frame) return av::failure(ErrorCode::kInternal, AVERROR(ENOMEM), "allocating");
  RgbImage image;
  bool have = false;
  auto keep_first = [&](AVFrame* f) -> Status {
    if (have) return Status::ok();  // an animation: the first frame, as PIL's open() shows it
    OROCHI_RETURN_IF_ERROR(check_size(f->width, f->height, path));
    if (stream->codecpar->codec_id == AV_CODEC_ID_MJPEG &&
        av::is_jpeg_ycc_layout(static_cast<AVPixelFormat>(f->format))) {
      image = av::jpeg_ycc_to_rgb(f);  // libjpeg's upsampling and colour tables, as PIL decodes JPEG
    } else if (stream->codecpar->codec_id == AV_CODEC_ID_WEBP &&
               av::is_webp_yuv420_layout(static_cast<AVPixelFormat>(f->format))) {
      image = av::webp_yuv420_to_rgb(f);  // libwebp's upsampling and conversion, as PIL decodes WebP
    } else {
      OROCHI_ASSIGN_OR_RETURN(image, av::frame_to_rgb(f));
    }
    have = true;
    return Status::ok();
  };
  int err;
  while (!have && (err = av_read_frame(input.get(), packet.get())) >= 0) {
    Status s = packet->stream_index == stream_index
                   ? av::decode_packet(decoder.get(), packet.get(), frame.get(), path, keep_first)
                   : Status::ok();
    av_packet_unref(packet.get());
    OROCHI_RETURN_IF_ERROR(s);
  }
  if (!have) OROCHI_RETURN_IF_ERROR(av::decode_packet(decoder.get(), nullptr, frame.get(), path, keep_first));
  if (!have) return corrupt_file(path + " decodes to no picture; the file is damaged or truncated");
  return apply_orientation(image, header.orientation);
}

}  // namespace orochi::io
