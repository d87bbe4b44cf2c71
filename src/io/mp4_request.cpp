// The MP4 request checks that need no FFmpeg, so every build rejects bad input the same way.
#include <string>

#include "io/mp4.h"

namespace orochi::io {

Status validate_mp4_request(const VideoFrames& video, const AudioTrack* audio,
                            const Mp4Options& options) {
  OROCHI_RETURN_IF_ERROR(validate_video(video));
  if (video.width % 2 != 0 || video.height % 2 != 0)
    return invalid_argument("H.264 (yuv420p) needs an even width and height, got " +
                            std::to_string(video.width) + "x" + std::to_string(video.height) +
                            ": crop or pad the frames to even dimensions");
  if (options.crf < 0 || options.crf > 51)
    return invalid_argument("crf must be in 0..51, got " + std::to_string(options.crf));
  if (options.audio_bitrate <= 0)
    return invalid_argument("the audio bitrate must be positive, got " +
                            std::to_string(options.audio_bitrate));
  if (audio == nullptr) return Status::ok();
  OROCHI_RETURN_IF_ERROR(validate_audio(*audio).with_context("audio track"));
  if (audio->channels > 2)
    return invalid_argument("MP4 output takes mono or stereo audio, got " +
                            std::to_string(audio->channels) + " channels: downmix to 2 first");
  return Status::ok();
}

}  // namespace orochi::io
