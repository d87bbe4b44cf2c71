// The CUDA backend's reference encoders (GpuBackend::video_encoder / audio_encoder): the video VAE
// encoder and the audio VAE encoder on one GPU, behind the pipeline's interfaces (pipeline/encoders.h).
#pragma once

#include <memory>

#include "engine/gpu_backend.h"

namespace orochi::engine::cuda_backend {

Expected<std::unique_ptr<pipeline::VideoEncoder>> cuda_video_encoder(const h3vae::VideoVaeConfig& config,
                                                                     const h3vae::EncoderWeights* host,
                                                                     const EncoderPlacement& placement, uint64_t seed);
Expected<std::unique_ptr<pipeline::AudioEncoder>> cuda_audio_encoder(const h3_audio::AudioVaeConfig& config,
                                                                     const h3_audio::AudioEncoderWeights* host,
                                                                     const EncoderPlacement& placement, uint64_t seed);

}  // namespace orochi::engine::cuda_backend
