// The MiniMax-H3 denoiser's memory on one computing GPU: its weight groups (bf16 block linears and
// norms, f32 islands, AdaLN projections streamed once per request) and its request arena, split
// the way tensor (tp N) or sequence (sp N, Ulysses) parallelism splits them.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/precision.h"
#include "dist/parallel_options.h"
#include "models/h3/config.h"
#include "planner/plan_request.h"
#include "planner/plan_types.h"
#include "planner/request_shape.h"

namespace orochi::planner {

// One buffer of a GPU arena and the pool it belongs to.
struct BufferBytes {
  PoolKind pool;
  std::string name;
  uint64_t bytes;
};

// Groups in execution order: "embedders", "refiner", "block 0".."block N-1", "heads", and
// "adaln" (Tier::kStreamedOnce: the projections only build the per-request tables). Bytes per
// computing GPU, each tensor rounded to the arena's 256 B as gpu_weights.cpp's
// resident_weight_bytes does; tp N divides the block and refiner linears by N. With fp8 or int8,
// each of h3::is_quantized_linear's weights is its codes (1 byte each) and its per-row f32 scales,
// two tensors.
std::vector<WeightGroup> h3_weight_groups(const h3::H3Config& config, const ParallelLayout& layout,
                                          Precision precision = Precision::kBf16);

// The GPU runner's request arena for one computing GPU, buffer by buffer: the runner's own list
// (h3::gpu::arena_buffers, which it allocates) in the plan's pools, plus the workspaces and
// communicator buffers outside it. `sp` holds the run's switches that change memory: the q/k/v
// scheme (gathering rows adds a buffer) and row weights (the largest share sets the rows). fp8 /
// int8 add the quantized linears' activation buffers and the quantized GEMM's workspace;
// `fp8_attention` sizes the attention workspace for the FP8 kernel's codes and scales.
std::vector<BufferBytes> h3_request_buffers(const h3::H3Config& config, const RequestShape& shape,
                                            const ParallelLayout& layout, const dist::SequenceParallelOptions& sp,
                                            Precision precision, bool fp8_attention);

// Sum of h3_request_buffers for one GPU (layout none): what request_arena_bytes() gives, with the
// attention workspace estimated (cuDNN reports its own only on a GPU).
uint64_t h3_request_arena_bytes(const h3::H3Config& config, const RequestShape& shape);

// The checks a layout needs against the model: heads (and FFN width) divisible by N.
Status check_h3_layout(const h3::H3Config& config, const ParallelLayout& layout);

}  // namespace orochi::planner
