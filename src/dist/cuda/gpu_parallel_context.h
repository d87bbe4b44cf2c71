// The parallel context of a GPU run (dist/parallel_context.h): one worker per GPU of this process,
// each rank's comm stream, and the layout's groups on them: NCCL for TP's sums, and for SP's
// Ulysses exchanges the GPUs' copy engines (dist/cuda/peer_copy_comm.h) when every SP pair has
// peer access, NCCL otherwise. The engine's CUDA backend makes it and passes it to the models.
#pragma once

#include <cuda_runtime_api.h>

#include <chrono>
#include <memory>
#include <vector>

#include "dist/parallel_context.h"
#include "dist/parallel_options.h"

namespace orochi::dist {

struct GpuParallelOptions {
  int tp = 1, sp = 1;
  std::chrono::milliseconds comm_deadline{60'000};  // --comm-timeout
  FaultInjection fault = {};                         // tests only: applied to the first TP or SP group
  // SP exchanges by copy engines where every pair has peer access (so they overlap attention and
  // GEMMs); false: NCCL always.
  bool sp_copy_engines = true;
  PeerCopyPace pace = {};  // the copy-engine groups' push pieces (the peer-pace switch)
};

// Workers on `devices` (at least tp x sp of them; the layout's ranks are the first tp x sp, which
// must be different GPUs). With more than one rank, each rank gets a comm stream of the highest
// priority on its GPU, where its collectives run.
Expected<std::shared_ptr<ParallelContext>> make_gpu_context(const std::vector<int>& devices,
                                                            const GpuParallelOptions& options = {});

// World rank `rank`'s comm stream in a GPU context (null on one GPU).
inline cudaStream_t comm_stream(const ParallelContext& context, int rank) {
  return static_cast<cudaStream_t>(context.comm_stream(rank));
}

}  // namespace orochi::dist
