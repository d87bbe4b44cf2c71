// Random audio VAE encoder weights, for the built-in demo (drawn on the CPU) and for --random-weights
// benchmarks (drawn on the GPU: GpuAudioEncoder::init_random). One rule for both: Snake frequencies
// N(1, 0.1), weight-norm gains exactly 1 (each folded filter has unit norm, so the DAC trunk keeps
// the signal's scale), LayerNorm weights N(1, 0.1), biases N(0, 0.02), other matrices and kernels
// N(0, 1/sqrt(fan_in)); the i-th tensor assembled (1-based) draws the counter-based stream
// kEncoderRandomStream + i of the seed, so a draw of the same seed on either device gives the same
// model (up to the last ulp of the device's log/sin/cos).
#pragma once

#include <cstdint>
#include <functional>

#include "core/status.h"
#include "core/tensor.h"
#include "models/h3_audio_vae/encoder_weights.h"

namespace orochi::h3_audio {

inline constexpr uint64_t kEncoderRandomStream = 7000;

struct NormalInit {
  float mean = 0.0f, stddev = 1.0f;
};

// The rule above for one tensor (weight-norm naming: weight_g / weight_v).
NormalInit encoder_random_init(const TensorSpec& spec);

// f32 host tensor of `shape`: element j = init.mean + init.stddev · counter_normal(seed, stream, j),
// the seed being the drawer's.
using NormalDraw = std::function<Expected<Tensor>(const Shape& shape, uint64_t stream, NormalInit init)>;

// The encoder of `config` (weight norm folded by assemble_encoder) with every tensor drawn by `draw`.
Expected<AudioEncoderWeights> random_encoder_weights(const AudioVaeConfig& config, const NormalDraw& draw);

}  // namespace orochi::h3_audio
