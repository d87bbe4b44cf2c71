// Self-attention on one stream through Orochi's Hopper (sm_90a) kernels where they were chosen and
// the shape fits them: the FP8 kernel (attention-precision, issue 25), else the bf16 flash kernel
// (attention=flash), else cuDNN's fused SDPA. All share one workspace that the model's request
// arena provides: attention calls run one at a time on the stream.
#pragma once

#include <cuda_runtime_api.h>

#include <memory>
#include <span>
#include <string>

#include "backends/cuda/attention_cudnn.h"
#include "backends/cuda/attention_flash.h"
#include "backends/cuda/attention_flash_fp8.h"
#include "core/status.h"

namespace orochi::layers::gpu {

// kernel_for's name of Orochi's FP8 attention kernel (reports, the bench's ceiling choice, tests).
inline constexpr const char* kFp8AttentionKernel = "flash-fp8-sm90a";

class AttentionRunner {
 public:
  AttentionRunner() = default;
  AttentionRunner(bool flash, const cuda::FlashAttentionOptions& options, bool fp8 = false,
                  const cuda::FlashAttentionFp8Options& fp8_options = {})
      : flash_(flash), fp8_(fp8), flash_options_(options), fp8_options_(fp8_options) {}

  // A fresh cuDNN attention on `stream`: plans prepared for an earlier request's shapes may want
  // more workspace than the next reservation offers. Forgets nothing of the flash options.
  void reset(cudaStream_t stream);
  // Destroys the cuDNN attention (before the stream it runs on goes).
  void destroy() { cudnn_.reset(); }

  // The workspace the largest of `shapes` needs (q, k, v, o bf16 [s, heads * head_dim]), the flash
  // kernel's split last wave when flash is on, and the FP8 kernel's codes and scales when fp8 is on.
  // cuDNN builds each shape's plan here.
  Expected<size_t> workspace_bytes(std::span<const cuda::AttentionShape> shapes);
  // Device memory of `bytes` for both kernels (a slice of the caller's arena), until release_workspace().
  Status set_workspace(void* workspace, size_t bytes);
  void release_workspace();

  // o = softmax(q · k^T / sqrt(d)) · v, per head: q, o [s_q, heads * d], k, v [s_kv, heads * d].
  Status attend(const void* q, const void* k, const void* v, void* o, const cuda::AttentionShape& shape);
  // Which kernel a shape runs on: "flash-fp8-sm90a", "flash-sm90a" or "cudnn".
  std::string kernel_for(const cuda::AttentionShape& shape) const;

 private:
  // The kernel a shape runs on, decided here only (attend, kernel_for and workspace_bytes ask it):
  // FP8 where it was chosen and the shape fits that kernel, else bf16 flash where it was chosen and
  // fits, else cuDNN.
  enum class Kernel { kFlashFp8, kFlash, kCudnn };
  Kernel choose(const cuda::AttentionShape& shape) const;

  bool flash_ = true;
  bool fp8_ = false;
  cuda::FlashAttentionOptions flash_options_;
  cuda::FlashAttentionFp8Options fp8_options_;
  cudaStream_t stream_ = nullptr;
  std::unique_ptr<cuda::CudnnAttention> cudnn_;
};

}  // namespace orochi::layers::gpu
