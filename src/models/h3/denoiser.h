// What a denoising loop needs from an H3 denoiser, whatever runs it (CPU reference, one GPU, many):
// AdaLN tables once per request for every timestep the request will use, then one forward per step.
#pragma once

#include <string>

#include "core/status.h"
#include "core/tensor.h"
#include "models/h3/request_buffers.h"
#include "models/h3/transformer.h"

namespace orochi::h3 {

class Denoiser {
 public:
  virtual ~Denoiser() = default;
  virtual const H3Config& config() const = 0;
  // Where it runs, for reports ("CPU", "cuda:0 NVIDIA H200").
  virtual std::string device_name() const = 0;
  // Before a request: memory for one of this size (a GPU denoiser reserves a larger request arena
  // when the last one is too small or was given back; its weights stay).
  virtual Status fit_request(const gpu::RequestSize& size) { return Status::ok(); }
  // Modulation tables for every distinct timestep of the request (f32 [n_t], sorted ascending).
  virtual Status prepare(const Tensor& timesteps) = 0;
  // One forward; inputs.timestep_indices index the timesteps given to prepare().
  virtual Expected<H3Outputs> forward(const H3Inputs& inputs) = 0;
  // The loop is done: give back the request's device memory, keeping the weights for the next
  // request (an engine keeps its model loaded when the plan says the decode fits beside them).
  virtual void release_request() {}
  // The loop is done and the weights go too, so the decoders can have all the memory (the plan's
  // phases run one after the other). A later prepare() is an error for a released denoiser.
  virtual void release() {}
};

// The CPU reference forward over host weights (which must outlive it).
class CpuDenoiser final : public Denoiser {
 public:
  explicit CpuDenoiser(const H3Weights& weights) : weights_(weights) {}
  const H3Config& config() const override { return weights_.config; }
  std::string device_name() const override { return "CPU"; }
  Status prepare(const Tensor& timesteps) override;
  Expected<H3Outputs> forward(const H3Inputs& inputs) override;

 private:
  const H3Weights& weights_;
  ModulationTables tables_;
};

}  // namespace orochi::h3
