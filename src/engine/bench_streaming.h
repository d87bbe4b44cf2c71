// `orochi bench dit --vram-per-gpu GiB [--tier host|peer] [--slots K]`: which transformer blocks
// stream, as the memory planner places them for that cap (planner/tier_placement.h: the first
// blocks stay resident, the later ones come from pinned host RAM or the next GPU), and the plan's
// denoiser-phase bytes to hold the run's measured peak against.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/precision.h"
#include "core/status.h"
#include "models/h3/config.h"

namespace orochi::engine {

struct StreamingChoice {
  std::vector<bool> streamed;  // per transformer block
  bool peer = false;           // the tier: the next GPU, else pinned host RAM
  int slots = 2;
  uint64_t planned_gpu_bytes = 0;  // the denoiser phase on the computing GPU
  int count() const;
};

// `canvas` is "WxH"; `text_rows` and `frames` as the bench request; `precision` the blocks' linears
// (fp8 / int8 blocks take about half the bytes, so fewer stream); `fp8_attention` the run's
// resolved attention-precision (backends::KernelOptions::fp8_attention), whose workspace counts.
Expected<StreamingChoice> plan_streaming(const h3::H3Config& config, const std::string& canvas, int64_t frames,
                                         int64_t text_rows, double vram_gib, const std::string& tier, int slots,
                                         Precision precision, bool fp8_attention);

}  // namespace orochi::engine
