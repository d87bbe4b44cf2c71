// A short request on the built-in demo model for engine tests: 22 frames (the shortest t2va clip),
// 2 steps, a 64x64 canvas, 8 random text rows.
#pragma once

#include <cstdint>

#include "engine/generate_request.h"

namespace orochi::testing {

inline engine::GenerateRequest short_demo_request(uint64_t seed = 0) {
  engine::GenerateRequest r;
  r.width = 64;
  r.height = 64;
  r.frames = 22;
  r.steps = 2;
  r.text_rows = 8;
  r.seed = seed;
  return r;
}

}  // namespace orochi::testing
