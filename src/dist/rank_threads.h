// Runs one function per rank on its own thread (in-process CPU ranks, or one worker per GPU).
#pragma once

#include <functional>
#include <vector>

#include "core/status.h"

namespace orochi::dist {

// Calls fn(rank) for rank 0..ranks-1 concurrently, one std::thread each, joins them all and
// returns each rank's Status. An exception escaping fn (a failed OROCHI_CHECK) becomes that rank's
// kInternal Status instead of terminating the process.
std::vector<Status> run_on_ranks(int ranks, const std::function<Status(int rank)>& fn);

}  // namespace orochi::dist
