#include "models/h3_audio_vae/cuda/gpu_audio_encoder.h"

#include <algorithm>
#include <utility>

#include "backends/cuda/cuda_check.h"
#include "backends/cuda/kernels/audio_encoder_kernels.h"
#include "backends/cuda/ops_audio.h"
#include "backends/cuda/ops_audio_encoder.h"
#include "backends/cuda/random_fill.h"
#include "core/log.h"
#include "models/h3_audio_vae/cuda/gpu_audio_weights.h"
#include "models/h3_audio_vae/encoder_input.h"
#include "models/h3_audio_vae/encoder_random.h"
#include "models/h3_audio_vae/parameters.h"

namespace orochi::h3_audio::gpu {

struct GpuLinear {
  Tensor weight, bias;  // [N, K], [N]
};

struct GpuResidualUnit {
  int64_t dilation = 1;
  Tensor alpha1, alpha2;  // [C]
  GpuConv conv1, conv2;   // [C, 7·C], [C, C]
};

struct GpuEncoderBlock {
  int64_t stride = 1;
  std::vector<GpuResidualUnit> units;
  Tensor alpha;  // [C/2]
  GpuConv down;  // [C, 2·stride·C/2]
};

struct GpuAudioEncoderWeights {
  GpuConv conv_in;
  std::vector<GpuEncoderBlock> blocks;
  Tensor alpha_out;
  GpuConv conv_out;
  GpuLinear norm1, norm2, norm3, mlp_norm;  // LayerNorm weight and bias
  Tensor qkv_weight, qkv_bias;              // [3·in, in], [3·in]
  GpuLinear attn_proj, proj, w0, w1, w2, mean_proj;
};

// Flat f32 buffers, viewed per step with the shape at hand. x, t and r hold any [B, L, C] of the
// trunk; the pre_block's rows are [B·A, width].
struct EncoderBuffers {
  Tensor wave, x, t, r, col;
  Tensor ln, qkv, pooled, attn, proj, h, n, g0, g1, mlp, out;
};

namespace {

constexpr float kLayerNormEps = 1e-5f;

static_assert(kEncoderArenaAlignment == cuda::DeviceArena::kAlignment,
              "encoder_memory.h sizes the arenas with the DeviceArena's alignment");

Tensor view(const Tensor& flat, const Shape& shape) {
  const int64_t n = shape_numel(shape);
  OROCHI_CHECK(n >= 0 && n <= flat.numel(), "buffer of ", flat.numel(), " elements viewed as ", shape_to_string(shape));
  return flat.slice(0, 0, n).view(shape);
}

bool same_encoder(const AudioVaeConfig& a, const AudioVaeConfig& b) {
  return a.encoder_dim == b.encoder_dim && a.encoder_rates == b.encoder_rates && a.latent_dim == b.latent_dim &&
         a.latent_channels == b.latent_channels && a.num_attention_heads == b.num_attention_heads;
}

// Uploads host tensors into the (reset) weight arena, keeping the first failure.
class Uploader {
 public:
  Uploader(cuda::DeviceArena& arena, cudaStream_t stream) : arena_(arena), stream_(stream) {}
  Tensor put(const Tensor& host) {
    if (!status_.is_ok()) return {};
    Expected<Tensor> t = cuda::upload(host, arena_, DType::kF32, stream_);
    if (!t) {
      status_ = t.status();
      return {};
    }
    return std::move(t).value();
  }
  GpuConv conv(const ConvWeights& c) { return {put(cuda::conv1d_weight_for_gemm(c.weight)), put(c.bias)}; }
  GpuLinear linear(const LinearWeights& l) { return {put(l.weight), put(l.bias)}; }
  GpuLinear norm(const LayerNormWeights& n) { return {put(n.weight), put(n.bias)}; }
  const Status& status() const { return status_; }

 private:
  cuda::DeviceArena& arena_;
  cudaStream_t stream_;
  Status status_;
};

}  // namespace

GpuAudioEncoder::GpuAudioEncoder() = default;

Expected<std::unique_ptr<GpuAudioEncoder>> GpuAudioEncoder::create(const AudioVaeConfig& config, int device,
                                                                   int64_t max_samples, int64_t max_batch) {
  OROCHI_RETURN_IF_ERROR(config.validate_encoder());
  if (max_samples < 1 || max_batch < 1 || max_batch > 64 || max_samples > (int64_t{1} << 31) / max_batch)
    return invalid_argument("GpuAudioEncoder: max_samples (" + std::to_string(max_samples) + ") and max_batch (" +
                            std::to_string(max_batch) +
                            ") must be positive, max_batch at most 64 and their product "
                            "below 2^31");
  const int64_t max_latents = latents_for_samples(config, max_samples);
  const int64_t head_dim = config.latent_dim / config.num_attention_heads;
  if (max_latents > cuda::kernels::kAudioAttentionMaxSteps || max_latents + head_dim > 12288)
    return invalid_argument("GpuAudioEncoder: " + std::to_string(max_samples) + " samples make " +
                            std::to_string(max_latents) + " latents, more than the attention kernel holds (" +
                            std::to_string(cuda::kernels::kAudioAttentionMaxSteps) +
                            "); encode long soundtracks in pieces");
  OROCHI_CUDA_RETURN_IF_ERROR(cudaSetDevice(device));
  std::unique_ptr<GpuAudioEncoder> e(new GpuAudioEncoder());
  e->config_ = config;
  e->device_ = device;
  e->max_samples_ = max_samples;
  e->max_batch_ = max_batch;
  OROCHI_CUDA_RETURN_IF_ERROR(cudaStreamCreateWithFlags(&e->stream_, cudaStreamNonBlocking));
  OROCHI_ASSIGN_OR_RETURN(e->gemm_, cuda::GemmRunner::create(device));
  // cuBLASLt's first pick, not a timed one: reference latents must be the same bits on every run and
  // every GPU (a timed pick can differ between runs).
  e->gemm_->set_autotune(false);
  OROCHI_ASSIGN_OR_RETURN(e->weight_arena_, cuda::DeviceArena::create(device, audio_encoder_weight_bytes(config),
                                                                      "audio VAE encoder weights"));
  OROCHI_ASSIGN_OR_RETURN(
      e->activation_arena_,
      cuda::DeviceArena::create(device, audio_encoder_activation_bytes(config, max_samples, max_batch),
                                "audio VAE encoder activations"));
  const EncoderBufferSizes s = encoder_buffer_sizes(config, max_samples, max_batch);
  const int64_t in = config.latent_dim, out = config.latent_channels;
  cuda::DeviceArena& arena = *e->activation_arena_;
  auto buf = std::make_unique<EncoderBuffers>();
  auto take = [&](Tensor& t, int64_t n) -> Status {
    OROCHI_ASSIGN_OR_RETURN(t, arena.tensor({n}, DType::kF32));
    return Status::ok();
  };
  OROCHI_RETURN_IF_ERROR(take(buf->wave, s.wave));
  for (Tensor* t : {&buf->x, &buf->t, &buf->r}) OROCHI_RETURN_IF_ERROR(take(*t, s.signal));
  OROCHI_RETURN_IF_ERROR(take(buf->col, s.col));
  OROCHI_RETURN_IF_ERROR(take(buf->ln, s.rows * in));
  OROCHI_RETURN_IF_ERROR(take(buf->qkv, s.rows * 3 * in));
  for (Tensor* t : {&buf->pooled, &buf->attn, &buf->proj, &buf->h, &buf->n, &buf->mlp, &buf->out})
    OROCHI_RETURN_IF_ERROR(take(*t, s.rows * out));
  for (Tensor* t : {&buf->g0, &buf->g1}) OROCHI_RETURN_IF_ERROR(take(*t, s.rows * 2 * out));
  e->buf_ = std::move(buf);
  e->weights_ = std::make_unique<GpuAudioEncoderWeights>();
  log_debug("audio VAE GPU encoder: ", e->weight_arena_->capacity() >> 20, " MiB weights, ",
            e->activation_arena_->capacity() >> 20, " MiB activations for ", max_batch, " x ", max_samples, " samples");
  return e;
}

GpuAudioEncoder::~GpuAudioEncoder() {
  if (stream_) {
    cudaStreamSynchronize(stream_);
    cudaStreamDestroy(stream_);
  }
}

size_t GpuAudioEncoder::weight_bytes() const { return weight_arena_ ? weight_arena_->used() : 0; }
size_t GpuAudioEncoder::activation_bytes_used() const { return activation_arena_ ? activation_arena_->used() : 0; }
size_t GpuAudioEncoder::reserved_bytes() const {
  return (weight_arena_ ? weight_arena_->capacity() : 0) + (activation_arena_ ? activation_arena_->capacity() : 0);
}

Status GpuAudioEncoder::init_random(uint64_t seed) {
  OROCHI_CUDA_RETURN_IF_ERROR(cudaSetDevice(device_));
  has_weights_ = false;
  OROCHI_CUDA_RETURN_IF_ERROR(cudaStreamSynchronize(stream_));  // the draws below reuse the weight arena
  const NormalDraw draw = [&](const Shape& shape, uint64_t stream_id, NormalInit init) -> Expected<Tensor> {
    weight_arena_->reset(0);
    OROCHI_ASSIGN_OR_RETURN(const Tensor t, weight_arena_->tensor(shape, DType::kF32));
    OROCHI_RETURN_IF_ERROR(cuda::fill_normal(t, seed, stream_id, init.mean, init.stddev, stream_));
    return cuda::download(t, stream_);
  };
  OROCHI_ASSIGN_OR_RETURN(const AudioEncoderWeights host, random_encoder_weights(config_, draw));
  return upload(host);
}

Status GpuAudioEncoder::upload(const AudioEncoderWeights& host) {
  if (!same_encoder(host.config, config_))
    return invalid_argument(
        "GpuAudioEncoder::upload: the host weights' encoder config differs from the one the "
        "encoder was created for; create it from the weights' config");
  OROCHI_CUDA_RETURN_IF_ERROR(cudaSetDevice(device_));
  has_weights_ = false;
  OROCHI_CUDA_RETURN_IF_ERROR(cudaStreamSynchronize(stream_));  // nothing may still read the old weights
  weight_arena_->reset(0);
  Uploader u(*weight_arena_, stream_);
  GpuAudioEncoderWeights w;
  w.conv_in = u.conv(host.conv_in);
  for (const EncoderBlockWeights& hb : host.blocks) {
    GpuEncoderBlock b;
    b.stride = hb.stride;
    for (const ResidualUnitWeights& hu : hb.units)
      b.units.push_back({hu.dilation, u.put(hu.alpha1), u.put(hu.alpha2), u.conv(hu.conv1), u.conv(hu.conv2)});
    b.alpha = u.put(hb.alpha);
    b.down = u.conv(hb.down);
    w.blocks.push_back(std::move(b));
  }
  w.alpha_out = u.put(host.alpha_out);
  w.conv_out = u.conv(host.conv_out);
  const PreBlockWeights& p = host.pre_block;
  w.norm1 = u.norm(p.norm1);
  w.norm2 = u.norm(p.norm2);
  w.norm3 = u.norm(p.norm3);
  w.mlp_norm = u.norm(p.mlp_norm);
  w.qkv_weight = u.put(p.qkv_weight);
  w.qkv_bias = u.put(p.qkv_bias);
  w.attn_proj = u.linear(p.attn_proj);
  w.proj = u.linear(p.proj);
  w.w0 = u.linear(p.w0);
  w.w1 = u.linear(p.w1);
  w.w2 = u.linear(p.w2);
  const int64_t lat = config_.latent_channels;
  w.mean_proj = {u.put(host.mean_proj.weight.view({lat, lat})), u.put(host.mean_proj.bias)};  // a 1x1 conv
  OROCHI_RETURN_IF_ERROR(u.status().with_context("uploading the audio VAE encoder"));
  OROCHI_CUDA_RETURN_IF_ERROR(cudaStreamSynchronize(stream_));
  *weights_ = std::move(w);
  has_weights_ = true;
  return Status::ok();
}

// x = x + conv2(snake(conv1(snake(x)))) on [B, L, C], through t and r.
Status GpuAudioEncoder::residual_unit(int block, int unit, int64_t B, int64_t L, int64_t C) {
  const EncoderBuffers& b = *buf_;
  const GpuResidualUnit& u = weights_->blocks[block].units[unit];
  const Tensor x = view(b.x, {B, L, C}), t = view(b.t, {B, L, C}), r = view(b.r, {B, L, C});
  OROCHI_RETURN_IF_ERROR(cuda::audio_snake(x, u.alpha1, t, stream_));
  OROCHI_RETURN_IF_ERROR(cuda::audio_conv1d_any(*gemm_, t, u.conv1.weight, u.conv1.bias_or_null(), 1, u.dilation,
                                                (kEncoderResidualKernel - 1) * u.dilation / 2, b.col, r, stream_));
  OROCHI_RETURN_IF_ERROR(cuda::audio_snake(r, u.alpha2, r, stream_));
  OROCHI_RETURN_IF_ERROR(
      cuda::audio_conv1d_any(*gemm_, r, u.conv2.weight, u.conv2.bias_or_null(), 1, 1, 0, b.col, t, stream_));
  return cuda::audio_residual_sum(x, Tensor(), x, t, 1.0f, stream_);
}

// The trunk's output rows r [B·A, in] -> out [B·A, latent_channels].
Status GpuAudioEncoder::pre_block(int64_t B, int64_t A) {
  const EncoderBuffers& b = *buf_;
  const GpuAudioEncoderWeights& w = *weights_;
  const int64_t rows = B * A, in = config_.latent_dim, out_dim = config_.latent_channels;
  cuda::GemmRunner& gemm = *gemm_;
  const Tensor x = view(b.r, {rows, in}), ln = view(b.ln, {rows, in});
  const Tensor pooled = view(b.pooled, {rows, out_dim}), attn = view(b.attn, {rows, out_dim});
  const Tensor proj = view(b.proj, {rows, out_dim}), h = view(b.h, {rows, out_dim}), n = view(b.n, {rows, out_dim});
  const Tensor g0 = view(b.g0, {rows, 2 * out_dim}), g1 = view(b.g1, {rows, 2 * out_dim});
  const Tensor mlp = view(b.mlp, {rows, out_dim}), out = view(b.out, {rows, out_dim});

  // Causal attention per item over its A steps, the heads pooled down to out_dim, then projected.
  OROCHI_RETURN_IF_ERROR(cuda::audio_layer_norm(x, w.norm1.weight, w.norm1.bias, kLayerNormEps, ln, stream_));
  const Tensor qkv = view(b.qkv, {rows, 3 * in});
  OROCHI_RETURN_IF_ERROR(gemm.linear(ln, w.qkv_weight, &w.qkv_bias, qkv, stream_));
  OROCHI_RETURN_IF_ERROR(cuda::audio_causal_attention_pool(qkv.view({B, A, 3 * in}), config_.num_attention_heads,
                                                           pooled.view({B, A, out_dim}), stream_));
  OROCHI_RETURN_IF_ERROR(gemm.linear(pooled, w.attn_proj.weight, &w.attn_proj.bias, attn, stream_));
  // h = proj(norm3 x) + attn, then h + w2(gelu_tanh(w0 n) · w1 n) with n = mlp.norm(norm2 h).
  OROCHI_RETURN_IF_ERROR(cuda::audio_layer_norm(x, w.norm3.weight, w.norm3.bias, kLayerNormEps, ln, stream_));
  OROCHI_RETURN_IF_ERROR(gemm.linear(ln, w.proj.weight, &w.proj.bias, proj, stream_));
  OROCHI_RETURN_IF_ERROR(cuda::audio_residual_sum(h, Tensor(), proj, attn, 1.0f, stream_));
  OROCHI_RETURN_IF_ERROR(cuda::audio_layer_norm(h, w.norm2.weight, w.norm2.bias, kLayerNormEps, n, stream_));
  OROCHI_RETURN_IF_ERROR(cuda::audio_layer_norm(n, w.mlp_norm.weight, w.mlp_norm.bias, kLayerNormEps, n, stream_));
  OROCHI_RETURN_IF_ERROR(gemm.linear(n, w.w0.weight, &w.w0.bias, g0, stream_));
  OROCHI_RETURN_IF_ERROR(gemm.linear(n, w.w1.weight, &w.w1.bias, g1, stream_));
  OROCHI_RETURN_IF_ERROR(cuda::audio_gelu_tanh_mul(g0, g1, g0, stream_));
  OROCHI_RETURN_IF_ERROR(gemm.linear(g0, w.w2.weight, &w.w2.bias, mlp, stream_));
  return cuda::audio_residual_sum(out, Tensor(), h, mlp, 1.0f, stream_);
}

Expected<Tensor> GpuAudioEncoder::encode(const Tensor& waveform) {
  const AudioVaeConfig& c = config_;
  if (!has_weights_) return invalid_argument("GpuAudioEncoder::encode: no weights; call upload() first");
  OROCHI_RETURN_IF_ERROR(check_mono_batch(waveform, "audio VAE GPU encode"));
  if (waveform.device().kind != DeviceKind::kCPU)
    return invalid_argument("audio VAE GPU encode: pass the waveform as a host tensor, got " + waveform.describe());
  const int64_t B = waveform.dim(0), N = waveform.dim(1);
  if (B > max_batch_ || N > max_samples_)
    return invalid_argument("audio VAE GPU encode: " + std::to_string(B) + " items of " + std::to_string(N) +
                            " samples exceed the " + std::to_string(max_batch_) + " x " + std::to_string(max_samples_) +
                            " the encoder was created for; create it with a larger max_samples");
  OROCHI_CUDA_RETURN_IF_ERROR(cudaSetDevice(device_));
  EncoderBuffers& b = *buf_;
  const GpuAudioEncoderWeights& w = *weights_;
  const int64_t A = latents_for_samples(c, N);
  int64_t L = A * c.encoder_hop_length();

  // The zero right-pad on the host; [B, 1, L] is [B, L, 1] in memory.
  const Tensor wave = view(b.wave, {B, L, 1});
  OROCHI_RETURN_IF_ERROR(cuda::upload_into(pad_to_hop(c, waveform).view({B, L, 1}), wave, stream_));
  int64_t C = c.encoder_dim;
  OROCHI_RETURN_IF_ERROR(cuda::audio_conv1d_any(*gemm_, wave, w.conv_in.weight, w.conv_in.bias_or_null(), 1, 1, 3,
                                                b.col, view(b.x, {B, L, C}), stream_));
  for (size_t i = 0; i < w.blocks.size(); ++i) {
    const GpuEncoderBlock& block = w.blocks[i];
    for (size_t u = 0; u < block.units.size(); ++u)
      OROCHI_RETURN_IF_ERROR(residual_unit(static_cast<int>(i), static_cast<int>(u), B, L, C));
    const Tensor t = view(b.t, {B, L, C});
    OROCHI_RETURN_IF_ERROR(cuda::audio_snake(view(b.x, {B, L, C}), block.alpha, t, stream_));
    const int64_t Lout = L / block.stride;
    OROCHI_RETURN_IF_ERROR(cuda::audio_conv1d_any(*gemm_, t, block.down.weight, block.down.bias_or_null(), block.stride,
                                                  1, (block.stride + 1) / 2, b.col, view(b.r, {B, Lout, 2 * C}),
                                                  stream_));
    std::swap(b.x, b.r);  // the block's output is the next block's input
    L = Lout;
    C *= 2;
  }
  OROCHI_CHECK(L == A, "the trunk left ", L, " steps for ", A, " latents");
  const Tensor t = view(b.t, {B, A, C});
  OROCHI_RETURN_IF_ERROR(cuda::audio_snake(view(b.x, {B, A, C}), w.alpha_out, t, stream_));
  OROCHI_RETURN_IF_ERROR(cuda::audio_conv1d_any(*gemm_, t, w.conv_out.weight, w.conv_out.bias_or_null(), 1, 1, 1, b.col,
                                                view(b.r, {B, A, c.latent_dim}), stream_));
  OROCHI_RETURN_IF_ERROR(pre_block(B, A));
  const Tensor mean = view(b.pooled, {B, A, c.latent_channels});  // pooled is free again
  OROCHI_RETURN_IF_ERROR(gemm_->linear(view(b.out, {B * A, c.latent_channels}), w.mean_proj.weight, &w.mean_proj.bias,
                                       mean.view({B * A, c.latent_channels}), stream_));
  return cuda::download(mean, stream_);
}

Expected<Tensor> GpuAudioEncoder::encode_reference_audio(const Tensor& waveform) {
  OROCHI_ASSIGN_OR_RETURN(Tensor stereo, reference_stereo(waveform));  // [2, N]
  OROCHI_ASSIGN_OR_RETURN(Tensor mean, encode(stereo));
  return normalize(config_, mean);
}

}  // namespace orochi::h3_audio::gpu
