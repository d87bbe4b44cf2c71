// Quantization on the GPU, bit for bit what core/quantize.h and core/fp8.h compute on the host:
// per-row scales and codes of a bf16 or f32 matrix (weights per output channel at load,
// activations per token), and the formats' elementwise conversions.
// Conventions as in ops.h: CUDA tensors, outputs passed in or allocated from an arena, shape and
// dtype mistakes are caller bugs (OROCHI_CHECK), a failed launch is a Status.
#pragma once

#include <cuda_runtime_api.h>

#include "backends/cuda/device_memory.h"
#include "core/fp8.h"
#include "core/quantize.h"
#include "core/status.h"
#include "core/tensor.h"

namespace orochi::cuda {

// x [R, C] bf16 or f32 -> q.codes [R, C] (kF8E4M3 or kI8, the format) and q.scales [R] f32.
Status quantize_rows(const Tensor& x, const RowQuantized& q, cudaStream_t stream);
Expected<RowQuantized> quantize_rows(const Tensor& x, DType format, DeviceArena& arena, cudaStream_t stream);

// Elementwise, no scale: in f32 -> out u8 codes of `format` (saturating, nearest even), and back.
Status encode_fp8(const Tensor& in, Fp8Format format, const Tensor& out, cudaStream_t stream);
Status decode_fp8(const Tensor& in, Fp8Format format, const Tensor& out, cudaStream_t stream);
// f32 -> i8 (nearest even, clamped to [-127, 127], NaN -> 0), and back.
Status encode_int8(const Tensor& in, const Tensor& out, cudaStream_t stream);

}  // namespace orochi::cuda
