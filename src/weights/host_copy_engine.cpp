#include "weights/host_copy_engine.h"

#include <algorithm>
#include <cstring>
#include <string>
#include <system_error>

namespace orochi::weights {

Expected<std::unique_ptr<HostCopyEngine>> HostCopyEngine::create(std::vector<std::span<const std::byte>> tier,
                                                                 int slots, HostCopyOptions options) {
  if (slots < 1) return invalid_argument("the host copy engine needs at least one staging slot, got " + std::to_string(slots));
  size_t largest = 0;
  for (const auto& block : tier) largest = std::max(largest, block.size());
  try {
    return std::unique_ptr<HostCopyEngine>(new HostCopyEngine(std::move(tier), slots, largest, std::move(options)));
  } catch (const std::system_error& e) {
    return Status(ErrorCode::kInternal, std::string("cannot start the weight copy thread: ") + e.what());
  }
}

HostCopyEngine::HostCopyEngine(std::vector<std::span<const std::byte>> tier, int slots, size_t slot_bytes,
                               HostCopyOptions options)
    : tier_(std::move(tier)), options_(std::move(options)), issued_(slots, 0), done_(slots, 0), error_(slots) {
  for (int s = 0; s < slots; ++s) slots_.push_back(Buffer::allocate(slot_bytes));
  worker_ = std::thread([this] { run_worker(); });
}

HostCopyEngine::~HostCopyEngine() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stop_ = true;
  }
  work_.notify_one();
  worker_.join();
}

Status HostCopyEngine::start_copy(int block, int slot) {
  if (block < 0 || block >= static_cast<int>(tier_.size()) || tier_[block].empty())
    return invalid_argument("block " + std::to_string(block) + " is not in the host tier");
  if (slot < 0 || slot >= slots())
    return invalid_argument("staging slot " + std::to_string(slot) + " does not exist (" + std::to_string(slots()) +
                            " slots)");
  {
    std::lock_guard<std::mutex> lock(mutex_);
    jobs_.push_back({block, slot});
    ++issued_[slot];
  }
  work_.notify_one();
  return Status::ok();
}

Status HostCopyEngine::wait_copy(int slot) {
  if (slot < 0 || slot >= slots())
    return invalid_argument("staging slot " + std::to_string(slot) + " does not exist (" + std::to_string(slots()) +
                            " slots)");
  std::unique_lock<std::mutex> lock(mutex_);
  landed_.wait(lock, [&] { return done_[slot] == issued_[slot]; });
  Status result = error_[slot];
  error_[slot] = Status::ok();
  return result;
}

uint64_t HostCopyEngine::block_bytes(int block) const {
  return block >= 0 && block < static_cast<int>(tier_.size()) ? tier_[block].size() : 0;
}

void HostCopyEngine::run_worker() {
  for (;;) {
    Job job{};
    {
      std::unique_lock<std::mutex> lock(mutex_);
      work_.wait(lock, [&] { return stop_ || !jobs_.empty(); });
      if (jobs_.empty()) return;  // stop_, and every queued copy done
      job = jobs_.front();
      jobs_.pop_front();
    }
    // The slot is free (the streamer released it), so no one reads it while it is written.
    Status status = options_.before_copy ? options_.before_copy(job.block) : Status::ok();
    if (status.is_ok()) {
      const std::span<const std::byte> from = tier_[job.block];
      std::memcpy(slots_[job.slot]->data(), from.data(), from.size());
    }
    {
      std::lock_guard<std::mutex> lock(mutex_);
      ++done_[job.slot];
      if (!status.is_ok() && error_[job.slot].is_ok()) error_[job.slot] = status;
    }
    landed_.notify_all();
  }
}

}  // namespace orochi::weights
