// H3GpuRunner's forward: the text refiner, the embeddings, the blocks and the heads, for one rank
// of a TP x SP layout (the whole model and every row on one GPU).
#include <optional>
#include <vector>

#include "backends/cuda/cuda_check.h"
#include "backends/cuda/gemm_sm90a.h"
#include "backends/cuda/kernels/kernels.h"
#include "backends/cuda/kernels/quantized_output_kernels.h"
#include "layers/cuda/tp_linear.h"
#include "models/h3/cuda/gpu_runner.h"

namespace orochi::h3::gpu {
namespace {

using cuda::kernels::bf16;
using cuda::kernels::ModulationRows;

template <typename T>
T* ptr(const Tensor& t) { return static_cast<T*>(t.raw_data()); }

Status launched(cudaError_t err, const char* what) { return cuda::cuda_status(err, what); }

// Where a producer kernel writes an activation's per-token quantization.
cuda::kernels::RowCodes row_codes(const RowQuantized& q) {
  return {q.codes.dtype() == DType::kI8 ? cuda::kernels::QuantCode::kI8 : cuda::kernels::QuantCode::kE4M3,
          ptr<uint8_t>(q.codes), ptr<float>(q.scales)};
}

}  // namespace

std::optional<DType> H3GpuRunner::fused_input_format(const GpuLinear& l) const {
  // Quantized runs are one GPU for now (create() refuses others); a TP / SP linear would need its
  // input's codes split or exchanged as the bf16 rows are.
  if (!fused_quantization_ || !l.is_quantized() || tp_ != nullptr || sp_ != nullptr) return std::nullopt;
  return l.quantized.codes.dtype();
}

std::string H3GpuRunner::attention_kernel() const {
  const RankDims d = rank_dims(config_, max_, rank_);
  return attention_.kernel_for({.s_q = max_.rows, .s_kv = max_.rows, .heads = d.attn_heads, .head_dim = d.head_dim});
}

// Self-attention of `rows` rows of x into out [rows, H]. A transformer block (`main`) applies RoPE
// and, with SP, attends over every rank's rows through the Ulysses exchange; the refiner attends
// over its L text rows alone. With TP, out is summed over the group.
Status H3GpuRunner::attention_block(const GpuBlock& b, const Tensor& x, int64_t rows, bool main, const Tensor& out,
                                    const RowQuantized* xq) {
  OROCHI_CHECK(xq == nullptr || !(main && sp_ != nullptr), "pre-quantized attention input with SP (fused_input_format)");
  if (main && sp_ != nullptr) return ulysses_attention_block(b, x, out);
  RequestBuffers& B = *buf_;
  const RankDims d = rank_dims(config_, B.size, rank_);
  const int64_t hd = config_.attention_head_dim;
  const int64_t heads = d.heads;
  const Tensor q = B.q.slice(0, 0, rows), k = B.k.slice(0, 0, rows), v = B.v.slice(0, 0, rows), o = B.o.slice(0, 0, rows);
  const GpuLinear w[] = {b.to_q, b.to_k, b.to_v};
  const Tensor ys[] = {q, k, v};  // [rows, heads * hd] each
  OROCHI_RETURN_IF_ERROR(project_qkv(b, w, x, ys, heads, /*rope=*/main, /*first_row=*/0, xq));
  timer_.begin("attention");
  OROCHI_RETURN_IF_ERROR(attention_.attend(q.raw_data(), k.raw_data(), v.raw_data(), o.raw_data(),
                                           cuda::AttentionShape{.s_q = rows, .s_kv = rows, .heads = heads, .head_dim = hd}));
  timer_.end();
  // The out-projection's input is quantized by a pass of its own: the attention kernels write o
  // in bf16 and no other kernel touches o before the projection.
  return layers::gpu::tp_reduced_linear(layer_context(), tp_, b.to_out, o, out, "gemm out");  // [rows, H]
}

Status H3GpuRunner::project_qkv(const GpuBlock& b, const GpuLinear (&w)[3], const Tensor& x, const Tensor (&y)[3],
                                int64_t heads, bool rope, int64_t first_row, const RowQuantized* xq) {
  if (w[0].is_quantized()) {
    // One per-token quantization of x for the three projections: the norm's (xq), or a pass here.
    const layers::gpu::LayerContext ctx = layer_context();
    RowQuantized quantized;
    if (xq != nullptr) {
      quantized = *xq;
    } else {
      timer_.begin("quantize qkv input");
      Expected<RowQuantized> q = layers::gpu::quantize_activation(ctx, x, w[0].quantized.codes.dtype());
      timer_.end();
      if (!q) return q.status();
      quantized = *q;
    }
    timer_.begin("gemm qkv");
    for (int i = 0; i < 3; ++i) OROCHI_RETURN_IF_ERROR(layers::gpu::quantized_linear(ctx, w[i], quantized, y[i]));
  } else if (gemm_sm90a_ || w[0].bias.defined() || w[1].bias.defined() || w[2].bias.defined()) {
    timer_.begin("gemm qkv");
    for (int i = 0; i < 3; ++i) OROCHI_RETURN_IF_ERROR(linear(w[i], x, y[i]));
  } else {
    timer_.begin("gemm qkv");
    const Tensor ws[] = {w[0].weight, w[1].weight, w[2].weight};
    OROCHI_RETURN_IF_ERROR(gemm_->linear_shared_input(x, ws, y, stream_));
  }
  timer_.end();
  const int64_t rows = y[0].dim(0), hd = config_.attention_head_dim, rot = rope ? config_.rotary_dim() : 0;
  const bf16* cos = rope ? ptr<const bf16>(buf_->rope_cos) + first_row * rot : nullptr;
  const bf16* sin = rope ? ptr<const bf16>(buf_->rope_sin) + first_row * rot : nullptr;
  const float eps = static_cast<float>(config_.qk_norm_eps);
  const Tensor &q = y[0], &k = y[1];
  timer_.begin("qk norm + rope");
  Status s = launched(cuda::kernels::launch_qk_norm_rope(ptr<bf16>(q), ptr<const bf16>(b.norm_q), rows, heads, hd, eps,
                                                         cos, sin, rot, stream_, false, qk_norm_items_), "qk_norm_rope q");
  if (s.is_ok())
    s = launched(cuda::kernels::launch_qk_norm_rope(ptr<bf16>(k), ptr<const bf16>(b.norm_k), rows, heads, hd, eps, cos,
                                                    sin, rot, stream_, false, qk_norm_items_), "qk_norm_rope k");
  timer_.end();
  return s;
}

// SwiGLU FFN of `rows` rows of x into out [rows, H] (summed over TP).
Status H3GpuRunner::feed_forward(const GpuBlock& b, const Tensor& x, int64_t rows, const Tensor& out,
                                 const RowQuantized* xq) {
  RequestBuffers& B = *buf_;
  const Tensor u = B.u.slice(0, 0, rows), g = B.g.slice(0, 0, rows);
  const Tensor* bias = b.ff_in.bias.defined() ? &b.ff_in.bias : nullptr;
  if (gemm_sm90a_ && !b.ff_in.is_quantized() &&
      cuda::gemm_sm90a_unsupported_reason(x, b.ff_in.weight, bias, g, cuda::GemmSm90aEpilogue::kSwiGLU).empty()) {
    timer_.begin("gemm ffn in + swiglu");
    OROCHI_RETURN_IF_ERROR(cuda::gemm_sm90a(x, b.ff_in.weight, bias, g, cuda::GemmSm90aEpilogue::kSwiGLU, stream_));
    timer_.end();
    return layers::gpu::tp_reduced_linear(layer_context(), tp_, b.ff_out, g, out, "gemm ffn out");
  }
  timer_.begin("gemm ffn in");
  if (xq != nullptr)
    OROCHI_RETURN_IF_ERROR(layers::gpu::quantized_linear(layer_context(), b.ff_in, *xq, u));  // [rows, 2F]
  else
    OROCHI_RETURN_IF_ERROR(linear(b.ff_in, x, u));  // [rows, 2F/tp]
  timer_.end();
  if (const std::optional<DType> format = fused_input_format(b.ff_out)) {
    // SwiGLU writes the codes of g [rows, F] (over ff_in's input codes: that GEMM has read them).
    const layers::gpu::LayerContext ctx = layer_context();
    OROCHI_ASSIGN_OR_RETURN(const RowQuantized gq, layers::gpu::activation_buffer(ctx, rows, g.dim(1), *format));
    timer_.begin("swiglu + quantize");
    OROCHI_RETURN_IF_ERROR(launched(cuda::kernels::launch_swiglu_quantized(ptr<const bf16>(u), nullptr, row_codes(gq),
                                                                           rows, g.dim(1), stream_), "swiglu + quantize"));
    timer_.end();
    timer_.begin("gemm ffn out");
    OROCHI_RETURN_IF_ERROR(layers::gpu::quantized_linear(ctx, b.ff_out, gq, out));  // [rows, H]
    timer_.end();
    return Status::ok();
  }
  timer_.begin("swiglu");
  OROCHI_RETURN_IF_ERROR(launched(cuda::kernels::launch_swiglu(ptr<const bf16>(u), ptr<bf16>(g), rows, g.dim(1), stream_), "swiglu"));
  timer_.end();
  return layers::gpu::tp_reduced_linear(layer_context(), tp_, b.ff_out, g, out, "gemm ffn out");
}

Status H3GpuRunner::refiner_block(const GpuBlock& b, const Tensor& t) {
  RequestBuffers& B = *buf_;
  const int64_t L = t.dim(0), H = config_.hidden_size;
  const float eps = static_cast<float>(config_.norm_eps);
  const Tensor a = B.a.slice(0, 0, L), o2 = B.o2.slice(0, 0, L);
  OROCHI_RETURN_IF_ERROR(launched(cuda::kernels::launch_rms_norm(ptr<const bf16>(t), ptr<const bf16>(b.norm1), ptr<bf16>(a),
                                                                 L, H, eps, nullptr, stream_), "refiner norm1"));
  OROCHI_RETURN_IF_ERROR(attention_block(b, a, L, false, o2));
  OROCHI_RETURN_IF_ERROR(launched(cuda::kernels::launch_add(ptr<bf16>(t), ptr<const bf16>(o2), L * H, stream_), "add"));
  OROCHI_RETURN_IF_ERROR(launched(cuda::kernels::launch_rms_norm(ptr<const bf16>(t), ptr<const bf16>(b.norm2), ptr<bf16>(a),
                                                                 L, H, eps, nullptr, stream_), "refiner norm2"));
  OROCHI_RETURN_IF_ERROR(feed_forward(b, a, L, o2));
  return launched(cuda::kernels::launch_add(ptr<bf16>(t), ptr<const bf16>(o2), L * H, stream_), "add");
}

// Block `index`'s AdaLN rows of the [n_t * 3, 6H] table: shift/scale/gate msa are column blocks
// 0-2, shift/scale/gate mlp 3-5 (`first` = 0 or 3). The gate is the column block after the scale.
ModulationRows H3GpuRunner::block_modulation(size_t index, int first) const {
  const RequestBuffers& B = *buf_;
  const int64_t H = config_.hidden_size, W = 6 * H;
  const bf16* table = ptr<const bf16>(B.tables) + static_cast<int64_t>(index) * B.n_t * kModalities * W + first * H;
  return ModulationRows{table, W, table + H, W, ptr<const int64_t>(B.adaln_idx)};
}

// `normed`: the previous block's last kernel already wrote this block's pre-attention norm: into
// a, or, where fused_input_format(b.to_q) is set (the previous block's next->quantize, from the same
// call on this block), as the codes of q/k/v's input instead.
// `next`: the norm that follows this block, fused into its last residual (null: the residual alone).
Status H3GpuRunner::transformer_block(size_t index, const GpuBlock& b, bool normed, const NextNorm* next) {
  RequestBuffers& B = *buf_;
  const int64_t R = B.h.dim(0), H = config_.hidden_size;
  const float eps = static_cast<float>(config_.norm_eps);
  const Tensor a = B.a.slice(0, 0, R), o2 = B.o2.slice(0, 0, R);
  const ModulationRows msa = block_modulation(index, 0), mlp = block_modulation(index, 3);
  const int64_t W = msa.shift_stride;
  const bf16 *gate_msa = msa.scale + H, *gate_mlp = mlp.scale + H;
  const layers::gpu::LayerContext ctx = layer_context();
  // Each norm writes a [R, H] in bf16, or only the per-token codes of the quantized linear after it.
  auto codes_for = [&](const std::optional<DType>& format) -> Expected<std::optional<RowQuantized>> {
    if (!format) return std::optional<RowQuantized>();
    OROCHI_ASSIGN_OR_RETURN(RowQuantized q, layers::gpu::activation_buffer(ctx, R, H, *format));
    return std::optional<RowQuantized>(std::move(q));
  };
  OROCHI_ASSIGN_OR_RETURN(const std::optional<RowQuantized> qkv_in, codes_for(fused_input_format(b.to_q)));
  if (!normed) {
    timer_.begin("norm + modulate");
    if (qkv_in)
      OROCHI_RETURN_IF_ERROR(launched(cuda::kernels::launch_rms_norm_quantized(ptr<const bf16>(B.h), ptr<const bf16>(b.norm1),
                                                                               nullptr, row_codes(*qkv_in), R, H, eps, &msa, stream_),
                                      "norm1 + quantize"));
    else
      OROCHI_RETURN_IF_ERROR(launched(cuda::kernels::launch_rms_norm(ptr<const bf16>(B.h), ptr<const bf16>(b.norm1),
                                                                     ptr<bf16>(a), R, H, eps, &msa, stream_), "norm1"));
    timer_.end();
  }
  OROCHI_RETURN_IF_ERROR(attention_block(b, a, R, true, o2, qkv_in ? &*qkv_in : nullptr));
  // h += gate_msa · attention, and the FFN's pre-norm of the new h, in one pass.
  OROCHI_ASSIGN_OR_RETURN(const std::optional<RowQuantized> ffn_in, codes_for(fused_input_format(b.ff_in)));
  timer_.begin("gated residual + norm");
  if (ffn_in)
    OROCHI_RETURN_IF_ERROR(launched(cuda::kernels::launch_gated_residual_rms_norm_quantized(
                                        ptr<bf16>(B.h), gate_msa, W, msa.idx, ptr<const bf16>(o2),
                                        ptr<const bf16>(b.norm2), nullptr, row_codes(*ffn_in), R, H, eps, &mlp, stream_),
                                    "gate msa + norm2 + quantize"));
  else
    OROCHI_RETURN_IF_ERROR(launched(cuda::kernels::launch_gated_residual_rms_norm(
                                        ptr<bf16>(B.h), gate_msa, W, msa.idx, ptr<const bf16>(o2),
                                        ptr<const bf16>(b.norm2), ptr<bf16>(a), R, H, eps, &mlp, stream_),
                                    "gate msa + norm2"));
  timer_.end();
  OROCHI_RETURN_IF_ERROR(feed_forward(b, a, R, o2, ffn_in ? &*ffn_in : nullptr));
  if (next != nullptr) {
    OROCHI_ASSIGN_OR_RETURN(const std::optional<RowQuantized> next_in, codes_for(next->quantize));
    timer_.begin("gated residual + norm");
    if (next_in)
      OROCHI_RETURN_IF_ERROR(launched(cuda::kernels::launch_gated_residual_rms_norm_quantized(
                                          ptr<bf16>(B.h), gate_mlp, W, mlp.idx, ptr<const bf16>(o2), next->weight,
                                          nullptr, row_codes(*next_in), R, H, next->eps, &next->mod, stream_),
                                      "gate mlp + next norm + quantize"));
    else
      OROCHI_RETURN_IF_ERROR(launched(cuda::kernels::launch_gated_residual_rms_norm(
                                          ptr<bf16>(B.h), gate_mlp, W, mlp.idx, ptr<const bf16>(o2), next->weight,
                                          ptr<bf16>(a), R, H, next->eps, &next->mod, stream_),
                                      "gate mlp + next norm"));
  } else {
    timer_.begin("gated residual");
    OROCHI_RETURN_IF_ERROR(launched(cuda::kernels::launch_gated_residual(ptr<bf16>(B.h), gate_mlp, W, mlp.idx,
                                                                         ptr<const bf16>(o2), R, H, stream_),
                                    "gate mlp"));
  }
  timer_.end();
  return Status::ok();
}

Status H3GpuRunner::forward() {
  OROCHI_CHECK(buf_ != nullptr, "forward() before set_request()");
  RequestBuffers& B = *buf_;
  const int64_t R = B.h.dim(0), L = B.text.dim(0), H = config_.hidden_size;
  const int64_t nv = B.video_in.dim(0), na = B.audio_in.dim(0), lt = B.text_pos.dim(0);
  const size_t row_bytes = static_cast<size_t>(H) * 2;
  // 1. Text: context embedder, token refiner, final norm (all L rows on every rank); this rank's
  //    text rows go into its part of the packed stream.
  OROCHI_RETURN_IF_ERROR(linear(weights_.context_embedder, B.text_in, B.text));
  for (const GpuBlock& b : weights_.refiner) OROCHI_RETURN_IF_ERROR(refiner_block(b, B.text));
  OROCHI_RETURN_IF_ERROR(launched(cuda::kernels::launch_rms_norm(ptr<const bf16>(B.text), ptr<const bf16>(weights_.refiner_final_norm),
                                                                 ptr<bf16>(B.a), L, H, static_cast<float>(config_.final_norm_eps),
                                                                 nullptr, stream_), "refiner final norm"));
  if (lt > 0)
    OROCHI_RETURN_IF_ERROR(launched(cuda::kernels::launch_copy_rows(B.h.raw_data(), row_bytes, ptr<const int64_t>(B.text_dst), B.a.raw_data(),
                                                                    row_bytes, ptr<const int64_t>(B.text_pos), lt, row_bytes, stream_),
                                    "scatter text"));
  // 2. Video and audio rows: f32 patch projections, rounded to bf16 into the stream.
  auto embed = [&](const GpuLinear& proj, const Tensor& rows_in, const Tensor& dst, int64_t n, const char* what) -> Status {
    if (n == 0) return Status::ok();
    const Tensor emb = B.rows_f32.slice(0, 0, n);
    OROCHI_RETURN_IF_ERROR(linear(proj, rows_in, emb));  // f32 [n, H]
    OROCHI_RETURN_IF_ERROR(launched(cuda::kernels::launch_cast_f32_to_bf16(ptr<const float>(emb), ptr<bf16>(B.a), n * H, stream_), what));
    return launched(cuda::kernels::launch_copy_rows(B.h.raw_data(), row_bytes, ptr<const int64_t>(dst), B.a.raw_data(),
                                                    row_bytes, nullptr, n, row_bytes, stream_), what);
  };
  OROCHI_RETURN_IF_ERROR(embed(weights_.proj_in, B.video_in, B.video_dst, nv, "embed video"));
  OROCHI_RETURN_IF_ERROR(embed(weights_.audio_proj_in, B.audio_in, B.audio_dst, na, "embed audio"));
  // 3. The blocks.
  // A streamed block's weights are in a staging slot by the time the compute stream reaches it.
  const bool streaming = blocks_ && blocks_->started();
  if (streaming) OROCHI_RETURN_IF_ERROR(blocks_->begin_pass());
  // Each block's last residual is fused with the norm after it: the next block's pre-attention norm
  // (when that block's weights are resident; a streamed one is not in its slot yet) or, after the
  // last block, the output norm modulated per timestep.
  const bf16* ft = ptr<const bf16>(B.final_table);
  const NextNorm output_norm{ptr<const bf16>(weights_.norm_out),
                             ModulationRows{ft, 2 * H, ft + H, 2 * H, ptr<const int64_t>(B.ts_idx)},
                             static_cast<float>(config_.final_norm_eps), /*quantize=*/std::nullopt};  // the heads read a
  bool normed = false;  // a holds the pre-norm of the block about to run
  for (size_t i = 0; i < weights_.blocks.size(); ++i) {
    int slot = -1;
    if (streaming) {
      OROCHI_ASSIGN_OR_RETURN(slot, blocks_->acquire(static_cast<int>(i)));
    }
    std::optional<NextNorm> next;
    if (i + 1 == weights_.blocks.size())
      next = output_norm;
    else if (!streaming)
      next = NextNorm{ptr<const bf16>(weights_.blocks[i + 1].norm1), block_modulation(i + 1, 0),
                      static_cast<float>(config_.norm_eps), fused_input_format(weights_.blocks[i + 1].to_q)};
    OROCHI_RETURN_IF_ERROR(transformer_block(i, slot < 0 ? weights_.blocks[i] : slot_blocks_[slot], normed,
                                             next ? &*next : nullptr));
    normed = next.has_value();
    if (streaming) OROCHI_RETURN_IF_ERROR(blocks_->release(static_cast<int>(i)));
  }
  // 4. The output norm (already in a when the last block fused it), then each head on its own rows in f32.
  if (!normed)
    OROCHI_RETURN_IF_ERROR(launched(cuda::kernels::launch_rms_norm(ptr<const bf16>(B.h), output_norm.weight,
                                                                   ptr<bf16>(B.a), R, H, output_norm.eps,
                                                                   &output_norm.mod, stream_), "norm_out"));
  auto head = [&](const GpuLinear& proj, const Tensor& idx, int64_t n, const Tensor& out, const char* what) -> Status {
    if (n == 0) return Status::ok();
    OROCHI_RETURN_IF_ERROR(launched(cuda::kernels::launch_copy_rows(B.o2.raw_data(), row_bytes, nullptr, B.a.raw_data(),
                                                                    row_bytes, ptr<const int64_t>(idx), n, row_bytes, stream_), what));
    const Tensor rows = B.rows_f32.slice(0, 0, n);
    OROCHI_RETURN_IF_ERROR(launched(cuda::kernels::launch_cast_bf16_to_f32(ptr<const bf16>(B.o2), ptr<float>(rows), n * H, stream_), what));
    return linear(proj, rows, out);
  };
  OROCHI_RETURN_IF_ERROR(head(weights_.proj_out, B.video_dst, nv, B.video_out, "video head"));
  return head(weights_.audio_proj_out, B.audio_dst, na, B.audio_out, "audio head");
}

}  // namespace orochi::h3::gpu
