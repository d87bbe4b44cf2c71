#include "layers/cuda/attention.h"

#include <algorithm>

namespace orochi::layers::gpu {

void AttentionRunner::reset(cudaStream_t stream) {
  stream_ = stream;
  cudnn_ = std::make_unique<cuda::CudnnAttention>(stream);
}

Expected<size_t> AttentionRunner::workspace_bytes(std::span<const cuda::AttentionShape> shapes) {
  size_t bytes = 0;
  for (const cuda::AttentionShape& shape : shapes) {
    OROCHI_ASSIGN_OR_RETURN(size_t b, cudnn_->workspace_bytes(shape));
    bytes = std::max(bytes, b);
  }
  if (flash_) {
    // The flash kernel's split last wave shares the buffer: attention calls run one at a time.
    OROCHI_ASSIGN_OR_RETURN(size_t flash_ws, cuda::flash_attention_workspace_bytes());
    bytes = std::max(bytes, flash_ws);
  }
  for (const cuda::AttentionShape& shape : shapes)  // so do the FP8 kernel's codes and scales
    if (choose(shape) == Kernel::kFlashFp8) bytes = std::max(bytes, cuda::flash_attention_fp8_workspace_bytes(shape));
  return bytes;
}

Status AttentionRunner::set_workspace(void* workspace, size_t bytes) {
  OROCHI_RETURN_IF_ERROR(cudnn_->set_external_workspace(workspace, bytes));
  flash_options_.workspace = fp8_options_.workspace = workspace;
  flash_options_.workspace_bytes = fp8_options_.workspace_bytes = bytes;
  return Status::ok();
}

void AttentionRunner::release_workspace() {
  flash_options_.workspace = fp8_options_.workspace = nullptr;
  flash_options_.workspace_bytes = fp8_options_.workspace_bytes = 0;
}

AttentionRunner::Kernel AttentionRunner::choose(const cuda::AttentionShape& shape) const {
  if (fp8_ && cuda::flash_attention_fp8_unsupported_reason(shape).empty()) return Kernel::kFlashFp8;
  if (flash_ && cuda::flash_attention_unsupported_reason(shape).empty()) return Kernel::kFlash;
  return Kernel::kCudnn;
}

Status AttentionRunner::attend(const void* q, const void* k, const void* v, void* o, const cuda::AttentionShape& shape) {
  switch (choose(shape)) {
    case Kernel::kFlashFp8: return cuda::flash_attention_fp8(q, k, v, o, shape, stream_, fp8_options_);
    case Kernel::kFlash: return cuda::flash_attention(q, k, v, o, shape, stream_, flash_options_);
    case Kernel::kCudnn: break;
  }
  return cudnn_->run(q, k, v, o, shape, stream_);
}

std::string AttentionRunner::kernel_for(const cuda::AttentionShape& shape) const {
  switch (choose(shape)) {
    case Kernel::kFlashFp8: return kFp8AttentionKernel;
    case Kernel::kFlash: return "flash-sm90a";
    case Kernel::kCudnn: break;
  }
  return "cudnn";
}

}  // namespace orochi::layers::gpu
