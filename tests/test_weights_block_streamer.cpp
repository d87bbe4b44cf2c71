// The weight streamer's schedule against a fake engine that logs every call and checks what a
// device would need (no copy into a slot compute still reads, no copy overwritten before it was
// waited for, an acquired slot holds its block): prefetch depth K, slot rotation, wrap-around into
// the next pass, resident blocks skipped, slots kept when every streamed block fits, abandoned
// passes, every error path. Then the host copy engine moving real bytes on its worker thread.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstring>
#include <random>
#include <string>
#include <thread>

#include "weights/block_streamer.h"
#include "weights/host_copy_engine.h"

namespace orochi::weights {
namespace {

class FakeEngine : public CopyEngine {
 public:
  explicit FakeEngine(int slots) : pending_(slots, -1), content_(slots, -1), reading_(slots, false) {}

  Status start_copy(int block, int slot) override {
    log.push_back("copy " + std::to_string(block) + ">" + std::to_string(slot));
    EXPECT_FALSE(reading_[slot]) << "copy of block " << block << " into slot " << slot << " while compute reads it";
    EXPECT_EQ(pending_[slot], -1) << "copy of block " << block << " overwrites slot " << slot << "'s unwaited copy";
    if (block == fail_start) return io_error("copy engine refused");
    pending_[slot] = block;
    content_[slot] = -1;  // being overwritten
    return Status::ok();
  }
  Status wait_copy(int slot) override {
    log.push_back("wait " + std::to_string(slot));
    EXPECT_NE(pending_[slot], -1) << "wait on slot " << slot << " with no copy outstanding";
    const int block = pending_[slot];
    pending_[slot] = -1;
    if (block == fail_wait) return io_error("DMA fault");
    content_[slot] = block;
    return Status::ok();
  }
  Status release_slot(int slot) override {
    log.push_back("release " + std::to_string(slot));
    return Status::ok();
  }
  uint64_t block_bytes(int block) const override { return 100 + block; }

  // What compute sees: the slot streamer.acquire returned must hold the block.
  void begin_reading(int block, int slot) {
    ASSERT_GE(slot, 0);
    EXPECT_EQ(content_[slot], block) << "slot " << slot << " handed out for block " << block;
    reading_[slot] = true;
  }
  void end_reading(int slot) { reading_[slot] = false; }
  int outstanding() const {
    int n = 0;
    for (int p : pending_) n += p != -1;
    return n;
  }

  std::vector<std::string> log;
  int fail_start = -1, fail_wait = -1;

 private:
  std::vector<int> pending_, content_;
  std::vector<bool> reading_;
};

std::vector<bool> all_streamed(int n) { return std::vector<bool>(n, true); }

BlockStreamer make(std::vector<bool> streamed, int slots, CopyEngine& engine) {
  Expected<BlockStreamer> s = BlockStreamer::create(std::move(streamed), slots, engine);
  EXPECT_TRUE(s.has_value()) << s.status().to_string();
  return std::move(s).value();
}

// Runs blocks [from, to) of the current pass, logging acquire/release among the engine's calls.
void run_blocks(BlockStreamer& s, FakeEngine& e, int from, int to) {
  for (int b = from; b < to; ++b) {
    e.log.push_back("acquire " + std::to_string(b));
    Expected<int> slot = s.acquire(b);
    ASSERT_TRUE(slot.has_value()) << slot.status().to_string();
    if (*slot >= 0) e.begin_reading(b, *slot);
    e.log.push_back("release " + std::to_string(b) + " (slot " + std::to_string(*slot) + ")");
    if (*slot >= 0) e.end_reading(*slot);
    ASSERT_TRUE(s.release(b).is_ok());
  }
}

void run_pass(BlockStreamer& s, FakeEngine& e, bool prefetch_next) {
  e.log.push_back("begin");
  ASSERT_TRUE(s.begin_pass(prefetch_next).is_ok());
  run_blocks(s, e, 0, s.num_blocks());
}

using Log = std::vector<std::string>;

TEST(BlockStreamer, CopiesKAheadAndRotatesTheSlots) {
  FakeEngine e(2);
  BlockStreamer s = make(all_streamed(4), 2, e);
  run_pass(s, e, false);
  EXPECT_EQ(e.log, (Log{"begin", "copy 0>0", "copy 1>1",                                  //
                        "acquire 0", "wait 0", "release 0 (slot 0)", "release 0", "copy 2>0",  //
                        "acquire 1", "wait 1", "release 1 (slot 1)", "release 1", "copy 3>1",  //
                        "acquire 2", "wait 0", "release 2 (slot 0)", "release 0",              //
                        "acquire 3", "wait 1", "release 3 (slot 1)", "release 1"}));
  ASSERT_EQ(s.stats().passes.size(), 1u);
  EXPECT_EQ(s.stats().passes[0].copies, 4);
  EXPECT_EQ(s.stats().passes[0].bytes, 100u + 101u + 102u + 103u);
  EXPECT_EQ(s.stats().max_in_flight, 2);
  EXPECT_EQ(e.outstanding(), 0);
}

TEST(BlockStreamer, KeepsKCopiesInFlight) {
  for (int k : {1, 3, 5}) {
    FakeEngine e(k);
    BlockStreamer s = make(all_streamed(6), k, e);
    ASSERT_TRUE(s.begin_pass(false).is_ok());
    EXPECT_EQ(e.outstanding(), k) << "k " << k;  // the first K blocks start with the pass
    ASSERT_TRUE(s.acquire(0).has_value());
    EXPECT_EQ(e.outstanding(), k - 1);
    ASSERT_TRUE(s.release(0).is_ok());
    EXPECT_EQ(e.outstanding(), std::min(k, 5));  // block 0's slot takes block K
    run_blocks(s, e, 1, 6);
    EXPECT_EQ(s.stats().max_in_flight, k);
    EXPECT_EQ(s.stats().copies(), 6);
  }
}

TEST(BlockStreamer, PrefetchesTheNextPassWhileThisOneEnds) {
  FakeEngine e(2);
  BlockStreamer s = make(all_streamed(4), 2, e);
  run_pass(s, e, true);
  // Block 2's release frees slot 0 for the next pass's block 0, block 3's slot 1 for its block 1.
  const Log tail(e.log.end() - 10, e.log.end());
  EXPECT_EQ(tail, (Log{"acquire 2", "wait 0", "release 2 (slot 0)", "release 0", "copy 0>0",  //
                       "acquire 3", "wait 1", "release 3 (slot 1)", "release 1", "copy 1>1"}));
  e.log.clear();
  run_pass(s, e, false);  // the last pass: nothing is copied for a pass that will not come
  EXPECT_EQ(e.log, (Log{"begin", "acquire 0", "wait 0", "release 0 (slot 0)", "release 0", "copy 2>0",  //
                        "acquire 1", "wait 1", "release 1 (slot 1)", "release 1", "copy 3>1",           //
                        "acquire 2", "wait 0", "release 2 (slot 0)", "release 0",                       //
                        "acquire 3", "wait 1", "release 3 (slot 1)", "release 1"}));
  ASSERT_EQ(s.stats().passes.size(), 2u);
  EXPECT_EQ(s.stats().passes[0].copies, 4);
  EXPECT_EQ(s.stats().passes[1].copies, 4);  // two of them issued during pass 0
}

TEST(BlockStreamer, SkipsResidentBlocks) {
  FakeEngine e(1);
  BlockStreamer s = make({false, true, false, false, true, true}, 1, e);
  run_pass(s, e, false);
  EXPECT_EQ(e.log, (Log{"begin", "copy 1>0",  // block 1 copies while resident block 0 computes
                        "acquire 0", "release 0 (slot -1)",                                         //
                        "acquire 1", "wait 0", "release 1 (slot 0)", "release 0", "copy 4>0",       //
                        "acquire 2", "release 2 (slot -1)", "acquire 3", "release 3 (slot -1)",     //
                        "acquire 4", "wait 0", "release 4 (slot 0)", "release 0", "copy 5>0",       //
                        "acquire 5", "wait 0", "release 5 (slot 0)", "release 0"}));
  EXPECT_EQ(s.streamed_blocks(), 3);
  EXPECT_EQ(s.stats().copies(), 3);
}

TEST(BlockStreamer, StreamedBlocksThatAllFitKeepTheirSlots) {
  FakeEngine e(3);
  BlockStreamer s = make({true, false, true}, 3, e);
  for (int pass = 0; pass < 3; ++pass) run_pass(s, e, pass < 2);
  ASSERT_EQ(s.stats().passes.size(), 3u);
  EXPECT_EQ(s.stats().passes[0].copies, 2);
  EXPECT_EQ(s.stats().passes[1].copies, 0);
  EXPECT_EQ(s.stats().passes[1].reused, 2);
  EXPECT_EQ(s.stats().passes[2].copies, 0);
}

TEST(BlockStreamer, RandomSchedulesKeepEveryInvariant) {
  std::mt19937 rng(3);
  for (int trial = 0; trial < 300; ++trial) {
    const int n = 1 + static_cast<int>(rng() % 8), k = 1 + static_cast<int>(rng() % 4);
    std::vector<bool> streamed(n);
    for (int b = 0; b < n; ++b) streamed[b] = rng() % 3 != 0;
    FakeEngine e(k);
    BlockStreamer s = make(streamed, k, e);
    SCOPED_TRACE("trial " + std::to_string(trial) + ": " + std::to_string(n) + " blocks, " + std::to_string(k) + " slots");
    for (int pass = 0; pass < 4; ++pass) {
      ASSERT_TRUE(s.begin_pass(rng() % 4 != 0).is_ok());
      // Now and then a pass stops early (an error upstream) and the next one restarts.
      const int stop = rng() % 5 == 0 ? static_cast<int>(rng() % n) : n;
      bool kept = false;
      for (int b = 0; b < stop; ++b) {
        Expected<int> slot = s.acquire(b);
        ASSERT_TRUE(slot.has_value()) << slot.status().to_string();
        ASSERT_EQ(*slot >= 0, static_cast<bool>(streamed[b]));
        if (*slot >= 0) e.begin_reading(b, *slot);
        kept = b + 1 == stop && rng() % 4 == 0;  // an abandoned pass may keep its last block
        if (!kept) {
          if (*slot >= 0) e.end_reading(*slot);
          ASSERT_TRUE(s.release(b).is_ok());
        }
      }
      if (kept)
        for (int slot = 0; slot < k; ++slot) e.end_reading(slot);  // the next begin_pass lets go of it
    }
    ASSERT_TRUE(s.finish().is_ok());
    EXPECT_EQ(e.outstanding(), 0);
    EXPECT_LE(s.stats().max_in_flight, k);
  }
}

TEST(BlockStreamer, AbandonedPassIsDrainedAndRestarted) {
  FakeEngine e(2);
  BlockStreamer s = make(all_streamed(4), 2, e);
  ASSERT_TRUE(s.begin_pass(true).is_ok());
  ASSERT_TRUE(s.acquire(0).has_value());
  e.log.clear();
  ASSERT_TRUE(s.begin_pass(false).is_ok());  // block 0 is still held, block 1's copy in flight
  // Both slots still hold their blocks (0 was never overwritten, 1 landed): nothing to copy again.
  EXPECT_EQ(e.log, (Log{"release 0", "wait 1"}));
  EXPECT_EQ(s.stats().abandoned_passes, 1);
  e.log.clear();
  run_blocks(s, e, 0, 4);
  EXPECT_EQ(e.log, (Log{"acquire 0", "release 0 (slot 0)", "release 0", "copy 2>0",  //
                        "acquire 1", "release 1 (slot 1)", "release 1", "copy 3>1",  //
                        "acquire 2", "wait 0", "release 2 (slot 0)", "release 0",    //
                        "acquire 3", "wait 1", "release 3 (slot 1)", "release 1"}));
  EXPECT_EQ(s.stats().passes[1].reused, 2);
  EXPECT_EQ(e.outstanding(), 0);
}

TEST(BlockStreamer, FinishWaitsForPrefetchesOfAPassThatWillNotCome) {
  FakeEngine e(2);
  BlockStreamer s = make(all_streamed(3), 2, e);
  run_pass(s, e, true);
  EXPECT_EQ(e.outstanding(), 2);
  ASSERT_TRUE(s.finish().is_ok());
  EXPECT_EQ(e.outstanding(), 0);
  EXPECT_EQ(s.stats().passes.size(), 1u);
  EXPECT_EQ(s.stats().unused_copies, 2);
  EXPECT_TRUE(s.finish().is_ok());  // twice is fine
}

TEST(BlockStreamer, MisuseIsRefusedWithAReason) {
  FakeEngine e(1);
  const Status no_slots = BlockStreamer::create(all_streamed(2), 0, e).status();
  EXPECT_EQ(no_slots.code(), ErrorCode::kInvalidArgument);
  EXPECT_NE(no_slots.message().find("at least one staging slot, got 0"), std::string::npos) << no_slots.message();

  BlockStreamer s = make(all_streamed(3), 1, e);
  auto expect_refused = [](const Status& st, const std::string& part) {
    EXPECT_EQ(st.code(), ErrorCode::kInvalidArgument) << st.to_string();
    EXPECT_NE(st.message().find(part), std::string::npos) << "'" << part << "' missing from: " << st.message();
  };
  expect_refused(s.acquire(0).status(), "no pass is running; call begin_pass() first");
  ASSERT_TRUE(s.begin_pass(false).is_ok());
  expect_refused(s.acquire(1).status(), "block 1 acquired out of order: the pass is at block 0");
  expect_refused(s.acquire(-1).status(), "out of order");
  expect_refused(s.release(0), "release(block 0): the block is not held");
  ASSERT_EQ(*s.acquire(0), 0);  // the refusals changed nothing
  expect_refused(s.acquire(0).status(), "block 0 acquired out of order: the pass is at block 1");
  expect_refused(s.acquire(1).status(), "block 1 needs staging slot 0, which block 0 still holds: release block 0");
  ASSERT_TRUE(s.release(0).is_ok());
  expect_refused(s.release(0), "the block is not held");
  expect_refused(s.release(7), "release(block 7)");
  ASSERT_EQ(*s.acquire(1), 0);
  ASSERT_TRUE(s.release(1).is_ok());
  ASSERT_EQ(*s.acquire(2), 0);
  ASSERT_TRUE(s.release(2).is_ok());
  expect_refused(s.acquire(0).status(), "after the last of the pass's 3 blocks; call begin_pass()");
}

TEST(BlockStreamer, FailedCopiesNameTheBlockAndTheNextPassRecovers) {
  FakeEngine e(2);
  BlockStreamer s = make(all_streamed(4), 2, e);
  e.fail_start = 2;
  ASSERT_TRUE(s.begin_pass(false).is_ok());
  ASSERT_TRUE(s.acquire(0).has_value());
  const Status refused = s.release(0);  // frees slot 0 for block 2, whose copy cannot start
  EXPECT_EQ(refused.code(), ErrorCode::kIo);
  EXPECT_NE(refused.message().find("copying block 2 into staging slot 0: copy engine refused"), std::string::npos)
      << refused.message();
  EXPECT_EQ(s.acquire(1).status().code(), ErrorCode::kIo);  // the pass cannot finish: said at once
  e.fail_start = -1;
  e.fail_wait = 3;
  ASSERT_TRUE(s.begin_pass(false).is_ok());
  run_blocks(s, e, 0, 3);
  const Status lost = s.acquire(3).status();
  EXPECT_EQ(lost.code(), ErrorCode::kIo);
  EXPECT_NE(lost.message().find("streaming block 3 into staging slot 1: DMA fault"), std::string::npos) << lost.message();
  e.fail_wait = -1;
  e.log.clear();
  run_pass(s, e, false);
  EXPECT_EQ(s.stats().abandoned_passes, 2);
  EXPECT_EQ(e.outstanding(), 0);
}

// ---- the host copy engine: real bytes, copied on a worker thread ----

struct HostTier {
  std::vector<std::vector<std::byte>> blocks;
  std::vector<std::span<const std::byte>> spans() const { return {blocks.begin(), blocks.end()}; }
};

// Block b holds (b + 1) * 1000 + 7 bytes of a pattern of its own; resident blocks hold none.
HostTier make_tier(const std::vector<bool>& streamed) {
  HostTier t;
  for (size_t b = 0; b < streamed.size(); ++b) {
    t.blocks.emplace_back(streamed[b] ? (b + 1) * 1000 + 7 : 0);
    for (size_t i = 0; i < t.blocks[b].size(); ++i) t.blocks[b][i] = static_cast<std::byte>((i * 31 + b * 17) & 0xff);
  }
  return t;
}

TEST(HostCopyEngine, CopiesOnItsWorkerWhileTheCallerComputes) {
  const std::vector<bool> streamed = {true, false, true, true, true};
  const HostTier tier = make_tier(streamed);
  std::atomic<int> started{0};
  std::atomic<bool> on_caller_thread{false};
  const std::thread::id caller = std::this_thread::get_id();
  HostCopyOptions options;
  options.before_copy = [&](int) {
    if (std::this_thread::get_id() == caller) on_caller_thread = true;
    ++started;
    std::this_thread::sleep_for(std::chrono::milliseconds(2));  // slower than a memcpy: waits must be real
    return Status::ok();
  };
  Expected<std::unique_ptr<HostCopyEngine>> engine = HostCopyEngine::create(tier.spans(), 2, options);
  ASSERT_TRUE(engine.has_value()) << engine.status().to_string();
  EXPECT_EQ((*engine)->slot_buffer(0)->size(), 5007u);  // the largest block
  BlockStreamer s = make(streamed, 2, **engine);
  int acquired = 0;  // streamed blocks acquired so far
  for (int pass = 0; pass < 3; ++pass) {
    ASSERT_TRUE(s.begin_pass(pass < 2).is_ok());
    for (int b = 0; b < 5; ++b) {
      Expected<int> slot = s.acquire(b);
      ASSERT_TRUE(slot.has_value()) << slot.status().to_string();
      if (*slot >= 0) {
        ++acquired;
        const std::vector<std::byte>& want = tier.blocks[b];
        EXPECT_EQ(std::memcmp((*engine)->slot_buffer(*slot)->data(), want.data(), want.size()), 0)
            << "pass " << pass << " block " << b;
        // A later block's copy is queued, and the worker starts it while this block is held and
        // nobody waits for it.
        const int issued = static_cast<int>(s.stats().copies());
        if (acquired < 12) {
          EXPECT_GT(issued, acquired) << "pass " << pass << " block " << b;
        }
        const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
        while (started.load() < issued && std::chrono::steady_clock::now() < deadline)
          std::this_thread::sleep_for(std::chrono::milliseconds(1));
        EXPECT_GE(started.load(), issued) << "pass " << pass << " block " << b;
      }
      ASSERT_TRUE(s.release(b).is_ok());
    }
  }
  EXPECT_FALSE(on_caller_thread.load());
  ASSERT_TRUE(s.finish().is_ok());
  EXPECT_EQ(s.stats().copies(), 12);
  EXPECT_EQ(s.stats().bytes(), 3u * (1007 + 3007 + 4007 + 5007));
}

TEST(HostCopyEngine, AFailedCopyIsReportedForItsBlock) {
  const std::vector<bool> streamed = all_streamed(4);
  const HostTier tier = make_tier(streamed);
  HostCopyOptions options;
  options.before_copy = [](int block) { return block == 2 ? io_error("pinned page unreadable") : Status::ok(); };
  auto engine = HostCopyEngine::create(tier.spans(), 2, options);
  ASSERT_TRUE(engine.has_value());
  BlockStreamer s = make(streamed, 2, **engine);
  ASSERT_TRUE(s.begin_pass(false).is_ok());
  for (int b = 0; b < 2; ++b) {
    ASSERT_TRUE(s.acquire(b).has_value());
    ASSERT_TRUE(s.release(b).is_ok());
  }
  const Status failed = s.acquire(2).status();
  EXPECT_EQ(failed.code(), ErrorCode::kIo);
  EXPECT_NE(failed.message().find("streaming block 2 into staging slot 0: pinned page unreadable"), std::string::npos)
      << failed.message();
}

TEST(HostCopyEngine, RefusesBadSlotsAndBlocks) {
  const HostTier tier = make_tier({true, false});
  EXPECT_EQ(HostCopyEngine::create(tier.spans(), 0).status().code(), ErrorCode::kInvalidArgument);
  auto engine = HostCopyEngine::create(tier.spans(), 1);
  ASSERT_TRUE(engine.has_value());
  const Status resident = (*engine)->start_copy(1, 0);
  EXPECT_NE(resident.message().find("block 1 is not in the host tier"), std::string::npos) << resident.message();
  EXPECT_EQ((*engine)->start_copy(5, 0).code(), ErrorCode::kInvalidArgument);
  const Status slot = (*engine)->start_copy(0, 1);
  EXPECT_NE(slot.message().find("staging slot 1 does not exist (1 slots)"), std::string::npos) << slot.message();
  EXPECT_EQ((*engine)->wait_copy(-1).code(), ErrorCode::kInvalidArgument);
  EXPECT_TRUE((*engine)->wait_copy(0).is_ok());  // nothing issued: returns at once
}

}  // namespace
}  // namespace orochi::weights
