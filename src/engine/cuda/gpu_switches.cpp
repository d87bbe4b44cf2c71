// The run switches as the GPUs of a run take them (engine/gpu_capability.h decides from each GPU's
// compute capability); every GPU model of the CUDA backend is made with these.
#include "backends/cuda/device.h"
#include "engine/cuda/cuda_backend.h"
#include "engine/gpu_capability.h"

namespace orochi::engine::cuda_backend {

Expected<RunSwitches> gpu_switches(const RunSwitches& switches, Precision precision, int first, int count) {
  OROCHI_ASSIGN_OR_RETURN(const std::vector<cuda::DeviceInfo> devices, cuda::list_devices());
  RunSwitches out = switches;
  for (int d = first; d < first + count; ++d) {
    if (d < 0 || d >= static_cast<int>(devices.size()))
      return invalid_argument("GPU " + std::to_string(d) + " is not visible (" + std::to_string(devices.size()) +
                              " GPUs)");
    const cuda::DeviceInfo& info = devices[d];
    // One GPU without the Hopper kernels puts the whole run on the generic path (`given` still
    // refuses a Hopper switch there).
    OROCHI_ASSIGN_OR_RETURN(out, switches_for_gpu(out, precision, {info.sm_major, info.sm_minor},
                                                  "GPU " + std::to_string(d) + " " + info.name));
  }
  return out;
}

}  // namespace orochi::engine::cuda_backend
