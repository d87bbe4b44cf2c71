// The CUDA backend of the engine (engine/gpu_backend.h), in pieces: the devices' memory and link
// (gpu_devices.cpp), the t2va models (gpu_t2va.cpp), the denoiser benchmark (bench_dit.cpp), and
// the GpuBackend they make up (cuda_backend.cpp).
#pragma once

#include "backends/cuda/cuda_check.h"
#include "engine/gpu_backend.h"

namespace orochi::engine::cuda_backend {

int gpu_count();
Expected<uint64_t> gpu_memory_total(int device);
uint64_t gpu_memory_used(int device);
nlohmann::json gpu_memory_report(int device);
// A 256 MiB cudaMemcpyPeer per pair, timed after a warm-up (over NVLink, PCIe peer access, or
// staged through host RAM when the pair has none); about 50 ms a pair.
Expected<double> gpu_link_gbps(int first, int count);

Expected<GpuT2va> cuda_t2va_from_host(const pipeline::T2vaModels& models, const GpuPlacement& placement,
                                      const pipeline::T2vaPlan& plan);
Expected<GpuT2va> cuda_t2va_random(const h3::H3Config& transformer, const GpuPlacement& placement,
                                   const pipeline::T2vaPlan& plan, uint64_t seed);
Expected<Tensor> cuda_encode_prompt(const std::string& text_encoder_dir, const Tensor& token_ids, int64_t layer,
                                    const TextEncoderPlacement& placement);
// The vision tower, then the mixed text stack, one after the other on placement.device
// (gpu_conditioner.cpp).
Expected<Tensor> cuda_encode_presentation(const std::string& text_encoder_dir, const pipeline::ConditionerInputs& inputs,
                                          int64_t layer, const TextEncoderPlacement& placement);
Expected<nlohmann::json> cuda_bench_dit(const BenchDitOptions& options);
Expected<nlohmann::json> cuda_bench_text(const BenchTextOptions& options);

}  // namespace orochi::engine::cuda_backend
