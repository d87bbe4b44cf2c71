#include "io/interrupt_cleanup.h"

#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <cstring>
#include <mutex>

namespace orochi::io {
namespace {

constexpr int kSlots = 64;
constexpr size_t kPathBytes = 4096;

// A slot is claimed (kWriting) under the mutex, filled, then published (kFile / kFolder) with a
// release store; the handler reads only published slots. The handler never takes the mutex.
enum SlotState : int { kFree = 0, kWriting = 1, kFile = 2, kFolder = 3 };
static_assert(std::atomic<int>::is_always_lock_free, "the signal handler needs lock-free atomics");

struct Slot {
  std::atomic<int> state{kFree};
  char path[kPathBytes];
};
Slot slots[kSlots];
std::mutex claim_mutex;

void remove_registered(int sig) {
  // Files first, then folders (a scratch folder holds registered files).
  for (const int wanted : {kFile, kFolder})
    for (Slot& s : slots)
      if (s.state.load(std::memory_order_acquire) == wanted) {
        if (wanted == kFile) ::unlink(s.path);
        else ::rmdir(s.path);
      }
  ::_exit(128 + sig);
}

}  // namespace

void install_interrupt_cleanup() {
  struct sigaction action;
  std::memset(&action, 0, sizeof action);
  action.sa_handler = remove_registered;
  sigfillset(&action.sa_mask);  // one handler at a time: a second signal waits
  for (const int sig : {SIGINT, SIGTERM}) {
    // A signal the parent set to be ignored (a shell's background job) stays ignored.
    struct sigaction current;
    if (::sigaction(sig, nullptr, &current) == 0 && current.sa_handler == SIG_IGN) continue;
    ::sigaction(sig, &action, nullptr);
  }
}

InterruptCleanup::InterruptCleanup(const std::string& path, Kind kind) {
  if (path.empty() || path.size() >= kPathBytes) return;
  std::lock_guard<std::mutex> lock(claim_mutex);
  for (int i = 0; i < kSlots; ++i) {
    int expected = kFree;
    if (slots[i].state.compare_exchange_strong(expected, kWriting, std::memory_order_acquire)) {
      std::memcpy(slots[i].path, path.c_str(), path.size() + 1);
      slots[i].state.store(kind == Kind::kFile ? kFile : kFolder, std::memory_order_release);
      slot_ = i;
      return;
    }
  }
}

InterruptCleanup::~InterruptCleanup() {
  if (slot_ >= 0) slots[slot_].state.store(kFree, std::memory_order_release);
}

InterruptCleanup::InterruptCleanup(InterruptCleanup&& other) noexcept : slot_(other.slot_) { other.slot_ = -1; }

InterruptCleanup& InterruptCleanup::operator=(InterruptCleanup&& other) noexcept {
  if (this != &other) {
    if (slot_ >= 0) slots[slot_].state.store(kFree, std::memory_order_release);
    slot_ = other.slot_;
    other.slot_ = -1;
  }
  return *this;
}

int registered_temporary_paths() {
  int n = 0;
  for (const Slot& s : slots) n += s.state.load(std::memory_order_acquire) >= kFile;
  return n;
}

}  // namespace orochi::io
