#include "models/h3/cuda/gpu_denoiser.h"

#include <cuda_runtime_api.h>

#include "dist/cuda/gpu_parallel_context.h"

namespace orochi::h3::gpu {

Expected<std::unique_ptr<GpuDenoiser>> GpuDenoiser::create(const H3Config& config, int device, const RequestSize& max) {
  OROCHI_ASSIGN_OR_RETURN(auto context, dist::make_gpu_context({device}));  // one GPU: a worker, no groups
  return create(config, std::move(context), max);
}

Expected<std::unique_ptr<GpuDenoiser>> GpuDenoiser::create(const H3Config& config,
                                                           std::shared_ptr<dist::ParallelContext> context,
                                                           const RequestSize& max, const WeightStreaming& streaming,
                                                           const RunnerOptions& options) {
  std::unique_ptr<GpuDenoiser> d(new GpuDenoiser());
  d->config_ = config;
  OROCHI_ASSIGN_OR_RETURN(d->gpus_, H3MultiGpu::create(config, std::move(context), max, streaming, options));
  const H3MultiGpu& gpus = *d->gpus_;
  const int first = gpus.device(0), world = gpus.world_size();
  cudaDeviceProp prop{};
  d->device_name_ = "cuda:" + std::to_string(first);
  if (world > 1)
    d->device_name_ += "-" + std::to_string(gpus.device(world - 1)) + " (tp " + std::to_string(gpus.grid().tp) +
                       " x sp " + std::to_string(gpus.grid().sp) + ")";
  if (cudaGetDeviceProperties(&prop, first) == cudaSuccess) d->device_name_ += std::string(" ") + prop.name;
  return d;
}

Status GpuDenoiser::fit_request(const models::SequenceSize& size) {
  OROCHI_ASSIGN_OR_RETURN(const RequestSize h3_size, request_size(size));
  return fit_request(h3_size);
}

Status GpuDenoiser::fit_request(const RequestSize& size) {
  if (!gpus_) return Status(ErrorCode::kInternal, "GpuDenoiser::fit_request after release()");
  if (gpus_->request_fits(size)) return Status::ok();
  return gpus_->reserve_request(size);
}

void GpuDenoiser::release_request() {
  if (gpus_) gpus_->free_request();
  timesteps_ = Tensor();
  request_set_ = false;
}

Status GpuDenoiser::prepare(const Tensor& timesteps) {
  if (!gpus_) return Status(ErrorCode::kInternal, "GpuDenoiser::prepare after release()");
  if (!timesteps.defined() || timesteps.dtype() != DType::kF32 || timesteps.ndim() != 1 || timesteps.numel() == 0)
    return invalid_argument("the denoiser needs a non-empty f32 [n_t] list of timesteps");
  timesteps_ = timesteps.clone();
  request_set_ = false;
  return Status::ok();
}

Expected<std::vector<Tensor>> GpuDenoiser::forward(const models::PackedSequence& sequence) {
  OROCHI_ASSIGN_OR_RETURN(const H3Inputs inputs, h3_inputs(sequence));
  OROCHI_ASSIGN_OR_RETURN(H3Outputs out, forward(inputs));
  return stream_outputs(std::move(out));
}

Expected<H3Outputs> GpuDenoiser::forward(const H3Inputs& inputs) {
  if (!timesteps_.defined() || !gpus_)
    return Status(ErrorCode::kInternal, "GpuDenoiser::forward called before prepare() or after release()");
  if (!request_set_) {
    OROCHI_RETURN_IF_ERROR(gpus_->set_request(timesteps_, inputs));  // builds every AdaLN table once
    request_set_ = true;
  } else {
    OROCHI_RETURN_IF_ERROR(gpus_->update_rows(inputs));
  }
  OROCHI_RETURN_IF_ERROR(gpus_->forward());
  return gpus_->outputs();
}

}  // namespace orochi::h3::gpu
