#include "models/h3/cuda/gpu_parallel.h"

#include <cuda_runtime_api.h>

#include <cstdlib>
#include <set>

#include "backends/cuda/cuda_check.h"
#include "dist/cuda/peer_copy_comm.h"
#include "dist/nccl/nccl_comm.h"
#include "dist/rank_threads.h"

namespace orochi::h3::gpu {
namespace {

ParallelRank rank_of(int world_rank, const MultiGpuLayout& l) {
  return {world_rank % l.tp, l.tp, world_rank / l.tp, l.sp, l.sp_weights};
}

}  // namespace

Expected<std::unique_ptr<H3MultiGpu>> H3MultiGpu::create(const H3Config& config, const std::vector<int>& devices,
                                                         const MultiGpuLayout& layout, const RequestSize& max,
                                                         const WeightStreaming& streaming,
                                                         const RunnerOptions& options) {
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
  if (mg->layout_.sp_weights.empty()) mg->layout_.sp_weights = options.sp.row_weights;  // empty: an even split
  const std::vector<double>& weights = mg->layout_.sp_weights;
  if (const std::string why = weights.empty() ? "" : sp_weights_problem(weights, layout.sp); !why.empty()) {
    return invalid_argument("the SP row weights (--set sp-weights): " + why + "; give one per sequence-parallel rank (" +
                            std::to_string(layout.sp) + "), or none for an even split");
  }
  mg->devices_ = devices;
  for (int w = 0; w < world; ++w) {
    OROCHI_ASSIGN_OR_RETURN(auto runner,
                            H3GpuRunner::create(config, devices[w], max, rank_of(w, mg->layout_), streaming, options));
    mg->runners_.push_back(std::move(runner));
  }
  // Groups: TP among the ranks of one SP index, SP among the ranks of one TP index.
  mg->tp_members_.resize(world);
  mg->sp_members_.resize(world);
  bool fault_placed = false;
  const dist::PeerCopyPace pace = options.sp.pace;
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
        OROCHI_ASSIGN_OR_RETURN(auto group, dist::PeerCopyGroup::create(devs, streams, options, pace));
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
