// engine/gpu_capability.h's gpu_switches in a build without CUDA: there is no GPU to run on.
#include "engine/gpu_capability.h"

namespace orochi::engine {

Expected<RunSwitches> gpu_switches(const RunSwitches&, Precision, int, int) {
  return unsupported("this build has no CUDA backend, so there is no GPU to run on; use --device cpu");
}

}  // namespace orochi::engine
