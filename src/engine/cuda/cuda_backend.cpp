// The GpuBackend of a CUDA build: linking this file is how the CUDA backend registers itself.
#include "engine/cuda/cuda_backend.h"
#include "engine/cuda/gpu_encoders.h"

namespace orochi::engine {
namespace {

class CudaBackend final : public GpuBackend {
 public:
  std::string name() const override { return "CUDA"; }
  int device_count() const override { return cuda_backend::gpu_count(); }
  Expected<uint64_t> memory_total(int device) const override { return cuda_backend::gpu_memory_total(device); }
  uint64_t memory_used(int device) const override { return cuda_backend::gpu_memory_used(device); }
  nlohmann::json memory_report(int device) const override { return cuda_backend::gpu_memory_report(device); }
  Expected<double> link_gbps(int first, int count) const override { return cuda_backend::gpu_link_gbps(first, count); }
  Expected<GpuT2va> t2va_from_host(const pipeline::T2vaModels& models, const GpuPlacement& placement,
                                   const pipeline::T2vaPlan& plan) override {
    return cuda_backend::cuda_t2va_from_host(models, placement, plan);
  }
  Expected<GpuT2va> t2va_random(const h3::H3Config& transformer, const GpuPlacement& placement,
                                const pipeline::T2vaPlan& plan, uint64_t seed) override {
    return cuda_backend::cuda_t2va_random(transformer, placement, plan, seed);
  }
  Expected<Tensor> encode_prompt(const std::string& dir, const Tensor& ids, int64_t layer,
                                 const TextEncoderPlacement& placement) override {
    return cuda_backend::cuda_encode_prompt(dir, ids, layer, placement);
  }
  Expected<Tensor> encode_presentation(const std::string& dir, const pipeline::ConditionerInputs& inputs, int64_t layer,
                                       const TextEncoderPlacement& placement) override {
    return cuda_backend::cuda_encode_presentation(dir, inputs, layer, placement);
  }
  Expected<std::unique_ptr<pipeline::VideoEncoder>> video_encoder(const h3vae::VideoVaeConfig& config,
                                                                  const h3vae::EncoderWeights* host,
                                                                  const EncoderPlacement& placement,
                                                                  uint64_t seed) override {
    return cuda_backend::cuda_video_encoder(config, host, placement, seed);
  }
  Expected<std::unique_ptr<pipeline::AudioEncoder>> audio_encoder(const h3_audio::AudioVaeConfig& config,
                                                                  const h3_audio::AudioEncoderWeights* host,
                                                                  const EncoderPlacement& placement,
                                                                  uint64_t seed) override {
    return cuda_backend::cuda_audio_encoder(config, host, placement, seed);
  }
  Expected<nlohmann::json> bench_dit(const BenchDitOptions& options) override {
    return cuda_backend::cuda_bench_dit(options);
  }
  Expected<nlohmann::json> bench_text(const BenchTextOptions& options) override {
    return cuda_backend::cuda_bench_text(options);
  }
};

}  // namespace

GpuBackend& gpu_backend() {
  static CudaBackend backend;
  return backend;
}

}  // namespace orochi::engine
