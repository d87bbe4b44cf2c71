#include "backends/cuda/attention_flash.h"

#include <algorithm>
#include <cstdint>
#include <string>
#include <string_view>

#include "backends/cuda/cuda_check.h"
#include "backends/cuda/sm90a/flash_attention_launch.h"
#include "backends/cuda/tensor_maps.h"

namespace orochi::cuda {
namespace {

constexpr int64_t kHeadDim = 128;

Expected<int> multiprocessors(int override_count) {
  if (override_count > 0) return override_count;
  return multiprocessor_count();
}

// How many of the last units to split, and into how many slices: only a last wave at most half
// full, into as many slices as fill the SMs (at most 16, each at least 2 key tiles).
struct TailSplit {
  int units = 0, slices = 1;
};
TailSplit plan_tail(int64_t units, int64_t key_tiles, int sms) {
  const int tail = static_cast<int>(units % sms);
  if (tail == 0 || 2 * tail > sms) return {};
  const int slices = static_cast<int>(std::min<int64_t>({16, sms / tail, key_tiles / 2}));
  if (slices < 2) return {};
  return {tail, slices};
}

}  // namespace

std::string flash_attention_unsupported_reason(const AttentionShape& s) {
  if (s.head_dim != kHeadDim) return "head dim " + std::to_string(s.head_dim) + " (the kernel is built for 128)";
  if (s.dtype != DType::kBF16) return "dtype other than bf16";
  if (s.causal) return "a causal mask";
  if (s.kv_head_count() != s.heads) return "grouped key/value heads";
  if (s.s_q <= 0 || s.s_kv <= 0 || s.heads <= 0) return "an empty shape " + s.to_string();
  if (s.s_q > (int64_t{1} << 30) || s.s_kv > (int64_t{1} << 30) || s.heads > 65535 ||
      (s.s_q + 127) / 128 * s.heads > (int64_t{1} << 30))
    return "a shape too large";
  if (!device_is_hopper()) return "a GPU that is not compute capability 9.0 (the kernel uses Hopper's wgmma and TMA)";
  return "";
}

Expected<size_t> flash_attention_workspace_bytes(int sm_count) {
  OROCHI_ASSIGN_OR_RETURN(int sms, multiprocessors(sm_count));
  // A split tail has units * slices <= SMs partial results.
  return static_cast<size_t>(sms) * static_cast<size_t>(sm90a::flash_attention_partial_bytes());
}

FlashAttentionOptions flash_attention_options(const backends::KernelOptions& kernels) {
  FlashAttentionOptions o;
  o.kv_block = kernels.flash_kv_block;
  o.pingpong = kernels.flash_pingpong;
  o.split_tail = kernels.flash_split_tail;
  o.lazy_rescale = kernels.flash_lazy_rescale;
  return o;
}

Status flash_attention(const void* q, const void* k, const void* v, void* o, const AttentionShape& shape,
                       cudaStream_t stream, const FlashAttentionOptions& options) {
  if (const std::string why = flash_attention_unsupported_reason(shape); !why.empty())
    return Status(ErrorCode::kUnsupported, "Orochi's flash attention cannot run " + shape.to_string() + ": " + why +
                                               "; use cuDNN attention (--set attention=cudnn)");
  for (const void* p : {q, k, v, static_cast<const void*>(o)})
    if (p == nullptr || reinterpret_cast<uintptr_t>(p) % 16 != 0)
      return Status(ErrorCode::kInvalidArgument, "flash attention needs non-null, 16-byte aligned q, k, v and o");
  if (options.kv_block != 128 && options.kv_block != 176 && options.kv_block != 192)
    return Status(ErrorCode::kInvalidArgument,
                  "flash attention tiles keys by 128, 176 or 192 rows, not " + std::to_string(options.kv_block));
  sm90a::FlashAttentionLaunch launch;
  OROCHI_RETURN_IF_ERROR(bf16_rows_heads_map(launch.q, q, shape.s_q, shape.heads, 128));
  OROCHI_RETURN_IF_ERROR(bf16_rows_heads_map(launch.k, k, shape.s_kv, shape.heads, options.kv_block));
  OROCHI_RETURN_IF_ERROR(bf16_rows_heads_map(launch.v, v, shape.s_kv, shape.heads, options.kv_block));
  launch.kv_block = options.kv_block;
  launch.o = o;
  launch.s_q = static_cast<int>(shape.s_q);
  launch.s_kv = static_cast<int>(shape.s_kv);
  launch.heads = static_cast<int>(shape.heads);
  launch.pingpong = options.pingpong;
  launch.lazy_rescale = options.lazy_rescale;
  const int64_t units = (shape.s_q + 127) / 128 * shape.heads;
  const int64_t key_tiles = (shape.s_kv + options.kv_block - 1) / options.kv_block;
  TailSplit tail;
  if (options.split_tail && options.workspace != nullptr) {
    OROCHI_ASSIGN_OR_RETURN(int sms, multiprocessors(options.sm_count));
    tail = plan_tail(units, key_tiles, sms);
    const size_t need = static_cast<size_t>(tail.units) * tail.slices * sm90a::flash_attention_partial_bytes();
    if (need > options.workspace_bytes) tail = {};  // too small a workspace: no split
  }
  launch.units = static_cast<int>(units - tail.units);
  if (launch.units > 0)
    OROCHI_RETURN_IF_ERROR(cuda_status(sm90a::launch_flash_attention(launch, stream), "flash attention launch"));
  if (tail.units == 0) return Status::ok();
  launch.unit_begin = launch.units;
  launch.units = tail.units;
  launch.kv_splits = tail.slices;
  launch.partial = static_cast<float*>(options.workspace);
  return cuda_status(sm90a::launch_flash_attention(launch, stream), "flash attention launch (split last wave)");
}

}  // namespace orochi::cuda
