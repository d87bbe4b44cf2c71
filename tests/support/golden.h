// Loads the tiny H3 golden (tests/data/h3_tiny, made by scripts/golden/make_h3_tiny.py).
#pragma once

#include <string>

#include "models/h3/transformer.h"
#include "weights/checkpoint.h"

namespace orochi::testing {

std::string h3_tiny_dir();
// The golden tensor `name` as f32 (or i64) with a leading batch dim of 1 dropped.
Tensor golden_tensor(const weights::Checkpoint& golden, const std::string& name);
// The packed inputs stored under in.*.
h3::H3Inputs golden_inputs(const weights::Checkpoint& golden);

}  // namespace orochi::testing
