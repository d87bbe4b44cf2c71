#include "backends/cuda/attention_flash_fp8.h"

#include <cstdint>
#include <initializer_list>
#include <string>

#include "backends/cuda/cuda_check.h"
#include "backends/cuda/sm90a/flash_attention_fp8_launch.h"
#include "backends/cuda/tensor_maps.h"
#include "core/attention_fp8_layout.h"

namespace orochi::cuda {
namespace {

fp8_attention::Fp8AttentionLayout layout_of(const AttentionShape& s) {
  return fp8_attention::fp8_attention_layout(s.heads, s.s_q, s.s_kv);
}

Status check_call(const AttentionShape& shape, const FlashAttentionFp8Options& options,
                  std::initializer_list<const void*> pointers) {
  if (const std::string why = flash_attention_fp8_unsupported_reason(shape); !why.empty())
    return Status(ErrorCode::kUnsupported,
                  "Orochi's FP8 attention cannot run " + shape.to_string() + ": " + why + "; use bf16 attention");
  for (const void* p : pointers)
    if (p == nullptr || reinterpret_cast<uintptr_t>(p) % 16 != 0)
      return Status(ErrorCode::kInvalidArgument, "FP8 attention needs non-null, 16-byte aligned q, k, v and o");
  const size_t need = flash_attention_fp8_workspace_bytes(shape);
  if (options.workspace == nullptr || reinterpret_cast<uintptr_t>(options.workspace) % 256 != 0 ||
      options.workspace_bytes < need)
    return Status(ErrorCode::kInvalidArgument, "FP8 attention of " + shape.to_string() + " needs a 256-byte aligned " +
                                                   "device workspace of " + std::to_string(need) + " bytes, got " +
                                                   std::to_string(options.workspace_bytes) +
                                                   " (flash_attention_fp8_workspace_bytes)");
  return Status::ok();
}

}  // namespace

FlashAttentionFp8Options flash_attention_fp8_options(const backends::KernelOptions& kernels) {
  FlashAttentionFp8Options o;
  o.pingpong = kernels.flash_pingpong;
  o.promote_every = kernels.fp8_attention_promote_every;
  o.mma_sums = kernels.fp8_attention_mma_sums;
  return o;
}

std::string flash_attention_fp8_unsupported_reason(const AttentionShape& s) {
  if (s.head_dim != fp8_attention::kHeadDim)
    return "head dim " + std::to_string(s.head_dim) + " (the kernel is built for 128)";
  if (s.dtype != DType::kBF16) return "dtype other than bf16";
  if (s.causal) return "a causal mask";
  if (s.kv_head_count() != s.heads) return "grouped key/value heads";
  if (s.s_q <= 0 || s.s_kv <= 0 || s.heads <= 0) return "an empty shape " + s.to_string();
  // Tensor-map rows (heads · padded rows) and the grid stay within 32-bit coordinates.
  if (fp8_attention::tiles(s.s_q) * 128 * s.heads >= (int64_t{1} << 31) ||
      fp8_attention::tiles(s.s_kv) * 128 * s.heads >= (int64_t{1} << 31) || s.heads > 65535)
    return "a shape too large";
  if (!device_is_hopper()) return "a GPU that is not compute capability 9.0 (the kernel uses Hopper's FP8 wgmma and TMA)";
  return "";
}

size_t flash_attention_fp8_workspace_bytes(const AttentionShape& shape) {
  return static_cast<size_t>(layout_of(shape).bytes);
}

Status flash_attention_fp8_quantize(const void* q, const void* k, const void* v, const AttentionShape& shape,
                                    cudaStream_t stream, const FlashAttentionFp8Options& options) {
  OROCHI_RETURN_IF_ERROR(check_call(shape, options, {q, k, v}));
  sm90a::AttentionFp8PrepassLaunch l;
  l.q = q;
  l.k = k;
  l.v = v;
  l.workspace = static_cast<uint8_t*>(options.workspace);
  l.s_q = static_cast<int>(shape.s_q);
  l.s_kv = static_cast<int>(shape.s_kv);
  l.heads = static_cast<int>(shape.heads);
  return cuda_status(sm90a::launch_attention_fp8_prepass(l, stream), "FP8 attention pre-pass launch");
}

Status flash_attention_fp8_from_workspace(void* o, const AttentionShape& shape, cudaStream_t stream,
                                          const FlashAttentionFp8Options& options) {
  OROCHI_RETURN_IF_ERROR(check_call(shape, options, {o}));
  if (options.mma_sums && !options.pingpong)
    return Status(ErrorCode::kInvalidArgument,
                  "FP8 attention: the MMA row sums (fp8-attention-sums=mma) are built for the ping-pong schedule only "
                  "(flash-pingpong=1)");
  const int every = options.promote_every;
  if (every != 0 && every != 1 && every != 2 && every != 4)
    return Status(ErrorCode::kInvalidArgument, "FP8 attention: P V is promoted every 1, 2 or 4 key tiles, or never (0); got " +
                                                   std::to_string(every));
  if (!options.pingpong && every > 1)
    return Status(ErrorCode::kInvalidArgument,
                  "FP8 attention: promoting P V every 2 or 4 key tiles is built for the ping-pong schedule only "
                  "(flash-pingpong=1)");
  const fp8_attention::Fp8AttentionLayout lay = layout_of(shape);
  auto* ws = static_cast<uint8_t*>(options.workspace);
  sm90a::FlashAttentionFp8Launch l;
  const int64_t keys = lay.k_tiles * fp8_attention::kTile;
  OROCHI_RETURN_IF_ERROR(u8_rows_map(l.q, ws + lay.q_codes, shape.heads * lay.q_tiles * fp8_attention::kTile, 128, 128));
  OROCHI_RETURN_IF_ERROR(u8_rows_map(l.k, ws + lay.k_codes, shape.heads * keys, 128, 128));
  OROCHI_RETURN_IF_ERROR(u8_rows_map(l.vt, ws + lay.vt_codes, shape.heads * 128, keys, 128));
  l.q_scale = reinterpret_cast<const float*>(ws + lay.q_scale);
  l.k_scale = reinterpret_cast<const float*>(ws + lay.k_scale);
  l.v_scale = reinterpret_cast<const float*>(ws + lay.v_scale);
  l.o = o;
  l.s_q = static_cast<int>(shape.s_q);
  l.s_kv = static_cast<int>(shape.s_kv);
  l.heads = static_cast<int>(shape.heads);
  l.pingpong = options.pingpong;
  l.promote_every = options.promote_every;
  l.mma_sums = options.mma_sums;
  return cuda_status(sm90a::launch_flash_attention_fp8(l, stream), "FP8 attention launch");
}

Status flash_attention_fp8(const void* q, const void* k, const void* v, void* o, const AttentionShape& shape,
                           cudaStream_t stream, const FlashAttentionFp8Options& options) {
  OROCHI_RETURN_IF_ERROR(flash_attention_fp8_quantize(q, k, v, shape, stream, options));
  return flash_attention_fp8_from_workspace(o, shape, stream, options);
}

}  // namespace orochi::cuda
