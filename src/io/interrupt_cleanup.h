// Temporary files are removed when the run is interrupted: every temporary output (TemporaryOutput,
// OutputPair, the MP4 program's scratch files) registers its path here, and the SIGINT/SIGTERM
// handler that install_interrupt_cleanup() sets unlinks the registered paths (async-signal-safe:
// fixed slots, atomics, unlink/rmdir, _exit) and exits 130 (SIGINT) or 143 (SIGTERM), the shell's
// 128 + signal. A Ctrl-C therefore never leaves a hidden `.out.mp4.partial-*` behind.
#pragma once

#include <string>

namespace orochi::io {

// Installs the handler for SIGINT and SIGTERM (idempotent); a signal the parent process set to be
// ignored stays ignored. The CLI calls it first thing.
void install_interrupt_cleanup();

// A registered path: unregisters itself on destruction (it does not delete the file; its owner
// does). Paths longer than the slot (4095 bytes) or beyond the slot count (64 at once) are not
// registered, and such a file would survive an interrupt: neither happens with the CLI's outputs.
class InterruptCleanup {
 public:
  enum class Kind { kFile, kFolder };  // folders are removed with rmdir, after the files
  InterruptCleanup() = default;
  InterruptCleanup(const std::string& path, Kind kind = Kind::kFile);
  ~InterruptCleanup();
  InterruptCleanup(InterruptCleanup&& other) noexcept;
  InterruptCleanup& operator=(InterruptCleanup&& other) noexcept;
  InterruptCleanup(const InterruptCleanup&) = delete;
  InterruptCleanup& operator=(const InterruptCleanup&) = delete;

  bool registered() const { return slot_ >= 0; }

 private:
  int slot_ = -1;
};

// How many paths are registered now (for tests).
int registered_temporary_paths();

}  // namespace orochi::io
