// write_mp4 with FFmpeg: check the request and the destination, open the muxer on a temporary file,
// encode video and audio in time order through the interleaving muxer, then rename into place.
#include <optional>

#include "io/ffmpeg/aac_encoder.h"
#include "io/ffmpeg/h264_encoder.h"
#include "io/mp4.h"
#include "io/output_file.h"

namespace orochi::io {
namespace {

Expected<av::OutputFormatPtr> open_muxer(const std::string& temp, const std::string& path) {
  AVFormatContext* raw = nullptr;
  int err = avformat_alloc_output_context2(&raw, nullptr, "mp4", temp.c_str());
  if (err < 0 || raw == nullptr)
    return av::failure(ErrorCode::kUnsupported, err, "this libavformat has no MP4 muxer");
  av::OutputFormatPtr muxer(raw);
  err = avio_open(&muxer->pb, temp.c_str(), AVIO_FLAG_WRITE);
  if (err < 0)
    return av::failure(ErrorCode::kIo, err, "cannot write " + path,
                       "check that its folder is writable and the disk is not full");
  return muxer;
}

}  // namespace

Status write_mp4(const std::string& path, const VideoFrames& video, const AudioTrack* audio,
                 const Mp4Options& options) {
  OROCHI_RETURN_IF_ERROR(validate_mp4_request(video, audio, options));
  OROCHI_RETURN_IF_ERROR(check_output_path(path));
  av::quiet_logs();
  TemporaryOutput temp(path);
  OROCHI_ASSIGN_OR_RETURN(av::OutputFormatPtr muxer, open_muxer(temp.path(), path));

  OROCHI_ASSIGN_OR_RETURN(av::H264Encoder video_encoder,
                          av::H264Encoder::open(muxer.get(), video, options));
  std::optional<av::AacEncoder> audio_encoder;
  if (audio != nullptr) {
    OROCHI_ASSIGN_OR_RETURN(audio_encoder, av::AacEncoder::open(muxer.get(), *audio, options));
  }

  AVDictionary* muxer_options = nullptr;  // moov first, so players can start before the download ends
  int err = av_dict_set(&muxer_options, "movflags", "+faststart", 0);
  if (err >= 0) err = avformat_write_header(muxer.get(), &muxer_options);
  av_dict_free(&muxer_options);
  if (err < 0) return av::failure(ErrorCode::kIo, err, "writing the MP4 header of " + path);

  // Encode in presentation order across both streams so the muxer's queue stays short.
  for (int64_t f = 0; f < video.frames; ++f) {
    const double frame_end = static_cast<double>(f + 1) * video.fps.den / video.fps.num;
    while (audio_encoder && !audio_encoder->done() &&
           audio_encoder->next_time_seconds() < frame_end)
      OROCHI_RETURN_IF_ERROR(audio_encoder->encode_next_frame());
    OROCHI_RETURN_IF_ERROR(video_encoder.encode(video, f));
  }
  while (audio_encoder && !audio_encoder->done())
    OROCHI_RETURN_IF_ERROR(audio_encoder->encode_next_frame());
  OROCHI_RETURN_IF_ERROR(video_encoder.flush());
  if (audio_encoder) OROCHI_RETURN_IF_ERROR(audio_encoder->flush());

  err = av_write_trailer(muxer.get());
  if (err < 0) return av::failure(ErrorCode::kIo, err, "finishing " + path, "check the free disk space");
  err = avio_closep(&muxer->pb);
  if (err < 0) return av::failure(ErrorCode::kIo, err, "closing " + path, "check the free disk space");

  return temp.commit();
}

}  // namespace orochi::io
