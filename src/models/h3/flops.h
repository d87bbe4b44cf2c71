// Floating-point work of one H3 denoiser forward (a multiply-add counts 2), split into the GEMM and
// attention parts, for benchmark reports (MODELS_H3.md §8).
#pragma once

#include <cstdint>

#include "models/h3/config.h"

namespace orochi::h3 {

struct ForwardFlops {
  double linear = 0;     // block, refiner and embedder GEMMs
  double attention = 0;  // QK^T and PV of every block and refiner block
  double total() const { return linear + attention; }
};

// rows = packed S, text_rows = L. AdaLN projections are excluded: they run once per request.
ForwardFlops forward_flops(const H3Config& config, int64_t rows, int64_t text_rows);

}  // namespace orochi::h3
