// Where streamed blocks (the denoiser's transformer blocks, the text encoder's layers) live between
// uses, and the CUDA CopyEngine that brings them into the staging slots (BlockStreamer decides
// when): pinned host RAM, copied over PCIe, or a peer GPU's memory, copied over NVLink/P2P; on a
// copy stream, so block i+1 lands while block i computes. Events order each copy after the compute that last read its slot, and
// the compute after the copy it reads.
#pragma once

#include <cuda_runtime_api.h>

#include <memory>
#include <vector>

#include "core/status.h"
#include "weights/block_streamer.h"

namespace orochi::weights {

enum class WeightTier { kHost, kPeer };
const char* weight_tier_name(WeightTier tier);  // "pinned host", "peer GPU"

class GpuBlockTier final : public CopyEngine {
 public:
  // Room for every streamed block's image (image_bytes each) in the tier; `slots` images of
  // staging start at `slots_base` on `device`; `compute` is the stream that reads them.
  static Expected<std::unique_ptr<GpuBlockTier>> create(int device, WeightTier tier, int peer_device,
                                                        const std::vector<bool>& streamed, size_t image_bytes,
                                                        void* slots_base, int slots, cudaStream_t compute);
  ~GpuBlockTier() override;

  // Keeps `block`'s image (device memory, `bytes` == image_bytes) in the tier; waits for the copy.
  Status store(int64_t block, const void* image, size_t bytes, cudaStream_t stream);

  Status start_copy(int block, int slot) override;
  Status wait_copy(int slot) override;
  Status release_slot(int slot) override;
  uint64_t block_bytes(int) const override { return image_bytes_; }
  size_t tier_bytes() const { return stored_blocks_ * image_bytes_; }

 private:
  GpuBlockTier() = default;
  char* slot(int s) const { return slots_ + static_cast<size_t>(s) * image_bytes_; }
  const char* image_of(int block) const;

  int device_ = 0, peer_ = -1;
  WeightTier tier_ = WeightTier::kHost;
  size_t image_bytes_ = 0, stored_blocks_ = 0;
  std::vector<int64_t> index_;  // per block: its place in the tier, -1 when resident
  char* storage_ = nullptr;     // pinned host, or peer device memory
  char* slots_ = nullptr;
  cudaStream_t compute_ = nullptr, copy_ = nullptr;
  std::vector<cudaEvent_t> copied_, released_;  // per slot
};

}  // namespace orochi::weights
