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

// The transformer's host memory as a GPU run loads it (load_weights / load_transformer_file with
// as_stored): every stored tensor mapped from the file as it is, each FP8 weight replaced by its
// dequantized bf16 copy (2 bytes per element, in RAM; the codes are not kept). From headers alone.
struct HostBytes {
  uint64_t mapped = 0;  // file pages of the tensors kept as stored (the page cache can evict them)
  uint64_t copies = 0;  // dequantized FP8 weights, allocated
  uint64_t total() const { return mapped + copies; }
};
HostBytes host_bytes_as_loaded(const weights::Checkpoint& checkpoint);

}  // namespace orochi::h3
