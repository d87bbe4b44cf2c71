// The process environment, read in one place: the engine's options layer (engine/run_switches.h)
// and the few variables that are environment by nature (OROCHI_LOG, OROCHI_FFMPEG and PATH, a
// multi-host launcher's RANK/WORLD_SIZE, NCCL's own). Nothing else calls getenv.
#pragma once

#include <optional>
#include <string>
#include <vector>

namespace orochi {

// The variable's value, or none when it is unset.
std::optional<std::string> env_value(const char* name);

// Names of the set variables that start with `prefix`, sorted.
std::vector<std::string> env_names_with_prefix(const std::string& prefix);

}  // namespace orochi
