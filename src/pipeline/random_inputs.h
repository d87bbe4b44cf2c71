// Random H3 rows over a packed layout (counter-based noise: the same seed gives the same numbers
// on every machine), for `orochi forward` and `orochi bench dit`.
#pragma once

#include <cstdint>

#include "models/h3/transformer.h"
#include "pipeline/packed_layout.h"

namespace orochi::pipeline {

// Video, audio and text rows from N(0, 1) streams 1, 2 and 3 of `seed`, plus the layout's indices,
// tags, positions and the per-row timestep indices.
h3::H3Inputs random_h3_inputs(const h3::H3Config& config, const PackedLayout& layout, const RowTimesteps& timesteps,
                              uint64_t seed);

}  // namespace orochi::pipeline
