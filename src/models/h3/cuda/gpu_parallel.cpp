#include "models/h3/cuda/gpu_parallel.h"

#include <cuda_runtime_api.h>

#include "backends/cuda/cuda_check.h"
#include "dist/cuda/gpu_parallel_context.h"

namespace orochi::h3::gpu {

Expected<std::unique_ptr<H3MultiGpu>> H3MultiGpu::create(const H3Config& config,
                                                         std::shared_ptr<dist::ParallelContext> context,
                                                         const RequestSize& max, const WeightStreaming& streaming,
                                                         const RunnerOptions& options) {
  if (!context) return Status(ErrorCode::kInternal, "H3MultiGpu::create without a parallel context");
  const dist::RankGrid grid = context->grid();
  const int world = grid.world();
  if (streaming.any() && world > 1)
    return unsupported("streaming weights on several GPUs is not built yet: use fewer streamed blocks (a larger "
                       "--vram-per-gpu), or tensor parallelism to fit the weights");
  OROCHI_RETURN_IF_ERROR(check_parallel_layout(config, grid.tp, grid.sp));
  const std::vector<double>& weights = options.sp.row_weights;  // empty: an even split
  if (const std::string why = weights.empty() ? "" : sp_weights_problem(weights, grid.sp); !why.empty()) {
    return invalid_argument("the SP row weights (--set sp-weights): " + why + "; give one per sequence-parallel rank (" +
                            std::to_string(grid.sp) + "), or none for an even split");
  }
  std::unique_ptr<H3MultiGpu> mg(new H3MultiGpu());
  mg->context_ = std::move(context);
  mg->sp_weights_ = weights;
  const dist::ParallelContext& ctx = *mg->context_;
  for (int w = 0; w < world; ++w) {
    const ParallelRank rank{grid.tp_rank(w), grid.tp, grid.sp_rank(w), grid.sp, weights};
    OROCHI_ASSIGN_OR_RETURN(auto runner, H3GpuRunner::create(config, ctx.device(w), max, rank, streaming, options));
    OROCHI_RETURN_IF_ERROR(runner->set_groups(ctx.tp(w), ctx.sp(w), dist::comm_stream(ctx, w)));
    mg->runners_.push_back(std::move(runner));
  }
  return mg;
}

H3MultiGpu::~H3MultiGpu() {
  runners_.clear();  // before the context's groups and comm streams they use
}

Status H3MultiGpu::on_every_rank(const std::function<Status(int rank)>& fn) {
  return context_->run(world_size(), fn);
}

Status H3MultiGpu::init_random_weights(uint64_t seed) {
  return on_every_rank([&](int r) { return runners_[r]->init_random_weights(seed); });
}

Status H3MultiGpu::merge_lora(const H3Lora& lora, float strength) {
  return on_every_rank([&](int r) { return runners_[r]->merge_lora(lora, strength); });
}

Status H3MultiGpu::upload_weights(const H3Weights& host) {
  return on_every_rank([&](int r) { return runners_[r]->upload_weights(host); });
}

Status H3MultiGpu::reserve_request(const RequestSize& max) {
  return on_every_rank([&](int r) { return runners_[r]->reserve_request(max); });
}

void H3MultiGpu::free_request() {
  for (auto& runner : runners_) runner->free_request();
}

bool H3MultiGpu::request_fits(const RequestSize& size) const {
  for (const auto& runner : runners_)
    if (!runner->request_fits(size)) return false;
  return true;
}

Status H3MultiGpu::set_request(const Tensor& timesteps, const H3Inputs& inputs) {
  request_ = {inputs.rows(), inputs.text.dim(0), inputs.video.dim(0), inputs.audio.dim(0), timesteps.numel()};
  return on_every_rank([&](int r) { return runners_[r]->set_request(timesteps, inputs); });
}

Status H3MultiGpu::update_rows(const H3Inputs& inputs) {
  return on_every_rank([&](int r) { return runners_[r]->update_rows(inputs); });
}

Status H3MultiGpu::forward() {
  return on_every_rank([&](int r) -> Status {
    OROCHI_RETURN_IF_ERROR(runners_[r]->forward());
    return runners_[r]->synchronize();
  });
}

Expected<H3Outputs> H3MultiGpu::outputs() {
  // TP rank 0 of every SP index holds those rows' outputs (the other TP ranks hold the same).
  int caller_device = 0;
  OROCHI_CUDA_RETURN_IF_ERROR(cudaGetDevice(&caller_device));
  std::vector<RankOutputs> parts;
  const dist::RankGrid& g = grid();
  for (int s = 0; s < g.sp; ++s) {
    OROCHI_CUDA_RETURN_IF_ERROR(cudaSetDevice(device(s * g.tp)));
    Expected<RankOutputs> part = runners_[s * g.tp]->rank_outputs();
    if (!part) {
      cudaSetDevice(caller_device);
      return part.status();
    }
    parts.push_back(std::move(*part));
  }
  OROCHI_CUDA_RETURN_IF_ERROR(cudaSetDevice(caller_device));
  if (world_size() == 1) return std::move(parts[0].rows);  // every row, in order
  return merge_rank_outputs(parts, runners_[0]->config(), request_);
}

}  // namespace orochi::h3::gpu
