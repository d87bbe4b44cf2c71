#include "models/qwen3vl/cuda/gpu_text_encoder.h"

#include <algorithm>
#include <cstring>

#include "backends/cpu/ops.h"
#include "backends/cpu/ops_llm.h"
#include "backends/cuda/cuda_check.h"
#include "backends/cuda/kernels/kernels.h"
#include "backends/cuda/ops.h"
#include "backends/cuda/random_fill.h"
#include "core/dtype.h"
#include "models/qwen3vl/text_model.h"

namespace orochi::qwen3vl::gpu {

using cuda::kernels::bf16;

struct TextActivations {
  Tensor cos, sin;     // bf16 [max, head_dim]
  Tensor h, x, o;      // bf16 [max, hidden]: residual stream, normed input, block output
  Tensor q, k, v;      // bf16 [max, q_dim], [max, kv_dim] x2
  Tensor attn;         // bf16 [max, q_dim]
  Tensor u;            // bf16 [max, 2 · intermediate]: [up | gate]
  Tensor act;          // bf16 [max, intermediate]
  Tensor out;          // f32 [max, hidden]
  Tensor vision_rows;  // i64 [max]: the rows DeepStack features are added at
  // fp8 / int8 only: one linear input's codes [max · widest in] and per-token scales f32 [max], and
  // the quantized GEMM's f32 accumulator [quantized_accumulator_rows · widest out].
  Tensor xq_codes, xq_scales, xq_acc;
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
};

// The quantized linears' buffers (TextActivations::xq_*) as elements: codes, scales, accumulator.
struct QuantizedActivationSizes {
  int64_t codes = 0, scales = 0, accumulator = 0;
};
QuantizedActivationSizes quantized_activation_sizes(const TextConfig& c, int64_t max_tokens, Precision precision) {
  if (precision == Precision::kBf16) return {};
  return {max_tokens * c.widest_linear_in(), max_tokens,
          quantized_accumulator_rows(precision, max_tokens) * c.widest_linear_out()};
}

size_t activation_bytes_for(const TextConfig& c, int64_t max_tokens, size_t attention_workspace, Precision precision) {
  const Shapes s(c);
  const int64_t per_token_bf16 = 2 * s.head_dim + 3 * s.hidden + s.q_dim + 2 * s.kv_dim + s.q_dim + 2 * s.inter +
                                 s.inter;
  // bf16 activations, the f32 output, the i64 vision row index.
  size_t bytes = static_cast<size_t>(max_tokens) * (2 * per_token_bf16 + 4 * s.hidden + 8);
  const QuantizedActivationSizes q = quantized_activation_sizes(c, max_tokens, precision);
  bytes += static_cast<size_t>(q.codes + 4 * q.scales + 4 * q.accumulator);  // 1-byte codes, f32 scales and sums
  return bytes + attention_workspace + 64 * cuda::DeviceArena::kAlignment;
}

// What fills the layers: at fp8 / int8 a bf16 scratch of the largest linear (freed with the filler,
// after loading) that each quantized linear is made in before it is quantized; at bf16 nothing.
struct LayerFiller {
  std::shared_ptr<cuda::DeviceArena> arena;
  LayerFill fill;
};
Expected<LayerFiller> make_filler(const TextConfig& c, Precision precision, int device, cudaStream_t stream) {
  LayerFiller f;
  f.fill.stream = stream;
  if (precision == Precision::kBf16) return f;
  const int64_t n = largest_linear_elements(c);
  OROCHI_ASSIGN_OR_RETURN(f.arena, cuda::DeviceArena::create(device, static_cast<size_t>(n) * 2 + cuda::DeviceArena::kAlignment,
                                                             "Qwen3-VL weight quantization scratch"));
  OROCHI_ASSIGN_OR_RETURN(f.fill.bf16_scratch, f.arena->tensor({n}, DType::kBF16));
  return f;
}

int64_t streamed_count(const TextStreaming& s) {
  return static_cast<int64_t>(std::count(s.streamed.begin(), s.streamed.end(), true));
}

}  // namespace

bool TextStreaming::any() const { return streamed_count(*this) > 0; }

size_t text_weight_bytes(const TextConfig& c, int64_t layers, const TextStreaming& streaming, Precision precision) {
  const int64_t streamed = streamed_count(streaming);
  const int64_t slots = streamed > 0 ? streaming.slots : 0;
  return layer_image_bytes(c, precision) * static_cast<size_t>(layers - streamed + slots) +
         cuda::DeviceArena::kAlignment;
}

Expected<std::unique_ptr<GpuTextEncoder>> GpuTextEncoder::create(const TextConfig& config, int64_t layers, int device,
                                                                 int64_t max_tokens, const TextStreaming& streaming,
                                                                 Precision precision) {
  OROCHI_RETURN_IF_ERROR(config.validate());
  if (layers < 1 || layers > config.num_hidden_layers)
    return invalid_argument("the text encoder runs 1.." + std::to_string(config.num_hidden_layers) +
                            " layers, asked for " + std::to_string(layers));
  if (max_tokens < 1 || max_tokens > (int64_t{1} << 20))
    return invalid_argument("max_tokens must be in [1, 2^20], got " + std::to_string(max_tokens));
  if (!streaming.streamed.empty() && static_cast<int64_t>(streaming.streamed.size()) != layers)
    return invalid_argument("the streamed-layer list has " + std::to_string(streaming.streamed.size()) +
                            " entries for " + std::to_string(layers) + " layers");
  if (streaming.any() && streaming.slots < 1)
    return invalid_argument("streaming text-encoder layers needs at least one staging slot");
  std::unique_ptr<GpuTextEncoder> e(new GpuTextEncoder());
  e->config_ = config;
  e->layers_ = layers;
  e->max_tokens_ = max_tokens;
  e->device_ = device;
  e->streaming_ = streaming;
  e->precision_ = precision;
  if (!streaming.any()) e->streaming_.streamed.assign(static_cast<size_t>(layers), false);
  OROCHI_CUDA_RETURN_IF_ERROR(cudaSetDevice(device));
  OROCHI_CUDA_RETURN_IF_ERROR(cudaStreamCreateWithFlags(&e->stream_, cudaStreamNonBlocking));
  e->attention_ = std::make_unique<cuda::CudnnAttention>(e->stream_);
  cuda::AttentionShape shape{max_tokens, max_tokens, config.num_attention_heads, config.head_dim};
  shape.kv_heads = config.num_key_value_heads;
  shape.causal = true;
  OROCHI_ASSIGN_OR_RETURN(const size_t attention_ws, e->attention_->workspace_bytes(shape));
  OROCHI_ASSIGN_OR_RETURN(e->weight_arena_,
                          cuda::DeviceArena::create(device, text_weight_bytes(config, layers, streaming, precision),
                                                    "Qwen3-VL weights"));
  OROCHI_ASSIGN_OR_RETURN(e->activation_arena_,
                          cuda::DeviceArena::create(device, activation_bytes_for(config, max_tokens, attention_ws, precision),
                                                    "Qwen3-VL activations"));
  OROCHI_ASSIGN_OR_RETURN(void* ws, e->activation_arena_->allocate(attention_ws));
  OROCHI_RETURN_IF_ERROR(e->attention_->set_external_workspace(ws, attention_ws));
  OROCHI_ASSIGN_OR_RETURN(e->gemm_, cuda::GemmRunner::create(device));
  // The heuristic's pick, not the fastest of a timed race: a race between near-equal candidates
  // can go either way from one process to the next, and the same prompt must give the same
  // features (and so the same video) every run.
  e->gemm_->set_autotune(false);
  if (precision != Precision::kBf16) {
    OROCHI_ASSIGN_OR_RETURN(e->quantized_gemm_, cuda::QuantizedGemmRunner::create(device));
    e->quantized_gemm_->set_autotune(false);  // the same features every run, as above
  }
  if (streaming.any()) {
    // The slots first, at the arena's base, one image apart: the tier copies whole images.
    for (int k = 0; k < streaming.slots; ++k) {
      OROCHI_ASSIGN_OR_RETURN(GpuTextLayer l, allocate_layer(config, *e->weight_arena_, precision));
      e->slot_layers_.push_back(std::move(l));
    }
    OROCHI_ASSIGN_OR_RETURN(e->tier_, weights::GpuBlockTier::create(device, streaming.tier, streaming.peer_device,
                                                                    streaming.streamed, layer_image_bytes(config, precision),
                                                                    e->weight_arena_->base(), streaming.slots,
                                                                    e->stream_));
  }

  const Shapes s(config);
  auto& A = *(e->act_ = std::make_unique<TextActivations>());
  cuda::DeviceArena& arena = *e->activation_arena_;
  const int64_t T = max_tokens;
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
  OROCHI_ASSIGN_OR_RETURN(A.vision_rows, arena.tensor({T}, DType::kI64));
  if (precision != Precision::kBf16) {
    const QuantizedActivationSizes q = quantized_activation_sizes(config, T, precision);
    OROCHI_ASSIGN_OR_RETURN(A.xq_codes, arena.tensor({q.codes}, precision_weight_dtype(precision)));
    OROCHI_ASSIGN_OR_RETURN(A.xq_scales, arena.tensor({q.scales}, DType::kF32));
    OROCHI_ASSIGN_OR_RETURN(A.xq_acc, arena.tensor({q.accumulator}, DType::kF32));
    e->quantized_scratch_ = {A.xq_codes, A.xq_scales, A.xq_acc};
  }
  return e;
}

GpuTextEncoder::~GpuTextEncoder() {
  if (streamer_) (void)streamer_->finish();
  streamer_.reset();
  tier_.reset();
  act_.reset();
  attention_.reset();
  gemm_.reset();
  quantized_gemm_.reset();
  if (stream_) cudaStreamDestroy(stream_);
}

Status GpuTextEncoder::allocate_layers() {
  if (streamer_) OROCHI_RETURN_IF_ERROR(streamer_->finish());
  streamer_.reset();
  has_weights_ = false;
  weight_arena_->reset(layer_image_bytes(config_, precision_) * slot_layers_.size());  // keep the slots
  layer_weights_.assign(static_cast<size_t>(layers_), GpuTextLayer{});
  for (int64_t i = 0; i < layers_; ++i) {
    if (streaming_.streamed[static_cast<size_t>(i)]) {
      layer_weights_[static_cast<size_t>(i)] = slot_layers_.front();  // built there, then stored in the tier
      continue;
    }
    OROCHI_ASSIGN_OR_RETURN(layer_weights_[static_cast<size_t>(i)],
                            allocate_layer(config_, *weight_arena_, precision_));
  }
  return Status::ok();
}

Status GpuTextEncoder::start_streaming() {
  OROCHI_CUDA_RETURN_IF_ERROR(cudaStreamSynchronize(stream_));
  if (streaming_.any()) {
    OROCHI_ASSIGN_OR_RETURN(weights::BlockStreamer s,
                            weights::BlockStreamer::create(streaming_.streamed, streaming_.slots, *tier_));
    streamer_.emplace(std::move(s));
  }
  has_weights_ = true;
  return Status::ok();
}

Status GpuTextEncoder::upload(const TextWeights& host) {
  if (host.config.hidden_size != config_.hidden_size || host.config.q_dim() != config_.q_dim() ||
      host.config.kv_dim() != config_.kv_dim() || host.config.intermediate_size != config_.intermediate_size ||
      host.config.vocab_size != config_.vocab_size || host.stop_after_layers() < layers_)
    return shape_mismatch("the host weights do not match the encoder's config or have fewer than " +
                          std::to_string(layers_) + " layers");
  OROCHI_CUDA_RETURN_IF_ERROR(cudaSetDevice(device_));
  OROCHI_RETURN_IF_ERROR(allocate_layers());
  OROCHI_ASSIGN_OR_RETURN(auto uploader, cuda::StagedUploader::create(device_, stream_));
  OROCHI_ASSIGN_OR_RETURN(const LayerFiller filler, make_filler(config_, precision_, device_, stream_));
  const size_t image = layer_image_bytes(config_, precision_);
  for (int64_t i = 0; i < layers_; ++i) {
    const GpuTextLayer& target = layer_weights_[static_cast<size_t>(i)];
    OROCHI_RETURN_IF_ERROR(upload_layer(host.layers[static_cast<size_t>(i)], target, *uploader, filler.fill));
    if (!streaming_.streamed[static_cast<size_t>(i)]) continue;
    OROCHI_RETURN_IF_ERROR(uploader->finish());
    OROCHI_RETURN_IF_ERROR(tier_->store(i, target.input_norm.raw_data(), image, stream_));
  }
  OROCHI_RETURN_IF_ERROR(uploader->finish());
  upload_stats_ = uploader->stats();
  embed_tokens_ = host.embed_tokens.contiguous();  // a view of the mapped file as it is stored
  return start_streaming();
}

Status GpuTextEncoder::init_random(uint64_t seed) {
  OROCHI_CUDA_RETURN_IF_ERROR(cudaSetDevice(device_));
  OROCHI_RETURN_IF_ERROR(allocate_layers());
  const Shapes s(config_);
  uint64_t stream_id = 0;
  {  // The embedding table is generated on the GPU (stream 0, as before) and kept on the host.
    OROCHI_ASSIGN_OR_RETURN(auto scratch, cuda::DeviceArena::create(device_, static_cast<size_t>(s.vocab * s.hidden) * 2 +
                                                                                 cuda::DeviceArena::kAlignment,
                                                                    "Qwen3-VL embedding (random init)"));
    OROCHI_ASSIGN_OR_RETURN(Tensor table, scratch->tensor({s.vocab, s.hidden}, DType::kBF16));
    OROCHI_RETURN_IF_ERROR(cuda::fill_normal(table, seed, stream_id++, 0.0f, 1.0f, stream_));
    OROCHI_ASSIGN_OR_RETURN(embed_tokens_, cuda::download(table, stream_));
  }
  OROCHI_ASSIGN_OR_RETURN(const LayerFiller filler, make_filler(config_, precision_, device_, stream_));
  const size_t image = layer_image_bytes(config_, precision_);
  for (int64_t i = 0; i < layers_; ++i) {
    const GpuTextLayer& target = layer_weights_[static_cast<size_t>(i)];
    OROCHI_RETURN_IF_ERROR(fill_random_layer(target, seed, stream_id, filler.fill));
    if (streaming_.streamed[static_cast<size_t>(i)])
      OROCHI_RETURN_IF_ERROR(tier_->store(i, target.input_norm.raw_data(), image, stream_));
  }
  return start_streaming();
}

layers::gpu::LayerContext GpuTextEncoder::layer_context() const {
  layers::gpu::LayerContext ctx;
  ctx.stream = stream_;
  ctx.gemm = gemm_.get();  // cuBLASLt, as transformers' bf16 linears (no sm_90a GEMM here)
  ctx.quantized_gemm = quantized_gemm_.get();
  ctx.quantized = quantized_gemm_ ? &quantized_scratch_ : nullptr;
  return ctx;
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
  const layers::gpu::LayerContext ctx = layer_context();
  if (w.q.is_quantized()) {  // one per-token quantization of x for the three projections
    OROCHI_ASSIGN_OR_RETURN(const RowQuantized xq,
                            layers::gpu::quantize_activation(ctx, rows(A.x), w.q.quantized.codes.dtype()));
    OROCHI_RETURN_IF_ERROR(layers::gpu::quantized_linear(ctx, w.q, xq, rows(A.q)));
    OROCHI_RETURN_IF_ERROR(layers::gpu::quantized_linear(ctx, w.k, xq, rows(A.k)));
    OROCHI_RETURN_IF_ERROR(layers::gpu::quantized_linear(ctx, w.v, xq, rows(A.v)));
  } else {
    OROCHI_RETURN_IF_ERROR(layers::gpu::linear(ctx, w.q, rows(A.x), rows(A.q)));
    OROCHI_RETURN_IF_ERROR(layers::gpu::linear(ctx, w.k, rows(A.x), rows(A.k)));
    OROCHI_RETURN_IF_ERROR(layers::gpu::linear(ctx, w.v, rows(A.x), rows(A.v)));
  }
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
  OROCHI_RETURN_IF_ERROR(layers::gpu::linear(ctx, w.o, rows(A.attn), rows(A.o)));
  OROCHI_RETURN_IF_ERROR(cuda::add_inplace(rows(A.h), rows(A.o), stream_));
  // MLP half: x = norm(h); h += down(up · silu(gate)).
  OROCHI_RETURN_IF_ERROR(launched(cuda::kernels::launch_rms_norm(ptr<const bf16>(A.h), ptr<const bf16>(w.post_norm),
                                                                 ptr<bf16>(A.x), L, s.hidden, eps, nullptr, stream_,
                                                                 true),
                                  "post_attention_layernorm"));
  OROCHI_RETURN_IF_ERROR(layers::gpu::linear(ctx, w.up_gate, rows(A.x), rows(A.u)));
  OROCHI_RETURN_IF_ERROR(cuda::swiglu(rows(A.u), rows(A.act), stream_));
  OROCHI_RETURN_IF_ERROR(layers::gpu::linear(ctx, w.down, rows(A.act), rows(A.o)));
  return cuda::add_inplace(rows(A.h), rows(A.o), stream_);
}

Expected<Tensor> GpuTextEncoder::encode_text(const Tensor& token_ids) {
  OROCHI_RETURN_IF_ERROR(validate_token_ids(config_, token_ids));
  return encode(token_ids, text_positions(token_ids.numel()));
}

// A vision tensor [V, hidden] as bf16 on this GPU: a device bf16 tensor as is, a device f32 one cast
// into `scratch`, a host one uploaded into it (rounded to bf16 on the host, as .to(bf16) does).
Expected<Tensor> GpuTextEncoder::vision_on_device(const Tensor& t, const Tensor& scratch) {
  if (t.device().kind != DeviceKind::kCUDA) {
    OROCHI_RETURN_IF_ERROR(cuda::upload_into(t, scratch, stream_));
    return scratch;
  }
  if (t.device().index != device_)
    return invalid_argument("vision features on GPU " + std::to_string(t.device().index) +
                            " given to the text encoder on GPU " + std::to_string(device_) +
                            "; copy them to its GPU (or to the host) first");
  if (!t.is_contiguous()) return invalid_argument("device vision features must be contiguous, got " + t.describe());
  if (t.dtype() == DType::kBF16) return t;
  OROCHI_RETURN_IF_ERROR(cuda::cast(t, scratch, stream_));
  return scratch;
}

Status GpuTextEncoder::add_at_vision_rows(const Tensor& feature, int64_t V) {
  const TextActivations& A = *act_;
  const Tensor idx = A.vision_rows.slice(0, 0, V), picked = A.x.slice(0, 0, V);
  OROCHI_ASSIGN_OR_RETURN(const Tensor add, vision_on_device(feature, A.o.slice(0, 0, V)));
  OROCHI_RETURN_IF_ERROR(cuda::gather_rows(A.h, idx, picked, stream_));
  OROCHI_RETURN_IF_ERROR(cuda::add_inplace(picked, add, stream_));
  return cuda::scatter_rows(A.h, idx, picked, stream_);
}

Expected<Tensor> GpuTextEncoder::encode(const Tensor& token_ids, const Tensor& positions) {
  return encode(token_ids, positions, VisionEmbeddings{});
}

Expected<Tensor> GpuTextEncoder::encode(const Tensor& token_ids, const Tensor& positions,
                                        const VisionEmbeddings& vision) {
  if (!has_weights_) return Status(ErrorCode::kInternal, "GpuTextEncoder::encode before upload() or init_random()");
  OROCHI_RETURN_IF_ERROR(validate_token_ids(config_, token_ids));
  const int64_t L = token_ids.numel();
  OROCHI_RETURN_IF_ERROR(validate_positions(positions, L));
  OROCHI_RETURN_IF_ERROR(validate_vision(vision, L, config_.hidden_size));
  if (L > max_tokens_)
    return invalid_argument("the prompt has " + std::to_string(L) + " tokens; this encoder was planned for at most " +
                            std::to_string(max_tokens_));
  OROCHI_CUDA_RETURN_IF_ERROR(cudaSetDevice(device_));
  const TextActivations& A = *act_;
  // RoPE angles in f32 on the host, cast to bf16 on upload as transformers casts cos/sin.
  const Tensor inv_freq = cpu::rope_inv_freq(static_cast<int>(config_.rope_freq_slots()),
                                             static_cast<float>(config_.rope_theta));
  const cpu::RopeTable rope = cpu::mrope_interleaved_table(positions.contiguous(), inv_freq, config_.mrope_section);
  OROCHI_RETURN_IF_ERROR(cuda::upload_into(rope.cos, A.cos.slice(0, 0, L), stream_));
  OROCHI_RETURN_IF_ERROR(cuda::upload_into(rope.sin, A.sin.slice(0, 0, L), stream_));
  // The prompt's embedding rows, looked up in the host table: [L, hidden] -> the residual stream.
  const Tensor ids = token_ids.contiguous();
  const Tensor& table = embed_tokens_;  // contiguous since upload() / init_random()
  Tensor rows = Tensor::empty({L, config_.hidden_size}, table.dtype());  // [L, hidden]
  const size_t row_bytes = static_cast<size_t>(config_.hidden_size) * dtype_size(table.dtype());
  for (int64_t i = 0; i < L; ++i)
    std::memcpy(static_cast<char*>(rows.raw_data()) + static_cast<size_t>(i) * row_bytes,
                static_cast<const char*>(table.raw_data()) + static_cast<size_t>(ids.data<int64_t>()[i]) * row_bytes,
                row_bytes);
  const int64_t V = static_cast<int64_t>(vision.rows.size());
  const bool features_on_device = V > 0 && vision.features.device().kind == DeviceKind::kCUDA;
  if (V > 0 && !features_on_device) {  // host features replace the pad rows here, in the table's dtype
    const Tensor features = vision.features.to(table.dtype()).contiguous();  // [V, hidden]
    for (int64_t i = 0; i < V; ++i)
      std::memcpy(static_cast<char*>(rows.raw_data()) + static_cast<size_t>(vision.rows[static_cast<size_t>(i)]) * row_bytes,
                  static_cast<const char*>(features.raw_data()) + static_cast<size_t>(i) * row_bytes, row_bytes);
  }
  if (V > 0)
    OROCHI_RETURN_IF_ERROR(cuda::upload_into(Tensor::from_ints(vision.rows, {V}), A.vision_rows.slice(0, 0, V),
                                             stream_));
  OROCHI_RETURN_IF_ERROR(cuda::upload_into(rows, A.h.slice(0, 0, L), stream_));
  if (features_on_device) {  // device features (the GPU vision tower's) are scattered on the GPU
    OROCHI_ASSIGN_OR_RETURN(const Tensor features, vision_on_device(vision.features, A.x.slice(0, 0, V)));
    OROCHI_RETURN_IF_ERROR(cuda::scatter_rows(A.h, A.vision_rows.slice(0, 0, V), features, stream_));
  }
  if (streamer_) OROCHI_RETURN_IF_ERROR(streamer_->begin_pass(/*prefetch_next_pass=*/false));
  for (int64_t i = 0; i < layers_; ++i) {
    int slot = -1;
    if (streamer_) {
      OROCHI_ASSIGN_OR_RETURN(slot, streamer_->acquire(static_cast<int>(i)));
    }
    OROCHI_RETURN_IF_ERROR(run_layer(slot < 0 ? layer_weights_[static_cast<size_t>(i)] : slot_layers_[slot], L));
    if (streamer_) OROCHI_RETURN_IF_ERROR(streamer_->release(static_cast<int>(i)));
    // DeepStack after layer i, when a layer follows (transformers' hidden_states[i + 1] is before it).
    if (V > 0 && i < static_cast<int64_t>(vision.deepstack.size()) && i + 1 < layers_)
      OROCHI_RETURN_IF_ERROR(add_at_vision_rows(vision.deepstack[static_cast<size_t>(i)], V));
  }
  const Tensor out = A.out.slice(0, 0, L);
  OROCHI_RETURN_IF_ERROR(cuda::cast(A.h.slice(0, 0, L), out, stream_));
  return cuda::download(out, stream_);
}

}  // namespace orochi::qwen3vl::gpu
