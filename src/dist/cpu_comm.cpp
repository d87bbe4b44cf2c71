#include "dist/cpu_comm.h"

#include <algorithm>
#include <chrono>
#include <cstring>
#include <functional>
#include <utility>

#include "core/check.h"
#include "dist/deadline_message.h"

namespace orochi::dist {
namespace {

using Clock = std::chrono::steady_clock;

}  // namespace

namespace detail {

// One rank's endpoint. Stages its contribution, meets its peers in the group, then reads theirs.
class CpuCommMember final : public Comm {
 public:
  CpuCommMember(std::shared_ptr<CpuCommGroup> group, int rank) : group_(std::move(group)), rank_(rank) {}

  int rank() const override { return rank_; }
  int size() const override { return group_->size(); }
  const std::string& name() const override { return group_->options().name; }
  void abort(const std::string& reason) override { group_->abort(reason); }

  Status all_reduce_sum(void* data, int64_t count, DType dtype) override {
    Arrival a = start("all_reduce", dtype, count);
    if (count < 0 || (count > 0 && !data))
      a.bad_arguments = "count " + std::to_string(count) + " at " + pointer(data);
    else if (!summable(dtype))
      a.bad_arguments = std::string("cannot sum ") + dtype_name(dtype);
    else
      a.chunks.push_back(stage_bytes(data, count * static_cast<int64_t>(dtype_size(dtype))));
    return exchange(std::move(a), [&](const Exchange& e) {
      sum_in_rank_order(e, dtype, count, data);
      return Status::ok();
    });
  }

  Status all_gather(const void* send, void* recv, int64_t count, DType dtype) override {
    const int64_t bytes = count * static_cast<int64_t>(dtype_size(dtype));
    Arrival a = start("all_gather", dtype, count);
    if (count < 0 || (count > 0 && (!send || !recv)))
      a.bad_arguments = "count " + std::to_string(count) + ", send " + pointer(send) + ", recv " + pointer(recv);
    else
      a.chunks.push_back(stage_bytes(send, bytes));
    return exchange(std::move(a), [&](const Exchange& e) {
      for (int r = 0; r < size(); ++r)
        if (bytes > 0) std::memcpy(static_cast<std::byte*>(recv) + r * bytes, e.ranks[r].chunks[0].data(), bytes);
      return Status::ok();
    });
  }

  Status all_to_all(const void* send, const std::vector<int64_t>& send_counts, const std::vector<int64_t>& send_offsets,
                    void* recv, const std::vector<int64_t>& recv_counts, const std::vector<int64_t>& recv_offsets,
                    DType dtype) override {
    const int64_t es = static_cast<int64_t>(dtype_size(dtype));
    Arrival a = start("all_to_all", dtype, 0);
    a.bad_arguments =
        check_all_to_all_arguments(size(), send, send_counts, send_offsets, recv, recv_counts, recv_offsets);
    if (a.bad_arguments.empty()) {
      a.send_counts = send_counts;
      a.recv_counts = recv_counts;
      for (int j = 0; j < size(); ++j)
        a.chunks.push_back(
            stage_bytes(static_cast<const std::byte*>(send) + send_offsets[j] * es, send_counts[j] * es));
    }
    return exchange(std::move(a), [&](const Exchange& e) {
      for (int i = 0; i < size(); ++i)
        if (recv_counts[i] > 0)
          std::memcpy(static_cast<std::byte*>(recv) + recv_offsets[i] * es, e.ranks[i].chunks[rank_].data(),
                      recv_counts[i] * es);
      return Status::ok();
    });
  }

  Expected<int64_t> all_reduce_min(int64_t value) override {
    Arrival a = start("all_reduce_min", DType::kI64, 1);
    a.chunks.push_back(stage_bytes(&value, sizeof value));
    int64_t result = value;
    OROCHI_RETURN_IF_ERROR(exchange(std::move(a), [&](const Exchange& e) {
      for (const Arrival& peer : e.ranks) {
        int64_t v;
        std::memcpy(&v, peer.chunks[0].data(), sizeof v);
        result = std::min(result, v);
      }
      return Status::ok();
    }));
    return result;
  }

  Status synchronize() override { return killed_.is_ok() ? group_->health() : killed_; }

 private:
  static std::string pointer(const void* p) { return p ? "a buffer" : "null"; }

  Arrival start(const char* op, DType dtype, int64_t count) const {
    Arrival a;
    a.op = op;
    a.dtype = dtype;
    a.count = count;
    return a;
  }

  // The common path of every collective: count the call, apply injected faults, meet the peers,
  // check that all ranks agree, then let `finish` read the peers' staged data.
  Status exchange(Arrival mine, const std::function<Status(const Exchange&)>& finish) {
    const int64_t call = calls_++;
    if (!killed_.is_ok()) return killed_;
    const FaultInjection& fault = group_->options().fault;
    if (fault.rank == rank_ && fault.at_call == call) {
      if (fault.kind == FaultInjection::Kind::kKill) {
        killed_ = Status(ErrorCode::kInternal, "rank " + std::to_string(rank_) + " of comm group '" + name() +
                                                   "' was killed by fault injection at " + mine.op + " call #" +
                                                   std::to_string(call));
        return killed_;
      }
      if (fault.kind == FaultInjection::Kind::kStall) return group_->stall(call, mine.op);
    }
    OROCHI_ASSIGN_OR_RETURN(const Exchange* e, group_->arrive(rank_, call, std::move(mine)));
    Status status = check_agreement(*e, name());
    if (status.is_ok()) status = finish(*e);
    group_->depart(call);
    return status;
  }

  std::shared_ptr<CpuCommGroup> group_;
  const int rank_;
  int64_t calls_ = 0;  // this rank's operations on the group so far
  Status killed_;      // set once fault injection killed this rank
};

}  // namespace detail

std::shared_ptr<CpuCommGroup> CpuCommGroup::create(int size, CommOptions options) {
  OROCHI_CHECK(size >= 1, "a comm group needs at least one rank, got ", size);
  OROCHI_CHECK(options.deadline.count() > 0, "comm deadline must be positive");
  return std::shared_ptr<CpuCommGroup>(new CpuCommGroup(size, std::move(options)));
}

CpuCommGroup::CpuCommGroup(int size, CommOptions options)
    : size_(size), options_(std::move(options)), handed_out_(size, false) {}

std::unique_ptr<Comm> CpuCommGroup::member(int rank) {
  std::lock_guard lock(mu_);
  OROCHI_CHECK(rank >= 0 && rank < size_, "rank ", rank, " outside comm group '", options_.name, "' of ", size_);
  OROCHI_CHECK(!handed_out_[rank], "rank ", rank, " of comm group '", options_.name, "' was already handed out");
  handed_out_[rank] = true;
  // Members keep the group alive; the caller's handle may go first.
  return std::make_unique<detail::CpuCommMember>(shared_from_this(), rank);
}

void CpuCommGroup::abort(std::string reason) {
  std::lock_guard lock(mu_);
  abort_locked(deadline_exceeded("comm group '" + options_.name + "' was aborted: " + reason));
}

Status CpuCommGroup::health() const {
  std::lock_guard lock(mu_);
  return aborted_ ? *aborted_ : Status::ok();
}

Expected<const Exchange*> CpuCommGroup::arrive(int rank, int64_t call, Arrival mine) {
  std::unique_lock lock(mu_);
  if (aborted_) return *aborted_;
  Exchange& e = exchanges_[call];  // std::map: the reference survives other calls' inserts
  if (e.ranks.empty()) {
    e.ranks.resize(size_);
    e.op = mine.op;
  }
  mine.arrived = true;
  e.ranks[rank] = std::move(mine);
  ++e.arrived;
  cv_.notify_all();
  const auto until = Clock::now() + options_.deadline;
  while (e.arrived < size_ && !aborted_)
    if (cv_.wait_until(lock, until) == std::cv_status::timeout && e.arrived < size_ && !aborted_)
      expire_locked(e, call);
  if (aborted_) return *aborted_;
  return &e;
}

void CpuCommGroup::depart(int64_t call) {
  std::lock_guard lock(mu_);
  auto it = exchanges_.find(call);
  if (it != exchanges_.end() && ++it->second.departed == size_) exchanges_.erase(it);
}

Status CpuCommGroup::stall(int64_t call, const std::string& op) {
  std::unique_lock lock(mu_);
  Exchange& e = exchanges_[call];
  if (e.ranks.empty()) {
    e.ranks.resize(size_);
    e.op = op;
  }
  // Peers' deadlines end the stall; the stalled rank's own deadline is the fallback for a group
  // whose peers never come (a group of one).
  const auto until = Clock::now() + options_.deadline;
  while (!aborted_)
    if (cv_.wait_until(lock, until) == std::cv_status::timeout && !aborted_) expire_locked(e, call);
  return *aborted_;
}

void CpuCommGroup::expire_locked(const Exchange& e, int64_t call) {
  std::vector<int> missing, present;
  for (int r = 0; r < size_; ++r) (e.ranks[r].arrived ? present : missing).push_back(r);
  abort_locked(deadline_exceeded(deadline_head(options_, size_, e.op, call) + missing_ranks(missing, present) +
                                  ". A rank is stalled, crashed or took another code path; " + kDeadlineAdvice));
}

void CpuCommGroup::abort_locked(Status status) {
  if (aborted_) return;
  aborted_ = std::move(status);
  cv_.notify_all();
}

}  // namespace orochi::dist
