// The H3 denoiser on one GPU or several (H3MultiGpu: TP x SP, every GPU on the request) behind the
// family-neutral denoiser interface (models/denoiser.h): the runners' arenas are sized for one
// request up front; prepare() keeps the request's timesteps, the first forward builds the AdaLN
// tables for all of them, later forwards only upload the rows that changed.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "models/h3/cuda/gpu_parallel.h"
#include "models/h3/denoiser.h"

namespace orochi::h3::gpu {

class GpuDenoiser final : public models::Denoiser {
 public:
  // `max` bounds the request (rows, text rows, video/audio rows, timesteps of the whole schedule).
  static Expected<std::unique_ptr<GpuDenoiser>> create(const H3Config& config, int device, const RequestSize& max);
  // On the context's tp x sp GPUs (dist/cuda/gpu_parallel_context.h), its groups and workers.
  static Expected<std::unique_ptr<GpuDenoiser>> create(const H3Config& config,
                                                       std::shared_ptr<dist::ParallelContext> context,
                                                       const RequestSize& max, const WeightStreaming& streaming = {},
                                                       const RunnerOptions& options = {});

  Status init_random_weights(uint64_t seed) { return gpus_->init_random_weights(seed); }
  Status upload_weights(const H3Weights& host) { return gpus_->upload_weights(host); }  // kept by reference
  Status upload_weights(const H3Weights&& host) = delete;

  const H3Config& config() const { return config_; }
  std::string device_name() const override { return device_name_; }
  models::SequenceWidths widths() const override { return sequence_widths(config_); }
  Status prepare(const Tensor& timesteps) override;
  Expected<std::vector<Tensor>> forward(const models::PackedSequence& sequence) override;
  Expected<H3Outputs> forward(const H3Inputs& inputs);  // the same forward, in H3's own types
  // Before a request: its buffers (a new reservation only when it is larger than the last, or the
  // last was given back). The weights stay.
  Status fit_request(const models::SequenceSize& size) override;
  Status fit_request(const RequestSize& size);
  void release_request() override;
  void release() override { gpus_.reset(); }
  bool released() const { return gpus_ == nullptr; }

 private:
  GpuDenoiser() = default;
  H3Config config_;
  std::string device_name_;
  std::unique_ptr<H3MultiGpu> gpus_;
  Tensor timesteps_;
  bool request_set_ = false;
};

}  // namespace orochi::h3::gpu
