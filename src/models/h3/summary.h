// Parameter counts and bytes per module group, from a checkpoint's headers (no weight is read) or
// from a config alone (the built-in demo model). What `orochi inspect` prints and the planner uses.
#pragma once

#include <array>
#include <cstdint>
#include <map>

#include "core/dtype.h"
#include "models/h3/config.h"
#include "models/h3/parameters.h"
#include "weights/checkpoint.h"

namespace orochi::h3 {

struct GroupStats {
  int64_t params = 0;
  uint64_t bytes = 0;
  std::map<DType, int64_t> params_by_dtype;
};

struct ParamSummary {
  std::map<ParamGroup, GroupStats> groups;
  GroupStats total;
};

// `prefix` is stripped before grouping (e.g. "model.diffusion_model.").
ParamSummary summarize_checkpoint(const weights::Checkpoint& checkpoint, const std::string& prefix);
ParamSummary summarize_config(const H3Config& config, DType dtype);

}  // namespace orochi::h3
