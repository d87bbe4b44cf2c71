#include "models/h3/denoiser.h"

namespace orochi::h3 {

Status CpuDenoiser::prepare(const Tensor& timesteps) {
  if (!timesteps.defined() || timesteps.dtype() != DType::kF32 || timesteps.ndim() != 1 || timesteps.numel() == 0)
    return invalid_argument("the denoiser needs a non-empty f32 [n_t] list of timesteps, got " +
                            (timesteps.defined() ? timesteps.describe() : std::string("nothing")));
  tables_ = compute_modulation_tables(weights_, timesteps);
  return Status::ok();
}

Expected<H3Outputs> CpuDenoiser::forward(const H3Inputs& inputs) {
  if (!tables_.timesteps.defined())
    return Status(ErrorCode::kInternal, "CpuDenoiser::forward called before prepare()");
  return h3::forward(weights_, inputs, tables_);
}

}  // namespace orochi::h3
