// Counter-based random weights of a Qwen3-VL text stack and vision tower, for benchmarks and for
// the full-size comparisons with transformers (scripts/device/compare_qwen3vl_presentation.py
// regenerates the same numbers in torch through scripts/device/philox_torch.py).
//
// Every tensor is one Philox stream under one seed; value i = fma(std, counter_normal(seed,
// stream, i), mean) in f32 (what cuda::fill_normal computes), rounded to bf16 on the GPU.
//   Text (GpuTextEncoder::init_random): stream 0 the embedding N(0, 1); then per layer 10 streams:
//     input_layernorm, post_attention_layernorm, q_norm, k_norm (1 + N(0, 0.05)), q, k, v, o,
//     [up; gate] as one [2·intermediate, hidden] tensor, down (N(0, 0.5 / sqrt(fan_in))).
//   Vision (GpuVisionTower::init_random): streams kVisionRandomStreamBase + j for the j-th tensor
//     of vision_random_plan() (the GPU tower's upload order): linear weights N(0, 1 / sqrt(fan_in)),
//     biases N(0, 0.02), LayerNorm weights 1 + N(0, 0.05) and biases N(0, 0.02), the position
//     table N(0, 0.5).
// These host versions (f32) are the statement of the rules the GPU fills follow; the GPU test
// checks that both give the same model.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/tensor.h"
#include "models/qwen3vl/text_weights.h"
#include "models/qwen3vl/vision_weights.h"

namespace orochi::qwen3vl {

// The vision streams start here, so one seed covers the text stack and the tower.
inline constexpr uint64_t kVisionRandomStreamBase = uint64_t{1} << 20;

struct RandomTensorInit {
  std::string name;  // transformers' name under Qwen3VLModel.visual
  Shape shape;
  float mean = 0.0f, stddev = 1.0f;
};

// The tower's tensors in the GPU upload order (patch embedding weight and bias, the position
// table, per block norm1, qkv, proj, norm2, fc1, fc2 (weight then bias each), the merger, then the
// DeepStack mergers (norm, fc1, fc2 each)), with their init.
std::vector<RandomTensorInit> vision_random_plan(const VisionConfig& config);

// Host f32 weights following the rules above.
VisionWeights random_vision_weights(const VisionConfig& config, uint64_t seed);
TextWeights random_text_weights(const TextConfig& config, int64_t layers, uint64_t seed);

// N(mean, stddev) of stream `stream`: fma(stddev, counter_normal(seed, stream, i), mean), f32.
Tensor random_normal_tensor(const Shape& shape, uint64_t seed, uint64_t stream, float mean, float stddev);

}  // namespace orochi::qwen3vl
