// A DiT's transformer blocks whose weights are not resident on the compute GPU: they live in a tier
// (pinned host RAM, or a peer GPU's memory) and come through K staging slots just in time, block
// i+1 (and, near a pass's end, the next pass's first blocks) copying while block i computes
// (weights::BlockStreamer schedules, weights::GpuBlockTier copies). Family-neutral: a block is an
// "image" of image_bytes, and the model lays its own block views out in the slots.
//
//   blocks = GpuStreamedBlocks::create(device, plan, image_bytes, compute_stream, "H3 weight staging")
//   build each streamed block in blocks->staging() from its base, then blocks->store(i, base, bytes)
//   arena = blocks->empty_slots(); lay out plan.slots block views in it, one image apart
//   blocks->start()
//   per pass: begin_pass(); per block: slot = acquire(i) (-1: resident) ... compute ... release(i)
#pragma once

#include <cuda_runtime_api.h>

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "backends/cuda/device_memory.h"
#include "core/status.h"
#include "weights/block_streamer.h"
#include "weights/cuda/gpu_block_tier.h"

namespace orochi::layers::gpu {

// Which blocks stream, through how many slots, from where.
struct BlockStreamingPlan {
  std::vector<bool> streamed;  // per transformer block; empty: every block resident
  int slots = 2;
  weights::WeightTier tier = weights::WeightTier::kHost;
  int peer_device = -1;        // the GPU holding them, for WeightTier::kPeer
  bool any() const;
};

class GpuStreamedBlocks {
 public:
  // The K slots (one arena of slots * image_bytes on `device`, named `arena_name` in errors) and
  // the tier's room for every streamed block. `compute` is the stream that reads the slots.
  static Expected<std::unique_ptr<GpuStreamedBlocks>> create(int device, const BlockStreamingPlan& plan,
                                                             size_t image_bytes, cudaStream_t compute,
                                                             const std::string& arena_name);
  ~GpuStreamedBlocks();  // waits for the copies in flight

  // Where a streamed block is built before store() (the slots' memory).
  cuda::DeviceArena& staging() { return *staging_; }
  // Keeps `block`'s image (device memory of image_bytes) in the tier; waits for the copy.
  Status store(int64_t block, const void* image, size_t bytes);
  // The slots' arena, emptied, for the model's K block views (slot k starts k images in).
  cuda::DeviceArena& empty_slots();
  // After every streamed block was stored and the slots laid out: the streamer over them.
  Status start();
  bool started() const { return streamer_.has_value(); }

  Status begin_pass() { return streamer_->begin_pass(); }
  // The slot holding `block` once its copy has landed on the compute stream; -1 for a resident block.
  Expected<int> acquire(int block) { return streamer_->acquire(block); }
  Status release(int block) { return streamer_->release(block); }

  size_t staging_bytes() const { return staging_->capacity(); }
  size_t tier_bytes() const { return tier_->tier_bytes(); }
  const weights::StreamStats* stats() const { return streamer_ ? &streamer_->stats() : nullptr; }

 private:
  GpuStreamedBlocks() = default;

  BlockStreamingPlan plan_;
  cudaStream_t compute_ = nullptr;
  std::shared_ptr<cuda::DeviceArena> staging_;
  std::unique_ptr<weights::GpuBlockTier> tier_;
  std::optional<weights::BlockStreamer> streamer_;  // drives tier_
};

}  // namespace orochi::layers::gpu
