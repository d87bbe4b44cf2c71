#include "weights/block_streamer.h"

#include <algorithm>
#include <chrono>
#include <string>

#include "core/check.h"

namespace orochi::weights {
namespace {

constexpr int kNotHeld = -2;  // held_slot_: the block is not held
constexpr int kResident = -1; // held_slot_ and acquire(): a resident block

std::string block_name(int block) { return "block " + std::to_string(block); }

}  // namespace

int64_t StreamStats::copies() const {
  int64_t n = 0;
  for (const PassStreamStats& p : passes) n += p.copies;
  return n;
}

uint64_t StreamStats::bytes() const {
  uint64_t n = 0;
  for (const PassStreamStats& p : passes) n += p.bytes;
  return n;
}

Expected<BlockStreamer> BlockStreamer::create(std::vector<bool> streamed, int slots, CopyEngine& engine) {
  if (slots < 1)
    return invalid_argument("the weight streamer needs at least one staging slot, got " + std::to_string(slots));
  return BlockStreamer(std::move(streamed), slots, engine);
}

BlockStreamer::BlockStreamer(std::vector<bool> streamed, int slots, CopyEngine& engine)
    : streamed_(std::move(streamed)), engine_(&engine), slots_(slots), held_slot_(streamed_.size(), kNotHeld) {
  for (int b = 0; b < num_blocks(); ++b)
    if (streamed_[b]) order_.push_back(b);
}

// When every streamed block has a slot of its own it keeps it across passes (copied once);
// otherwise the slots rotate, the oldest released one taking the next block.
int BlockStreamer::slot_for(int order_index) const {
  return order_.size() <= slots_.size() ? order_index : ring_;
}

PassStreamStats& BlockStreamer::pass_stats(int64_t pass) {
  while (static_cast<int64_t>(stats_.passes.size()) <= pass) stats_.passes.emplace_back();
  return stats_.passes[pass];
}

Status BlockStreamer::fail(Status status) {
  failed_ = Status(status.code(), status.message() + " (the pass cannot go on; begin_pass() restarts it)");
  return failed_;
}

// Issues copies, in execution order, into every free slot the next occurrences map to: the rest
// of this pass and, with prefetch_next_, the start of the next one.
Status BlockStreamer::schedule() {
  if (!failed_.is_ok() || order_.empty() || !in_pass_) return Status::ok();
  const int64_t last_pass = prefetch_next_ ? pass_ + 1 : pass_;
  while (next_pass_ <= last_pass) {
    const int block = order_[next_index_];
    const int s = slot_for(next_index_);
    Slot& slot = slots_[s];
    if (slot.state != SlotState::kFree) break;
    PassStreamStats& stats = pass_stats(next_pass_);
    if (slot.valid && slot.block == block) {
      ++stats.reused;
    } else {
      slot.valid = false;
      slot.block = block;
      const Status started = engine_->start_copy(block, s);
      if (!started.is_ok())
        return fail(started.with_context("copying " + block_name(block) + " into staging slot " + std::to_string(s)));
      slot.waited = false;
      ++stats.copies;
      stats.bytes += engine_->block_bytes(block);
      stats_.max_in_flight = std::max(stats_.max_in_flight, ++in_flight_);
    }
    slot.state = SlotState::kLoading;
    queue_.push_back({next_pass_, block, s});
    if (order_.size() > slots_.size()) ring_ = (ring_ + 1) % slots();
    if (++next_index_ == streamed_blocks()) {
      next_index_ = 0;
      ++next_pass_;
    }
  }
  return Status::ok();
}

Status BlockStreamer::drop_pass() {
  Status first;
  for (int b = 0; b < num_blocks(); ++b) {
    const int s = held_slot_[b];
    held_slot_[b] = kNotHeld;
    if (s < 0) continue;
    slots_[s].state = SlotState::kFree;
    const Status released = engine_->release_slot(s);
    if (first.is_ok() && !released.is_ok()) first = released.with_context("releasing staging slot " + std::to_string(s));
  }
  for (const Scheduled& e : queue_) {
    Slot& slot = slots_[e.slot];
    if (!slot.waited) {
      const Status landed = engine_->wait_copy(e.slot);
      slot.waited = true;
      slot.valid = landed.is_ok();
      --in_flight_;
      if (first.is_ok() && !landed.is_ok())
        first = landed.with_context("streaming " + block_name(e.block) + " into staging slot " + std::to_string(e.slot));
    }
    slot.state = SlotState::kFree;
  }
  queue_.clear();
  // Copies for a pass that never began count apart, not as a pass.
  if (static_cast<int64_t>(stats_.passes.size()) > pass_ + 1) {
    stats_.unused_copies += stats_.passes.back().copies;
    stats_.passes.pop_back();
  }
  next_pass_ = pass_ + 1;
  next_index_ = 0;
  in_pass_ = false;
  return first;
}

Status BlockStreamer::begin_pass(bool prefetch_next_pass) {
  if (in_pass_) {
    const bool ended = cursor_ == num_blocks() && failed_.is_ok() &&
                       std::all_of(held_slot_.begin(), held_slot_.end(), [](int s) { return s == kNotHeld; });
    if (!ended) {
      (void)drop_pass();  // a copy error of an abandoned pass changes nothing: its slots are marked invalid
      ++stats_.abandoned_passes;
    }
  }
  ++pass_;
  pass_stats(pass_);
  in_pass_ = true;
  prefetch_next_ = prefetch_next_pass;
  cursor_ = 0;
  failed_ = Status::ok();
  return schedule();
}

Expected<int> BlockStreamer::acquire(int block) {
  if (!in_pass_) return invalid_argument("acquire(" + block_name(block) + "): no pass is running; call begin_pass() first");
  if (!failed_.is_ok()) return failed_;
  if (block != cursor_) {
    if (cursor_ == num_blocks())
      return invalid_argument(block_name(block) + " acquired after the last of the pass's " +
                              std::to_string(num_blocks()) + " blocks; call begin_pass() to start the next pass");
    return invalid_argument(block_name(block) + " acquired out of order: the pass is at block " +
                            std::to_string(cursor_) + " (blocks 0.." + std::to_string(num_blocks() - 1) +
                            " run in order, each once per pass)");
  }
  if (!streamed_[block]) {
    held_slot_[block] = kResident;
    ++cursor_;
    return kResident;
  }
  if (queue_.empty()) {  // its copy could not start: the slot it maps to is still held
    const int s = slot_for(next_index_);
    OROCHI_CHECK(order_[next_index_] == block && slots_[s].state == SlotState::kHeld, "streamer schedule out of step at ",
                 block_name(block));
    return invalid_argument(block_name(block) + " needs staging slot " + std::to_string(s) + ", which " +
                            block_name(slots_[s].block) + " still holds: release " + block_name(slots_[s].block) +
                            " first (or stream with more slots)");
  }
  const Scheduled next = queue_.front();
  OROCHI_CHECK(next.pass == pass_ && next.block == block, "streamer queue has block ", next.block, " of pass ",
               next.pass, " where block ", block, " of pass ", pass_, " belongs");
  queue_.pop_front();
  Slot& slot = slots_[next.slot];
  if (!slot.waited) {
    const auto start = std::chrono::steady_clock::now();
    const Status landed = engine_->wait_copy(next.slot);
    stats_.wait_seconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    slot.waited = true;
    --in_flight_;
    if (!landed.is_ok()) {
      slot.state = SlotState::kFree;
      slot.valid = false;
      return fail(landed.with_context("streaming " + block_name(block) + " into staging slot " + std::to_string(next.slot)));
    }
  }
  slot.valid = true;
  slot.state = SlotState::kHeld;
  held_slot_[block] = next.slot;
  ++cursor_;
  return next.slot;
}

Status BlockStreamer::release(int block) {
  if (!in_pass_ || block < 0 || block >= num_blocks() || held_slot_[block] == kNotHeld)
    return invalid_argument("release(" + block_name(block) + "): the block is not held; release each acquired block once");
  const int s = held_slot_[block];
  held_slot_[block] = kNotHeld;
  if (s == kResident) return Status::ok();
  slots_[s].state = SlotState::kFree;
  const Status released = engine_->release_slot(s);
  if (!released.is_ok()) {
    slots_[s].valid = false;
    return fail(released.with_context("releasing staging slot " + std::to_string(s) + " after " + block_name(block)));
  }
  return schedule();
}

Status BlockStreamer::finish() {
  if (!in_pass_) return Status::ok();
  return drop_pass();
}

}  // namespace orochi::weights
