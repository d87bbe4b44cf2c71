#include "layers/cuda/streamed_blocks.h"

namespace orochi::layers::gpu {

bool BlockStreamingPlan::any() const {
  for (bool s : streamed)
    if (s) return true;
  return false;
}

Expected<std::unique_ptr<GpuStreamedBlocks>> GpuStreamedBlocks::create(int device, const BlockStreamingPlan& plan,
                                                                       size_t image_bytes, cudaStream_t compute,
                                                                       const std::string& arena_name) {
  std::unique_ptr<GpuStreamedBlocks> b(new GpuStreamedBlocks());
  b->plan_ = plan;
  b->compute_ = compute;
  // K block images side by side: slot k starts k images in (each image is 256-byte aligned).
  OROCHI_ASSIGN_OR_RETURN(b->staging_, cuda::DeviceArena::create(device, image_bytes * plan.slots, arena_name));
  OROCHI_ASSIGN_OR_RETURN(b->tier_, weights::GpuBlockTier::create(device, plan.tier, plan.peer_device, plan.streamed,
                                                                  image_bytes, b->staging_->base(), plan.slots, compute));
  return b;
}

GpuStreamedBlocks::~GpuStreamedBlocks() {
  if (streamer_) (void)streamer_->finish();
  streamer_.reset();
  tier_.reset();
}

Status GpuStreamedBlocks::store(int64_t block, const void* image, size_t bytes) {
  return tier_->store(block, image, bytes, compute_);
}

cuda::DeviceArena& GpuStreamedBlocks::empty_slots() {
  staging_->reset(0);
  return *staging_;
}

Status GpuStreamedBlocks::start() {
  OROCHI_ASSIGN_OR_RETURN(weights::BlockStreamer s, weights::BlockStreamer::create(plan_.streamed, plan_.slots, *tier_));
  streamer_.emplace(std::move(s));
  return Status::ok();
}

}  // namespace orochi::layers::gpu
