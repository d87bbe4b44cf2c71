// The GpuBackend of a build without CUDA: no devices, and every GPU model request says how to get
// one. Linked instead of src/engine/cuda/ (CMakeLists.txt).
#include "engine/gpu_backend.h"

namespace orochi::engine {
namespace {

Status no_cuda() {
  return unsupported("this build has no CUDA backend; build on a machine with the CUDA toolkit (scripts/build.sh "
                     "enables it when nvcc is found), or run on the CPU with --device cpu");
}

class NoGpuBackend final : public GpuBackend {
 public:
  std::string name() const override { return "none"; }
  int device_count() const override { return 0; }
  Expected<uint64_t> memory_total(int) const override { return no_cuda(); }
  uint64_t memory_used(int) const override { return 0; }
  nlohmann::json memory_report(int device) const override { return {{"device", device}, {"error", "no CUDA"}}; }
  Expected<double> link_gbps(int, int) const override { return no_cuda(); }
  Expected<GpuT2va> t2va_from_host(const pipeline::T2vaModels&, const GpuPlacement&, const pipeline::T2vaPlan&) override {
    return no_cuda();
  }
  Expected<GpuT2va> t2va_random(const h3::H3Config&, const GpuPlacement&, const pipeline::T2vaPlan&, uint64_t) override {
    return no_cuda();
  }
  Expected<Tensor> encode_prompt(const std::string&, const Tensor&, int64_t, const TextEncoderPlacement&) override {
    return no_cuda();
  }
  Expected<Tensor> encode_presentation(const std::string&, const pipeline::ConditionerInputs&, int64_t,
                                       const TextEncoderPlacement&) override {
    return no_cuda();
  }
  Expected<std::unique_ptr<pipeline::VideoEncoder>> video_encoder(const h3vae::VideoVaeConfig&,
                                                                  const h3vae::EncoderWeights*,
                                                                  const EncoderPlacement&, uint64_t) override {
    return no_cuda();
  }
  Expected<std::unique_ptr<pipeline::AudioEncoder>> audio_encoder(const h3_audio::AudioVaeConfig&,
                                                                  const h3_audio::AudioEncoderWeights*,
                                                                  const EncoderPlacement&, uint64_t) override {
    return no_cuda();
  }
  Expected<nlohmann::json> bench_dit(const BenchDitOptions&) override { return no_cuda(); }
  Expected<nlohmann::json> bench_text(const BenchTextOptions&) override { return no_cuda(); }
};

}  // namespace

GpuBackend& gpu_backend() {
  static NoGpuBackend backend;
  return backend;
}

}  // namespace orochi::engine
