#include "io/wav_writer.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string>

#include "io/output_file.h"

namespace orochi::io {
namespace {

// RIFF is little-endian whatever the host is.
void put_le(std::string& out, uint32_t value, int bytes) {
  for (int i = 0; i < bytes; ++i) out.push_back(static_cast<char>((value >> (8 * i)) & 0xff));
}
void put_tag(std::string& out, const char* tag) { out.append(tag, 4); }

}  // namespace

Status write_wav(const std::string& path, const AudioTrack& audio) {
  OROCHI_RETURN_IF_ERROR(validate_audio(audio));
  const uint64_t data_bytes = static_cast<uint64_t>(audio.samples.size()) * 2;
  if (data_bytes > 0xffffffffull - 36)
    return invalid_argument("the audio is too long for a WAV file (4 GiB at most); split it");
  const uint32_t block_align = static_cast<uint32_t>(audio.channels) * 2;
  std::string header;
  put_tag(header, "RIFF");
  put_le(header, static_cast<uint32_t>(36 + data_bytes), 4);
  put_tag(header, "WAVE");
  put_tag(header, "fmt ");
  put_le(header, 16, 4);  // the PCM fmt chunk's size
  put_le(header, 1, 2);   // PCM
  put_le(header, static_cast<uint32_t>(audio.channels), 2);
  put_le(header, static_cast<uint32_t>(audio.sample_rate), 4);
  put_le(header, static_cast<uint32_t>(audio.sample_rate) * block_align, 4);  // bytes per second
  put_le(header, block_align, 2);
  put_le(header, 16, 2);  // bits per sample
  put_tag(header, "data");
  put_le(header, static_cast<uint32_t>(data_bytes), 4);

  return write_file_atomically(path, [&](std::ostream& out) {
    out.write(header.data(), static_cast<std::streamsize>(header.size()));
    std::string block;  // one second at a time keeps memory flat for long tracks
    const int64_t n = audio.sample_count();
    for (int64_t start = 0; start < n; start += audio.sample_rate) {
      const int64_t end = std::min<int64_t>(n, start + audio.sample_rate);
      block.clear();
      for (int64_t i = start; i < end; ++i)
        for (int c = 0; c < audio.channels; ++c) {
          const float x = std::clamp(audio.at(i, c), -1.0f, 1.0f);
          const auto s = static_cast<int16_t>(std::lround(x * 32767.0f));
          put_le(block, static_cast<uint16_t>(s), 2);
        }
      out.write(block.data(), static_cast<std::streamsize>(block.size()));
    }
    return Status::ok();
  });
}

}  // namespace orochi::io
