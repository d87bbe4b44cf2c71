// NcclGroup's life: request checks, communicator initialization, abort and teardown. Operations
// are in nccl_enqueue.cpp, the watchdog in nccl_watchdog.cpp, the Comm members in nccl_member.cpp.
#include "dist/nccl/nccl_comm.h"

#include <algorithm>
#include <cstdlib>
#include <set>
#include <utility>

#include "backends/cuda/cuda_check.h"
#include "core/env.h"
#include "core/log.h"
#include "dist/nccl/nccl_errors.h"
#include "dist/nccl/poll_pause.h"

namespace orochi::dist {
namespace {

using Clock = std::chrono::steady_clock;

// NCCL initialization on many GPUs takes seconds; a short operation deadline must not fail it.
constexpr std::chrono::milliseconds kMinInitLimit{120'000};

// NCCL calls and our cudaSetDevice switch the calling thread's GPU; a worker thread that calls
// abort() or create() keeps its own.
class DeviceRestorer {
 public:
  DeviceRestorer() {
    if (cudaGetDevice(&device_) != cudaSuccess) device_ = -1;
  }
  ~DeviceRestorer() {
    if (device_ >= 0) (void)cudaSetDevice(device_);
  }
  DeviceRestorer(const DeviceRestorer&) = delete;
  DeviceRestorer& operator=(const DeviceRestorer&) = delete;

 private:
  int device_ = -1;
};

Status check_request(const std::vector<int>& devices, const std::vector<cudaStream_t>& streams,
                     const CommOptions& options) {
  const std::string prefix = "comm group '" + options.name + "': ";
  const int n = static_cast<int>(devices.size());
  if (n == 0) return invalid_argument(prefix + "no GPUs given; pass at least one device (--gpus 0,1)");
  if (streams.size() != devices.size())
    return invalid_argument(prefix + std::to_string(n) + " GPUs but " + std::to_string(streams.size()) +
                            " streams; give one stream per GPU");
  if (options.deadline.count() <= 0) return invalid_argument(prefix + "the deadline must be positive (--comm-timeout)");
  const FaultInjection& fault = options.fault;
  if (fault.kind != FaultInjection::Kind::kNone && (fault.rank < 0 || fault.rank >= n || fault.at_call < 0))
    return invalid_argument(prefix + "fault injection names rank " + std::to_string(fault.rank) + " at call #" +
                            std::to_string(fault.at_call) + ", but the group has " + std::to_string(n) + " ranks");
  int visible = 0;
  const cudaError_t err = cudaGetDeviceCount(&visible);
  if (err != cudaSuccess || visible == 0)
    return not_found(prefix + "no CUDA GPU is visible (" +
                     (err == cudaSuccess ? std::string("0 devices") : cudaGetErrorString(err)) +
                     "): check the driver with nvidia-smi and CUDA_VISIBLE_DEVICES");
  std::set<int> seen;
  for (int i = 0; i < n; ++i) {
    const int device = devices[i];
    if (device < 0 || device >= visible)
      return invalid_argument(prefix + "GPU " + std::to_string(device) + " requested but " + std::to_string(visible) +
                              " GPU(s) are visible; check --gpus and CUDA_VISIBLE_DEVICES");
    if (!seen.insert(device).second)
      return invalid_argument(prefix + "GPU " + std::to_string(device) +
                              " is listed twice; NCCL needs one rank per GPU");
    // The legacy default stream synchronizes with all other work on its GPU: a collective waiting
    // for a peer would block every other worker's copies there.
    if (streams[i] == nullptr)
      return invalid_argument(prefix + "rank " + std::to_string(i) +
                              " was given the default stream; give each GPU its own stream "
                              "(cudaStreamCreateWithFlags(..., cudaStreamNonBlocking))");
    int stream_device = -1;
    if (cudaStreamGetDevice(streams[i], &stream_device) == cudaSuccess && stream_device != device)
      return invalid_argument(prefix + "rank " + std::to_string(i) + " drives GPU " + std::to_string(device) +
                              " but its stream belongs to GPU " + std::to_string(stream_device));
  }
  return Status::ok();
}

// NVLink multicast (NVLS) stays off: the machines we run on must not use it. NCCL reads its
// variables once, at its first call; a value the user set is kept but reported.
void keep_nvlink_multicast_off() {
  setenv("NCCL_NVLS_ENABLE", "0", 0 /* don't overwrite */);
  const std::optional<std::string> value = env_value("NCCL_NVLS_ENABLE");
  if (value && *value != "0")
    log_warn("NCCL_NVLS_ENABLE=", *value, " is set, so NCCL may use NVLink multicast, which Orochi keeps off; ",
             "unset it if NCCL fails to start");
}

}  // namespace

NcclGroup::NcclGroup(CommOptions options) : options_(std::move(options)) {}

std::string NcclGroup::prefix() const { return "comm group '" + options_.name + "': "; }

Expected<std::shared_ptr<NcclGroup>> NcclGroup::create(const std::vector<int>& devices,
                                                       const std::vector<cudaStream_t>& streams, CommOptions options) {
  OROCHI_RETURN_IF_ERROR(check_request(devices, streams, options));
  keep_nvlink_multicast_off();
  std::shared_ptr<NcclGroup> group(new NcclGroup(std::move(options)));
  OROCHI_RETURN_IF_ERROR(group->allocate_members(devices, streams));
  const Status init = group->init_communicators();
  if (!init.is_ok()) {
    group->release_communicators(/*abort=*/true);  // a half-initialized communicator can only be aborted
    return init;
  }
  group->watchdog_ = std::thread([raw = group.get()] { raw->watchdog_loop(); });
  return group;
}

Status NcclGroup::allocate_members(const std::vector<int>& devices, const std::vector<cudaStream_t>& streams) {
  DeviceRestorer restore;
  for (size_t i = 0; i < devices.size(); ++i) {
    auto member = std::make_unique<Member>();
    member->rank = static_cast<int>(i);
    member->device = devices[i];
    member->stream = streams[i];
    members_.push_back(std::move(member));  // first, so the destructor frees whatever was allocated
    Member& m = *members_.back();
    OROCHI_CUDA_RETURN_IF_ERROR(cudaSetDevice(m.device));
    void* device_value = nullptr;
    void* host_value = nullptr;
    OROCHI_CUDA_RETURN_IF_ERROR(cudaMalloc(&device_value, sizeof(int64_t)));
    m.heartbeat_device = static_cast<int64_t*>(device_value);
    OROCHI_CUDA_RETURN_IF_ERROR(cudaMallocHost(&host_value, sizeof(int64_t)));
    m.heartbeat_host = static_cast<int64_t*>(host_value);
  }
  return Status::ok();
}

Status NcclGroup::init_communicators() {
  ncclUniqueId id;
  OROCHI_RETURN_IF_ERROR(nccl_status(ncclGetUniqueId(&id), prefix() + "ncclGetUniqueId"));
  ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
  config.blocking = 0;  // see nccl_comm.h: no host call ever waits for a peer
  DeviceRestorer restore;
  // ncclCommInitAll's recipe (one id, one rank per GPU inside a group), with our config.
  ncclResult_t result = ncclGroupStart();
  if (result != ncclSuccess) return nccl_status(result, prefix() + "ncclGroupStart");
  Status setup;
  for (auto& m : members_) {
    setup = cuda::cuda_status(cudaSetDevice(m->device), "cudaSetDevice");
    if (!setup.is_ok()) break;
    result = ncclCommInitRankConfig(&m->comm, size(), id, m->rank, &config);
    if (result != ncclSuccess && result != ncclInProgress) {
      setup = nccl_status(result, prefix() + "ncclCommInitRankConfig for rank " + std::to_string(m->rank));
      break;
    }
  }
  result = ncclGroupEnd();  // starts the initialization on NCCL's threads
  OROCHI_RETURN_IF_ERROR(setup);
  if (result != ncclSuccess && result != ncclInProgress)
    return nccl_status(result, prefix() + "NCCL initialization (ncclGroupEnd)");

  const std::chrono::milliseconds limit = std::max(options_.deadline, kMinInitLimit);
  const auto give_up = Clock::now() + limit;
  for (auto& m : members_) {
    PollPause pause;
    ncclResult_t state = ncclInProgress;
    while (true) {
      const ncclResult_t query = ncclCommGetAsyncError(m->comm, &state);
      if (query != ncclSuccess) state = query;
      if (state != ncclInProgress) break;
      if (Clock::now() > give_up)
        return deadline_exceeded(prefix() + "NCCL initialization of " + std::to_string(size()) +
                                 " GPUs did not finish within " + std::to_string(limit.count() / 1000) +
                                 " s; a GPU may be lost or held by another process (check nvidia-smi); rerun "
                                 "with NCCL_DEBUG=INFO to see where it stops");
      pause.wait();
    }
    if (state != ncclSuccess)
      return nccl_status(state, prefix() + "NCCL initialization of rank " + std::to_string(m->rank) + " (GPU " +
                                    std::to_string(m->device) + ")");
  }
  return Status::ok();
}

NcclGroup::~NcclGroup() {
  DeviceRestorer restore;
  {
    std::lock_guard lock(watchdog_mutex_);
    stop_watchdog_ = true;
  }
  watchdog_wake_.notify_all();
  if (watchdog_.joinable()) watchdog_.join();
  if (!aborting_.load()) {
    // Destroying a communicator under a running collective would free memory its kernel uses.
    const bool drained = drain(options_.deadline);
    if (!drained)
      log_warn(prefix(), "destroyed with operations still pending after ", options_.deadline.count(),
               " ms; aborting them");
    release_communicators(/*abort=*/!drained);
  }
  for (auto& m : members_) {
    (void)cudaSetDevice(m->device);
    for (cudaEvent_t event : m->all_events) (void)cudaEventDestroy(event);
    if (m->heartbeat_device != nullptr) (void)cudaFree(m->heartbeat_device);
    if (m->heartbeat_host != nullptr) (void)cudaFreeHost(m->heartbeat_host);
  }
}

void NcclGroup::release_communicators(bool abort) {
  DeviceRestorer restore;
  // The last communicator of the process's clique frees them all (NCCL's commReclaim), so every
  // one is released here, in one pass, each under its lock.
  for (auto& m : members_) {
    std::lock_guard lock(m->nccl_mutex);
    if (m->comm == nullptr) continue;
    // ncclCommDestroy refuses a communicator in an error state or still enqueuing, and then leaves
    // this thread inside an NCCL group (2.28); only a healthy, idle one is destroyed, the rest aborted.
    ncclResult_t state = ncclInProgress;
    const bool healthy = ncclCommGetAsyncError(m->comm, &state) == ncclSuccess && state == ncclSuccess;
    const ncclResult_t result = abort || !healthy ? ncclCommAbort(m->comm) : ncclCommDestroy(m->comm);
    if (result != ncclSuccess)
      log_warn(
          nccl_status(result, prefix() + "releasing the communicator of rank " + std::to_string(m->rank)).message());
    m->comm = nullptr;
  }
}

void NcclGroup::abort(const std::string& reason) {
  abort_with(deadline_exceeded("comm group '" + options_.name + "' was aborted: " + reason));
}

void NcclGroup::abort_with(Status error) {
  {
    std::lock_guard lock(error_mutex_);
    if (aborting_.load()) return;
    error_ = std::move(error);
    aborting_.store(true);
  }
  log_error(health().to_string());
  // ncclCommAbort makes the group's kernels quit; only then may callers free their buffers.
  release_communicators(/*abort=*/true);
  abort_done_.store(true);
}

Status NcclGroup::abort_error() {
  while (!abort_done_.load()) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  return health();
}

Status NcclGroup::health() const {
  std::lock_guard lock(error_mutex_);
  return error_;
}

}  // namespace orochi::dist
