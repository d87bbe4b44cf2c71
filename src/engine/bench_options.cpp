// The benchmarks' option checks, in one place: the CLI runs them before it asks for a GPU, and the
// GPU backend again before it builds anything.
#include <cmath>
#include <sstream>

#include "engine/gpu_backend.h"
#include "models/qwen3vl/text_config.h"
#include "pipeline/reference/reference_geometry.h"

namespace orochi::engine {

Status check_bench_text_options(const BenchTextOptions& o) {
  const int64_t layers = qwen3vl::TextConfig::qwen3vl_32b().num_hidden_layers;
  if (o.layers < 1 || o.layers > layers)
    return usage_error("--layers must be an integer in [1, " + std::to_string(layers) + "], got " + std::to_string(o.layers));
  if (o.stream_layers < 0 || o.stream_layers > o.layers)
    return invalid_argument("--stream-layers must be in 0..--layers (" + std::to_string(o.layers) + "), got " +
                            std::to_string(o.stream_layers));
  if (!o.write_checkpoint.empty() && (o.stream_layers > 0 || !o.checkpoint.empty()))
    return invalid_argument("--write-checkpoint writes the random weights with every layer resident: drop "
                            "--stream-layers and --checkpoint");
  if (!o.write_checkpoint.empty() && o.precision != Precision::kBf16)
    return invalid_argument("--write-checkpoint writes bf16 weights: drop --precision " +
                            std::string(precision_name(o.precision)));
  return Status::ok();
}

namespace {

constexpr int64_t kSpatialRatio = 16;  // pixels per latent (the video VAE)
constexpr double kAudioLatentsPerSecond = 32000.0 / 800.0;  // 32 kHz, one latent per 800 samples

Status bad_reference(const std::string& item, const std::string& why) {
  return usage_error("--refs: '" + item + "' " + why +
                     "; items are image:WxH, video:WxHxF[+audio] or audio:SECONDS, comma-separated "
                     "(e.g. image:2048x3072,video:832x480x120+audio,audio:5)");
}

// "W x H [x F]" in pixels: each axis a positive multiple of 32 (the encode sizes' multiple).
Expected<std::vector<int64_t>> parse_dims(const std::string& item, const std::string& text, size_t count) {
  std::vector<int64_t> dims;
  std::stringstream in(text);
  std::string part;
  while (std::getline(in, part, 'x')) {
    size_t used = 0;
    int64_t v = 0;
    try {
      v = std::stoll(part, &used);
    } catch (...) {
      used = 0;
    }
    if (part.empty() || used != part.size() || v <= 0) return bad_reference(item, "has a size that is not a positive integer");
    dims.push_back(v);
  }
  if (dims.size() != count) return bad_reference(item, "needs " + std::to_string(count) + " sizes separated by 'x'");
  for (size_t i = 0; i < 2; ++i)
    if (dims[i] % 32 != 0 || dims[i] > 16384) return bad_reference(item, "needs each side a multiple of 32, at most 16384");
  return dims;
}

}  // namespace

Expected<std::vector<pipeline::ReferenceGeometry>> parse_bench_references(const std::string& spec) {
  std::vector<pipeline::ReferenceGeometry> out;
  std::stringstream in(spec);
  std::string item;
  while (std::getline(in, item, ',')) {
    const size_t colon = item.find(':');
    if (colon == std::string::npos) return bad_reference(item, "has no kind");
    const std::string kind = item.substr(0, colon);
    std::string value = item.substr(colon + 1);
    if (kind == "image") {
      OROCHI_ASSIGN_OR_RETURN(const std::vector<int64_t> d, parse_dims(item, value, 2));
      out.push_back(pipeline::ReferenceGeometry::image(d[1] / kSpatialRatio, d[0] / kSpatialRatio));
    } else if (kind == "video") {
      const bool audio = value.size() > 6 && value.ends_with("+audio");
      if (audio) value.resize(value.size() - 6);
      OROCHI_ASSIGN_OR_RETURN(const std::vector<int64_t> d, parse_dims(item, value, 3));
      if (d[2] > 17005) return bad_reference(item, "has more than 17005 frames");
      const int64_t latents = pipeline::reference::encoded_reference_video(d[2]).latents;
      const int64_t audio_latents =
          audio ? static_cast<int64_t>(std::ceil(static_cast<double>(d[2]) / 24.0 * kAudioLatentsPerSecond)) : 0;
      out.push_back(pipeline::ReferenceGeometry::video(latents, d[1] / kSpatialRatio, d[0] / kSpatialRatio, audio_latents));
    } else if (kind == "audio") {
      double seconds = 0;
      size_t used = 0;
      try {
        seconds = std::stod(value, &used);
      } catch (...) {
        used = 0;
      }
      if (value.empty() || used != value.size() || !(seconds > 0) || seconds > 600)
        return bad_reference(item, "needs a duration in seconds in (0, 600]");
      out.push_back(pipeline::ReferenceGeometry::audio(static_cast<int64_t>(std::ceil(seconds * kAudioLatentsPerSecond))));
    } else {
      return bad_reference(item, "has an unknown kind '" + kind + "'");
    }
  }
  if (out.empty()) return bad_reference(spec, "names no reference");
  if (out.size() > 12) return bad_reference(spec, "names " + std::to_string(out.size()) + " references; ref2va takes 12 at most");
  return out;
}

}  // namespace orochi::engine
