// The run switches as the GPUs of a run take them (engine/gpu_capability.h decides from each GPU's
// compute capability); every GPU model of the CUDA backend is made with these.
#include <cuda_runtime_api.h>

#include "backends/cuda/cuda_check.h"
#include "engine/gpu_capability.h"

namespace orochi::engine {

Expected<RunSwitches> gpu_switches(const RunSwitches& switches, Precision precision, int first, int count) {
  int visible = 0;
  if (cudaGetDeviceCount(&visible) != cudaSuccess) visible = 0;
  RunSwitches out = switches;
  for (int d = first; d < first + count; ++d) {
    if (d < 0 || d >= visible)
      return invalid_argument("GPU " + std::to_string(d) + " is not visible (" + std::to_string(visible) + " GPUs)");
    // The properties only: no context is made on the GPU (cudaMemGetInfo would make one).
    cudaDeviceProp prop{};
    OROCHI_CUDA_RETURN_IF_ERROR(cudaGetDeviceProperties(&prop, d));
    // One GPU without the Hopper kernels puts the whole run on the generic path (a Hopper switch
    // given is still refused there).
    OROCHI_ASSIGN_OR_RETURN(out, switches_for_gpu(out, precision, {prop.major, prop.minor},
                                                  "GPU " + std::to_string(d) + " " + prop.name));
  }
  return out;
}

}  // namespace orochi::engine
