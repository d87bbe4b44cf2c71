// WAV output (16-bit PCM, interleaved), needing no FFmpeg: the soundtrack of a build without it, and
// a format every tool reads. Samples are clipped to [-1, 1] and rounded to 16 bits.
#pragma once

#include <string>

#include "core/status.h"
#include "io/video_frames.h"

namespace orochi::io {

// Writes `audio` to `path` (through a temporary file, see io/output_file.h). invalid_argument for a
// bad track (validate_audio) or one over the format's 4 GiB; io_error for an unwritable path.
Status write_wav(const std::string& path, const AudioTrack& audio);

}  // namespace orochi::io
