#include "models/qwen3vl/cuda/gpu_vision_tower.h"

#include <string>

#include "backends/cuda/cuda_check.h"
#include "backends/cuda/ops.h"
#include "backends/cuda/random_fill.h"
#include "models/qwen3vl/cuda/vision_ops.h"
#include "models/qwen3vl/random_weights.h"
#include "models/qwen3vl/vision_layout.h"

namespace orochi::qwen3vl::gpu {

struct VisionGpuLinear {
  Tensor weight, bias;  // bf16 [out, in], [out]
};
struct VisionGpuNorm {
  Tensor weight, bias;
};
struct VisionGpuBlock {
  VisionGpuNorm norm1, norm2;
  VisionGpuLinear qkv, proj, fc1, fc2;
};
struct VisionGpuMerger {
  VisionGpuNorm norm;
  VisionGpuLinear fc1, fc2;
  bool norm_after_shuffle = false;
};
struct VisionGpuWeights {
  VisionGpuLinear patch_embed;  // [hidden, 3·tp·p·p]
  Tensor pos_embed;             // [side², hidden]
  std::vector<VisionGpuBlock> blocks;
  VisionGpuMerger merger;
  std::vector<VisionGpuMerger> deepstack;
};

// Every buffer for max_patches patches (N) and max_patches / 4 tokens (M); a call uses row slices.
struct VisionGpuActivations {
  Tensor pixels;                 // bf16 [N, 3·tp·p·p]
  Tensor h, x, o, y;             // bf16 [N, hidden]: residual stream, normed, attention output, branch output
  Tensor qkv;                    // bf16 [N, 3·hidden]
  Tensor q, k, v;                // bf16 [N, heads, head_dim]
  Tensor mlp;                    // bf16 [N, intermediate]
  Tensor cos, sin;               // f32 [N, head_dim]
  Tensor pos_index;              // i64 [N·4]
  Tensor pos_weight;             // f32 [N·4]
  Tensor merged;                 // bf16 [M, 4·hidden]: the merger's fc1 output (and DeepStack's norm)
  std::vector<Tensor> outputs;   // bf16 [M, out]: the merger, then each DeepStack merger
  Tensor output_f32;             // f32 [M, out]: the cast for download
};

namespace {

size_t aligned(size_t bytes) {
  return (bytes + cuda::DeviceArena::kAlignment - 1) / cuda::DeviceArena::kAlignment * cuda::DeviceArena::kAlignment;
}

size_t bf16_bytes(int64_t numel) { return aligned(static_cast<size_t>(numel) * 2); }

// The weights' shapes, in upload order (the weight arena's size is their sum).
std::vector<Shape> weight_shapes(const VisionConfig& c) {
  const int64_t H = c.hidden_size, I = c.intermediate_size, W = c.merged_width(), O = c.out_hidden_size;
  std::vector<Shape> s = {{H, c.patch_values()}, {H}, {c.num_position_embeddings, H}};
  for (int64_t i = 0; i < c.depth; ++i)
    for (const Shape& b : std::vector<Shape>{{H}, {H}, {3 * H, H}, {3 * H}, {H, H}, {H}, {H}, {H}, {I, H}, {I}, {H, I}, {H}})
      s.push_back(b);
  for (size_t m = 0; m <= c.deepstack_visual_indexes.size(); ++m) {
    const int64_t norm = m == 0 ? H : W;
    for (const Shape& b : std::vector<Shape>{{norm}, {norm}, {W, W}, {W}, {O, W}, {O}}) s.push_back(b);
  }
  return s;
}

template <typename T>
T* ptr(const Tensor& t) {
  return static_cast<T*>(t.raw_data());
}

}  // namespace

size_t vision_weight_bytes(const VisionConfig& c) {
  size_t total = 0;
  for (const Shape& s : weight_shapes(c)) total += bf16_bytes(shape_numel(s));
  return total;
}

size_t vision_activation_bytes(const VisionConfig& c, int64_t N) {
  const int64_t H = c.hidden_size, D = c.head_dim(), M = N / c.merge_unit(), O = c.out_hidden_size;
  size_t total = bf16_bytes(N * c.patch_values()) + 4 * bf16_bytes(N * H) + bf16_bytes(N * 3 * H) +
                 3 * bf16_bytes(N * H) + bf16_bytes(N * c.intermediate_size) + 2 * aligned(N * D * 4) +
                 2 * aligned(N * 4 * 8) + bf16_bytes(M * c.merged_width()) +
                 (c.deepstack_visual_indexes.size() + 1) * bf16_bytes(M * O) + aligned(M * O * 4);
  return total;
}

Expected<std::unique_ptr<GpuVisionTower>> GpuVisionTower::create(const VisionConfig& config, int device,
                                                                 int64_t max_patches) {
  OROCHI_RETURN_IF_ERROR(config.validate());
  if (max_patches <= 0 || max_patches % config.merge_unit() != 0)
    return invalid_argument("max_patches must be a positive multiple of " + std::to_string(config.merge_unit()) +
                            ", got " + std::to_string(max_patches));
  std::unique_ptr<GpuVisionTower> t(new GpuVisionTower());
  t->config_ = config;
  t->device_ = device;
  t->max_patches_ = max_patches;
  OROCHI_CUDA_RETURN_IF_ERROR(cudaSetDevice(device));
  OROCHI_CUDA_RETURN_IF_ERROR(cudaStreamCreateWithFlags(&t->stream_, cudaStreamNonBlocking));
  t->attention_ = std::make_unique<cuda::CudnnAttention>(t->stream_);
  OROCHI_ASSIGN_OR_RETURN(t->weight_arena_,
                          cuda::DeviceArena::create(device, vision_weight_bytes(config), "Qwen3-VL vision weights"));
  OROCHI_ASSIGN_OR_RETURN(t->activation_arena_, cuda::DeviceArena::create(device, vision_activation_bytes(config, max_patches),
                                                                          "Qwen3-VL vision activations"));
  OROCHI_ASSIGN_OR_RETURN(t->gemm_, cuda::GemmRunner::create(device));
  t->gemm_->set_autotune(false);  // the heuristic's pick: the same features every run

  const int64_t N = max_patches, M = N / config.merge_unit(), H = config.hidden_size;
  auto& A = *(t->act_ = std::make_unique<VisionGpuActivations>());
  cuda::DeviceArena& arena = *t->activation_arena_;
  OROCHI_ASSIGN_OR_RETURN(A.pixels, arena.tensor({N, config.patch_values()}, DType::kBF16));
  for (Tensor* x : {&A.h, &A.x, &A.o, &A.y}) {
    OROCHI_ASSIGN_OR_RETURN(*x, arena.tensor({N, H}, DType::kBF16));
  }
  OROCHI_ASSIGN_OR_RETURN(A.qkv, arena.tensor({N, 3 * H}, DType::kBF16));
  for (Tensor* x : {&A.q, &A.k, &A.v}) {
    OROCHI_ASSIGN_OR_RETURN(*x, arena.tensor({N, config.num_heads, config.head_dim()}, DType::kBF16));
  }
  OROCHI_ASSIGN_OR_RETURN(A.mlp, arena.tensor({N, config.intermediate_size}, DType::kBF16));
  OROCHI_ASSIGN_OR_RETURN(A.cos, arena.tensor({N, config.head_dim()}, DType::kF32));
  OROCHI_ASSIGN_OR_RETURN(A.sin, arena.tensor({N, config.head_dim()}, DType::kF32));
  OROCHI_ASSIGN_OR_RETURN(A.pos_index, arena.tensor({N * 4}, DType::kI64));
  OROCHI_ASSIGN_OR_RETURN(A.pos_weight, arena.tensor({N * 4}, DType::kF32));
  OROCHI_ASSIGN_OR_RETURN(A.merged, arena.tensor({M, config.merged_width()}, DType::kBF16));
  for (size_t k = 0; k <= config.deepstack_visual_indexes.size(); ++k) {
    OROCHI_ASSIGN_OR_RETURN(Tensor out, arena.tensor({M, config.out_hidden_size}, DType::kBF16));
    A.outputs.push_back(std::move(out));
  }
  OROCHI_ASSIGN_OR_RETURN(A.output_f32, arena.tensor({M, config.out_hidden_size}, DType::kF32));
  return t;
}

GpuVisionTower::~GpuVisionTower() {
  if (stream_) {
    cudaStreamSynchronize(stream_);
    attention_.reset();
    gemm_.reset();
    cudaStreamDestroy(stream_);
  }
}

Status GpuVisionTower::upload(const VisionWeights& host) {
  const VisionConfig& c = config_;
  if (host.config.depth != c.depth || host.config.hidden_size != c.hidden_size ||
      host.config.intermediate_size != c.intermediate_size || host.config.out_hidden_size != c.out_hidden_size ||
      host.config.deepstack_visual_indexes != c.deepstack_visual_indexes ||
      host.config.patch_values() != c.patch_values() || host.config.num_position_embeddings != c.num_position_embeddings)
    return invalid_argument("the vision weights' config does not match the one this GPU tower was created for");
  OROCHI_CUDA_RETURN_IF_ERROR(cudaSetDevice(device_));
  weight_arena_->reset(0);
  cuda::DeviceArena& arena = *weight_arena_;
  auto up = [&](const Tensor& t) { return cuda::upload(t.contiguous(), arena, DType::kBF16, stream_); };
  auto linear = [&](const VisionLinear& l) -> Expected<VisionGpuLinear> {
    VisionGpuLinear g;
    OROCHI_ASSIGN_OR_RETURN(g.weight, up(l.weight));
    OROCHI_ASSIGN_OR_RETURN(g.bias, up(l.bias));
    return g;
  };
  auto norm = [&](const VisionNorm& n) -> Expected<VisionGpuNorm> {
    VisionGpuNorm g;
    OROCHI_ASSIGN_OR_RETURN(g.weight, up(n.weight));
    OROCHI_ASSIGN_OR_RETURN(g.bias, up(n.bias));
    return g;
  };
  auto merger = [&](const VisionMergerWeights& m) -> Expected<VisionGpuMerger> {
    VisionGpuMerger g;
    g.norm_after_shuffle = m.norm_after_shuffle;
    OROCHI_ASSIGN_OR_RETURN(g.norm, norm(m.norm));
    OROCHI_ASSIGN_OR_RETURN(g.fc1, linear(m.fc1));
    OROCHI_ASSIGN_OR_RETURN(g.fc2, linear(m.fc2));
    return g;
  };
  auto w = std::make_unique<VisionGpuWeights>();
  // Same order as weight_shapes().
  OROCHI_ASSIGN_OR_RETURN(w->patch_embed, linear(host.patch_embed));
  OROCHI_ASSIGN_OR_RETURN(w->pos_embed, up(host.pos_embed));
  for (const VisionBlockWeights& b : host.blocks) {
    VisionGpuBlock g;
    OROCHI_ASSIGN_OR_RETURN(g.norm1, norm(b.norm1));
    OROCHI_ASSIGN_OR_RETURN(g.qkv, linear(b.qkv));
    OROCHI_ASSIGN_OR_RETURN(g.proj, linear(b.proj));
    OROCHI_ASSIGN_OR_RETURN(g.norm2, norm(b.norm2));
    OROCHI_ASSIGN_OR_RETURN(g.fc1, linear(b.fc1));
    OROCHI_ASSIGN_OR_RETURN(g.fc2, linear(b.fc2));
    w->blocks.push_back(std::move(g));
  }
  OROCHI_ASSIGN_OR_RETURN(w->merger, merger(host.merger));
  for (const VisionMergerWeights& m : host.deepstack_mergers) {
    OROCHI_ASSIGN_OR_RETURN(VisionGpuMerger g, merger(m));
    w->deepstack.push_back(std::move(g));
  }
  weights_ = std::move(w);
  has_weights_ = true;
  return Status::ok();
}

Status GpuVisionTower::init_random(uint64_t seed) {
  const VisionConfig& c = config_;
  OROCHI_CUDA_RETURN_IF_ERROR(cudaSetDevice(device_));
  weight_arena_->reset(0);
  cuda::DeviceArena& arena = *weight_arena_;
  const std::vector<RandomTensorInit> plan = vision_random_plan(c);
  size_t j = 0;
  // Allocated in the upload order (vision_random_plan's), each filled from its own stream.
  auto next = [&]() -> Expected<Tensor> {
    if (j >= plan.size()) return Status(ErrorCode::kInternal, "vision_random_plan is shorter than the tower");
    const RandomTensorInit& p = plan[j];
    OROCHI_ASSIGN_OR_RETURN(Tensor t, arena.tensor(p.shape, DType::kBF16));
    OROCHI_RETURN_IF_ERROR(cuda::fill_normal(t, seed, kVisionRandomStreamBase + j, p.mean, p.stddev, stream_));
    ++j;
    return t;
  };
  auto pair = [&](Tensor& a, Tensor& b) -> Status {
    OROCHI_ASSIGN_OR_RETURN(a, next());
    OROCHI_ASSIGN_OR_RETURN(b, next());
    return Status::ok();
  };
  auto merger = [&](VisionGpuMerger& m, bool after_shuffle) -> Status {
    m.norm_after_shuffle = after_shuffle;
    OROCHI_RETURN_IF_ERROR(pair(m.norm.weight, m.norm.bias));
    OROCHI_RETURN_IF_ERROR(pair(m.fc1.weight, m.fc1.bias));
    return pair(m.fc2.weight, m.fc2.bias);
  };
  auto w = std::make_unique<VisionGpuWeights>();
  OROCHI_RETURN_IF_ERROR(pair(w->patch_embed.weight, w->patch_embed.bias));
  OROCHI_ASSIGN_OR_RETURN(w->pos_embed, next());
  for (int64_t i = 0; i < c.depth; ++i) {
    VisionGpuBlock b;
    OROCHI_RETURN_IF_ERROR(pair(b.norm1.weight, b.norm1.bias));
    OROCHI_RETURN_IF_ERROR(pair(b.qkv.weight, b.qkv.bias));
    OROCHI_RETURN_IF_ERROR(pair(b.proj.weight, b.proj.bias));
    OROCHI_RETURN_IF_ERROR(pair(b.norm2.weight, b.norm2.bias));
    OROCHI_RETURN_IF_ERROR(pair(b.fc1.weight, b.fc1.bias));
    OROCHI_RETURN_IF_ERROR(pair(b.fc2.weight, b.fc2.bias));
    w->blocks.push_back(std::move(b));
  }
  OROCHI_RETURN_IF_ERROR(merger(w->merger, false));
  for (size_t k = 0; k < c.deepstack_visual_indexes.size(); ++k) {
    VisionGpuMerger m;
    OROCHI_RETURN_IF_ERROR(merger(m, true));
    w->deepstack.push_back(std::move(m));
  }
  if (j != plan.size()) return Status(ErrorCode::kInternal, "vision_random_plan is longer than the tower");
  OROCHI_CUDA_RETURN_IF_ERROR(cudaStreamSynchronize(stream_));
  weights_ = std::move(w);
  has_weights_ = true;
  return Status::ok();
}

Status GpuVisionTower::run_block(size_t index, int64_t N, const std::vector<int64_t>& segments) {
  const VisionConfig& c = config_;
  const VisionGpuBlock& w = weights_->blocks[index];
  const VisionGpuActivations& A = *act_;
  const float eps = static_cast<float>(VisionConfig::kLayerNormEps);
  auto rows = [N](const Tensor& t) { return t.slice(0, 0, N); };
  const int64_t H = c.num_heads, D = c.head_dim();
  // Attention half: x = LN1(h); q, k, v with the 2-D RoPE; attention per segment; h += proj(o).
  OROCHI_RETURN_IF_ERROR(layer_norm(rows(A.h), w.norm1.weight, w.norm1.bias, eps, rows(A.x), stream_));
  OROCHI_RETURN_IF_ERROR(gemm_->linear(rows(A.x), w.qkv.weight, &w.qkv.bias, rows(A.qkv), stream_));
  OROCHI_RETURN_IF_ERROR(
      qkv_split_rope(rows(A.qkv), rows(A.cos), rows(A.sin), rows(A.q), rows(A.k), rows(A.v), stream_));
  const size_t row_bytes = static_cast<size_t>(H * D) * 2;
  int64_t start = 0;
  for (int64_t len : segments) {
    const size_t offset = static_cast<size_t>(start) * row_bytes;
    OROCHI_RETURN_IF_ERROR(attention_->run(ptr<char>(A.q) + offset, ptr<char>(A.k) + offset, ptr<char>(A.v) + offset,
                                           ptr<char>(A.o) + offset, len, H, D, stream_));
    start += len;
  }
  OROCHI_RETURN_IF_ERROR(gemm_->linear(rows(A.o), w.proj.weight, &w.proj.bias, rows(A.y), stream_));
  OROCHI_RETURN_IF_ERROR(cuda::add_inplace(rows(A.h), rows(A.y), stream_));
  // MLP half: x = LN2(h); h += fc2(GELU(fc1(x))).
  OROCHI_RETURN_IF_ERROR(layer_norm(rows(A.h), w.norm2.weight, w.norm2.bias, eps, rows(A.x), stream_));
  OROCHI_RETURN_IF_ERROR(gemm_->linear(rows(A.x), w.fc1.weight, &w.fc1.bias, rows(A.mlp), stream_));
  OROCHI_RETURN_IF_ERROR(gelu_inplace(rows(A.mlp), c.hidden_act == VisionActivation::kGeluTanh, stream_));
  OROCHI_RETURN_IF_ERROR(gemm_->linear(rows(A.mlp), w.fc2.weight, &w.fc2.bias, rows(A.y), stream_));
  return cuda::add_inplace(rows(A.h), rows(A.y), stream_);
}

// h [N, hidden] -> out [M, out_hidden]. The final merger norms each patch (into x, then viewed
// [M, 4·hidden]); a DeepStack merger norms the 4 patches side by side (into `merged`).
Status GpuVisionTower::run_merger(const VisionGpuMerger& m, int64_t N, const Tensor& out) {
  const VisionConfig& c = config_;
  const VisionGpuActivations& A = *act_;
  const float eps = static_cast<float>(VisionConfig::kLayerNormEps);
  const int64_t M = N / c.merge_unit(), W = c.merged_width();
  const Tensor h = A.h.slice(0, 0, N);
  const Tensor merged = A.merged.slice(0, 0, M);
  const Tensor normed = A.x.slice(0, 0, N).view({M, W});
  if (m.norm_after_shuffle) {
    OROCHI_RETURN_IF_ERROR(layer_norm(h.view({M, W}), m.norm.weight, m.norm.bias, eps, normed, stream_));
  } else {
    OROCHI_RETURN_IF_ERROR(layer_norm(h, m.norm.weight, m.norm.bias, eps, A.x.slice(0, 0, N), stream_));
  }
  OROCHI_RETURN_IF_ERROR(gemm_->linear(normed, m.fc1.weight, &m.fc1.bias, merged, stream_));
  OROCHI_RETURN_IF_ERROR(gelu_inplace(merged, /*tanh_approximation=*/false, stream_));
  return gemm_->linear(merged, m.fc2.weight, &m.fc2.bias, out.slice(0, 0, M), stream_);
}

Expected<VisionFeatures> GpuVisionTower::run_on_device(const Tensor& pixel_values, const std::vector<GridThw>& grids) {
  if (!has_weights_) return Status(ErrorCode::kInternal, "GpuVisionTower::run before upload()");
  const VisionConfig& c = config_;
  OROCHI_RETURN_IF_ERROR(validate_vision_inputs(c, pixel_values, grids));
  const int64_t N = pixel_values.dim(0), M = N / c.merge_unit();
  if (N > max_patches_)
    return invalid_argument("the vision inputs hold " + std::to_string(N) +
                            " patches; this GPU tower was created for at most " + std::to_string(max_patches_));
  OROCHI_CUDA_RETURN_IF_ERROR(cudaSetDevice(device_));
  const VisionGpuActivations& A = *act_;
  const VisionGpuWeights& w = *weights_;

  // Host-side tables from the grids: interpolation taps, rotary angles (f32), attention segments.
  const PositionTaps taps = position_taps(c, grids);
  const cpu::RopeTable rope = vision_rope_table(c, grids);
  const std::vector<int64_t> segments = attention_segments(grids);
  OROCHI_RETURN_IF_ERROR(cuda::upload_into(pixel_values.contiguous(), A.pixels.slice(0, 0, N), stream_));
  OROCHI_RETURN_IF_ERROR(cuda::upload_into(Tensor::from_ints(taps.index, {N * 4}), A.pos_index.slice(0, 0, N * 4), stream_));
  OROCHI_RETURN_IF_ERROR(
      cuda::upload_into(Tensor::from_floats(taps.weight, {N * 4}), A.pos_weight.slice(0, 0, N * 4), stream_));
  OROCHI_RETURN_IF_ERROR(cuda::upload_into(rope.cos, A.cos.slice(0, 0, N), stream_));
  OROCHI_RETURN_IF_ERROR(cuda::upload_into(rope.sin, A.sin.slice(0, 0, N), stream_));

  const Tensor h = A.h.slice(0, 0, N);
  OROCHI_RETURN_IF_ERROR(
      gemm_->linear(A.pixels.slice(0, 0, N), w.patch_embed.weight, &w.patch_embed.bias, h, stream_));
  OROCHI_RETURN_IF_ERROR(add_position_embeddings(h, w.pos_embed, A.pos_index.slice(0, 0, N * 4),
                                                 A.pos_weight.slice(0, 0, N * 4), stream_));
  // DeepStack outputs land in outputs[1..] in block order (the merger at the block's list position).
  size_t deepstack_done = 0;
  for (int64_t i = 0; i < c.depth; ++i) {
    OROCHI_RETURN_IF_ERROR(run_block(static_cast<size_t>(i), N, segments));
    for (size_t k = 0; k < c.deepstack_visual_indexes.size(); ++k)
      if (c.deepstack_visual_indexes[k] == i)
        OROCHI_RETURN_IF_ERROR(run_merger(w.deepstack[k], N, A.outputs[1 + deepstack_done++]));
  }
  OROCHI_RETURN_IF_ERROR(run_merger(w.merger, N, A.outputs[0]));
  // Finished before returning, so a consumer on another stream (the text encoder's) reads final values.
  OROCHI_CUDA_RETURN_IF_ERROR(cudaStreamSynchronize(stream_));
  VisionFeatures out;
  out.features = A.outputs[0].slice(0, 0, M);
  for (size_t j = 1; j < A.outputs.size(); ++j) out.deepstack.push_back(A.outputs[j].slice(0, 0, M));
  return out;
}

Expected<VisionFeatures> GpuVisionTower::run(const Tensor& pixel_values, const std::vector<GridThw>& grids) {
  OROCHI_ASSIGN_OR_RETURN(const VisionFeatures on_device, run_on_device(pixel_values, grids));
  const VisionGpuActivations& A = *act_;
  const int64_t M = on_device.features.dim(0);
  const Tensor f32 = A.output_f32.slice(0, 0, M);
  auto to_host = [&](const Tensor& t) -> Expected<Tensor> {
    OROCHI_RETURN_IF_ERROR(cuda::cast(t, f32, stream_));
    return cuda::download(f32, stream_);
  };
  VisionFeatures out;
  OROCHI_ASSIGN_OR_RETURN(out.features, to_host(on_device.features));
  for (const Tensor& d : on_device.deepstack) {
    OROCHI_ASSIGN_OR_RETURN(Tensor host, to_host(d));
    out.deepstack.push_back(std::move(host));
  }
  return out;
}

}  // namespace orochi::qwen3vl::gpu
