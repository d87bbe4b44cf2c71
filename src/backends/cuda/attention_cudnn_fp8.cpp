#include "backends/cuda/attention_cudnn_fp8.h"

#include <cuda_bf16.h>

#include <string>

#include "backends/cuda/cuda_check.h"
#include "backends/cuda/kernels/quantize_tensor_kernels.h"
#include "core/quantize_tensor.h"

namespace orochi::cuda {
namespace {

size_t align256(size_t n) { return (n + 255) / 256 * 256; }

AttentionShape fp8_shape_of(const AttentionShape& shape) {
  AttentionShape fp8 = shape;
  fp8.dtype = DType::kF8E4M3;
  return fp8;
}

Status check_bf16_shape(const AttentionShape& shape) {
  if (shape.dtype != DType::kBF16)
    return Status(ErrorCode::kInvalidArgument, "cuDNN FP8 attention quantizes bf16 operands, got " + shape.to_string());
  if (shape.s_q <= 0 || shape.s_kv <= 0 || shape.heads <= 0 || shape.head_dim <= 0 || shape.head_dim % 16 != 0)
    return Status(ErrorCode::kInvalidArgument,
                  "cuDNN FP8 attention needs a positive shape with a head dim multiple of 16, got " + shape.to_string());
  return Status::ok();
}

Status launch_status(cudaError_t err, const char* what) {
  if (err == cudaSuccess) return Status::ok();
  return Status(ErrorCode::kIo, std::string(what) + " failed: " + cudaGetErrorString(err));
}

}  // namespace

CudnnFp8Workspace cudnn_fp8_workspace_layout(const AttentionShape& shape) {
  const size_t q = static_cast<size_t>(shape.s_q * shape.heads * shape.head_dim);
  const size_t kv = static_cast<size_t>(shape.s_kv * shape.kv_head_count() * shape.head_dim);
  const size_t k_columns = static_cast<size_t>(shape.kv_head_count() * shape.head_dim);
  const size_t tiles = static_cast<size_t>((shape.s_kv + kColumnMeanTileRows - 1) / kColumnMeanTileRows);
  CudnnFp8Workspace w;
  size_t at = 0;
  auto take = [&at](size_t n) {
    const size_t here = at;
    at += align256(n);
    return here;
  };
  w.q_codes = take(q);
  w.k_codes = take(kv);
  w.v_codes = take(kv);
  w.o_codes = take(q);
  w.k_mean = take(k_columns * 4);
  w.k_mean_partial = take(tiles * k_columns * 4);
  w.scalars = take(CudnnFp8Workspace::kScalarCount * 4);
  w.bytes = at;
  return w;
}

CudnnFp8Attention::CudnnFp8Attention(CudnnAttention& cudnn, CudnnFp8AttentionOptions options)
    : cudnn_(cudnn), options_(options) {}

size_t CudnnFp8Attention::workspace_bytes(const AttentionShape& shape) { return cudnn_fp8_workspace_layout(shape).bytes; }

Status CudnnFp8Attention::prepare(const AttentionShape& shape) {
  OROCHI_RETURN_IF_ERROR(check_bf16_shape(shape));
  return cudnn_.prepare(fp8_shape_of(shape));
}

Expected<DType> CudnnFp8Attention::output_dtype(const AttentionShape& shape) {
  OROCHI_RETURN_IF_ERROR(check_bf16_shape(shape));
  return cudnn_.fp8_output_dtype(fp8_shape_of(shape));
}

Status CudnnFp8Attention::quantize(const void* q, const void* k, const void* v, const AttentionShape& shape,
                                   void* workspace, cudaStream_t stream) {
  OROCHI_RETURN_IF_ERROR(check_bf16_shape(shape));
  if (workspace == nullptr) return Status(ErrorCode::kInvalidArgument, "cuDNN FP8 attention: the workspace is null");
  OROCHI_ASSIGN_OR_RETURN(const DType output, output_dtype(shape));
  const CudnnFp8Workspace w = cudnn_fp8_workspace_layout(shape);
  char* base = static_cast<char*>(workspace);
  float* scalar = reinterpret_cast<float*>(base + w.scalars);
  using S = CudnnFp8Workspace;
  const auto* qb = static_cast<const __nv_bfloat16*>(q);
  const auto* kb = static_cast<const __nv_bfloat16*>(k);
  const auto* vb = static_cast<const __nv_bfloat16*>(v);
  const int64_t q_columns = shape.heads * shape.head_dim, kv_columns = shape.kv_head_count() * shape.head_dim;

  const float* k_offset = nullptr;
  if (options_.smooth_k) {
    auto* mean = reinterpret_cast<float*>(base + w.k_mean);
    OROCHI_RETURN_IF_ERROR(launch_status(
        kernels::launch_column_means_bf16(kb, shape.s_kv, kv_columns, kColumnMeanTileRows,
                                          reinterpret_cast<float*>(base + w.k_mean_partial), mean, stream),
        "K's column means"));
    k_offset = mean;
  }
  struct Operand {
    const __nv_bfloat16* x;
    int64_t rows, columns;
    const float* offset;
    size_t codes;
    int amax, descale;
    const char* name;
  };
  for (const Operand& op : {Operand{qb, shape.s_q, q_columns, nullptr, w.q_codes, S::kAmaxQ, S::kDescaleQ, "q"},
                            Operand{kb, shape.s_kv, kv_columns, k_offset, w.k_codes, S::kAmaxK, S::kDescaleK, "k"},
                            Operand{vb, shape.s_kv, kv_columns, nullptr, w.v_codes, S::kAmaxV, S::kDescaleV, "v"}}) {
    OROCHI_RETURN_IF_ERROR(launch_status(
        kernels::launch_tensor_amax_bf16(op.x, op.rows, op.columns, op.offset, scalar + op.amax, stream),
        (std::string(op.name) + "'s amax").c_str()));
    OROCHI_RETURN_IF_ERROR(launch_status(
        kernels::launch_encode_tensor_e4m3_bf16(op.x, op.rows, op.columns, op.offset, scalar + op.amax,
                                                reinterpret_cast<uint8_t*>(base + op.codes), scalar + op.descale,
                                                stream),
        (std::string(op.name) + "'s e4m3 codes").c_str()));
  }
  return launch_status(kernels::launch_attention_fp8_scales(scalar + S::kAmaxV, output == DType::kF8E4M3,
                                                            scalar + S::kDescaleS, scalar + S::kScaleS,
                                                            scalar + S::kScaleO, scalar + S::kDescaleO, stream),
                       "the FP8 attention's scales");
}

Status CudnnFp8Attention::attend(void* o, const AttentionShape& shape, void* workspace, cudaStream_t stream) {
  OROCHI_RETURN_IF_ERROR(check_bf16_shape(shape));
  if (workspace == nullptr) return Status(ErrorCode::kInvalidArgument, "cuDNN FP8 attention: the workspace is null");
  OROCHI_ASSIGN_OR_RETURN(const DType output, output_dtype(shape));
  const CudnnFp8Workspace w = cudnn_fp8_workspace_layout(shape);
  char* base = static_cast<char*>(workspace);
  float* scalar = reinterpret_cast<float*>(base + w.scalars);
  using S = CudnnFp8Workspace;
  CudnnFp8Scales scales;
  scales.descale_q = scalar + S::kDescaleQ;
  scales.descale_k = scalar + S::kDescaleK;
  scales.descale_v = scalar + S::kDescaleV;
  scales.descale_s = scalar + S::kDescaleS;
  scales.scale_s = scalar + S::kScaleS;
  scales.scale_o = scalar + S::kScaleO;
  scales.amax_s = scalar + S::kAmaxS;
  scales.amax_o = scalar + S::kAmaxO;
  const bool fp8_output = output == DType::kF8E4M3;
  void* o_cudnn = fp8_output ? base + w.o_codes : o;
  OROCHI_RETURN_IF_ERROR(cudnn_.run_fp8(base + w.q_codes, base + w.k_codes, base + w.v_codes, o_cudnn, scales,
                                        fp8_shape_of(shape), stream));
  if (!fp8_output) return Status::ok();
  return launch_status(kernels::launch_decode_tensor_e4m3_to_bf16(reinterpret_cast<const uint8_t*>(base + w.o_codes),
                                                                  shape.s_q * shape.heads * shape.head_dim,
                                                                  scalar + S::kDescaleO,
                                                                  static_cast<__nv_bfloat16*>(o), stream),
                       "O's dequantize");
}

Status CudnnFp8Attention::run(const void* q, const void* k, const void* v, void* o, const AttentionShape& shape,
                              void* workspace, cudaStream_t stream) {
  OROCHI_RETURN_IF_ERROR(quantize(q, k, v, shape, workspace, stream));
  return attend(o, shape, workspace, stream);
}

}  // namespace orochi::cuda
