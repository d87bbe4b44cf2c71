// probe_media: what a reference file's headers say, for checking and planning a request before any
// weight is read. Images through io/image_header (bytes, no decoder); videos and audio through
// avformat_open_input + avformat_find_stream_info. Nothing is decoded beyond what those two read, so
// a file whose header is whole but whose data is damaged is found later, by the decode.
#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <system_error>

#include "io/ffmpeg/media_input.h"
#include "io/image_header.h"
#include "io/media_in.h"

namespace orochi::io {
namespace {

// The largest still image read whole for its header (the header reader wants the end too: IEND, EOI).
constexpr int64_t kMaxImageFileBytes = int64_t{512} << 20;

Expected<std::vector<uint8_t>> read_prefix(const std::string& path, int64_t bytes) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return io_error("cannot open " + path + " for reading; check its permissions");
  std::vector<uint8_t> out(static_cast<size_t>(bytes));
  in.read(reinterpret_cast<char*>(out.data()), static_cast<std::streamsize>(bytes));
  if (in.bad()) return io_error("reading " + path + " failed");
  out.resize(static_cast<size_t>(in.gcount()));
  return out;
}

Expected<MediaProbe> probe_image(const std::string& path, int64_t file_bytes) {
  if (file_bytes > kMaxImageFileBytes)
    return invalid_argument(path + " is " + std::to_string(file_bytes >> 20) + " MiB, more than the " +
                            std::to_string(kMaxImageFileBytes >> 20) + " MiB a reference image may have; "
                            "re-encode it smaller");
  OROCHI_ASSIGN_OR_RETURN(const std::vector<uint8_t> bytes, read_prefix(path, file_bytes));
  const ImageHeader h = parse_image_header(bytes);
  const std::string format = image_container_name(h.container);
  if (!h.complete)
    return corrupt_file(path + " is a truncated " + format +
                        " file (it ends before the image does); give the complete file");
  if (h.width <= 0 || h.height <= 0)
    return corrupt_file(path + " is a damaged " + format + " file: its header declares a " +
                        std::to_string(h.width) + "x" + std::to_string(h.height) + " image");
  if (h.width > kMaxImagePixels / h.height)
    return invalid_argument(path + " is " + std::to_string(h.width) + "x" + std::to_string(h.height) +
                            ", more than the " + std::to_string(kMaxImagePixels) +
                            " pixels a reference image may have (Pillow's limit); downscale it first");
  MediaProbe p;
  p.kind = MediaKind::kImage;
  p.format = format;
  const bool swap = h.orientation >= 5 && h.orientation <= 8;  // EXIF transpose turns it a quarter
  p.width = swap ? h.height : h.width;
  p.height = swap ? h.width : h.height;
  return p;
}

double seconds_of(int64_t duration, AVRational time_base) {
  return duration == AV_NOPTS_VALUE || duration <= 0 ? 0.0 : static_cast<double>(duration) * av_q2d(time_base);
}

// Packets of `stream` read (not decoded): the frame count of a container that states neither a count
// nor a duration (raw streams, some Matroska muxers).
Expected<int64_t> count_packets(AVFormatContext* input, int stream, const std::string& path) {
  av::PacketPtr packet(av_packet_alloc());
  if (!packet) return av::failure(ErrorCode::kInternal, AVERROR(ENOMEM), "allocating");
  int64_t n = 0;
  int err;
  while ((err = av_read_frame(input, packet.get())) >= 0) {
    if (packet->stream_index == stream) ++n;
    av_packet_unref(packet.get());
  }
  if (err != AVERROR_EOF)
    return av::failure(ErrorCode::kCorruptFile, err, "reading " + path, "the file is damaged or truncated");
  return n;
}

// A container whose index (MP4's sample tables) places a packet past the end of the file was cut
// short: a faststart MP4 keeps its whole header even when half its data is gone.
Status check_index_within_file(AVStream* stream, int64_t file_bytes, const std::string& path) {
  const int n = avformat_index_get_entries_count(stream);
  int64_t end = 0;
  for (int i = 0; i < n; ++i) {
    const AVIndexEntry* e = avformat_index_get_entry(stream, i);
    if (e && e->pos >= 0) end = std::max<int64_t>(end, e->pos + e->size);
  }
  if (end > file_bytes)
    return corrupt_file(path + " is truncated: its index places data up to byte " + std::to_string(end) +
                        " but the file has " + std::to_string(file_bytes) + " bytes; give the complete file");
  return Status::ok();
}

}  // namespace

Expected<MediaProbe> probe_media(const std::string& path) {
  std::error_code ec;
  const std::filesystem::file_status st = std::filesystem::status(path, ec);
  if (ec || !std::filesystem::exists(st)) return not_found("no file at " + path + "; check the path");
  if (std::filesystem::is_directory(st)) return not_found(path + " is a folder, not a media file");
  const auto bytes = std::filesystem::file_size(path, ec);
  if (ec) return io_error("cannot read the size of " + path + ": " + ec.message());
  if (bytes == 0) return corrupt_file(path + " is empty (0 bytes); give the media file itself");
  OROCHI_ASSIGN_OR_RETURN(const std::vector<uint8_t> magic, read_prefix(path, 32));
  if (parse_image_header(magic).container != ImageContainer::kUnknown)
    return probe_image(path, static_cast<int64_t>(bytes));

  OROCHI_ASSIGN_OR_RETURN(av::InputFormatPtr input, av::open_media_input(path, "media"));
  int video = -1, audio = -1;
  for (unsigned i = 0; i < input->nb_streams; ++i) {
    const AVStream* s = input->streams[i];
    if (s->codecpar->codec_type == AVMEDIA_TYPE_VIDEO && video < 0 && !(s->disposition & AV_DISPOSITION_ATTACHED_PIC))
      video = static_cast<int>(i);
    if (s->codecpar->codec_type == AVMEDIA_TYPE_AUDIO && audio < 0) audio = static_cast<int>(i);
  }
  if (video < 0 && audio < 0)
    return corrupt_file(path + " holds no video or audio stream FFmpeg can use; give an image (PNG, JPEG, WebP), "
                               "a video (MP4, MOV, MKV, WebM) or an audio file (WAV, FLAC, MP3, M4A)");
  for (int i : {video, audio})
    if (i >= 0) OROCHI_RETURN_IF_ERROR(check_index_within_file(input->streams[i], static_cast<int64_t>(bytes), path));
  MediaProbe p;
  p.format = input->iformat->name;
  const double container_seconds =
      input->duration == AV_NOPTS_VALUE || input->duration <= 0 ? 0.0 : double(input->duration) / AV_TIME_BASE;
  if (audio >= 0) {
    const AVStream* s = input->streams[audio];
    p.has_audio = true;
    p.sample_rate = s->codecpar->sample_rate;
    p.channels = s->codecpar->ch_layout.nb_channels;
    p.audio_seconds = seconds_of(s->duration, s->time_base);
    if (p.audio_seconds == 0) p.audio_seconds = container_seconds;
  }
  if (video < 0) {
    p.kind = MediaKind::kAudio;
    if (p.sample_rate <= 0 || p.channels <= 0)
      return corrupt_file("the audio stream of " + path + " states no sample rate or no channels; the file is "
                          "damaged");
    return p;
  }
  // An image FFmpeg demuxes (TIFF, a one-frame image2 pipe) is a still, not a video.
  const std::string demuxer = p.format;
  const bool still = demuxer == "image2" || (demuxer.size() > 5 && demuxer.rfind("_pipe") == demuxer.size() - 5);
  AVStream* s = input->streams[video];
  const int64_t w = s->codecpar->width, h = s->codecpar->height;
  if (w <= 0 || h <= 0)
    return corrupt_file("the video stream of " + path + " states no frame size (" + std::to_string(w) + "x" +
                        std::to_string(h) + "); the file is damaged");
  if (w > kMaxImagePixels / h)
    return invalid_argument(path + " has " + std::to_string(w) + "x" + std::to_string(h) + " frames, more than the " +
                            std::to_string(kMaxImagePixels) + " pixels a frame may have; downscale it first");
  const bool swap = av::display_quarter_turns(s) % 2 == 1;
  p.width = swap ? h : w;
  p.height = swap ? w : h;
  if (still) {
    p.kind = MediaKind::kImage;
    p.has_audio = false;
    return p;
  }
  p.kind = MediaKind::kVideo;
  AVRational rate = s->avg_frame_rate;  // as read_video: the average rate, else FFmpeg's guess
  if (rate.num <= 0 || rate.den <= 0) rate = av_guess_frame_rate(input.get(), s, nullptr);
  p.fps = rate.num > 0 && rate.den > 0 ? av_q2d(rate) : 0.0;
  double stream_seconds = seconds_of(s->duration, s->time_base);
  if (stream_seconds == 0) stream_seconds = container_seconds;
  if (s->nb_frames > 0) {
    p.frames = s->nb_frames;
  } else if (stream_seconds > 0 && p.fps > 0) {
    p.frames = std::llround(stream_seconds * p.fps);
  } else if (s->duration == 0 || (input->duration != AV_NOPTS_VALUE && input->duration == 0)) {
    p.frames = 0;  // the container says it is empty
  } else {
    OROCHI_ASSIGN_OR_RETURN(p.frames, count_packets(input.get(), video, path));
  }
  p.duration_seconds = p.fps > 0 ? static_cast<double>(p.frames) / p.fps : stream_seconds;
  return p;
}

}  // namespace orochi::io
