#include "models/qwen3vl/cuda/gpu_text_encoder.h"

#include <cmath>

#include "backends/cpu/ops.h"
#include "backends/cpu/ops_llm.h"
#include "backends/cuda/cuda_check.h"
#include "backends/cuda/kernels/kernels.h"
#include "backends/cuda/ops.h"
#include "backends/cuda/random_fill.h"
#include "models/qwen3vl/text_model.h"

namespace orochi::qwen3vl::gpu {

using cuda::kernels::bf16;

struct TextActivations {
  Tensor ids;          // i64 [max]
  Tensor cos, sin;     // bf16 [max, head_dim]
  Tensor h, x, o;      // bf16 [max, hidden]: residual stream, normed input, block output
  Tensor q, k, v;      // bf16 [max, q_dim], [max, kv_dim] x2
  Tensor attn;         // bf16 [max, q_dim]
  Tensor u;            // bf16 [max, 2 · intermediate]: [up | gate]
  Tensor act;          // bf16 [max, intermediate]
  Tensor out;          // f32 [max, hidden]
};

namespace {

template <typename T>
T* ptr(const Tensor& t) {
  return static_cast<T*>(const_cast<void*>(t.raw_data()));
}

Status launched(cudaError_t e, const char* what) { return cuda::cuda_status(e, what); }

struct Shapes {
  int64_t hidden, q_dim, kv_dim, inter, head_dim, vocab;
  explicit Shapes(const TextConfig& c)
      : hidden(c.hidden_size), q_dim(c.q_dim()), kv_dim(c.kv_dim()), inter(c.intermediate_size),
        head_dim(c.head_dim), vocab(c.vocab_size) {}
  int64_t layer_values() const {
    return 2 * hidden + q_dim * hidden + 2 * kv_dim * hidden + hidden * q_dim + 2 * head_dim + 2 * inter * hidden +
           hidden * inter;
  }
};

size_t activation_bytes_for(const TextConfig& c, int64_t max_tokens, size_t attention_workspace) {
  const Shapes s(c);
  const int64_t per_token_bf16 = 2 * s.head_dim + 3 * s.hidden + s.q_dim + 2 * s.kv_dim + s.q_dim + 2 * s.inter +
                                 s.inter;
  const size_t bytes = static_cast<size_t>(max_tokens) * (8 + 2 * per_token_bf16 + 4 * s.hidden);
  return bytes + attention_workspace + 64 * cuda::DeviceArena::kAlignment;
}

}  // namespace

size_t text_weight_bytes(const TextConfig& c, int64_t layers) {
  const Shapes s(c);
  return 2 * static_cast<size_t>(s.vocab * s.hidden + layers * s.layer_values()) +
         (1 + 11 * static_cast<size_t>(layers)) * cuda::DeviceArena::kAlignment;
}

Expected<std::unique_ptr<GpuTextEncoder>> GpuTextEncoder::create(const TextConfig& config, int64_t layers, int device,
                                                                 int64_t max_tokens) {
  OROCHI_RETURN_IF_ERROR(config.validate());
  if (layers < 1 || layers > config.num_hidden_layers)
    return invalid_argument("the text encoder runs 1.." + std::to_string(config.num_hidden_layers) +
                            " layers, asked for " + std::to_string(layers));
  if (max_tokens < 1 || max_tokens > (int64_t{1} << 20))
    return invalid_argument("max_tokens must be in [1, 2^20], got " + std::to_string(max_tokens));
  std::unique_ptr<GpuTextEncoder> e(new GpuTextEncoder());
  e->config_ = config;
  e->layers_ = layers;
  e->max_tokens_ = max_tokens;
  e->device_ = device;
  OROCHI_CUDA_RETURN_IF_ERROR(cudaSetDevice(device));
  OROCHI_CUDA_RETURN_IF_ERROR(cudaStreamCreateWithFlags(&e->stream_, cudaStreamNonBlocking));
  e->attention_ = std::make_unique<cuda::CudnnAttention>(e->stream_);
  cuda::AttentionShape shape{max_tokens, max_tokens, config.num_attention_heads, config.head_dim};
  shape.kv_heads = config.num_key_value_heads;
  shape.causal = true;
  OROCHI_ASSIGN_OR_RETURN(const size_t attention_ws, e->attention_->workspace_bytes(shape));
  OROCHI_ASSIGN_OR_RETURN(e->weight_arena_,
                          cuda::DeviceArena::create(device, text_weight_bytes(config, layers), "Qwen3-VL weights"));
  OROCHI_ASSIGN_OR_RETURN(e->activation_arena_,
                          cuda::DeviceArena::create(device, activation_bytes_for(config, max_tokens, attention_ws),
                                                    "Qwen3-VL activations"));
  OROCHI_ASSIGN_OR_RETURN(void* ws, e->activation_arena_->allocate(attention_ws));
  OROCHI_RETURN_IF_ERROR(e->attention_->set_external_workspace(ws, attention_ws));
  OROCHI_ASSIGN_OR_RETURN(e->gemm_, cuda::GemmRunner::create(device));

  const Shapes s(config);
  auto& A = *(e->act_ = std::make_unique<TextActivations>());
  cuda::DeviceArena& arena = *e->activation_arena_;
  const int64_t T = max_tokens;
  OROCHI_ASSIGN_OR_RETURN(A.ids, arena.tensor({T}, DType::kI64));
  OROCHI_ASSIGN_OR_RETURN(A.cos, arena.tensor({T, s.head_dim}, DType::kBF16));
  OROCHI_ASSIGN_OR_RETURN(A.sin, arena.tensor({T, s.head_dim}, DType::kBF16));
  for (Tensor* t : {&A.h, &A.x, &A.o}) {
    OROCHI_ASSIGN_OR_RETURN(*t, arena.tensor({T, s.hidden}, DType::kBF16));
  }
  OROCHI_ASSIGN_OR_RETURN(A.q, arena.tensor({T, s.q_dim}, DType::kBF16));
  OROCHI_ASSIGN_OR_RETURN(A.k, arena.tensor({T, s.kv_dim}, DType::kBF16));
  OROCHI_ASSIGN_OR_RETURN(A.v, arena.tensor({T, s.kv_dim}, DType::kBF16));
  OROCHI_ASSIGN_OR_RETURN(A.attn, arena.tensor({T, s.q_dim}, DType::kBF16));
  OROCHI_ASSIGN_OR_RETURN(A.u, arena.tensor({T, 2 * s.inter}, DType::kBF16));
  OROCHI_ASSIGN_OR_RETURN(A.act, arena.tensor({T, s.inter}, DType::kBF16));
  OROCHI_ASSIGN_OR_RETURN(A.out, arena.tensor({T, s.hidden}, DType::kF32));
  return e;
}

GpuTextEncoder::~GpuTextEncoder() {
  act_.reset();
  attention_.reset();
  gemm_.reset();
  if (stream_) cudaStreamDestroy(stream_);
}

namespace {

// Allocates every weight of one layer in `arena`.
Expected<GpuTextLayer> allocate_layer(const Shapes& s, cuda::DeviceArena& arena) {
  GpuTextLayer l;
  OROCHI_ASSIGN_OR_RETURN(l.input_norm, arena.tensor({s.hidden}, DType::kBF16));
  OROCHI_ASSIGN_OR_RETURN(l.post_norm, arena.tensor({s.hidden}, DType::kBF16));
  OROCHI_ASSIGN_OR_RETURN(l.q, arena.tensor({s.q_dim, s.hidden}, DType::kBF16));
  OROCHI_ASSIGN_OR_RETURN(l.k, arena.tensor({s.kv_dim, s.hidden}, DType::kBF16));
  OROCHI_ASSIGN_OR_RETURN(l.v, arena.tensor({s.kv_dim, s.hidden}, DType::kBF16));
  OROCHI_ASSIGN_OR_RETURN(l.o, arena.tensor({s.hidden, s.q_dim}, DType::kBF16));
  OROCHI_ASSIGN_OR_RETURN(l.q_norm, arena.tensor({s.head_dim}, DType::kBF16));
  OROCHI_ASSIGN_OR_RETURN(l.k_norm, arena.tensor({s.head_dim}, DType::kBF16));
  OROCHI_ASSIGN_OR_RETURN(l.up_gate, arena.tensor({2 * s.inter, s.hidden}, DType::kBF16));
  OROCHI_ASSIGN_OR_RETURN(l.down, arena.tensor({s.hidden, s.inter}, DType::kBF16));
  return l;
}

}  // namespace

Status GpuTextEncoder::upload(const TextWeights& host) {
  if (host.config.hidden_size != config_.hidden_size || host.config.q_dim() != config_.q_dim() ||
      host.config.kv_dim() != config_.kv_dim() || host.config.intermediate_size != config_.intermediate_size ||
      host.config.vocab_size != config_.vocab_size || host.stop_after_layers() < layers_)
    return shape_mismatch("the host weights do not match the encoder's config or have fewer than " +
                          std::to_string(layers_) + " layers");
  OROCHI_CUDA_RETURN_IF_ERROR(cudaSetDevice(device_));
  weight_arena_->reset(0);
  layer_weights_.clear();
  const Shapes s(config_);
  OROCHI_ASSIGN_OR_RETURN(embed_tokens_, cuda::upload(host.embed_tokens, *weight_arena_, DType::kBF16, stream_));
  for (int64_t i = 0; i < layers_; ++i) {
    const TextLayerWeights& h = host.layers[static_cast<size_t>(i)];
    OROCHI_ASSIGN_OR_RETURN(GpuTextLayer l, allocate_layer(s, *weight_arena_));
    const std::pair<const Tensor*, const Tensor*> pairs[] = {
        {&h.input_layernorm, &l.input_norm}, {&h.post_attention_layernorm, &l.post_norm}, {&h.q_proj, &l.q},
        {&h.k_proj, &l.k}, {&h.v_proj, &l.v}, {&h.o_proj, &l.o}, {&h.q_norm, &l.q_norm}, {&h.k_norm, &l.k_norm},
        {&h.down_proj, &l.down}};
    for (const auto& [src, dst] : pairs) OROCHI_RETURN_IF_ERROR(cuda::upload_into(*src, *dst, stream_));
    OROCHI_RETURN_IF_ERROR(cuda::upload_into(h.up_proj, l.up_gate.slice(0, 0, s.inter), stream_));
    OROCHI_RETURN_IF_ERROR(cuda::upload_into(h.gate_proj, l.up_gate.slice(0, s.inter, 2 * s.inter), stream_));
    layer_weights_.push_back(std::move(l));
  }
  has_weights_ = true;
  return Status::ok();
}

Status GpuTextEncoder::init_random(uint64_t seed) {
  OROCHI_CUDA_RETURN_IF_ERROR(cudaSetDevice(device_));
  weight_arena_->reset(0);
  layer_weights_.clear();
  const Shapes s(config_);
  uint64_t stream_id = 0;
  auto fill = [&](const Tensor& t, float mean, float stddev) {
    return cuda::fill_normal(t, seed, stream_id++, mean, stddev, stream_);
  };
  OROCHI_ASSIGN_OR_RETURN(embed_tokens_, weight_arena_->tensor({s.vocab, s.hidden}, DType::kBF16));
  OROCHI_RETURN_IF_ERROR(fill(embed_tokens_, 0.0f, 1.0f));
  for (int64_t i = 0; i < layers_; ++i) {
    OROCHI_ASSIGN_OR_RETURN(GpuTextLayer l, allocate_layer(s, *weight_arena_));
    for (const Tensor* norm : {&l.input_norm, &l.post_norm, &l.q_norm, &l.k_norm})
      OROCHI_RETURN_IF_ERROR(fill(*norm, 1.0f, 0.05f));
    for (const Tensor* m : {&l.q, &l.k, &l.v, &l.o, &l.up_gate, &l.down})
      OROCHI_RETURN_IF_ERROR(fill(*m, 0.0f, 0.5f / std::sqrt(static_cast<float>(m->dim(1)))));
    layer_weights_.push_back(std::move(l));
  }
  OROCHI_CUDA_RETURN_IF_ERROR(cudaStreamSynchronize(stream_));
  has_weights_ = true;
  return Status::ok();
}

Status GpuTextEncoder::run_layer(const GpuTextLayer& w, int64_t L) {
  const TextActivations& A = *act_;
  const Shapes s(config_);
  const float eps = static_cast<float>(config_.rms_norm_eps);
  const int64_t Hq = config_.num_attention_heads, Hkv = config_.num_key_value_heads, D = config_.head_dim;
  auto rows = [L](const Tensor& t) { return t.slice(0, 0, L); };
  // Attention half: x = norm(h); q, k, v; per-head norm + RoPE; causal GQA; h += o_proj(attn).
  OROCHI_RETURN_IF_ERROR(launched(cuda::kernels::launch_rms_norm(ptr<const bf16>(A.h), ptr<const bf16>(w.input_norm),
                                                                 ptr<bf16>(A.x), L, s.hidden, eps, nullptr, stream_,
                                                                 /*round_before_weight=*/true),
                                  "input_layernorm"));
  OROCHI_RETURN_IF_ERROR(gemm_->linear(rows(A.x), w.q, nullptr, rows(A.q), stream_));
  OROCHI_RETURN_IF_ERROR(gemm_->linear(rows(A.x), w.k, nullptr, rows(A.k), stream_));
  OROCHI_RETURN_IF_ERROR(gemm_->linear(rows(A.x), w.v, nullptr, rows(A.v), stream_));
  OROCHI_RETURN_IF_ERROR(launched(cuda::kernels::launch_qk_norm_rope(ptr<bf16>(A.q), ptr<const bf16>(w.q_norm), L, Hq,
                                                                     D, eps, ptr<const bf16>(A.cos),
                                                                     ptr<const bf16>(A.sin), D, stream_, true),
                                  "q_norm + rope"));
  OROCHI_RETURN_IF_ERROR(launched(cuda::kernels::launch_qk_norm_rope(ptr<bf16>(A.k), ptr<const bf16>(w.k_norm), L, Hkv,
                                                                     D, eps, ptr<const bf16>(A.cos),
                                                                     ptr<const bf16>(A.sin), D, stream_, true),
                                  "k_norm + rope"));
  cuda::AttentionShape shape{L, L, Hq, D};
  shape.kv_heads = Hkv;
  shape.causal = true;
  OROCHI_RETURN_IF_ERROR(attention_->run(A.q.raw_data(), A.k.raw_data(), A.v.raw_data(),
                                         const_cast<void*>(A.attn.raw_data()), shape, stream_));
  OROCHI_RETURN_IF_ERROR(gemm_->linear(rows(A.attn), w.o, nullptr, rows(A.o), stream_));
  OROCHI_RETURN_IF_ERROR(cuda::add_inplace(rows(A.h), rows(A.o), stream_));
  // MLP half: x = norm(h); h += down(up · silu(gate)).
  OROCHI_RETURN_IF_ERROR(launched(cuda::kernels::launch_rms_norm(ptr<const bf16>(A.h), ptr<const bf16>(w.post_norm),
                                                                 ptr<bf16>(A.x), L, s.hidden, eps, nullptr, stream_,
                                                                 true),
                                  "post_attention_layernorm"));
  OROCHI_RETURN_IF_ERROR(gemm_->linear(rows(A.x), w.up_gate, nullptr, rows(A.u), stream_));
  OROCHI_RETURN_IF_ERROR(cuda::swiglu(rows(A.u), rows(A.act), stream_));
  OROCHI_RETURN_IF_ERROR(gemm_->linear(rows(A.act), w.down, nullptr, rows(A.o), stream_));
  return cuda::add_inplace(rows(A.h), rows(A.o), stream_);
}

Expected<Tensor> GpuTextEncoder::encode_text(const Tensor& token_ids) {
  OROCHI_RETURN_IF_ERROR(validate_token_ids(config_, token_ids));
  return encode(token_ids, text_positions(token_ids.numel()));
}

Expected<Tensor> GpuTextEncoder::encode(const Tensor& token_ids, const Tensor& positions) {
  if (!has_weights_) return Status(ErrorCode::kInternal, "GpuTextEncoder::encode before upload() or init_random()");
  OROCHI_RETURN_IF_ERROR(validate_token_ids(config_, token_ids));
  const int64_t L = token_ids.numel();
  OROCHI_RETURN_IF_ERROR(validate_positions(positions, L));
  if (L > max_tokens_)
    return invalid_argument("the prompt has " + std::to_string(L) + " tokens; this encoder was planned for at most " +
                            std::to_string(max_tokens_));
  OROCHI_CUDA_RETURN_IF_ERROR(cudaSetDevice(device_));
  const TextActivations& A = *act_;
  const Shapes s(config_);
  // RoPE angles in f32 on the host, cast to bf16 on upload as transformers casts cos/sin.
  const Tensor inv_freq = cpu::rope_inv_freq(static_cast<int>(config_.rope_freq_slots()),
                                             static_cast<float>(config_.rope_theta));
  const cpu::RopeTable rope = cpu::mrope_interleaved_table(positions.contiguous(), inv_freq, config_.mrope_section);
  OROCHI_RETURN_IF_ERROR(cuda::upload_into(rope.cos, A.cos.slice(0, 0, L), stream_));
  OROCHI_RETURN_IF_ERROR(cuda::upload_into(rope.sin, A.sin.slice(0, 0, L), stream_));
  OROCHI_RETURN_IF_ERROR(cuda::upload_into(token_ids.contiguous(), A.ids.slice(0, 0, L), stream_));
  const int64_t row_bytes = s.hidden * 2;
  OROCHI_RETURN_IF_ERROR(launched(cuda::kernels::launch_copy_rows(A.h.raw_data(), row_bytes, nullptr,
                                                                  embed_tokens_.raw_data(), row_bytes,
                                                                  ptr<const int64_t>(A.ids), L, row_bytes, stream_),
                                  "embed_tokens"));
  for (const GpuTextLayer& layer : layer_weights_) OROCHI_RETURN_IF_ERROR(run_layer(layer, L));
  const Tensor out = A.out.slice(0, 0, L);
  OROCHI_RETURN_IF_ERROR(cuda::cast(A.h.slice(0, 0, L), out, stream_));
  return cuda::download(out, stream_);
}

}  // namespace orochi::qwen3vl::gpu
