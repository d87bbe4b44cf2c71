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
  // SP row shares that follow the GPUs' measured speeds (dist/row_balance.h): every forward times
  // each rank's attention and the rest of its compute, and when moving rows would shorten the
  // slowest rank by more than kMinBalanceGain the next forward runs with the new shares.
  bool balance_rows = true;
};

class H3MultiGpu {
 public:
  // `streaming`: transformer blocks streamed from a tier (one GPU only, for now).
  static Expected<std::unique_ptr<H3MultiGpu>> create(const H3Config& config, const std::vector<int>& devices,
                                                      const MultiGpuLayout& layout, const RequestSize& max,
                                                      const WeightStreaming& streaming = {});
  ~H3MultiGpu();

  Status init_random_weights(uint64_t seed);
  Status upload_weights(const H3Weights& host);
  Status set_request(const Tensor& timesteps, const H3Inputs& inputs);
  Status update_rows(const H3Inputs& inputs);
  // Every rank's forward, each on its own thread; returns when all are done (or one failed).
  // With SP row balancing, first takes the shares the previous forward's loads asked for.
  Status forward();
  // SP: every rank's rows from the next forward on (contiguous, in rank order, each within
  // dist::share_capacity); balancing, when on, goes on from there.
  Status set_row_shares(const std::vector<dist::Range>& shares);
  // The SP ranks' rows in the last forward (one range on one GPU), and how often they moved.
  std::vector<dist::Range> row_shares() const;
  int row_rebalances() const { return rebalances_; }
  // A new row split is taken only when it shortens the slowest rank by at least this fraction
  // and moves at least kMinRowMove rows.
  static constexpr double kMinBalanceGain = 0.001;
  static constexpr int64_t kMinRowMove = 32;
  Expected<H3Outputs> outputs();

  int world_size() const { return static_cast<int>(runners_.size()); }
  H3GpuRunner& runner(int rank) { return *runners_[rank]; }
  const MultiGpuLayout& layout() const { return layout_; }
  // Runs fn(rank) on one thread per GPU (device already set); the first failure, naming the rank.
  Status on_every_rank(const std::function<Status(int rank)>& fn);

 private:
  H3MultiGpu() = default;
  bool balancing() const { return layout_.balance_rows && layout_.sp > 1; }
  // After a forward: every rank's load, and the shares the next forward should take (if any).
  Status plan_shares();
  MultiGpuLayout layout_;
  H3Inputs inputs_;                        // SP: the request's current rows (new shares upload them again)
  std::vector<dist::Range> next_shares_;   // empty: keep the current ones
  std::vector<dist::RankLoad> smoothed_;   // per SP index: the loads' running average
  int rebalances_ = 0;
  std::vector<int> devices_;
  RequestSize request_;
  std::vector<std::unique_ptr<H3GpuRunner>> runners_;
  std::vector<std::shared_ptr<dist::NcclGroup>> groups_;
  std::vector<std::shared_ptr<dist::PeerCopyGroup>> copy_groups_;
  std::vector<std::unique_ptr<dist::Comm>> tp_members_, sp_members_;  // by world rank (null: size 1)
};

}  // namespace orochi::h3::gpu
