// Internal to the CUDA backend: one built cudnn-frontend SDPA forward graph behind an opaque type.
// Only attention_cudnn_graph.cpp includes the (large, slow to compile) cudnn-frontend headers.
#pragma once

#if OROCHI_WITH_CUDNN_FRONTEND

#include <cudnn.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "backends/cuda/attention_cudnn.h"
#include "core/status.h"

namespace orochi::cuda::attention_detail {

struct SdpaPlan;  // the frontend graph with its execution plan, and what was chosen
struct SdpaPlanDeleter {
  void operator()(SdpaPlan* plan) const;
};
using SdpaPlanPtr = std::unique_ptr<SdpaPlan, SdpaPlanDeleter>;

// Validates, lowers and builds the graph for `shape` on the device current now. kAuto tries the
// unified lowering, then the composite one, and reports both errors when neither builds. An FP8
// shape (kF8E4M3) tries a bf16 output first, then an e4m3 one (all cuDNN offers on Hopper).
Expected<SdpaPlanPtr> build_sdpa_plan(cudnnHandle_t handle, const AttentionShape& shape,
                                      AttentionImplementation impl);

size_t sdpa_plan_workspace_bytes(const SdpaPlan& plan);
DType sdpa_plan_output_dtype(const SdpaPlan& plan);
// "unified SDPA, engine <cuDNN plan name>, workspace N B"
std::string sdpa_plan_description(const SdpaPlan& plan);

// Enqueues the attention on the handle's stream. Launches only: capturable in a CUDA graph. An
// FP8 plan needs `fp8` (its scalars), any other plan takes none.
Status execute_sdpa_plan(const SdpaPlan& plan, cudnnHandle_t handle, const void* q, const void* k, const void* v,
                         void* o, void* workspace, const CudnnFp8Scales* fp8 = nullptr);

// Records (never launches) the plan in a throw-away CUDA graph so its kernels get loaded now rather
// than inside a caller's capture. A no-op once the plan has run or warmed up.
Status warm_up_sdpa_plan(SdpaPlan& plan, cudnnHandle_t handle);

// Builds every plan heuristics A and B offer for `shape` (one lowering, as build_sdpa_plan picks it)
// and times each on the buffers, with a workspace of its own; see CudnnAttention::time_candidate_plans.
Expected<std::vector<CudnnAttention::CandidateTiming>> time_sdpa_candidates(cudnnHandle_t handle,
                                                                            const AttentionShape& shape,
                                                                            AttentionImplementation impl,
                                                                            const void* q, const void* k,
                                                                            const void* v, void* o,
                                                                            cudaStream_t stream, int runs);

// "cuDNN runtime 9.14.0 (headers 9.19.0), cudnn-frontend 1.32.0"
std::string library_versions();

}  // namespace orochi::cuda::attention_detail

#endif  // OROCHI_WITH_CUDNN_FRONTEND
