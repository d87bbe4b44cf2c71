// The MiniMax-H3 transformer's parameters under their diffusers names, with shapes from the config,
// and the module group each belongs to (for `orochi inspect` and the planner).
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "core/tensor.h"
#include "models/h3/config.h"

namespace orochi::h3 {

enum class ParamGroup { kAttention, kFfn, kAdaln, kEmbedding, kHead, kNorm };
inline constexpr ParamGroup kAllParamGroups[] = {ParamGroup::kAttention, ParamGroup::kFfn,
                                                 ParamGroup::kAdaln,     ParamGroup::kEmbedding,
                                                 ParamGroup::kHead,      ParamGroup::kNorm};
const char* param_group_name(ParamGroup group);

struct ParamSpec {
  std::string name;  // diffusers name, e.g. "transformer_blocks.3.attn.to_q.weight"
  Shape shape;
};

// Every parameter the model needs, in a stable order (embedders, refiner, blocks, output).
std::vector<ParamSpec> h3_parameters(const H3Config& config);

// Module group of a parameter name in either the diffusers or the original release naming.
ParamGroup param_group_of(std::string_view name);

// The released checkpoint's f32 islands (diffusers' _keep_in_fp32_modules: patch projections, time
// MLP, output heads); every other parameter runs in bf16 on the GPU. Diffusers names.
bool is_f32_island(std::string_view name);

// The weights a --precision other than bf16 stores quantized (codes plus one f32 scale per output
// channel, core/quantize.h): the 2-D linears of the transformer blocks (q, k, v, attention out, FFN
// in and out), where the FLOPs are. The refiner, embedders, AdaLN projections, heads, norms and
// biases stay as they are. Diffusers names.
bool is_quantized_linear(std::string_view name);

}  // namespace orochi::h3
