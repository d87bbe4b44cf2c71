// Reads a media file back by decoding all of it: the streams, their sizes and rates, how many frames
// and samples actually decode, and the first video frame as RGB. Used to check what write_mp4 wrote
// (tests, `orochi inspect`); io::probe_media (io/media_in.h) reads headers alone, for requests. The
// declarations need no FFmpeg, but read_back_media is only defined in builds with FFmpeg.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/status.h"

namespace orochi::io {

enum class StreamKind { kVideo, kAudio, kOther };

struct StreamInfo {
  StreamKind kind = StreamKind::kOther;
  std::string codec;              // "h264", "aac", ...
  double duration_seconds = 0;    // what the container declares for this stream (0 if nothing)
  // Video only.
  int width = 0;
  int height = 0;
  double fps = 0;                 // the stream's average frame rate
  std::string pixel_format;       // "yuv420p"
  int64_t decoded_frames = 0;
  // Audio only.
  int sample_rate = 0;
  int channels = 0;
  int64_t decoded_samples = 0;    // per channel, after the container's priming/padding trims
  std::vector<double> channel_rms;  // root mean square of each decoded channel (float decoders only)
  double decoded_seconds() const { return sample_rate > 0 ? double(decoded_samples) / sample_rate : 0; }
};

struct MediaInfo {
  std::string container;                // "mov,mp4,m4a,3gp,3g2,mj2"
  double duration_seconds = 0;          // the whole file's
  std::vector<StreamInfo> streams;      // in file order
  std::vector<uint8_t> first_frame_rgb;  // [H, W, 3] of the first video stream's first frame

  // The first stream of `kind`, or null.
  const StreamInfo* first(StreamKind kind) const;
};

// not_found for a missing file, corrupt_file for one FFmpeg cannot read or decode.
Expected<MediaInfo> read_back_media(const std::string& path);

}  // namespace orochi::io
