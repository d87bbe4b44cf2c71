#include "models/h3/cuda/gpu_parallel.h"

#include <cuda_runtime_api.h>

#include <algorithm>
#include <cstdlib>
#include <set>
#include <utility>

#include "backends/cuda/cuda_check.h"
#include "core/log.h"
#include "dist/cuda/peer_copy_comm.h"
#include "dist/nccl/nccl_comm.h"
#include "dist/rank_threads.h"

namespace orochi::h3::gpu {
namespace {

ParallelRank rank_of(int world_rank, const MultiGpuLayout& l) {
  return {world_rank % l.tp, l.tp, world_rank / l.tp, l.sp};
}

// The host rows kept for a rebalance: copies, so that a caller refilling its tensors in place
// cannot change what a later rebalance uploads.
H3Inputs copy_inputs(const H3Inputs& in) {
  H3Inputs c;
  for (auto [dst, src] : {std::pair{&c.video, &in.video}, {&c.audio, &in.audio}, {&c.text, &in.text},
                          {&c.timestep_indices, &in.timestep_indices}, {&c.token_tags, &in.token_tags},
                          {&c.positions, &in.positions}, {&c.video_indices, &in.video_indices},
                          {&c.audio_indices, &in.audio_indices}, {&c.text_indices, &in.text_indices}})
    if (src->defined()) *dst = src->clone();
  return c;
}

}  // namespace

Expected<std::unique_ptr<H3MultiGpu>> H3MultiGpu::create(const H3Config& config, const std::vector<int>& devices,
                                                         const MultiGpuLayout& layout, const RequestSize& max,
                                                         const WeightStreaming& streaming) {
  const int world = layout.tp * layout.sp;
  if (streaming.any() && world > 1)
    return unsupported("streaming weights on several GPUs is not built yet: use fewer streamed blocks (a larger "
                       "--vram-per-gpu), or tensor parallelism to fit the weights");
  OROCHI_RETURN_IF_ERROR(check_parallel_layout(config, layout.tp, layout.sp));
  if (static_cast<int>(devices.size()) != world)
    return invalid_argument("tp " + std::to_string(layout.tp) + " x sp " + std::to_string(layout.sp) + " needs " +
                            std::to_string(world) + " GPUs, " + std::to_string(devices.size()) + " were given");
  if (std::set<int>(devices.begin(), devices.end()).size() != devices.size())
    return invalid_argument("each GPU can take one rank; a device is listed twice");
  std::unique_ptr<H3MultiGpu> mg(new H3MultiGpu());
  mg->layout_ = layout;
  mg->devices_ = devices;
  for (int w = 0; w < world; ++w) {
    OROCHI_ASSIGN_OR_RETURN(auto runner, H3GpuRunner::create(config, devices[w], max, rank_of(w, layout), streaming));
    mg->runners_.push_back(std::move(runner));
  }
  // Groups: TP among the ranks of one SP index, SP among the ranks of one TP index.
  mg->tp_members_.resize(world);
  mg->sp_members_.resize(world);
  bool fault_placed = false;
  auto make_groups = [&](int count, int members, const char* name, auto world_rank_of,
                         std::vector<std::unique_ptr<dist::Comm>>& out) -> Status {
    if (members == 1) return Status::ok();
    for (int g = 0; g < count; ++g) {
      std::vector<int> devs;
      std::vector<cudaStream_t> streams;
      for (int m = 0; m < members; ++m) {
        devs.push_back(devices[world_rank_of(g, m)]);
        streams.push_back(mg->runners_[world_rank_of(g, m)]->comm_stream());
      }
      dist::CommOptions options;
      options.name = std::string(name) + (count > 1 ? std::to_string(g) : "");
      options.deadline = layout.comm_deadline;
      if (!fault_placed) options.fault = layout.fault;
      fault_placed = true;
      if (std::string(name) == "sp" && layout.sp_copy_engines && dist::PeerCopyGroup::supported(devs)) {
        OROCHI_ASSIGN_OR_RETURN(auto group, dist::PeerCopyGroup::create(devs, streams, options));
        for (int m = 0; m < members; ++m) out[world_rank_of(g, m)] = group->member(m);
        mg->copy_groups_.push_back(std::move(group));
        continue;
      }
      OROCHI_ASSIGN_OR_RETURN(auto group, dist::NcclGroup::create(devs, streams, options));
      for (int m = 0; m < members; ++m) out[world_rank_of(g, m)] = group->member(m);
      mg->groups_.push_back(std::move(group));
    }
    return Status::ok();
  };
  OROCHI_RETURN_IF_ERROR(make_groups(layout.sp, layout.tp, "tp", [&](int g, int m) { return g * layout.tp + m; },
                                     mg->tp_members_));
  OROCHI_RETURN_IF_ERROR(make_groups(layout.tp, layout.sp, "sp", [&](int g, int m) { return m * layout.tp + g; },
                                     mg->sp_members_));
  for (int w = 0; w < world; ++w)
    OROCHI_RETURN_IF_ERROR(mg->runners_[w]->set_groups(mg->tp_members_[w].get(), mg->sp_members_[w].get()));
  if (mg->balancing())
    OROCHI_RETURN_IF_ERROR(mg->on_every_rank([&](int r) { return mg->runners_[r]->measure_load(); }));
  return mg;
}

H3MultiGpu::~H3MultiGpu() {
  // Members before their groups, runners (and their streams) last.
  tp_members_.clear();
  sp_members_.clear();
  groups_.clear();
  copy_groups_.clear();
  runners_.clear();
}

Status H3MultiGpu::on_every_rank(const std::function<Status(int rank)>& fn) {
  const std::vector<Status> results = dist::run_on_ranks(world_size(), [&](int rank) -> Status {
    OROCHI_CUDA_RETURN_IF_ERROR(cudaSetDevice(devices_[rank]));
    Status s = fn(rank);
    // A rank that failed aborts every group, so that ranks waiting in another group (TP vs SP)
    // return now instead of at that group's deadline.
    if (!s.is_ok()) {
      const std::string why = "rank " + std::to_string(rank) + " failed: " + s.message();
      for (auto& g : groups_) g->abort(why);
      for (auto& g : copy_groups_) g->abort(why);
    }
    return s;
  });
  // A deadline error names the rank that stalled; report it before the ranks that saw it second hand.
  for (size_t r = 0; r < results.size(); ++r)
    if (!results[r].is_ok()) return results[r].with_context("rank " + std::to_string(r) + " (cuda:" + std::to_string(devices_[r]) + ")");
  return Status::ok();
}

Status H3MultiGpu::init_random_weights(uint64_t seed) {
  return on_every_rank([&](int r) { return runners_[r]->init_random_weights(seed); });
}

Status H3MultiGpu::upload_weights(const H3Weights& host) {
  return on_every_rank([&](int r) { return runners_[r]->upload_weights(host); });
}

Status H3MultiGpu::set_request(const Tensor& timesteps, const H3Inputs& inputs) {
  request_ = {inputs.rows(), inputs.text.dim(0), inputs.video.dim(0), inputs.audio.dim(0), timesteps.numel()};
  next_shares_.clear();
  smoothed_.clear();
  rebalances_ = 0;
  OROCHI_RETURN_IF_ERROR(on_every_rank([&](int r) { return runners_[r]->set_request(timesteps, inputs); }));
  if (layout_.sp > 1) inputs_ = copy_inputs(inputs);
  return Status::ok();
}

Status H3MultiGpu::update_rows(const H3Inputs& inputs) {
  OROCHI_RETURN_IF_ERROR(on_every_rank([&](int r) { return runners_[r]->update_rows(inputs); }));
  if (layout_.sp > 1) inputs_ = copy_inputs(inputs);
  return Status::ok();
}

Status H3MultiGpu::forward() {
  if (!next_shares_.empty()) {
    OROCHI_RETURN_IF_ERROR(on_every_rank([&](int r) { return runners_[r]->set_row_shares(inputs_, next_shares_); }));
    next_shares_.clear();
    ++rebalances_;
  }
  OROCHI_RETURN_IF_ERROR(on_every_rank([&](int r) -> Status {
    OROCHI_RETURN_IF_ERROR(runners_[r]->forward());
    return runners_[r]->synchronize();
  }));
  return balancing() ? plan_shares() : Status::ok();
}

Status H3MultiGpu::set_row_shares(const std::vector<dist::Range>& shares) {
  if (layout_.sp == 1) return invalid_argument("row shares are for sequence parallelism; this layout has sp 1");
  if (!inputs_.positions.defined()) return invalid_argument("set_row_shares() before set_request()");
  // Checked here first: a rank that fails inside on_every_rank aborts the communicators.
  OROCHI_RETURN_IF_ERROR(check_shares(shares, request_.rows, layout_.sp));
  OROCHI_RETURN_IF_ERROR(on_every_rank([&](int r) { return runners_[r]->set_row_shares(inputs_, shares); }));
  next_shares_.clear();
  return Status::ok();
}

std::vector<dist::Range> H3MultiGpu::row_shares() const {
  std::vector<dist::Range> shares;
  for (int s = 0; s < layout_.sp; ++s) {
    const std::vector<dist::Range> all = runners_[s * layout_.tp]->row_shares();
    if (all.empty()) return {};  // before set_request
    shares.push_back(all.at(s));
  }
  return shares;
}

Status H3MultiGpu::plan_shares() {
  std::vector<dist::RankLoad> world(runners_.size());
  OROCHI_RETURN_IF_ERROR(on_every_rank([&](int r) -> Status {
    OROCHI_ASSIGN_OR_RETURN(world[r], runners_[r]->last_load());
    return Status::ok();
  }));
  // The ranks of one TP group share their rows and wait for each other: the slowest one counts.
  std::vector<dist::RankLoad> loads(layout_.sp);
  for (int w = 0; w < world_size(); ++w) {
    dist::RankLoad& l = loads[w / layout_.tp];
    l.fixed_ms = std::max(l.fixed_ms, world[w].fixed_ms);
    l.per_rows_ms = std::max(l.per_rows_ms, world[w].per_rows_ms);
    l.rows = world[w].rows;
  }
  // One forward's timings move by a few tenths of a percent: balance on their running average
  // (the fixed part, and the cost per row, which stays comparable when the rows change).
  if (smoothed_.size() == loads.size()) {
    for (size_t s = 0; s < loads.size(); ++s) {
      const dist::RankLoad& old = smoothed_[s];
      dist::RankLoad& l = loads[s];
      l.fixed_ms = 0.5 * (l.fixed_ms + old.fixed_ms);
      l.per_rows_ms = 0.5 * (l.per_rows_ms + old.per_rows_ms / old.rows * l.rows);
    }
  }
  smoothed_ = loads;
  // Balance the row work alone. The exchanges split a block into two stretches every rank must
  // finish before the other goes on: attention (by heads, the same on every rank) and the row work
  // between the exchanges. A slower GPU's extra attention time can only be waited out; rows moved to
  // make up for it would make the row stretch longer on the faster rank (measured: even shares
  // 2.882 s, shares balancing attention + rows 2.884 s, SP2 1344x768, bench/RESULTS.md session 9).
  std::vector<dist::RankLoad> rows_only = loads;
  for (dist::RankLoad& l : rows_only) l.fixed_ms = 0;
  Expected<dist::RowShares> next =
      dist::balanced_shares(request_.rows, rows_only, dist::share_capacity(request_.rows, layout_.sp));
  if (!next) {  // e.g. a timing that came back zero: keep the shares rather than fail the run
    log_debug("SP row balancing skipped: ", next.status().message());
    smoothed_.clear();
    return Status::ok();
  }
  const std::vector<dist::Range> current = row_shares();
  int64_t moved = 0;
  for (int s = 0; s < layout_.sp; ++s) moved = std::max(moved, std::abs(next->shares[s].size() - current[s].size()));
  if (moved >= kMinRowMove && next->predicted_ms < next->current_ms * (1 - kMinBalanceGain)) {
    next_shares_ = next->shares;
    log_debug("SP rows to ", next->shares[0].size(), " on rank 0 (", current[0].size(), " now): slowest rank ",
              next->current_ms, " ms -> ", next->predicted_ms, " ms predicted");
  }
  return Status::ok();
}

Expected<H3Outputs> H3MultiGpu::outputs() {
  // TP rank 0 of every SP index holds those rows' outputs (the other TP ranks hold the same).
  int caller_device = 0;
  OROCHI_CUDA_RETURN_IF_ERROR(cudaGetDevice(&caller_device));
  std::vector<RankOutputs> parts;
  for (int s = 0; s < layout_.sp; ++s) {
    OROCHI_CUDA_RETURN_IF_ERROR(cudaSetDevice(devices_[s * layout_.tp]));
    Expected<RankOutputs> part = runners_[s * layout_.tp]->rank_outputs();
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
