// The H3 denoiser on several GPUs of this host, every GPU on the same request: one H3GpuRunner and
// one worker thread per GPU, TP x SP (tensor_parallel.h) over NCCL groups created here and handed
// to the runners. World rank w = sp_rank * tp + tp_rank, so TP groups are neighbours.
//
//   auto mg = H3MultiGpu::create(config, {0, 1}, {.tp = 1, .sp = 2}, max);
//   mg->init_random_weights(seed);  mg->set_request(t, in);  mg->forward();  mg->outputs();
#pragma once

#include <chrono>
#include <functional>
#include <memory>
#include <vector>

#include "dist/comm.h"
#include "models/h3/cuda/gpu_runner.h"

namespace orochi::dist {
class NcclGroup;
class PeerCopyGroup;
}

namespace orochi::h3::gpu {

struct MultiGpuLayout {
  int tp = 1, sp = 1;
  std::chrono::milliseconds comm_deadline{60'000};  // --comm-timeout
  dist::FaultInjection fault = {};                   // tests only: applied to the first TP or SP group
  // Ulysses exchanges by the GPUs' copy engines (dist/cuda/peer_copy_comm.h) when every SP pair has
  // peer access, so they overlap attention and GEMMs; NCCL otherwise (and always for TP's sums).
  bool sp_copy_engines = true;
  // Relative speeds of the SP ranks (ParallelRank::sp_weights); empty: RunnerOptions' sp row weights,
  // else even.
  std::vector<double> sp_weights = {};
};

class H3MultiGpu {
 public:
  // `streaming`: transformer blocks streamed from a tier (one GPU only, for now).
  static Expected<std::unique_ptr<H3MultiGpu>> create(const H3Config& config, const std::vector<int>& devices,
                                                      const MultiGpuLayout& layout, const RequestSize& max,
                                                      const WeightStreaming& streaming = {},
                                                      const RunnerOptions& options = {});
  ~H3MultiGpu();

  Status init_random_weights(uint64_t seed);
  Status upload_weights(const H3Weights& host);
  // Every rank's request arena (H3GpuRunner::reserve_request / free_request / request_fits).
  Status reserve_request(const RequestSize& max);
  void free_request();
  bool request_fits(const RequestSize& size) const;
  Status set_request(const Tensor& timesteps, const H3Inputs& inputs);
  Status update_rows(const H3Inputs& inputs);
  // Every rank's forward, each on its own thread; returns when all are done (or one failed).
  Status forward();
  Expected<H3Outputs> outputs();

  int world_size() const { return static_cast<int>(runners_.size()); }
  H3GpuRunner& runner(int rank) { return *runners_[rank]; }
  const MultiGpuLayout& layout() const { return layout_; }
  // Runs fn(rank) on one thread per GPU (device already set); the first failure, naming the rank.
  Status on_every_rank(const std::function<Status(int rank)>& fn);

 private:
  H3MultiGpu() = default;
  MultiGpuLayout layout_;
  std::vector<int> devices_;
  RequestSize request_;
  std::vector<std::unique_ptr<H3GpuRunner>> runners_;
  std::vector<std::shared_ptr<dist::NcclGroup>> groups_;
  std::vector<std::shared_ptr<dist::PeerCopyGroup>> copy_groups_;
  std::vector<std::unique_ptr<dist::Comm>> tp_members_, sp_members_;  // by world rank (null: size 1)
};

}  // namespace orochi::h3::gpu
