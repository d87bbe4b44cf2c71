// Reference media a build without FFmpeg's libraries still reads (the device build, for one):
// uncompressed files that need no codec, in the formats such builds write their own outputs in
// (io/y4m_writer.h, io/wav_writer.h):
//   - images: binary PPM (P6, 8 bits per channel);
//   - audio: WAV (RIFF, 16-bit integer or 32-bit float PCM, any rate and channel count), s16 / 32768
//     as FFmpeg's resampler converts it;
//   - video: YUV4MPEG2 (.y4m) 4:4:4, 8 bits, BT.601 limited range (y4m_writer's colours, converted
//     back); Y4M has no sound, so a video's soundtrack is the WAV beside it with the same name
//     (clip.y4m + clip.wav), as a build without FFmpeg leaves its own video and sound.
// media_in_unavailable.cpp sends probe_media and the readers here when FFmpeg is absent; with FFmpeg
// these files go through its libraries like any other (PPM and WAV to the same values; a Y4M's
// colours through swscale, and without the WAV beside it: FFmpeg's own reading of the file).
#pragma once

#include <string>

#include "core/status.h"
#include "io/media_in.h"

namespace orochi::io {

// True when the file starts as one of the formats above.
bool is_raw_media(const std::string& path);

Expected<MediaProbe> probe_raw_media(const std::string& path);
Expected<RgbImage> read_ppm(const std::string& path);
Expected<DecodedAudio> read_wav(const std::string& path);
Expected<DecodedVideo> read_y4m(const std::string& path, const VideoReadOptions& options = {});

}  // namespace orochi::io
