// The pause between two polls of a condition another thread or the GPU will change: yields first
// (an NCCL enqueue finishes in tens of microseconds), then sleeps briefly so a long wait does not
// burn a core the other GPU's worker thread needs.
#pragma once

#include <chrono>
#include <thread>

namespace orochi::dist {

class PollPause {
 public:
  void wait() {
    if (++rounds_ < kYieldRounds)
      std::this_thread::yield();
    else
      std::this_thread::sleep_for(std::chrono::microseconds(50));
  }

 private:
  static constexpr int kYieldRounds = 64;
  int rounds_ = 0;
};

}  // namespace orochi::dist
