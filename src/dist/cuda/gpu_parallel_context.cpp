#include "dist/cuda/gpu_parallel_context.h"

#include <set>
#include <string>

#include "backends/cuda/cuda_check.h"
#include "dist/cuda/peer_copy_comm.h"
#include "dist/nccl/nccl_comm.h"

namespace orochi::dist {
namespace {

class GpuRanks final : public RankDevices {
 public:
  GpuRanks(std::vector<int> devices, bool sp_copy_engines, PeerCopyPace pace)
      : devices_(std::move(devices)), sp_copy_engines_(sp_copy_engines), pace_(pace) {}
  // After the groups (the context destroys its members and groups first).
  ~GpuRanks() override {
    for (cudaStream_t s : streams_)
      if (s) cudaStreamDestroy(s);
  }

  // One comm stream per rank of the layout. The highest priority: the collectives' thread blocks
  // are scheduled as soon as SMs free up, instead of queueing behind the next GEMM's or
  // attention's blocks they should overlap.
  Status create_streams(int ranks) {
    int caller = 0;
    OROCHI_CUDA_RETURN_IF_ERROR(cudaGetDevice(&caller));
    auto create = [&]() -> Status {
      for (int r = 0; r < ranks; ++r) {
        OROCHI_CUDA_RETURN_IF_ERROR(cudaSetDevice(devices_[r]));
        int least = 0, greatest = 0;
        OROCHI_CUDA_RETURN_IF_ERROR(cudaDeviceGetStreamPriorityRange(&least, &greatest));
        cudaStream_t s = nullptr;
        OROCHI_CUDA_RETURN_IF_ERROR(cudaStreamCreateWithPriority(&s, cudaStreamNonBlocking, greatest));
        streams_.push_back(s);
      }
      return Status::ok();
    };
    const Status made = create();
    cudaSetDevice(caller);  // the caller's device, also after a failure
    return made;
  }

  int count() const override { return static_cast<int>(devices_.size()); }
  std::string name(int w) const override { return "cuda:" + std::to_string(devices_[w]); }
  Status enter(int w) override {
    OROCHI_CUDA_RETURN_IF_ERROR(cudaSetDevice(devices_[w]));
    return Status::ok();
  }
  int device(int w) const override { return devices_[w]; }
  void* comm_stream(int w) const override { return w < static_cast<int>(streams_.size()) ? streams_[w] : nullptr; }

  Expected<MadeGroup> make_group(GroupKind kind, const std::vector<int>& workers, const CommOptions& options) override {
    std::vector<int> devs;
    std::vector<cudaStream_t> streams;
    for (int w : workers) {
      devs.push_back(devices_[w]);
      streams.push_back(streams_[w]);
    }
    MadeGroup made;
    if (kind == GroupKind::kSp && sp_copy_engines_ && PeerCopyGroup::supported(devs)) {
      OROCHI_ASSIGN_OR_RETURN(std::shared_ptr<PeerCopyGroup> group, PeerCopyGroup::create(devs, streams, options, pace_));
      for (int m = 0; m < group->size(); ++m) made.members.push_back(group->member(m));
      made.abort = [group](const std::string& reason) { group->abort(reason); };
      return made;
    }
    OROCHI_ASSIGN_OR_RETURN(std::shared_ptr<NcclGroup> group, NcclGroup::create(devs, streams, options));
    for (int m = 0; m < group->size(); ++m) made.members.push_back(group->member(m));
    made.abort = [group](const std::string& reason) { group->abort(reason); };
    return made;
  }

 private:
  std::vector<int> devices_;
  bool sp_copy_engines_;
  PeerCopyPace pace_;
  std::vector<cudaStream_t> streams_;  // by world rank; none on one GPU
};

}  // namespace

Expected<std::shared_ptr<ParallelContext>> make_gpu_context(const std::vector<int>& devices,
                                                            const GpuParallelOptions& options) {
  const int world = options.tp * options.sp;
  if (options.tp < 1 || options.sp < 1 || static_cast<int>(devices.size()) < world)
    return invalid_argument("tp " + std::to_string(options.tp) + " x sp " + std::to_string(options.sp) + " needs " +
                            std::to_string(world) + " GPUs, " + std::to_string(devices.size()) + " were given");
  if (std::set<int>(devices.begin(), devices.begin() + world).size() != static_cast<size_t>(world))
    return invalid_argument("each GPU can take one rank; a device is listed twice");
  auto ranks = std::make_unique<GpuRanks>(devices, options.sp_copy_engines, options.pace);
  if (world > 1) OROCHI_RETURN_IF_ERROR(ranks->create_streams(world));
  return ParallelContext::create(std::move(ranks), {options.tp, options.sp},
                                 {.deadline = options.comm_deadline, .fault = options.fault});
}

}  // namespace orochi::dist
