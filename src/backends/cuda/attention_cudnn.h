// Full (non-causal, unmasked) softmax attention on the GPU through cuDNN's fused flash SDPA,
// driven by the header-only cudnn-frontend graph API.
//
// Layout: q [S_q, heads, D], k and v [S_kv, kv_heads, D], o [S_q, heads, D], bf16 (or f16, chosen by
// AttentionShape::dtype), row-major and contiguous (one packed sequence, batch 1). Scale 1/sqrt(D),
// fp32 softmax, output in the input dtype. Non-causal and kv_heads = heads unless the shape asks
// for a causal mask or grouped-query attention (the Qwen3-VL text encoder).
//
// FP8 (dtype kF8E4M3, run_fp8): e4m3 q, k, v codes with one descale each, P quantized to e4m3 with
// scale_s inside cuDNN, output bf16 where cuDNN offers it (Blackwell, cuDNN >= 9.13) and e4m3 codes
// times 1/scale_o otherwise (Hopper): fp8_output_dtype() says which the plan chose.
// attention_cudnn_fp8.h quantizes bf16 operands for it.
//
// Building a cuDNN graph costs milliseconds to seconds (heuristics, sometimes runtime kernel
// compilation), so each shape is built once and cached. run() for a cached shape only launches, so
// it can be captured into a CUDA graph; the first call for a shape (or prepare()) must happen
// outside capture.
//
// Workspace: one device buffer, shared by every cached shape, sized to the largest need that
// prepare() or run() has met. It grows only when a shape needs more; the buffer it replaces stays
// allocated until destruction, so CUDA graphs captured earlier never point at freed memory. The
// planner asks workspace_bytes() ahead of time (no allocation) and hands over a slice of its own
// arena with set_external_workspace(); then nothing is allocated here.
//
// Not thread-safe: one instance per worker thread (and GPU). A CUDA graph that captured run() must
// not outlive the instance.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "core/dtype.h"
#include "core/status.h"

namespace orochi::cuda {

struct AttentionShape {
  int64_t s_q = 0;       // query (and output) rows
  int64_t s_kv = 0;      // key/value rows
  int64_t heads = 0;
  int64_t head_dim = 0;  // D, the same for q, k and v
  DType dtype = DType::kBF16;  // of q, k, v and o: kBF16 (the denoiser) or kF16 (the video VAE);
                               // kF8E4M3: q, k, v codes for run_fp8 (o as fp8_output_dtype says)
  int64_t kv_heads = 0;  // heads of k and v (grouped-query attention); 0 = heads. Must divide heads.
  bool causal = false;   // query row i sees key rows <= i (top-left aligned): LLM self-attention
  int64_t kv_head_count() const { return kv_heads > 0 ? kv_heads : heads; }
  bool operator==(const AttentionShape&) const = default;
  std::string to_string() const;  // "S_q=.. S_kv=.. heads=.. D=.." (+ " f16" when not bf16)
};

// Which cudnn-frontend lowering to use. kAuto tries the unified SDPA operation first (one backend
// op, cuDNN >= 9.13.1) and falls back to the composite graph (matmul-softmax-matmul fused by cuDNN).
enum class AttentionImplementation { kAuto, kUnified, kComposite };
const char* attention_implementation_name(AttentionImplementation impl);

// The per-tensor scalars of an FP8 attention: device f32 values, each one float, read or written
// when the attention runs (so a CUDA graph captures the pointers, not the values).
struct CudnnFp8Scales {
  const float* descale_q = nullptr;  // q ≈ code · descale_q; the same for k and v
  const float* descale_k = nullptr;
  const float* descale_v = nullptr;
  const float* descale_s = nullptr;  // P ≈ code · descale_s
  const float* scale_s = nullptr;    // P's code = e4m3(P · scale_s)
  const float* scale_o = nullptr;    // O's code = e4m3(O · scale_o) (1 for a bf16 output)
  float* amax_s = nullptr;           // written: the largest P, the largest |O| (before scale_o)
  float* amax_o = nullptr;
};

class CudnnAttention {
 public:
  // The cuDNN handle is created on first use, on the device current at that time, and bound to
  // `stream` (run() rebinds it when given another stream).
  explicit CudnnAttention(cudaStream_t stream = nullptr,
                          AttentionImplementation impl = AttentionImplementation::kAuto);
  ~CudnnAttention();
  CudnnAttention(const CudnnAttention&) = delete;
  CudnnAttention& operator=(const CudnnAttention&) = delete;

  // False when Orochi was built without the cudnn-frontend headers: every call then returns
  // kUnsupported with advice.
  static bool compiled_with_frontend();

  // Builds and caches the graph for `shape`, grows the internal workspace if needed and loads the
  // kernels, so that a later run() of this shape can be captured in a CUDA graph.
  Status prepare(const AttentionShape& shape);

  // Device workspace bytes run() needs for this shape. Builds and caches the graph (slow the first
  // time: do it at planning), allocates nothing.
  Expected<size_t> workspace_bytes(int64_t S, int64_t heads, int64_t D);
  Expected<size_t> workspace_bytes(const AttentionShape& shape);

  // Uses caller-owned device memory as the workspace from now on (nullptr, 0 returns to the
  // internal buffer). Refused when a cached shape needs more than `bytes`; a shape built later
  // that needs more fails in run() with the size it needs.
  Status set_external_workspace(void* device_ptr, size_t bytes);

  // Self-attention over one sequence: q, k, v, o are [S, heads, D] bf16 device pointers
  // (16-byte aligned); the AttentionShape overload below also takes f16 (shape.dtype). Enqueued on
  // `stream`; returns before the GPU finishes.
  Status run(const void* q, const void* k, const void* v, void* o, int64_t S, int64_t heads,
             int64_t D, cudaStream_t stream);
  // Same with distinct query and key/value lengths (cross-attention) and the shape's dtype.
  Status run(const void* q, const void* k, const void* v, void* o, const AttentionShape& shape,
             cudaStream_t stream);

  // FP8 attention (shape.dtype kF8E4M3): q, k, v e4m3 codes in the layout above, o of
  // fp8_output_dtype(shape) (kBF16 or kF8E4M3), the scalars in `scales`. Same caching, workspace
  // and capture rules as run(). kUnsupported, naming the cuDNN versions, where cuDNN has no FP8
  // attention for this GPU (needs compute capability >= 9.0 and cuDNN >= 9.1, not 9.10.0).
  Status run_fp8(const void* q, const void* k, const void* v, void* o, const CudnnFp8Scales& scales,
                 const AttentionShape& shape, cudaStream_t stream);
  // The output dtype the FP8 plan for `shape` writes: kBF16 where cuDNN allows it, else kF8E4M3.
  // Builds and caches the plan.
  Expected<DType> fp8_output_dtype(const AttentionShape& shape);

  // Every execution plan cuDNN's heuristics (modes A and B) offer for `shape`, each timed on the
  // given buffers (median of `runs` after one warm-up) beside the plan run() uses: whether the
  // heuristic's first pick is the fastest. Informative (tests, benchmarks); allocates its own
  // workspace and leaves the cached plans alone.
  struct CandidateTiming {
    std::string engine;  // cuDNN's plan name
    double ms = 0;       // median; negative when the plan failed to run
    size_t workspace_bytes = 0;
  };
  Expected<std::vector<CandidateTiming>> time_candidate_plans(const AttentionShape& shape, const void* q,
                                                              const void* k, const void* v, void* o,
                                                              cudaStream_t stream, int runs = 5);
  // For logs and benchmarks: the implementation and cuDNN engine chosen for a cached shape, or
  // "not built".
  std::string describe(const AttentionShape& shape) const;
  size_t cached_graph_count() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace orochi::cuda
