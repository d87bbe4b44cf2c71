// YUV4MPEG2 (.y4m) output, needing no FFmpeg: uncompressed 4:4:4 video that ffmpeg, mpv and VLC read,
// for builds without FFmpeg's libraries (`ffmpeg -i out.y4m -i out.wav out.mp4` makes the MP4 later).
// Large: 3 bytes per pixel per frame. Colours are BT.601 limited range, what players assume for an
// untagged stream.
#pragma once

#include <string>

#include "core/status.h"
#include "io/video_frames.h"

namespace orochi::io {

// Writes `video` to `path` (through a temporary file). Any size works, odd ones too.
// invalid_argument for bad frames (validate_video); io_error for an unwritable path.
Status write_y4m(const std::string& path, const VideoFrames& video);

}  // namespace orochi::io
