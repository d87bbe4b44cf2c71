// Random video VAE encoder weights, for the built-in demo (drawn on the CPU) and for --random-weights
// benchmarks (drawn on the GPU: GpuVideoEncoder::init_random). One rule for both: every parameter is
// N(mean, std) by its kind (GroupNorm weights N(1, 0.1), biases N(0, 0.05), kernels N(0, 1/sqrt(fan_in)),
// so the activations stay O(1) through the GroupNorm'd levels), and the i-th parameter assembled
// (1-based) draws the counter-based stream kEncoderRandomStream + i of the seed. A draw of the same
// seed on either device gives the same model (up to the last ulp of the device's log/sin/cos).
#pragma once

#include <cstdint>
#include <functional>

#include "core/status.h"
#include "core/tensor.h"
#include "models/h3_video_vae/encoder_weights.h"

namespace orochi::h3vae {

inline constexpr uint64_t kEncoderRandomStream = 3000;

struct NormalInit {
  float mean = 0.0f, stddev = 1.0f;
};

// The rule above for one parameter.
NormalInit encoder_random_init(const ParamSpec& spec);

// f32 host tensor of `shape`: element j = init.mean + init.stddev · counter_normal(seed, stream, j),
// the seed being the drawer's.
using NormalDraw = std::function<Expected<Tensor>(const Shape& shape, uint64_t stream, NormalInit init)>;

// The encoder of `config` with every parameter drawn by `draw` under the rule above.
Expected<EncoderWeights> random_encoder_weights(const VideoVaeConfig& config, const NormalDraw& draw);

}  // namespace orochi::h3vae
