// The H3 denoiser on several GPUs of this host, every GPU on the same request: one H3GpuRunner per
// rank of a dist::ParallelContext (dist/cuda/gpu_parallel_context.h), TP x SP (tensor_parallel.h)
// over the context's groups. The context owns the groups and the workers; this class only takes
// each rank's members and fans out through the context. World rank w = sp_rank * tp + tp_rank.
//
//   auto ctx = dist::make_gpu_context({0, 1}, {.tp = 1, .sp = 2});
//   auto mg = H3MultiGpu::create(config, *ctx, max);
//   mg->init_random_weights(seed);  mg->set_request(t, in);  mg->forward();  mg->outputs();
#pragma once

#include <functional>
#include <memory>
#include <vector>

#include "dist/parallel_context.h"
#include "models/h3/cuda/gpu_runner.h"

namespace orochi::h3::gpu {

class H3MultiGpu {
 public:
  // The context's layout on its first tp x sp GPUs; it is kept until this is destroyed.
  // `streaming`: transformer blocks streamed from a tier (one GPU only, for now). The SP ranks'
  // row weights are options.sp.row_weights (empty: an even split).
  static Expected<std::unique_ptr<H3MultiGpu>> create(const H3Config& config,
                                                      std::shared_ptr<dist::ParallelContext> context,
                                                      const RequestSize& max, const WeightStreaming& streaming = {},
                                                      const RunnerOptions& options = {});
  ~H3MultiGpu();

  Status init_random_weights(uint64_t seed);
  Status upload_weights(const H3Weights& host);  // kept by reference (H3GpuRunner::upload_weights)
  Status upload_weights(const H3Weights&& host) = delete;
  Status merge_lora(const H3Lora& lora, float strength);  // every rank's (H3GpuRunner::merge_lora)
  // Every rank's request arena (H3GpuRunner::reserve_request / free_request / request_fits).
  Status reserve_request(const RequestSize& max);
  void free_request();
  bool request_fits(const RequestSize& size) const;
  Status set_request(const Tensor& timesteps, const H3Inputs& inputs);
  Status update_rows(const H3Inputs& inputs);
  // Every rank's forward, each on its worker; returns when all are done (or one failed).
  Status forward();
  Expected<H3Outputs> outputs();

  int world_size() const { return static_cast<int>(runners_.size()); }
  H3GpuRunner& runner(int rank) { return *runners_[rank]; }
  const dist::RankGrid& grid() const { return context_->grid(); }
  const std::vector<double>& sp_weights() const { return sp_weights_; }  // empty: an even split
  int device(int rank) const { return context_->device(rank); }

 private:
  H3MultiGpu() = default;
  // fn(rank) on every rank's worker (the context's fan-out); the first failure, naming the rank.
  Status on_every_rank(const std::function<Status(int rank)>& fn);

  std::shared_ptr<dist::ParallelContext> context_;  // first: its groups and streams outlive the runners
  std::vector<double> sp_weights_;
  RequestSize request_;
  std::vector<std::unique_ptr<H3GpuRunner>> runners_;
};

}  // namespace orochi::h3::gpu
