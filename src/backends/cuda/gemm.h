// Linear layers through cuBLASLt: y[M, N] = x[M, K] · w[N, K]^T (+ bias[N]), row-major, as
// torch.nn.functional.linear. Three flavours, chosen by the tensors' dtype:
//  - bf16: x, w, bias, y bf16; fp32 accumulation (CUBLAS_COMPUTE_32F); the bias is added in fp32 by
//    the epilogue and the result rounded once to bf16.
//  - f16: the same with fp16 operands and output (torch's fp16 autocast linear; the video VAE).
//  - f32: x, w, bias, y f32; CUBLAS_COMPUTE_32F without TF32 (H3's fp32 proj_in and heads).
// A GemmRunner owns the cuBLASLt handle, one workspace allocated at creation, and a cache of plans
// (descriptors + the heuristic's algorithm) keyed by shape, dtype, bias and pointer alignment: the
// first call of a shape queries the heuristic, later calls only enqueue the matmul, so they can be
// captured in a CUDA graph (warm every shape up before capturing).
// One runner per GPU and stream: calls share the workspace, so two streams must not use one
// runner concurrently; the plan cache is not thread-safe.
#pragma once

#include <cuda_runtime_api.h>

#include <compare>
#include <cstdint>
#include <map>
#include <memory>
#include <span>

#include "backends/cuda/device_memory.h"
#include "core/status.h"
#include "core/tensor.h"

struct cublasLtContext;  // cuBLASLt's handle type, declared here so this header needs no cuBLAS include

namespace orochi::cuda {

class GemmRunner {
 public:
  static constexpr size_t kDefaultWorkspaceBytes = size_t{32} << 20;

  // The handle and one cudaMalloc of `workspace_bytes` on GPU `device_index`.
  static Expected<std::unique_ptr<GemmRunner>> create(int device_index,
                                                      size_t workspace_bytes = kDefaultWorkspaceBytes);
  ~GemmRunner();
  GemmRunner(const GemmRunner&) = delete;
  GemmRunner& operator=(const GemmRunner&) = delete;

  // y = x · w^T (+ bias). x [..., K] (leading dims flattened to M), w [N, K], bias [N] or null,
  // y [..., N] with x's leading dims; all contiguous CUDA tensors of one dtype (bf16, f16 or f32).
  // Shape/dtype mistakes are caller bugs (OROCHI_CHECK); cuBLASLt failures, or no algorithm for
  // the shape, come back as a Status.
  Status linear(const Tensor& x, const Tensor& w, const Tensor* bias, const Tensor& y, cudaStream_t stream);
  // The general form: w may be a row-strided view (w.strides()[0] >= K, e.g. a column slice
  // [N, k0:k1] of a wider weight), and with `accumulate` y += x · w^T (+ bias) instead of y =, the
  // sum rounded once to y's dtype. A linear split along K is then two calls into one y.
  Status linear_strided(const Tensor& x, const Tensor& w, const Tensor* bias, const Tensor& y, bool accumulate,
                        cudaStream_t stream);
  // Several linears of one input, ys[i] = x · ws[i]^T without bias (q, k and v of a block): one
  // batched cuBLASLt call when the weights (one shape) lie equally far apart in memory and so do the
  // outputs, as consecutive allocations of one size do; a call each otherwise. Same bits either way.
  Status linear_shared_input(const Tensor& x, std::span<const Tensor> ws, std::span<const Tensor> ys,
                             cudaStream_t stream);
  // Same, with y allocated from `arena`.
  Expected<Tensor> linear(const Tensor& x, const Tensor& w, const Tensor* bias, DeviceArena& arena,
                          cudaStream_t stream);

  size_t cached_plans() const { return plans_.size(); }
  // Large shapes (>= 2^30 multiply-adds) are timed over cuBLASLt's top candidates the first time
  // they are seen and the fastest kept; off, the heuristic's first pick is used.
  void set_autotune(bool on) { autotune_ = on; }
  size_t workspace_bytes() const { return workspace_bytes_; }
  int device_index() const { return device_index_; }

 private:
  struct Key {
    int64_t M = 0, N = 0, K = 0;
    int64_t ld_w = 0;  // w's row stride (K when contiguous)
    DType dtype = DType::kBF16;
    bool bias = false;
    bool accumulate = false;
    // Pointer alignment (bytes, capped at 256) of x, w, y and bias: cuBLASLt picks kernels by it.
    uint32_t align_x = 0, align_w = 0, align_y = 0, align_bias = 0;
    // A batch of products sharing x: w and y step by these strides (elements).
    int32_t batch = 1;
    int64_t stride_w = 0, stride_y = 0;
    auto operator<=>(const Key&) const = default;
  };
  struct Plan;
  struct Operands {
    const void* x = nullptr;
    const void* w = nullptr;
    void* y = nullptr;
    cudaStream_t stream = nullptr;
  };
  static constexpr int kMaxCandidates = 8;
  static constexpr double kTuneMinMacs = 1073741824.0;

  GemmRunner() = default;
  // The shape/dtype/device checks of linear(): caller bugs are OROCHI_CHECK failures.
  void check_linear(const Tensor& x, const Tensor& w, const Tensor* bias, const Tensor& y) const;
  Key key_of(const Tensor& x, const Tensor& w, const Tensor* bias, const Tensor& y, bool accumulate) const;
  // Plans `key` on first sight, then enqueues the matmul on the checked operands.
  Status enqueue(const Key& key, const Tensor& x, const Tensor& w, const Tensor* bias, const Tensor& y,
                 cudaStream_t stream);
  Expected<Plan*> plan_for(const Key& key, const void* bias, const Operands& operands);
  // `results`: cublasLtMatmulHeuristicResult_t[count] (an anonymous struct in cublasLt.h, so not named here).
  Expected<int> fastest_candidate(const Plan& plan, const void* results, int count, const Operands& operands);

  cublasLtContext* handle_ = nullptr;  // = cublasLtHandle_t
  void* workspace_ = nullptr;
  size_t workspace_bytes_ = 0;
  int device_index_ = 0;
  bool autotune_ = true;
  std::map<Key, std::unique_ptr<Plan>> plans_;
};

}  // namespace orochi::cuda
