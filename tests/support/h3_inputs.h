// H3 inputs for tests from a packed layout written out by hand: which packed rows hold text, audio
// and video, each row's timestep index and RoPE position; the modality rows are random normal.
#pragma once

#include <cstdint>
#include <vector>

#include "models/h3/transformer.h"

namespace orochi::testing {

struct PackedRows {
  std::vector<int64_t> text, audio, video;  // packed row of each modality row
  std::vector<int64_t> timestep_index;      // per packed row
  std::vector<float> positions;             // per packed row: t, h, w
};

// Token tags follow from the index lists; text/audio/video rows draw from seeds seed+1..seed+3.
h3::H3Inputs h3_inputs(const h3::H3Config& c, const PackedRows& rows, uint64_t seed);

}  // namespace orochi::testing
