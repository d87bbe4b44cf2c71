// What the three media readers (image_reader.cpp, video_reader.cpp, audio_reader.cpp) share: opening a
// user's file with the checks a user needs (missing, empty, too large), opening a strict decoder,
// and collecting decoded audio as planar float. Only src/io/ffmpeg includes this.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "io/ffmpeg/av_common.h"
#include "io/media_in.h"

namespace orochi::io::av {

// not_found for a missing path or a folder, corrupt_file for an empty file, invalid_argument for one
// over kMaxMediaFileBytes; then FFmpeg's demuxer over it (corrupt_file naming the file when FFmpeg
// cannot read it) with its streams found.
Expected<InputFormatPtr> open_media_input(const std::string& path, const std::string& kind);

// A decoder for `stream` that reports damaged data as an error instead of concealing it.
Expected<CodecContextPtr> open_strict_decoder(const AVStream* stream, const std::string& path);

// Decoded audio frames converted (format only: same rate and channels, as PyAV's
// AudioResampler(format="fltp") does) and appended per channel.
class PlanarAudioCollector {
 public:
  // invalid_argument for a stream without a rate or channels.
  Status start(const AVCodecContext* decoder, const std::string& path);
  Status add(const AVFrame* frame);
  // Drains the converter; corrupt_file when no sample was decoded.
  Expected<DecodedAudio> finish(const std::string& path);

 private:
  Status append(const uint8_t* const* data, int samples);
  SwrPtr swr_;
  int rate_ = 0;
  std::vector<std::vector<float>> channels_;
};

// Sends `packet` (null flushes) to `decoder` and calls on_frame for each frame that comes out.
template <typename OnFrame>
Status decode_packet(AVCodecContext* decoder, const AVPacket* packet, AVFrame* frame, const std::string& path,
                     OnFrame&& on_frame) {
  int err = avcodec_send_packet(decoder, packet);
  if (err < 0 && err != AVERROR_EOF)
    return failure(ErrorCode::kCorruptFile, err, "cannot decode " + path,
                   "the file is damaged or truncated; re-export it or give another copy");
  for (;;) {
    err = avcodec_receive_frame(decoder, frame);
    if (err == AVERROR(EAGAIN) || err == AVERROR_EOF) return Status::ok();
    if (err < 0)
      return failure(ErrorCode::kCorruptFile, err, "cannot decode " + path,
                     "the file is damaged or truncated; re-export it or give another copy");
    Status s = on_frame(frame);
    av_frame_unref(frame);
    OROCHI_RETURN_IF_ERROR(s);
  }
}

// PyAV's frame.rotation (int of av_display_rotation_get, counter-clockwise degrees), snapped as D does:
// round(rotation / 90) % 4 with Python's half-to-even round and non-negative modulo.
int display_quarter_turns(const AVStream* stream);

// Converts a decoded picture to RGB8 [H, W, 3] the way PIL's convert("RGB") treats the same pixels:
// alpha dropped, gray replicated, palettes looked up, 16-bit RGB(A) and gray+alpha to their high
// byte, 16-bit gray alone clipped to 255 (PIL's I;16). Other formats (YUV) go through swscale with the frame's own matrix and range,
// reusing *cache across the frames of one video when given.
Expected<RgbImage> frame_to_rgb(const AVFrame* frame, SwsPtr* cache = nullptr);

}  // namespace orochi::io::av
