#include "models/h3/cuda/gpu_runner.h"

#include <vector>

#include "backends/cpu/ops.h"
#include "backends/cuda/cuda_check.h"
#include "backends/cuda/kernels/kernels.h"

namespace orochi::h3::gpu {
namespace {

using cuda::kernels::bf16;
using cuda::kernels::ModulationRows;

template <typename T>
T* ptr(const Tensor& t) { return static_cast<T*>(t.raw_data()); }

Status launched(cudaError_t err, const char* what) { return cuda::cuda_status(err, what); }

// One request buffer: name for errors, shape, dtype.
struct BufferSpec {
  Tensor* target;
  Shape shape;
  DType dtype;
};

}  // namespace

// Everything a request needs on the GPU, allocated once from the request arena.
struct RequestBuffers {
  // inputs
  Tensor video_in, audio_in, text_in;                     // f32 [Nv, 96], f32 [Na, 32], bf16 [L, text_dim]
  Tensor video_idx, audio_idx, text_idx, ts_idx, adaln_idx;  // i64
  Tensor rope_cos, rope_sin;                              // bf16 [S, R]
  // per-request AdaLN tables and the staging slot their weights stream through
  Tensor tables;        // bf16 [layers, n_t * 3, 6H]
  Tensor final_table;   // bf16 [n_t, 2H]
  Tensor adaln_w, adaln_b;  // bf16 [18H, T], [18H]
  Tensor temb_in, temb_hidden, temb, temb_act;  // f32 [n_t, freq], f32 [n_t, hidden], f32, bf16 [n_t, T]
  // activations
  Tensor h, a, o2;      // bf16 [S, H]
  Tensor q, k, v, o;    // bf16 [S, inner]
  Tensor u, g;          // bf16 [S, 2F], [S, F]
  Tensor text;          // bf16 [L, H]
  Tensor rows_f32;      // f32 [max(Nv, Na), H]: patch embeddings in, head inputs out
  Tensor video_out, audio_out;  // f32 [Nv, 96], [Na, 32]
  int64_t n_t = 0;

  std::vector<BufferSpec> specs(const H3Config& c, const RequestSize& s) {
    const int64_t H = c.hidden_size, inner = c.inner_dim(), F = c.ffn_dim, T = c.time_embed_dim;
    const int64_t S = s.rows, L = s.text_rows, nt = s.timesteps;
    return {
        {&video_in, {s.video_rows, c.video_patch_dim()}, DType::kF32},
        {&audio_in, {s.audio_rows, c.audio_in_channels}, DType::kF32},
        {&text_in, {L, c.text_dim}, DType::kBF16},
        {&video_idx, {s.video_rows}, DType::kI64}, {&audio_idx, {s.audio_rows}, DType::kI64},
        {&text_idx, {L}, DType::kI64}, {&ts_idx, {S}, DType::kI64}, {&adaln_idx, {S}, DType::kI64},
        {&rope_cos, {S, c.rotary_dim()}, DType::kBF16}, {&rope_sin, {S, c.rotary_dim()}, DType::kBF16},
        {&tables, {c.num_layers, nt * kModalities, 6 * H}, DType::kBF16},
        {&final_table, {nt, 2 * H}, DType::kBF16},
        {&adaln_w, {6 * kModalities * H, T}, DType::kBF16}, {&adaln_b, {6 * kModalities * H}, DType::kBF16},
        {&temb_in, {nt, c.freq_dim}, DType::kF32}, {&temb_hidden, {nt, c.time_embed_hidden_dim}, DType::kF32},
        {&temb, {nt, T}, DType::kF32}, {&temb_act, {nt, T}, DType::kBF16},
        {&h, {S, H}, DType::kBF16}, {&a, {S, H}, DType::kBF16}, {&o2, {S, H}, DType::kBF16},
        {&q, {S, inner}, DType::kBF16}, {&k, {S, inner}, DType::kBF16}, {&v, {S, inner}, DType::kBF16},
        {&o, {S, inner}, DType::kBF16}, {&u, {S, 2 * F}, DType::kBF16}, {&g, {S, F}, DType::kBF16},
        {&text, {L, H}, DType::kBF16},
        {&rows_f32, {std::max(s.video_rows, s.audio_rows), H}, DType::kF32},
        {&video_out, {s.video_rows, c.video_patch_dim()}, DType::kF32},
        {&audio_out, {s.audio_rows, c.audio_in_channels}, DType::kF32},
    };
  }
};

size_t request_arena_bytes(const H3Config& config, const RequestSize& size, size_t attention_workspace) {
  RequestBuffers sizing;
  size_t bytes = attention_workspace + cuda::DeviceArena::kAlignment;
  for (const BufferSpec& b : sizing.specs(config, size))
    bytes += (static_cast<size_t>(shape_numel(b.shape)) * dtype_size(b.dtype) + 255) / 256 * 256;
  return bytes;
}

Expected<std::unique_ptr<H3GpuRunner>> H3GpuRunner::create(const H3Config& config, int device, const RequestSize& max) {
  std::unique_ptr<H3GpuRunner> r(new H3GpuRunner());
  r->config_ = config;
  r->max_ = max;
  r->device_ = device;
  OROCHI_CUDA_RETURN_IF_ERROR(cudaSetDevice(device));
  OROCHI_CUDA_RETURN_IF_ERROR(cudaStreamCreateWithFlags(&r->stream_, cudaStreamNonBlocking));
  r->attention_ = std::make_unique<cuda::CudnnAttention>(r->stream_);
  OROCHI_ASSIGN_OR_RETURN(size_t attn_ws, r->attention_->workspace_bytes(max.rows, config.num_attention_heads,
                                                                          config.attention_head_dim));
  OROCHI_ASSIGN_OR_RETURN(size_t attn_ws_text, r->attention_->workspace_bytes(max.text_rows, config.num_attention_heads,
                                                                               config.attention_head_dim));
  attn_ws = std::max(attn_ws, attn_ws_text);
  OROCHI_ASSIGN_OR_RETURN(r->weight_arena_, cuda::DeviceArena::create(device, resident_weight_bytes(config) + (1 << 20),
                                                                      "H3 weights"));
  OROCHI_ASSIGN_OR_RETURN(r->request_arena_, cuda::DeviceArena::create(device, request_arena_bytes(config, max, attn_ws),
                                                                       "H3 request"));
  OROCHI_ASSIGN_OR_RETURN(void* ws, r->request_arena_->allocate(attn_ws));
  OROCHI_RETURN_IF_ERROR(r->attention_->set_external_workspace(ws, attn_ws));
  OROCHI_ASSIGN_OR_RETURN(r->gemm_, cuda::GemmRunner::create(device));
  r->request_mark_ = r->request_arena_->mark();
  return r;
}

H3GpuRunner::~H3GpuRunner() {
  buf_.reset();
  attention_.reset();
  gemm_.reset();
  if (stream_) cudaStreamDestroy(stream_);
}

size_t H3GpuRunner::weight_bytes() const { return weight_arena_->used(); }
size_t H3GpuRunner::request_bytes_peak() const { return request_arena_->peak(); }

Status H3GpuRunner::init_random_weights(uint64_t seed) {
  OROCHI_ASSIGN_OR_RETURN(weights_, random_gpu_weights(config_, *weight_arena_, seed, stream_));
  adaln_ = random_adaln_source(config_, seed, stream_);
  return synchronize();
}

Status H3GpuRunner::upload_weights(const H3Weights& host) {
  OROCHI_ASSIGN_OR_RETURN(weights_, upload_gpu_weights(host, *weight_arena_, stream_));
  adaln_ = host_adaln_source(host, stream_);
  return synchronize();
}

Status H3GpuRunner::synchronize() { return cuda::cuda_status(cudaStreamSynchronize(stream_), "cudaStreamSynchronize"); }

Status H3GpuRunner::linear(const GpuLinear& l, const Tensor& x, const Tensor& y) {
  return gemm_->linear(x, l.weight, l.bias.defined() ? &l.bias : nullptr, y, stream_);
}

Status H3GpuRunner::set_request(const Tensor& timesteps, const H3Inputs& in) {
  OROCHI_RETURN_IF_ERROR(validate_inputs(config_, in, timesteps.numel()));
  RequestSize size{in.rows(), in.text.dim(0), in.video.dim(0), in.audio.dim(0), timesteps.numel()};
  if (size.rows > max_.rows || size.text_rows > max_.text_rows || size.video_rows > max_.video_rows ||
      size.audio_rows > max_.audio_rows || size.timesteps > max_.timesteps)
    return invalid_argument("the request (" + std::to_string(size.rows) + " rows, " + std::to_string(size.timesteps) +
                            " timesteps) is larger than the GPU runner was planned for (" +
                            std::to_string(max_.rows) + " rows, " + std::to_string(max_.timesteps) + ")");
  request_arena_->reset(request_mark_);
  buf_ = std::make_unique<RequestBuffers>();
  buf_->n_t = size.timesteps;
  for (const BufferSpec& b : buf_->specs(config_, size)) {
    OROCHI_ASSIGN_OR_RETURN(*b.target, request_arena_->tensor(b.shape, b.dtype));
  }
  RequestBuffers& B = *buf_;
  OROCHI_RETURN_IF_ERROR(cuda::upload_into(in.video, B.video_in, stream_));
  OROCHI_RETURN_IF_ERROR(cuda::upload_into(in.audio, B.audio_in, stream_));
  OROCHI_RETURN_IF_ERROR(cuda::upload_into(in.text.to(DType::kF32), B.text_in, stream_));
  OROCHI_RETURN_IF_ERROR(cuda::upload_into(in.video_indices, B.video_idx, stream_));
  OROCHI_RETURN_IF_ERROR(cuda::upload_into(in.audio_indices, B.audio_idx, stream_));
  OROCHI_RETURN_IF_ERROR(cuda::upload_into(in.text_indices, B.text_idx, stream_));
  OROCHI_RETURN_IF_ERROR(cuda::upload_into(in.timestep_indices, B.ts_idx, stream_));
  OROCHI_RETURN_IF_ERROR(upload_adaln_rows(in));
  // RoPE angles in f32 on the host, then bf16, as the reference casts cos/sin to the activations' dtype.
  const cpu::RopeTable rope = cpu::rope_table(
      in.positions.contiguous(),
      cpu::rope_inv_freq(static_cast<int>(config_.rope_freq_dim), static_cast<float>(config_.rope_theta)));
  OROCHI_RETURN_IF_ERROR(cuda::upload_into(rope.cos, B.rope_cos, stream_));
  OROCHI_RETURN_IF_ERROR(cuda::upload_into(rope.sin, B.rope_sin, stream_));
  return build_tables(timesteps);
}

Status H3GpuRunner::update_rows(const H3Inputs& in) {
  if (!buf_) return Status(ErrorCode::kInternal, "update_rows() before set_request()");
  RequestBuffers& B = *buf_;
  OROCHI_RETURN_IF_ERROR(validate_inputs(config_, in, B.n_t));
  if (in.rows() != B.h.dim(0) || in.video.dim(0) != B.video_in.dim(0) || in.audio.dim(0) != B.audio_in.dim(0))
    return invalid_argument("update_rows: the rows must keep the request's sizes (" + std::to_string(B.h.dim(0)) +
                            " packed rows); call set_request for a new request");
  OROCHI_RETURN_IF_ERROR(cuda::upload_into(in.video, B.video_in, stream_));
  OROCHI_RETURN_IF_ERROR(cuda::upload_into(in.audio, B.audio_in, stream_));
  OROCHI_RETURN_IF_ERROR(cuda::upload_into(in.timestep_indices, B.ts_idx, stream_));
  return upload_adaln_rows(in);
}

Status H3GpuRunner::upload_adaln_rows(const H3Inputs& in) {
  // AdaLN row of each packed row: timestep index * 3 + modality tag.
  const int64_t rows = in.rows();
  const Tensor ti = in.timestep_indices.contiguous(), tg = in.token_tags.contiguous();
  std::vector<int64_t> adaln(static_cast<size_t>(rows));
  for (int64_t s = 0; s < rows; ++s) adaln[s] = ti.data<int64_t>()[s] * kModalities + tg.data<int64_t>()[s];
  return cuda::upload_into(Tensor::from_ints(adaln, {rows}), buf_->adaln_idx, stream_);
}

Status H3GpuRunner::build_tables(const Tensor& timesteps) {
  RequestBuffers& B = *buf_;
  // temb = linear_2(silu(linear_1(sinusoid(t)))) in f32; the SiLUs of this tiny [n_t, ...] tensor
  // run on the host.
  OROCHI_RETURN_IF_ERROR(cuda::upload_into(cpu::timestep_embedding(timesteps.contiguous(), static_cast<int>(config_.freq_dim)),
                                           B.temb_in, stream_));
  OROCHI_RETURN_IF_ERROR(linear(weights_.time_linear_1, B.temb_in, B.temb_hidden));
  OROCHI_ASSIGN_OR_RETURN(Tensor hidden, cuda::download(B.temb_hidden, stream_));
  OROCHI_RETURN_IF_ERROR(cuda::upload_into(cpu::silu(hidden), B.temb_hidden, stream_));
  OROCHI_RETURN_IF_ERROR(linear(weights_.time_linear_2, B.temb_hidden, B.temb));
  OROCHI_ASSIGN_OR_RETURN(Tensor temb, cuda::download(B.temb, stream_));
  // Every AdaLN projection reads bf16(SiLU_f32(temb)).
  OROCHI_RETURN_IF_ERROR(cuda::upload_into(cpu::silu(temb), B.temb_act, stream_));
  const int64_t rows = B.n_t * kModalities, width = 6 * config_.hidden_size;
  for (int64_t i = 0; i < config_.num_layers; ++i) {
    OROCHI_RETURN_IF_ERROR(adaln_(i, B.adaln_w, B.adaln_b));
    const Tensor table = B.tables.slice(0, i, i + 1).view({B.n_t, rows / B.n_t * width});  // [n_t, 18H]
    OROCHI_RETURN_IF_ERROR(gemm_->linear(B.temb_act, B.adaln_w, &B.adaln_b, table, stream_));
    // The staging slot is rewritten by the next block's weights: wait for this GEMM first.
    OROCHI_RETURN_IF_ERROR(synchronize());
  }
  const int64_t H2 = 2 * config_.hidden_size;
  const Tensor w_final = B.adaln_w.view({-1}).slice(0, 0, H2 * config_.time_embed_dim).view({H2, config_.time_embed_dim});
  const Tensor b_final = B.adaln_b.slice(0, 0, H2);
  OROCHI_RETURN_IF_ERROR(adaln_(-1, w_final, b_final));
  OROCHI_RETURN_IF_ERROR(gemm_->linear(B.temb_act, w_final, &b_final, B.final_table, stream_));
  return synchronize();
}

Status H3GpuRunner::attention_block(const GpuBlock& b, const Tensor& x, int64_t rows, bool rope, const Tensor& out) {
  RequestBuffers& B = *buf_;
  const int64_t heads = config_.num_attention_heads, hd = config_.attention_head_dim;
  const float eps = static_cast<float>(config_.qk_norm_eps);
  const Tensor q = B.q.slice(0, 0, rows), k = B.k.slice(0, 0, rows), v = B.v.slice(0, 0, rows), o = B.o.slice(0, 0, rows);
  timer_.begin("gemm qkv");
  OROCHI_RETURN_IF_ERROR(linear(b.to_q, x, q));  // [rows, heads * hd]
  OROCHI_RETURN_IF_ERROR(linear(b.to_k, x, k));
  OROCHI_RETURN_IF_ERROR(linear(b.to_v, x, v));
  timer_.end();
  timer_.begin("qk norm + rope");
  const bf16* cos = rope ? ptr<const bf16>(B.rope_cos) : nullptr;
  const bf16* sin = rope ? ptr<const bf16>(B.rope_sin) : nullptr;
  const int64_t R = rope ? config_.rotary_dim() : 0;
  OROCHI_RETURN_IF_ERROR(launched(cuda::kernels::launch_qk_norm_rope(ptr<bf16>(q), ptr<const bf16>(b.norm_q), rows, heads,
                                                                     hd, eps, cos, sin, R, stream_), "qk_norm_rope q"));
  OROCHI_RETURN_IF_ERROR(launched(cuda::kernels::launch_qk_norm_rope(ptr<bf16>(k), ptr<const bf16>(b.norm_k), rows, heads,
                                                                     hd, eps, cos, sin, R, stream_), "qk_norm_rope k"));
  timer_.end();
  timer_.begin("attention");
  OROCHI_RETURN_IF_ERROR(attention_->run(q.raw_data(), k.raw_data(), v.raw_data(), o.raw_data(), rows, heads, hd, stream_));
  timer_.end();
  timer_.begin("gemm out");
  OROCHI_RETURN_IF_ERROR(linear(b.to_out, o, out));  // [rows, H]
  timer_.end();
  return Status::ok();
}

Status H3GpuRunner::refiner_block(const GpuBlock& b, const Tensor& t) {
  RequestBuffers& B = *buf_;
  const int64_t L = t.dim(0), H = config_.hidden_size, F = config_.ffn_dim;
  const float eps = static_cast<float>(config_.norm_eps);
  const Tensor a = B.a.slice(0, 0, L), o2 = B.o2.slice(0, 0, L), u = B.u.slice(0, 0, L), g = B.g.slice(0, 0, L);
  OROCHI_RETURN_IF_ERROR(launched(cuda::kernels::launch_rms_norm(ptr<const bf16>(t), ptr<const bf16>(b.norm1), ptr<bf16>(a),
                                                                 L, H, eps, nullptr, stream_), "refiner norm1"));
  OROCHI_RETURN_IF_ERROR(attention_block(b, a, L, false, o2));
  OROCHI_RETURN_IF_ERROR(launched(cuda::kernels::launch_add(ptr<bf16>(t), ptr<const bf16>(o2), L * H, stream_), "add"));
  OROCHI_RETURN_IF_ERROR(launched(cuda::kernels::launch_rms_norm(ptr<const bf16>(t), ptr<const bf16>(b.norm2), ptr<bf16>(a),
                                                                 L, H, eps, nullptr, stream_), "refiner norm2"));
  OROCHI_RETURN_IF_ERROR(linear(b.ff_in, a, u));
  OROCHI_RETURN_IF_ERROR(launched(cuda::kernels::launch_swiglu(ptr<const bf16>(u), ptr<bf16>(g), L, F, stream_), "swiglu"));
  OROCHI_RETURN_IF_ERROR(linear(b.ff_out, g, o2));
  return launched(cuda::kernels::launch_add(ptr<bf16>(t), ptr<const bf16>(o2), L * H, stream_), "add");
}

Status H3GpuRunner::transformer_block(size_t index) {
  RequestBuffers& B = *buf_;
  const GpuBlock& b = weights_.blocks[index];
  const int64_t S = B.h.dim(0), H = config_.hidden_size, F = config_.ffn_dim, W = 6 * H;
  const float eps = static_cast<float>(config_.norm_eps);
  const bf16* table = ptr<const bf16>(B.tables) + static_cast<int64_t>(index) * B.n_t * kModalities * W;
  const int64_t* idx = ptr<const int64_t>(B.adaln_idx);
  // Column blocks of the [n_t * 3, 6H] table: shift/scale/gate msa, shift/scale/gate mlp.
  const ModulationRows msa{table, W, table + H, W, idx}, mlp{table + 3 * H, W, table + 4 * H, W, idx};
  timer_.begin("norm + modulate");
  OROCHI_RETURN_IF_ERROR(launched(cuda::kernels::launch_rms_norm(ptr<const bf16>(B.h), ptr<const bf16>(b.norm1),
                                                                 ptr<bf16>(B.a), S, H, eps, &msa, stream_), "norm1"));
  timer_.end();
  OROCHI_RETURN_IF_ERROR(attention_block(b, B.a, S, true, B.o2));
  timer_.begin("gated residual");
  OROCHI_RETURN_IF_ERROR(launched(cuda::kernels::launch_gated_residual(ptr<bf16>(B.h), table + 2 * H, W, idx,
                                                                       ptr<const bf16>(B.o2), S, H, stream_), "gate msa"));
  timer_.end();
  timer_.begin("norm + modulate");
  OROCHI_RETURN_IF_ERROR(launched(cuda::kernels::launch_rms_norm(ptr<const bf16>(B.h), ptr<const bf16>(b.norm2),
                                                                 ptr<bf16>(B.a), S, H, eps, &mlp, stream_), "norm2"));
  timer_.end();
  timer_.begin("gemm ffn in");
  OROCHI_RETURN_IF_ERROR(linear(b.ff_in, B.a, B.u));  // [S, 2F]
  timer_.end();
  timer_.begin("swiglu");
  OROCHI_RETURN_IF_ERROR(launched(cuda::kernels::launch_swiglu(ptr<const bf16>(B.u), ptr<bf16>(B.g), S, F, stream_), "swiglu"));
  timer_.end();
  timer_.begin("gemm ffn out");
  OROCHI_RETURN_IF_ERROR(linear(b.ff_out, B.g, B.o2));
  timer_.end();
  timer_.begin("gated residual");
  OROCHI_RETURN_IF_ERROR(launched(cuda::kernels::launch_gated_residual(ptr<bf16>(B.h), table + 5 * H, W, idx,
                                                                       ptr<const bf16>(B.o2), S, H, stream_), "gate mlp"));
  timer_.end();
  return Status::ok();
}

Status H3GpuRunner::forward() {
  OROCHI_CHECK(buf_ != nullptr, "forward() before set_request()");
  RequestBuffers& B = *buf_;
  const int64_t S = B.h.dim(0), L = B.text.dim(0), H = config_.hidden_size;
  const int64_t Nv = B.video_in.dim(0), Na = B.audio_in.dim(0);
  const size_t row_bytes = static_cast<size_t>(H) * 2;
  // 1. Text: context embedder, token refiner, final norm; scattered into the packed stream.
  OROCHI_RETURN_IF_ERROR(linear(weights_.context_embedder, B.text_in, B.text));
  for (const GpuBlock& b : weights_.refiner) OROCHI_RETURN_IF_ERROR(refiner_block(b, B.text));
  OROCHI_RETURN_IF_ERROR(launched(cuda::kernels::launch_rms_norm(ptr<const bf16>(B.text), ptr<const bf16>(weights_.refiner_final_norm),
                                                                 ptr<bf16>(B.a), L, H, static_cast<float>(config_.final_norm_eps),
                                                                 nullptr, stream_), "refiner final norm"));
  OROCHI_RETURN_IF_ERROR(launched(cuda::kernels::launch_copy_rows(B.h.raw_data(), row_bytes, ptr<const int64_t>(B.text_idx),
                                                                  B.a.raw_data(), row_bytes, nullptr, L, row_bytes, stream_), "scatter text"));
  // 2. Video and audio rows: f32 patch projections, rounded to bf16 into the stream.
  auto embed = [&](const GpuLinear& proj, const Tensor& rows_in, const Tensor& idx, int64_t n, const char* what) -> Status {
    const Tensor emb = B.rows_f32.slice(0, 0, n);
    OROCHI_RETURN_IF_ERROR(linear(proj, rows_in, emb));  // f32 [n, H]
    OROCHI_RETURN_IF_ERROR(launched(cuda::kernels::launch_cast_f32_to_bf16(ptr<const float>(emb), ptr<bf16>(B.a), n * H, stream_), what));
    return launched(cuda::kernels::launch_copy_rows(B.h.raw_data(), row_bytes, ptr<const int64_t>(idx), B.a.raw_data(),
                                                    row_bytes, nullptr, n, row_bytes, stream_), what);
  };
  OROCHI_RETURN_IF_ERROR(embed(weights_.proj_in, B.video_in, B.video_idx, Nv, "embed video"));
  OROCHI_RETURN_IF_ERROR(embed(weights_.audio_proj_in, B.audio_in, B.audio_idx, Na, "embed audio"));
  // 3. The blocks.
  for (size_t i = 0; i < weights_.blocks.size(); ++i) OROCHI_RETURN_IF_ERROR(transformer_block(i));
  // 4. Output norm modulated per timestep, then each head on its own rows in f32.
  const bf16* ft = ptr<const bf16>(B.final_table);
  const ModulationRows out_mod{ft, 2 * H, ft + H, 2 * H, ptr<const int64_t>(B.ts_idx)};
  OROCHI_RETURN_IF_ERROR(launched(cuda::kernels::launch_rms_norm(ptr<const bf16>(B.h), ptr<const bf16>(weights_.norm_out),
                                                                 ptr<bf16>(B.a), S, H, static_cast<float>(config_.final_norm_eps),
                                                                 &out_mod, stream_), "norm_out"));
  auto head = [&](const GpuLinear& proj, const Tensor& idx, int64_t n, const Tensor& out, const char* what) -> Status {
    OROCHI_RETURN_IF_ERROR(launched(cuda::kernels::launch_copy_rows(B.o2.raw_data(), row_bytes, nullptr, B.a.raw_data(),
                                                                    row_bytes, ptr<const int64_t>(idx), n, row_bytes, stream_), what));
    const Tensor rows = B.rows_f32.slice(0, 0, n);
    OROCHI_RETURN_IF_ERROR(launched(cuda::kernels::launch_cast_bf16_to_f32(ptr<const bf16>(B.o2), ptr<float>(rows), n * H, stream_), what));
    return linear(proj, rows, out);
  };
  OROCHI_RETURN_IF_ERROR(head(weights_.proj_out, B.video_idx, Nv, B.video_out, "video head"));
  return head(weights_.audio_proj_out, B.audio_idx, Na, B.audio_out, "audio head");
}

Expected<H3Outputs> H3GpuRunner::outputs() {
  OROCHI_CHECK(buf_ != nullptr, "outputs() before set_request()");
  H3Outputs out;
  OROCHI_ASSIGN_OR_RETURN(out.video, cuda::download(buf_->video_out, stream_));
  OROCHI_ASSIGN_OR_RETURN(out.audio, cuda::download(buf_->audio_out, stream_));
  return out;
}

}  // namespace orochi::h3::gpu
