// Reading a user's reference media (ref2va / fl2va): images, videos with their soundtrack, audio
// clips, decoded through FFmpeg's libraries into plain host buffers. Safe to include in any build:
// without FFmpeg's libraries media_input_supported() says false and the readers take only
// uncompressed PPM, WAV and Y4M files (io/raw_media_in.h), returning `unsupported` for the rest
// (src/io/media_in_unavailable.cpp).
//
// What the readers reproduce is diffusers' MiniMax-H3 pipeline (../shared/docs/REF2VA.md §1.1, §2.1,
// §3.1): PIL's `exif_transpose` + `convert("RGB")` for images, PyAV's decode of all frames of the
// first video stream for videos, PyAV's `AudioResampler(format="fltp")` (native rate and channels)
// for audio. Lossless sources (PNG, lossless WebP, WAV, FLAC) and H.264 video frames give PIL's /
// PyAV's values exactly; JPEG is within a few levels of PIL's (libjpeg's chroma upsampling and colour
// tables are reproduced, FFmpeg's IDCT is not libjpeg's); lossy WebP goes through swscale and differs
// from libwebp's own conversion by more (image_reader.cpp).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/status.h"
#include "core/tensor.h"
#include "io/video_frames.h"

namespace orochi::io {

// The largest image we decode, in pixels: Pillow's decompression-bomb limit (2 * MAX_IMAGE_PIXELS =
// 178,956,970), above which PIL, and so the reference pipeline, refuses to open an image. It is
// checked on the file's header, before anything is decoded. Video frames have the same limit.
inline constexpr int64_t kMaxImagePixels = 178956970;
// Files larger than this are refused before they are read (an image or audio clip is never near it).
inline constexpr int64_t kMaxMediaFileBytes = int64_t{4} << 30;

// An RGB picture, 8 bits per channel, uint8 [H, W, 3]: rows top to bottom, pixels left to right.
struct RgbImage {
  int64_t height = 0;
  int64_t width = 0;
  std::vector<uint8_t> rgb;  // [H, W, 3]

  int64_t pixels() const { return height * width; }
  const uint8_t* pixel(int64_t y, int64_t x) const { return rgb.data() + (y * width + x) * 3; }
};

// Float audio at the file's own rate and channel count, planar: f32 [C, N].
struct DecodedAudio {
  int sample_rate = 0;
  Tensor samples;  // f32 [C, N]

  int channels() const { return samples.defined() ? static_cast<int>(samples.dim(0)) : 0; }
  int64_t sample_count() const { return samples.defined() ? samples.dim(1) : 0; }
};

struct DecodedVideo {
  VideoFrames frames;                   // uint8 [F, H, W, 3], display orientation applied
  double fps = 0;                       // the stream's average rate, else FFmpeg's guess (PyAV's
                                        // `average_rate or guessed_rate`)
  std::vector<double> timestamps;       // [F] each frame's presentation time in seconds, as the file
                                        // stamps it (FFmpeg's best-effort timestamp; NaN when unknown)
  int rotation_quarter_turns = 0;       // counter-clockwise quarter turns undone (display matrix)
  bool has_soundtrack = false;
  DecodedAudio soundtrack;              // the first audio stream, when has_soundtrack
};

struct VideoReadOptions {
  // Stop after this many frames (<= 0: all). The pipeline never needs more than the target's
  // frame count at 24 fps, converted back to the source's rate.
  int64_t max_frames = 0;
  // Refuse a video whose decoded frames would need more than this many bytes of RGB (<= 0: no cap).
  int64_t max_rgb_bytes = int64_t{16} << 30;
  bool read_soundtrack = true;
};

// True when this build reads media files (it was built with FFmpeg's libraries).
bool media_input_supported();

// What a media file's headers say, without decoding it: what a request needs to be checked and
// planned before any weight is read (sizes, frame counts, durations, soundtracks).
enum class MediaKind { kImage, kVideo, kAudio };
const char* media_kind_name(MediaKind kind);  // "image", "video", "audio"

struct MediaProbe {
  MediaKind kind = MediaKind::kImage;
  std::string format;               // "PNG", "JPEG", ... for images; FFmpeg's demuxer name otherwise
  int64_t width = 0, height = 0;    // as displayed: EXIF orientation / the display rotation applied
  // Video: the first video stream (attached cover pictures are not one).
  double fps = 0;                   // average rate, else FFmpeg's guess; 0 when neither is known
  int64_t frames = 0;               // the container's count, else duration x fps, else packets counted
  double duration_seconds = 0;      // frames / fps when both are known, else the container's
  // Audio: the first audio stream (a video's soundtrack, or an audio file's).
  bool has_audio = false;
  int sample_rate = 0;
  int channels = 0;
  double audio_seconds = 0;         // the stream's duration, else the container's; 0 when unknown
};

// The headers of an image (io/image_header.h: no FFmpeg needed for the bytes, but the build must
// read media to use them), a video or an audio file: FFmpeg's avformat_open_input and
// avformat_find_stream_info, nothing decoded beyond what those read. Errors, each naming the file:
// not_found (no file, or a folder), corrupt_file (empty, truncated, not media, no usable stream,
// a zero-sized picture), invalid_argument (over kMaxMediaFileBytes or kMaxImagePixels),
// unsupported (a build without FFmpeg).
Expected<MediaProbe> probe_media(const std::string& path);

// JPEG, PNG, WebP, BMP, GIF (first frame) and whatever else libavcodec decodes as a still image.
// EXIF orientation (JPEG APP1, PNG eXIf, WebP EXIF) is applied; gray, gray+alpha, palette and RGBA
// are converted as PIL's convert("RGB") does (alpha dropped, not composited; 16-bit RGB(A) and
// gray+alpha keep the high byte, 16-bit gray alone clips to 255 as PIL's I;16 -> RGB does).
// Errors: not_found (no file), corrupt_file (empty, truncated, not an image), invalid_argument (more
// than kMaxImagePixels), unsupported (no decoder, or a build without FFmpeg).
Expected<RgbImage> read_image(const std::string& path);

// All frames of the first video stream, as RGB, with timestamps and the soundtrack (the first audio
// stream, decoded as read_audio does). The display-matrix rotation is snapped to quarter turns and
// undone; the sample aspect ratio is ignored (as the reference pipeline does).
Expected<DecodedVideo> read_video(const std::string& path, const VideoReadOptions& options = {});

// The first audio stream of any file FFmpeg reads (WAV, FLAC, MP3, AAC/M4A, Ogg Vorbis/Opus, a video's
// soundtrack) as float [C, N] at the native rate and channel count. Integer formats convert as
// FFmpeg's resampler does (s16 / 32768).
Expected<DecodedAudio> read_audio(const std::string& path);

}  // namespace orochi::io
