#include "dist/rendezvous.h"

#include <charconv>
#include <cstdlib>

#include "core/env.h"

namespace orochi::dist {
namespace {

constexpr int kDefaultMasterPort = 29500;  // torchrun's

// The variable as a whole decimal integer in [min, max], or nullopt when unset.
Expected<std::optional<int>> read_int(const EnvGetter& env, const std::string& name, int min, int max) {
  const std::optional<std::string> text = env(name);
  if (!text) return std::optional<int>();
  int value = 0;
  const char* end = text->data() + text->size();
  const auto [ptr, ec] = std::from_chars(text->data(), end, value);
  if (text->empty() || ec != std::errc() || ptr != end || value < min || value > max)
    return invalid_argument(name + "='" + *text + "' is not an integer in [" + std::to_string(min) + ", " +
                            std::to_string(max) + "]; fix or unset it (the launcher normally sets it)");
  return std::optional<int>(value);
}

struct LaunchVars {
  std::optional<int> rank, world, local;
};

Expected<LaunchVars> read_launch(const EnvGetter& env, const std::string& rank, const std::string& world,
                                 const std::string& local) {
  LaunchVars v;
  OROCHI_ASSIGN_OR_RETURN(v.rank, read_int(env, rank, 0, 1 << 24));
  OROCHI_ASSIGN_OR_RETURN(v.world, read_int(env, world, 1, 1 << 24));
  OROCHI_ASSIGN_OR_RETURN(v.local, read_int(env, local, 0, 1 << 24));
  if (v.rank.has_value() != v.world.has_value())
    return invalid_argument(rank + " and " + world + " must be set together (found only " + (v.rank ? rank : world) +
                            "); launch with torchrun or mpirun, or unset both");
  if (v.rank && *v.rank >= *v.world)
    return invalid_argument(rank + "=" + std::to_string(*v.rank) + " is not below " + world + "=" +
                            std::to_string(*v.world) + "; ranks count from 0");
  if (v.local && v.world && *v.local >= *v.world)
    return invalid_argument(local + "=" + std::to_string(*v.local) + " is not below " + world + "=" +
                            std::to_string(*v.world));
  return v;
}

}  // namespace

Expected<Rendezvous> parse_rendezvous(const EnvGetter& env) {
  OROCHI_ASSIGN_OR_RETURN(LaunchVars torchrun, read_launch(env, "RANK", "WORLD_SIZE", "LOCAL_RANK"));
  OROCHI_ASSIGN_OR_RETURN(
      LaunchVars mpi, read_launch(env, "OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE", "OMPI_COMM_WORLD_LOCAL_RANK"));
  if (torchrun.rank && mpi.rank && (*torchrun.rank != *mpi.rank || *torchrun.world != *mpi.world))
    return invalid_argument("RANK/WORLD_SIZE (" + std::to_string(*torchrun.rank) + "/" +
                            std::to_string(*torchrun.world) + ") disagree with OMPI_COMM_WORLD_RANK/SIZE (" +
                            std::to_string(*mpi.rank) + "/" + std::to_string(*mpi.world) +
                            "); use one launcher, or unset the stale variables");
  Rendezvous r;
  const LaunchVars& used = torchrun.rank ? torchrun : mpi;
  if (used.rank) {
    r.launcher = torchrun.rank ? "torchrun" : "mpirun";
    r.rank = *used.rank;
    r.world_size = *used.world;
    r.local_rank = used.local.value_or(0);
  }
  if (std::optional<std::string> addr = env("MASTER_ADDR"); addr && !addr->empty()) r.master_addr = *addr;
  OROCHI_ASSIGN_OR_RETURN(std::optional<int> port, read_int(env, "MASTER_PORT", 1, 65535));
  if (r.launcher == "torchrun" && r.world_size > 1 && r.master_addr.empty())
    return invalid_argument("WORLD_SIZE=" + std::to_string(r.world_size) +
                            " but MASTER_ADDR is not set: set it to rank 0's host name or address "
                            "(torchrun sets it from --rdzv-endpoint / --master-addr)");
  if (!r.master_addr.empty()) r.master_port = port.value_or(kDefaultMasterPort);
  if (r.world_size == 1) {  // nobody to meet
    r.master_addr.clear();
    r.master_port = 0;
  }
  return r;
}

Expected<Rendezvous> rendezvous_from_environment() {
  return parse_rendezvous([](const std::string& name) { return env_value(name.c_str()); });
}

}  // namespace orochi::dist
