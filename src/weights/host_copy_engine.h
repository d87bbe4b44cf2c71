// The CPU CopyEngine: copies blocks' bytes from a host tier into K staging slot buffers on one
// worker thread, so a CPU run streams with real concurrency (the next block's copy runs while the
// current block computes) and tests exercise the same waits a GPU copy stream needs.
#pragma once

#include <condition_variable>
#include <cstddef>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <span>
#include <thread>
#include <vector>

#include "core/status.h"
#include "core/tensor.h"
#include "weights/block_streamer.h"

namespace orochi::weights {

struct HostCopyOptions {
  // Runs on the worker before each copy; an error fails that copy (tests: delays and faults).
  std::function<Status(int block)> before_copy;
};

class HostCopyEngine final : public CopyEngine {
 public:
  // `tier[b]`: block b's bytes in host RAM, empty for a block not in this tier. Borrowed: the
  // bytes must outlive the engine. Each of the `slots` slots is as large as the largest block
  // (0 bytes when every block is resident).
  static Expected<std::unique_ptr<HostCopyEngine>> create(std::vector<std::span<const std::byte>> tier, int slots,
                                                          HostCopyOptions options = {});
  ~HostCopyEngine() override;  // finishes the queued copies, then stops the worker
  HostCopyEngine(const HostCopyEngine&) = delete;
  HostCopyEngine& operator=(const HostCopyEngine&) = delete;

  Status start_copy(int block, int slot) override;
  Status wait_copy(int slot) override;  // blocks until the slot's copies landed
  uint64_t block_bytes(int block) const override;

  int slots() const { return static_cast<int>(slots_.size()); }
  // The slot's 64-byte aligned bytes, for zero-copy views: valid from acquire to release.
  const std::shared_ptr<Buffer>& slot_buffer(int slot) const { return slots_.at(slot); }

 private:
  struct Job {
    int block;
    int slot;
  };
  HostCopyEngine(std::vector<std::span<const std::byte>> tier, int slots, size_t slot_bytes, HostCopyOptions options);
  void run_worker();

  std::vector<std::span<const std::byte>> tier_;
  std::vector<std::shared_ptr<Buffer>> slots_;
  HostCopyOptions options_;
  std::mutex mutex_;
  std::condition_variable work_;   // a job was queued, or stop
  std::condition_variable landed_; // a copy finished
  std::deque<Job> jobs_;
  std::vector<uint64_t> issued_, done_;  // per slot: copies queued, copies finished
  std::vector<Status> error_;            // per slot: first failure since its last wait
  bool stop_ = false;
  std::thread worker_;                   // last: starts once everything above exists
};

}  // namespace orochi::weights
