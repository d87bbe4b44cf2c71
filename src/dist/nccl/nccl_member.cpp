// NcclMember: one rank's Comm over its GPU's communicator. Checks the arguments, then hands the
// NCCL calls to NcclGroup::run_op, which numbers, times and fails them as a group.
#include <cstddef>

#include "backends/cuda/cuda_check.h"
#include "core/check.h"
#include "dist/cpu_exchange.h"
#include "dist/nccl/nccl_comm.h"
#include "dist/nccl/nccl_errors.h"

namespace orochi::dist {

class NcclMember final : public Comm {
 public:
  using Member = NcclGroup::Member;

  NcclMember(std::shared_ptr<NcclGroup> group, int rank) : group_(std::move(group)), rank_(rank) {}

  int rank() const override { return rank_; }
  int size() const override { return group_->size(); }
  const std::string& name() const override { return group_->options().name; }
  void abort(const std::string& reason) override { group_->abort(reason); }

  Status all_reduce_sum(void* data, int64_t count, DType dtype) override {
    if (count < 0 || (count > 0 && data == nullptr))
      return group_->reject(rank_, "all_reduce", "count " + std::to_string(count) + " at " + pointer(data));
    Expected<ncclDataType_t> type = nccl_sum_type(dtype);
    if (!type) return group_->reject(rank_, "all_reduce", type.status().message());
    return group_->run_op(rank_, "all_reduce", [&](Member& m) {
      if (count == 0) return Status::ok();
      return group_->call_nccl(m, "ncclAllReduce", [&](ncclComm_t comm) {
        return ncclAllReduce(data, data, static_cast<size_t>(count), *type, ncclSum, comm, m.stream);
      });
    });
  }

  Status all_gather(const void* send, void* recv, int64_t count, DType dtype) override {
    if (count < 0 || (count > 0 && (send == nullptr || recv == nullptr)))
      return group_->reject(rank_, "all_gather",
                            "count " + std::to_string(count) + ", send " + pointer(send) + ", recv " + pointer(recv));
    // Gathering moves bytes: any element type goes as bytes.
    const size_t bytes = static_cast<size_t>(count) * dtype_size(dtype);
    return group_->run_op(rank_, "all_gather", [&](Member& m) {
      if (bytes == 0) return Status::ok();
      return group_->call_nccl(m, "ncclAllGather", [&](ncclComm_t comm) {
        return ncclAllGather(send, recv, bytes, ncclUint8, comm, m.stream);
      });
    });
  }

  Status all_to_all(const void* send, const std::vector<int64_t>& send_counts, const std::vector<int64_t>& send_offsets,
                    void* recv, const std::vector<int64_t>& recv_counts, const std::vector<int64_t>& recv_offsets,
                    DType dtype) override {
    std::string why =
        check_all_to_all_arguments(size(), send, send_counts, send_offsets, recv, recv_counts, recv_offsets);
    if (why.empty() && send_counts[rank_] != recv_counts[rank_])
      why = "this rank sends itself " + std::to_string(send_counts[rank_]) + " elements but expects " +
            std::to_string(recv_counts[rank_]);
    if (!why.empty()) return group_->reject(rank_, "all_to_all", why);
    const size_t element = dtype_size(dtype);
    const auto* source = static_cast<const std::byte*>(send);
    auto* target = static_cast<std::byte*>(recv);
    return group_->run_op(rank_, "all_to_all", [&](Member& m) {
      // This rank's own share is a copy on its stream; NCCL moves only the peers' shares.
      if (send_counts[rank_] > 0)
        OROCHI_CUDA_RETURN_IF_ERROR(
            cudaMemcpyAsync(target + recv_offsets[rank_] * element, source + send_offsets[rank_] * element,
                            static_cast<size_t>(send_counts[rank_]) * element, cudaMemcpyDeviceToDevice, m.stream));
      bool any_peer = false;
      for (int j = 0; j < size(); ++j)
        if (j != rank_ && (send_counts[j] > 0 || recv_counts[j] > 0)) any_peer = true;
      if (!any_peer) return Status::ok();
      return group_->call_nccl(m, "ncclSend/ncclRecv group", [&](ncclComm_t comm) {
        ncclResult_t result = ncclGroupStart();
        if (result != ncclSuccess) return result;
        for (int j = 0; j < size() && (result == ncclSuccess || result == ncclInProgress); ++j) {
          if (j == rank_) continue;
          if (send_counts[j] > 0)
            result = ncclSend(source + send_offsets[j] * element, static_cast<size_t>(send_counts[j]) * element,
                              ncclUint8, j, comm, m.stream);
          if (recv_counts[j] > 0 && (result == ncclSuccess || result == ncclInProgress))
            result = ncclRecv(target + recv_offsets[j] * element, static_cast<size_t>(recv_counts[j]) * element,
                              ncclUint8, j, comm, m.stream);
        }
        const ncclResult_t end = ncclGroupEnd();  // always: it also resets the thread's group state
        return result == ncclSuccess || result == ncclInProgress ? end : result;
      });
    });
  }

  Expected<int64_t> all_reduce_min(int64_t value) override {
    int64_t* host = nullptr;
    OROCHI_RETURN_IF_ERROR(group_->run_op(rank_, "all_reduce_min", [&](Member& m) {
      host = m.heartbeat_host;
      *host = value;  // pinned, and this rank's last heartbeat finished: nothing reads it now
      OROCHI_CUDA_RETURN_IF_ERROR(
          cudaMemcpyAsync(m.heartbeat_device, host, sizeof(int64_t), cudaMemcpyHostToDevice, m.stream));
      OROCHI_RETURN_IF_ERROR(group_->call_nccl(m, "ncclAllReduce(min)", [&](ncclComm_t comm) {
        return ncclAllReduce(m.heartbeat_device, m.heartbeat_device, 1, ncclInt64, ncclMin, comm, m.stream);
      }));
      OROCHI_CUDA_RETURN_IF_ERROR(
          cudaMemcpyAsync(host, m.heartbeat_device, sizeof(int64_t), cudaMemcpyDeviceToHost, m.stream));
      return Status::ok();
    }));
    // Blocking by contract: the result is needed on the host now. The watchdog bounds the wait.
    OROCHI_RETURN_IF_ERROR(group_->synchronize(rank_));
    return *host;
  }

  Status synchronize() override { return group_->synchronize(rank_); }

 private:
  static std::string pointer(const void* p) { return p != nullptr ? "a buffer" : "null"; }

  std::shared_ptr<NcclGroup> group_;
  const int rank_;
};

std::unique_ptr<Comm> NcclGroup::member(int rank) {
  OROCHI_CHECK(rank >= 0 && rank < size(), "rank ", rank, " outside comm group '", options_.name, "' of ", size());
  OROCHI_CHECK(!members_[rank]->handed_out.exchange(true), "rank ", rank, " of comm group '", options_.name,
               "' was already handed out");
  return std::make_unique<NcclMember>(shared_from_this(), rank);
}

}  // namespace orochi::dist
