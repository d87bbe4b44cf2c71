// A parallel context over in-process CPU ranks (dist/cpu_comm.h groups): the parallel code's tests
// and CPU runs fan out and find their groups exactly as on GPUs.
#pragma once

#include <memory>

#include "dist/parallel_context.h"

namespace orochi::dist {

// `ranks` workers (at least grid.world()), CpuCommGroup groups for the grid.
Expected<std::shared_ptr<ParallelContext>> make_cpu_context(int ranks, RankGrid grid, GroupSettings settings = {});

}  // namespace orochi::dist
