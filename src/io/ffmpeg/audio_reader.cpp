// read_audio: the first audio stream of a file, as D's `_decode_audio_file` reads it with PyAV.
#include "io/ffmpeg/media_input.h"
#include "io/media_in.h"

namespace orochi::io {

Expected<DecodedAudio> read_audio(const std::string& path) {
  OROCHI_ASSIGN_OR_RETURN(av::InputFormatPtr input, av::open_media_input(path, "audio"));
  int stream_index = -1;  // the first audio stream, as PyAV's container.streams.audio[0]
  for (unsigned i = 0; i < input->nb_streams && stream_index < 0; ++i)
    if (input->streams[i]->codecpar->codec_type == AVMEDIA_TYPE_AUDIO) stream_index = static_cast<int>(i);
  if (stream_index < 0)
    return corrupt_file(path + " has no audio stream; give a file with sound (WAV, FLAC, MP3, AAC, Ogg)");
  OROCHI_ASSIGN_OR_RETURN(av::CodecContextPtr decoder, av::open_strict_decoder(input->streams[stream_index], path));
  av::PlanarAudioCollector collector;
  OROCHI_RETURN_IF_ERROR(collector.start(decoder.get(), path));
  av::PacketPtr packet(av_packet_alloc());
  av::FramePtr frame(av_frame_alloc());
  if (!packet || !frame) return av::failure(ErrorCode::kInternal, AVERROR(ENOMEM), "allocating");
  auto collect = [&](AVFrame* f) { return collector.add(f); };
  int err;
  while ((err = av_read_frame(input.get(), packet.get())) >= 0) {
    Status s = packet->stream_index == stream_index
                   ? av::decode_packet(decoder.get(), packet.get(), frame.get(), path, collect)
                   : Status::ok();
    av_packet_unref(packet.get());
    OROCHI_RETURN_IF_ERROR(s);
  }
  if (err != AVERROR_EOF)
    return av::failure(ErrorCode::kCorruptFile, err, "reading " + path, "the file is damaged or truncated");
  OROCHI_RETURN_IF_ERROR(av::decode_packet(decoder.get(), nullptr, frame.get(), path, collect));
  return collector.finish(path);
}

}  // namespace orochi::io
