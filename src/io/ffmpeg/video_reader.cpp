// read_video: every frame of the first video stream as RGB, with timestamps, the display rotation
// undone, and the first audio stream, as D's `_decode_video_file` reads a reference video with PyAV.
#include <cmath>
#include <cstring>

#include "io/ffmpeg/media_input.h"
#include "io/media_in.h"

namespace orochi::io {
namespace {

// np.rot90(frame, k=-turns): `turns` quarter turns clockwise, [H, W, 3] -> [W, H, 3] for odd turns.
RgbImage rotate_clockwise(const RgbImage& in, int turns) {
  if (turns == 0) return in;
  RgbImage out;
  const bool swap = turns % 2 == 1;
  out.height = swap ? in.width : in.height;
  out.width = swap ? in.height : in.width;
  out.rgb.resize(in.rgb.size());
  for (int64_t y = 0; y < out.height; ++y)
    for (int64_t x = 0; x < out.width; ++x) {
      int64_t sy, sx;
      if (turns == 1) sy = in.height - 1 - x, sx = y;
      else if (turns == 2) sy = in.height - 1 - y, sx = in.width - 1 - x;
      else sy = x, sx = in.width - 1 - y;
      std::memcpy(out.rgb.data() + (y * out.width + x) * 3, in.pixel(sy, sx), 3);
    }
  return out;
}

}  // namespace

Expected<DecodedVideo> read_video(const std::string& path, const VideoReadOptions& options) {
  OROCHI_ASSIGN_OR_RETURN(av::InputFormatPtr input, av::open_media_input(path, "video"));
  int video_index = -1, audio_index = -1;
  for (unsigned i = 0; i < input->nb_streams; ++i) {
    const AVMediaType type = input->streams[i]->codecpar->codec_type;
    if (type == AVMEDIA_TYPE_VIDEO && video_index < 0 &&
        !(input->streams[i]->disposition & AV_DISPOSITION_ATTACHED_PIC))
      video_index = static_cast<int>(i);
    if (type == AVMEDIA_TYPE_AUDIO && audio_index < 0) audio_index = static_cast<int>(i);
  }
  if (video_index < 0) return corrupt_file(path + " has no video stream; give a video file (MP4, MOV, MKV, WebM)");
  AVStream* vstream = input->streams[video_index];
  const int64_t w = vstream->codecpar->width, h = vstream->codecpar->height;
  if (w > 0 && h > 0 && w > kMaxImagePixels / h)
    return invalid_argument(path + " has " + std::to_string(w) + "x" + std::to_string(h) +
                            " frames, more than the " + std::to_string(kMaxImagePixels) +
                            " pixels a frame may have; downscale the video first");

  DecodedVideo out;
  AVRational rate = vstream->avg_frame_rate;  // PyAV: stream.average_rate or stream.guessed_rate
  if (rate.num <= 0 || rate.den <= 0) rate = av_guess_frame_rate(input.get(), vstream, nullptr);
  out.fps = rate.num > 0 && rate.den > 0 ? av_q2d(rate) : 0.0;
  out.frames.fps = FrameRate{rate.num > 0 && rate.den > 0 ? rate.num : 0, rate.den > 0 ? rate.den : 1};
  out.rotation_quarter_turns = av::display_quarter_turns(vstream);

  OROCHI_ASSIGN_OR_RETURN(av::CodecContextPtr vdec, av::open_strict_decoder(vstream, path));
  av::CodecContextPtr adec;
  av::PlanarAudioCollector audio;
  const bool want_audio = options.read_soundtrack && audio_index >= 0;
  if (want_audio) {
    OROCHI_ASSIGN_OR_RETURN(adec, av::open_strict_decoder(input->streams[audio_index], path));
    OROCHI_RETURN_IF_ERROR(audio.start(adec.get(), path));
  }

  const double time_base = av_q2d(vstream->time_base);
  av::SwsPtr converter;  // one RGB converter for all frames
  bool enough = false;
  auto on_video = [&](AVFrame* f) -> Status {
    if (enough) return Status::ok();
    if (out.frames.frames > 0 && (f->width != out.frames.width || f->height != out.frames.height) &&
        out.rotation_quarter_turns % 2 == 0)
      return unsupported(path + " changes its frame size midway; re-encode it at one size");
    OROCHI_ASSIGN_OR_RETURN(RgbImage rgb, av::frame_to_rgb(f, &converter));
    rgb = rotate_clockwise(rgb, out.rotation_quarter_turns);
    if (out.frames.frames == 0) {
      out.frames.height = rgb.height;
      out.frames.width = rgb.width;
    } else if (rgb.height != out.frames.height || rgb.width != out.frames.width) {
      return unsupported(path + " changes its frame size midway; re-encode it at one size");
    }
    const int64_t bytes = static_cast<int64_t>(out.frames.rgb.size() + rgb.rgb.size());
    if (options.max_rgb_bytes > 0 && bytes > options.max_rgb_bytes)
      return invalid_argument(path + " decodes to more than " + std::to_string(options.max_rgb_bytes) +
                              " bytes of RGB frames (the cap); shorten the video or read fewer frames (max_frames)");
    out.frames.rgb.insert(out.frames.rgb.end(), rgb.rgb.begin(), rgb.rgb.end());
    const int64_t pts = f->best_effort_timestamp;
    out.timestamps.push_back(pts == AV_NOPTS_VALUE ? NAN : static_cast<double>(pts) * time_base);
    ++out.frames.frames;
    if (options.max_frames > 0 && out.frames.frames >= options.max_frames) enough = true;
    return Status::ok();
  };
  auto on_audio = [&](AVFrame* f) { return audio.add(f); };

  av::PacketPtr packet(av_packet_alloc());
  av::FramePtr frame(av_frame_alloc());
  if (!packet || !frame) return av::failure(ErrorCode::kInternal, AVERROR(ENOMEM), "allocating");
  int err;
  while ((err = av_read_frame(input.get(), packet.get())) >= 0) {
    Status s = Status::ok();
    if (packet->stream_index == video_index && !enough)
      s = av::decode_packet(vdec.get(), packet.get(), frame.get(), path, on_video);
    else if (want_audio && packet->stream_index == audio_index)
      s = av::decode_packet(adec.get(), packet.get(), frame.get(), path, on_audio);
    av_packet_unref(packet.get());
    OROCHI_RETURN_IF_ERROR(s);
  }
  if (err != AVERROR_EOF)
    return av::failure(ErrorCode::kCorruptFile, err, "reading " + path, "the file is damaged or truncated");
  OROCHI_RETURN_IF_ERROR(av::decode_packet(vdec.get(), nullptr, frame.get(), path, on_video));
  if (out.frames.frames == 0)
    return corrupt_file(path + " has a video stream but no frame decodes from it (zero length or damaged)");
  if (!(out.fps > 0))
    return corrupt_file(path + " does not say its frame rate; remux it with one (ffmpeg -r)");
  if (want_audio) {
    OROCHI_RETURN_IF_ERROR(av::decode_packet(adec.get(), nullptr, frame.get(), path, on_audio));
    Expected<DecodedAudio> track = audio.finish(path);
    if (track.has_value()) {  // a soundtrack stream with no samples counts as none
      out.has_soundtrack = true;
      out.soundtrack = std::move(track).value();
    }
  }
  return out;
}

}  // namespace orochi::io
