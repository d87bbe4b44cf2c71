// The CPU H3 forward with its transformer blocks streamed: the blocks the plan puts in a host tier
// are packed (exact bytes) and copied through K staging slots by weights::BlockStreamer and a
// HostCopyEngine while earlier blocks compute; the rest stay resident. The refiner, embedders,
// heads and the AdaLN projections (they only build the modulation tables) stay in H3Weights.
// The outputs are bit-identical to h3::forward's: the same math (block_forward.h) on the same bytes.
#pragma once

#include <cstddef>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/status.h"
#include "models/h3/transformer.h"
#include "weights/block_streamer.h"
#include "weights/host_copy_engine.h"

namespace orochi::h3 {

// Where a block's tensors sit in its packed bytes; one layout serves every streamed block.
struct PackedBlockLayout {
  struct Entry {
    std::string name;  // diffusers name within the block: "attn.to_q.weight"
    Shape shape;
    DType dtype = DType::kF32;
    size_t offset = 0;  // 64-byte aligned
  };
  std::vector<Entry> entries;
  size_t bytes = 0;
};

// The layout of every defined tensor of `b` but its AdaLN projection.
PackedBlockLayout packed_block_layout(const BlockWeights& b);
// `b`'s bytes in `layout`; shape_mismatch naming the tensor when `b` does not fit it.
Expected<std::vector<std::byte>> pack_block(const BlockWeights& b, const PackedBlockLayout& layout);
// Packed bytes seen as BlockWeights without a copy (no AdaLN projection).
BlockWeights view_packed_block(const std::shared_ptr<Buffer>& bytes, const PackedBlockLayout& layout);

// The transformer blocks as forward_streamed reads them: resident ones as they were, streamed
// ones from a packed host tier through staging slots.
class StreamedBlocks {
 public:
  // Moves the blocks out of `w`, leaving each block's AdaLN projection there (for
  // compute_modulation_tables). `streamed[i]`: block i comes from the host tier. On error `w` is
  // unchanged.
  static Expected<std::unique_ptr<StreamedBlocks>> create(H3Weights& w, const std::vector<bool>& streamed, int slots,
                                                          weights::HostCopyOptions options = {});

  Status begin_pass(bool prefetch_next_pass) { return streamer_->begin_pass(prefetch_next_pass); }
  // Block `i`'s weights: views of its staging slot (valid until release) or the resident tensors.
  Expected<BlockWeights> acquire(int block);
  Status release(int block) { return streamer_->release(block); }
  Status finish() { return streamer_->finish(); }

  int num_blocks() const { return static_cast<int>(resident_.size()); }
  uint64_t host_tier_bytes() const;
  const PackedBlockLayout& layout() const { return layout_; }
  const weights::StreamStats& stats() const { return streamer_->stats(); }

 private:
  StreamedBlocks() = default;

  std::vector<BlockWeights> resident_;        // empty for a streamed block
  std::vector<std::vector<std::byte>> tier_;  // packed bytes of each streamed block, empty otherwise
  PackedBlockLayout layout_;
  std::unique_ptr<weights::HostCopyEngine> engine_;  // reads tier_
  std::optional<weights::BlockStreamer> streamer_;   // drives engine_
};

// h3::forward with the blocks from `blocks` (w.blocks is not read) as one streaming pass.
// `prefetch_next_pass`: start copying the next step's first blocks while the last ones compute
// (false on the last step). A failed copy comes back naming the block; the next call restarts.
Expected<H3Outputs> forward_streamed(const H3Weights& w, StreamedBlocks& blocks, const H3Inputs& in,
                                     const ModulationTables& tables, bool prefetch_next_pass,
                                     const H3Observer& observer = nullptr);

}  // namespace orochi::h3
