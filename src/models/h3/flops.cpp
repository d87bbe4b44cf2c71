#include "models/h3/flops.h"

namespace orochi::h3 {

ForwardFlops forward_flops(const H3Config& c, int64_t rows, int64_t text_rows) {
  const double S = static_cast<double>(rows), L = static_cast<double>(text_rows);
  const double H = static_cast<double>(c.hidden_size), inner = static_cast<double>(c.inner_dim());
  const double F = static_cast<double>(c.ffn_dim);
  const double block_linear_per_row = 2.0 * (4.0 * H * inner + 3.0 * H * F);  // qkv + out, ffn in (2F) + out
  const double attention_per_pair = 4.0 * inner;                              // QK^T and PV
  ForwardFlops f;
  f.linear = block_linear_per_row * (S * c.num_layers + L * c.num_refiner_layers) +
             2.0 * L * c.text_dim * H +                                             // context embedder
             2.0 * S * H * (c.video_patch_dim() + c.audio_in_channels);             // both heads, upper bound
  f.attention = attention_per_pair * (S * S * c.num_layers + L * L * c.num_refiner_layers);
  return f;
}

}  // namespace orochi::h3
