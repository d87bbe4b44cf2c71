// What the shared DiT layers (this folder) run on for one rank of a layout: the compute stream and
// the kernels chosen for it, the comm stream beside it and the stage timers. The model's runner
// owns all of them and lends them for each call; the layers keep nothing between calls.
#pragma once

#include <cuda_runtime_api.h>

namespace orochi::cuda {
class GemmRunner;
class QuantizedGemmRunner;
}

namespace orochi::layers::gpu {

class AttentionRunner;
class CommOverlap;
class StageTimer;
struct QuantizedScratch;

struct LayerContext {
  cudaStream_t stream = nullptr;         // compute: every GEMM and attention is enqueued here
  cuda::GemmRunner* gemm = nullptr;      // cuBLASLt, planned for this device
  bool gemm_sm90a = false;               // Orochi's sm_90a GEMM where it takes the operands
  // --precision fp8 / int8: the quantized GEMMs and the activation buffers they read (linear.h);
  // null in a bf16 run.
  cuda::QuantizedGemmRunner* quantized_gemm = nullptr;
  const QuantizedScratch* quantized = nullptr;
  bool fp8_fast_accum = false;           // the fp8 GEMMs skip their partial sums' promotion (fp8-gemm-accum=fast)
  AttentionRunner* attention = nullptr;  // flash or cuDNN, with its workspace
  CommOverlap* overlap = nullptr;        // the comm stream and its events; null on one GPU
  StageTimer* timer = nullptr;           // stages on the compute stream
  StageTimer* comm_timer = nullptr;      // collectives, on the comm stream
};

}  // namespace orochi::layers::gpu
