// Which kernels a run may use on a GPU, from its compute capability: the one place that decides.
// Orochi's Hopper kernels (the sm_90a flash attention and GEMM, src/backends/cuda/sm90a/) are built
// for sm_90a, whose code runs on compute capability 9.0 only; every other GPU (A100 8.0, RTX 3090 /
// A6000 8.6, RTX 4090 8.9) takes the generic path: cuDNN's attention and cuBLASLt's GEMMs, built
// for the architectures OROCHI_CUDA_ARCHS names (CMakeLists.txt). FP8 GEMMs need 8.9 or later.
#pragma once

#include <string>

#include "core/precision.h"
#include "core/status.h"
#include "engine/run_switches.h"

namespace orochi::engine {

struct ComputeCapability {
  int major = 0, minor = 0;
  std::string to_string() const;  // "8.6"
};

bool runs_sm90a(ComputeCapability cc);  // 9.0: where sm_90a code runs
bool has_fp8(ComputeCapability cc);     // 8.9 and later: e4m3 tensor cores (cuBLASLt's fp8 GEMMs)

// The switches a run on `gpu` (its name, for messages) of capability `cc` takes: as given, with the
// Hopper kernels turned off where they do not run or kernels=generic asks so. A switch that asked
// for one of them there (attention=flash, gemm=sm90a, the flash kernel's variants) is refused,
// naming the GPU and what to drop; so is --precision fp8 below 8.9 ("use --precision int8").
Expected<RunSwitches> switches_for_gpu(const RunSwitches& switches, Precision precision, ComputeCapability cc,
                                       const std::string& gpu);

// `switches` as GPUs first..first+count-1 run them: switches_for_gpu over each GPU's capability (one
// GPU without the Hopper kernels puts the whole run on the generic path). Implemented by the GPU
// backend (engine/cuda/gpu_switches.cpp; engine/no_gpu/ says there is no GPU). Engine::open checks
// it before loading any weight; every GPU model is made with its result.
Expected<RunSwitches> gpu_switches(const RunSwitches& switches, Precision precision, int first, int count);

// FP8 attention (backends::KernelOptions::fp8_attention of switches resolved for the GPUs, or as
// given on the CPU) where it can run: on a GPU, and on one GPU for now (issue 25). generate, serve,
// bench dit and plan all ask here, before any weight is read.
Status check_attention_precision(const RunSwitches& switches, Precision precision, bool on_gpu, int gpus);

}  // namespace orochi::engine
