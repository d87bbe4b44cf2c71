// Streams the weights of N blocks, run in order once per pass (a denoising step), through K
// staging slots: while block i computes, the next streamed blocks are already being copied into
// free slots, and near the end of a pass the first streamed blocks of the next pass follow
// (wrap-around prefetch). Resident blocks are skipped. The scheduler knows nothing about devices:
// a CopyEngine moves the bytes (host_copy_engine.h on CPU; a CUDA engine with a copy stream).
//
// Protocol, per pass: begin_pass(), then for every block in order acquire(b) ... compute ...
// release(b). Misuse (out of order, a slot still held, a block released twice) and copy failures
// come back as a Status naming the block; nothing waits on something that cannot happen.
//
// Slots: with more streamed blocks than slots they rotate (each streamed block takes the next slot
// in turn), so while block i is held the next K-1 streamed blocks copy; K = 1 serializes copy and
// compute. When every streamed block has a slot of its own it stays there: copied in the
// first pass only.
#pragma once

#include <cstdint>
#include <deque>
#include <vector>

#include "core/status.h"

namespace orochi::weights {

// Moves one block's weights from wherever they live (pinned host RAM, a peer GPU) into a staging
// slot. The streamer calls it from one thread.
class CopyEngine {
 public:
  virtual ~CopyEngine() = default;
  // Enqueues the copy of `block` into `slot` and may return before the bytes land. Only called
  // for a slot no compute reads any more (never used, or released and not acquired since).
  virtual Status start_copy(int block, int slot) = 0;
  // After it returns, work the caller issues sees the slot's last copy: the CPU blocks until the
  // bytes landed; a GPU engine makes the compute stream wait on the copy's event. A copy that
  // failed reports its error here.
  virtual Status wait_copy(int slot) = 0;
  // Compute issued so far is the last to read `slot`; the next copy into it must not overtake that
  // work (GPU: record an event on the compute stream for the copy stream to wait on).
  virtual Status release_slot(int slot) { (void)slot; return Status::ok(); }
  // Bytes one copy of `block` moves, for the statistics.
  virtual uint64_t block_bytes(int block) const = 0;
};

struct PassStreamStats {
  int64_t copies = 0;  // copies issued for this pass's blocks (some while the previous pass ran)
  uint64_t bytes = 0;
  int64_t reused = 0;  // streamed blocks found still in their slot from an earlier pass
};

struct StreamStats {
  std::vector<PassStreamStats> passes;  // per begin_pass(), in order
  int max_in_flight = 0;                // copies issued and not yet waited for, at most K
  double wait_seconds = 0;              // spent in wait_copy (on a GPU: enqueue time only)
  int64_t abandoned_passes = 0;         // passes restarted before they ended
  int64_t unused_copies = 0;            // prefetched for a next pass that finish() called off
  int64_t copies() const;
  uint64_t bytes() const;
};

class BlockStreamer {
 public:
  // `streamed[b]`: block b's weights come through a slot (else they are resident); `slots` >= 1.
  // The engine must outlive the streamer and hold at least `slots` slots.
  static Expected<BlockStreamer> create(std::vector<bool> streamed, int slots, CopyEngine& engine);

  // Starts a pass at block 0 and issues the first copies. `prefetch_next_pass`: near this pass's
  // end, start copying the next pass's first streamed blocks (false for the last step). Called
  // before the previous pass ended (an error, an exception), it abandons that pass first.
  Status begin_pass(bool prefetch_next_pass = true);
  // The slot holding `block` once its copy has landed (-1 for a resident block). Blocks are
  // acquired in order, each once per pass; a streamed block's slot is read until release().
  Expected<int> acquire(int block);
  // The compute is done reading `block`: its slot may take the next streamed block.
  Status release(int block);
  // Ends streaming: waits for every copy in flight and lets go of held slots, so the engine's
  // slots can be freed. A later begin_pass() starts afresh. Returns the first copy error.
  Status finish();

  int num_blocks() const { return static_cast<int>(streamed_.size()); }
  int slots() const { return static_cast<int>(slots_.size()); }
  int streamed_blocks() const { return static_cast<int>(order_.size()); }
  const StreamStats& stats() const { return stats_; }

 private:
  enum class SlotState { kFree, kLoading, kHeld };
  struct Slot {
    SlotState state = SlotState::kFree;
    int block = -1;       // the block it holds or is loading
    bool valid = false;   // its bytes are `block`'s (a copy landed and nothing overwrote it)
    bool waited = true;   // no copy into it is outstanding
  };
  struct Scheduled {
    int64_t pass;
    int block;
    int slot;
  };

  BlockStreamer(std::vector<bool> streamed, int slots, CopyEngine& engine);
  int slot_for(int order_index) const;
  PassStreamStats& pass_stats(int64_t pass);
  Status schedule();
  Status fail(Status status);
  Status drop_pass();  // releases held slots, waits for copies, forgets the schedule

  std::vector<bool> streamed_;
  std::vector<int> order_;          // streamed blocks in execution order
  CopyEngine* engine_;
  std::vector<Slot> slots_;
  std::deque<Scheduled> queue_;     // copies issued, in the order they will be acquired
  int64_t next_pass_ = 0;           // the next occurrence to schedule: order_[next_index_] of next_pass_
  int next_index_ = 0;
  int ring_ = 0;                    // next slot when the streamed blocks outnumber the slots
  int in_flight_ = 0;
  int64_t pass_ = -1;               // current pass, -1 before the first
  bool in_pass_ = false;
  bool prefetch_next_ = false;
  int cursor_ = 0;                  // the next block to acquire
  std::vector<int> held_slot_;      // per block: its slot while held, -1 resident, -2 not held
  Status failed_;                   // a copy failed: the pass cannot continue
  StreamStats stats_;
};

}  // namespace orochi::weights
