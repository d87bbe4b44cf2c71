#include "models/h3/block_forward.h"

#include <string>
#include <vector>

#include "backends/cpu/attention_fp8.h"
#include "core/quantize.h"

namespace orochi::h3 {
namespace {

void notify(const H3Observer& observer, const std::string& name, const Tensor& t) {
  if (observer) observer(name, t);
}

// The GPU's FP8 attention on the CPU: q, k, v [S, heads, 128] rounded to bf16 (what the kernel's
// pre-pass reads), quantized and attended as backends/cpu/attention_fp8.h does -> f32 [S, heads, 128].
// Row sums of P's codes: the kernel's default (fp8-attention-sums=mma).
Tensor fp8_attention_emulated(const Qkv& qkv) {
  OROCHI_CHECK(qkv.q.dim(2) == fp8_attention::kHeadDim, "the FP8 attention emulation needs head dim 128, got ",
               qkv.q.dim(2));
  auto bf16 = [](const Tensor& t) { return t.to(DType::kBF16).to(DType::kF32); };
  const cpu::Fp8AttentionOperands ops = cpu::quantize_attention_fp8(bf16(qkv.q), bf16(qkv.k), bf16(qkv.v));
  std::vector<int64_t> heads(static_cast<size_t>(qkv.q.dim(1)));
  for (size_t h = 0; h < heads.size(); ++h) heads[h] = static_cast<int64_t>(h);
  return cpu::attention_fp8_emulated(ops, heads, {}, cpu::Fp8RowSums::kCodes);
}

// Self-attention over all rows of x [S, H]; RoPE only when a table is given (not in the refiner).
Tensor self_attention(const Tensor& x, const AttentionWeights& a, const H3Config& c, const cpu::RopeTable* rope) {
  const int64_t S = x.dim(0), heads = c.num_attention_heads, hd = c.attention_head_dim;
  const Qkv qkv = project_qkv(x, a, heads, c, rope);
  const Tensor o = (a.emulated_fp8 ? fp8_attention_emulated(qkv) : cpu::attention(qkv.q, qkv.k, qkv.v))
                       .view({S, heads * hd});  // [S, inner]
  return apply_linear(o, a.to_out);             // [S, H]
}

Tensor feed_forward(const Tensor& x, const BlockWeights& b) {
  return apply_linear(cpu::swiglu(apply_linear(x, b.ff_in)), b.ff_out);
}

// Plain pre-norm block over the L text rows: no modulation, no gates, no RoPE.
void refiner_block(Tensor& h, const BlockWeights& b, const H3Config& c) {
  const float eps = static_cast<float>(c.norm_eps);
  cpu::add_inplace(h, self_attention(cpu::rms_norm(h, b.norm1, eps), b.attn, c, nullptr));
  cpu::add_inplace(h, feed_forward(cpu::rms_norm(h, b.norm2, eps), b));
}

}  // namespace

Tensor apply_linear(const Tensor& x, const LinearWeights& l) {
  if (l.emulated_codes != DType::kF32) {  // emulate_quantization: the GPU's quantized linear
    OROCHI_CHECK(l.adapters.empty(), "an emulated quantized linear with unmerged LoRA adapters");
    return emulated_quantized_linear(x, l.weight, l.bias_or_null(), l.emulated_codes);  // [n, out]
  }
  Tensor y = cpu::linear(x, l.weight, l.bias_or_null());  // [n, out]
  // Unmerged LoRAs in PEFT's order: the base result first, then + scale · B(A x), each in f32.
  for (const LoraAdapter& a : l.adapters) {
    const Tensor delta = cpu::linear(cpu::linear(x, a.down), a.up);  // [n, r] -> [n, out]
    float* out = y.data<float>();
    const float* d = delta.data<float>();
    for (int64_t i = 0; i < y.numel(); ++i) out[i] += d[i] * a.scale;
  }
  return y;
}

Qkv project_qkv(const Tensor& x, const AttentionWeights& a, int64_t heads, const H3Config& c, const cpu::RopeTable* rope) {
  const int64_t n = x.dim(0), hd = c.attention_head_dim;
  const float eps = static_cast<float>(c.qk_norm_eps);
  Qkv out{cpu::rms_norm(apply_linear(x, a.to_q).view({n, heads, hd}), a.norm_q, eps),  // [n, h, d]
          cpu::rms_norm(apply_linear(x, a.to_k).view({n, heads, hd}), a.norm_k, eps),
          apply_linear(x, a.to_v).view({n, heads, hd})};
  if (rope) {
    cpu::apply_rope(out.q, *rope);
    cpu::apply_rope(out.k, *rope);
  }
  return out;
}

BlockInputs block_inputs(const H3Config& c, const H3Inputs& in, const H3Observer& observer) {
  BlockInputs b;
  b.rope = cpu::rope_table(in.positions.contiguous(), cpu::rope_inv_freq(static_cast<int>(c.rope_freq_dim),
                                                                         static_cast<float>(c.rope_theta)));
  notify(observer, "rope.cos", b.rope.cos);
  notify(observer, "rope.sin", b.rope.sin);
  const int64_t S = in.rows();
  std::vector<int64_t> adaln(S);
  const Tensor ti_dense = in.timestep_indices.contiguous(), tg_dense = in.token_tags.contiguous();
  const int64_t* ti = ti_dense.data<int64_t>();
  const int64_t* tg = tg_dense.data<int64_t>();
  for (int64_t s = 0; s < S; ++s) adaln[s] = ti[s] * kModalities + tg[s];
  b.adaln_idx = Tensor::from_ints(adaln, {S});
  return b;
}

Tensor embed_sequence(const H3Weights& w, const H3Inputs& in, const H3Observer& observer) {
  const H3Config& c = w.config;
  Tensor text = apply_linear(in.text.contiguous(), w.context_embedder);  // [L, H]
  for (size_t i = 0; i < w.refiner.size(); ++i) {
    refiner_block(text, w.refiner[i], c);
    notify(observer, "refiner." + std::to_string(i), text);
  }
  text = cpu::rms_norm(text, w.refiner_final_norm, static_cast<float>(c.final_norm_eps));
  notify(observer, "text_embeds", text);

  Tensor h = Tensor::zeros({in.rows(), c.hidden_size}, DType::kF32);  // [S, H] packed residual stream
  cpu::scatter_rows(h, in.text_indices, text);
  cpu::scatter_rows(h, in.video_indices, apply_linear(in.video.contiguous(), w.proj_in));
  cpu::scatter_rows(h, in.audio_indices, apply_linear(in.audio.contiguous(), w.audio_proj_in));
  notify(observer, "packed", h);
  return h;
}

void transformer_block(Tensor& h, const BlockWeights& b, const Tensor& table, const BlockInputs& inputs,
                       const H3Config& c) {
  const int64_t H = c.hidden_size;
  const float eps = static_cast<float>(c.norm_eps);
  const Tensor& idx = inputs.adaln_idx;
  auto chunk = [&](int i) { return table.slice(1, i * H, (i + 1) * H); };  // row-strided [R, H]
  Tensor a = cpu::modulate(cpu::rms_norm(h, b.norm1, eps), chunk(0), chunk(1), idx);
  cpu::gated_residual(h, chunk(2), idx, self_attention(a, b.attn, c, &inputs.rope));
  Tensor f = cpu::modulate(cpu::rms_norm(h, b.norm2, eps), chunk(3), chunk(4), idx);
  cpu::gated_residual(h, chunk(5), idx, feed_forward(f, b));
}

H3Outputs output_heads(const H3Weights& w, const Tensor& h, const H3Inputs& in, const ModulationTables& tables,
                       const H3Observer& observer) {
  const H3Config& c = w.config;
  const int64_t H = c.hidden_size;
  Tensor y = cpu::modulate(cpu::rms_norm(h, w.norm_out, static_cast<float>(c.final_norm_eps)),
                           tables.final.slice(1, 0, H), tables.final.slice(1, H, 2 * H),
                           in.timestep_indices.contiguous());  // [S, H]
  notify(observer, "norm_out", y);
  H3Outputs out;
  out.video = apply_linear(cpu::gather_rows(y, in.video_indices.contiguous()), w.proj_out);
  out.audio = apply_linear(cpu::gather_rows(y, in.audio_indices.contiguous()), w.audio_proj_out);
  notify(observer, "out.video", out.video);
  notify(observer, "out.audio", out.audio);
  return out;
}

}  // namespace orochi::h3
