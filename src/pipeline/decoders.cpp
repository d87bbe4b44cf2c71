#include "pipeline/decoders.h"

#include <chrono>
#include <vector>

#include "models/h3_audio_vae/decoder.h"
#include "models/h3_video_vae/pixels.h"
#include "models/h3_video_vae/temporal.h"

namespace orochi::pipeline {

Expected<Tensor> CpuVideoDecoder::decode(const Tensor& normalized, const ChunkCallback& on_chunk) {
  using Clock = std::chrono::steady_clock;
  OROCHI_ASSIGN_OR_RETURN(const Tensor latents, h3vae::denormalize_latents(weights_.config, normalized));
  OROCHI_RETURN_IF_ERROR(h3vae::validate_latents(weights_.config, latents));
  OROCHI_ASSIGN_OR_RETURN(const int64_t chunks, h3vae::count_chunks(weights_.config, latents.dim(1)));
  const h3vae::DecodeOptions options;
  std::vector<Tensor> clips;
  for (int64_t i = 0; i < chunks; ++i) {
    const auto t0 = Clock::now();
    OROCHI_ASSIGN_OR_RETURN(Tensor clip, h3vae::decode_chunk(weights_, latents, i, options));
    clips.push_back(std::move(clip));
    if (on_chunk) on_chunk(i + 1, chunks, std::chrono::duration<double>(Clock::now() - t0).count());
  }
  return h3vae::assemble_chunks(weights_.config, clips, options.blend_precision);
}

Expected<Tensor> CpuAudioDecoder::decode(const Tensor& normalized) {
  OROCHI_ASSIGN_OR_RETURN(const Tensor latents, h3_audio::denormalize(weights_.config, normalized));
  return h3_audio::decode(weights_, latents);
}

}  // namespace orochi::pipeline
