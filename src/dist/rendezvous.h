// Where this process sits in a multi-host launch, read from the launcher's environment:
// torchrun (RANK, WORLD_SIZE, LOCAL_RANK, MASTER_ADDR, MASTER_PORT) or mpirun
// (OMPI_COMM_WORLD_RANK, OMPI_COMM_WORLD_SIZE, OMPI_COMM_WORLD_LOCAL_RANK). Parsing only: the
// NCCL bootstrap that uses it lives with the NCCL communicator.
#pragma once

#include <functional>
#include <optional>
#include <string>

#include "core/status.h"

namespace orochi::dist {

struct Rendezvous {
  int rank = 0;
  int world_size = 1;
  int local_rank = 0;               // this process's index on its host
  std::string master_addr;          // rank 0's host; empty for a single process (and optional for mpirun)
  int master_port = 0;              // 0 when master_addr is empty
  std::string launcher = "single";  // "single", "torchrun" or "mpirun"
};

// Reads one environment variable; nullopt when it is not set.
using EnvGetter = std::function<std::optional<std::string>(const std::string& name)>;

// No launcher variables: a single process (rank 0 of 1). Inconsistent ones (rank >= world size,
// numbers that do not parse, only one of RANK / WORLD_SIZE, a multi-process torchrun world without
// MASTER_ADDR, torchrun and mpirun variables that disagree) are invalid_argument with advice.
// LOCAL_RANK defaults to 0 and MASTER_PORT to 29500, torchrun's defaults.
Expected<Rendezvous> parse_rendezvous(const EnvGetter& env);

// parse_rendezvous over this process's environment.
Expected<Rendezvous> rendezvous_from_environment();

}  // namespace orochi::dist
