#include "models/h3_audio_vae/cuda/gpu_audio_decoder.h"

#include <algorithm>

#include "backends/cuda/cuda_check.h"
#include "backends/cuda/ops_audio.h"
#include "core/log.h"

namespace orochi::h3_audio::gpu {

// Flat f32 buffers, viewed per step with the shape at hand. The five signal buffers hold any
// stage's [B, L, C]; `col` the largest im2col (or transposed-conv product) of the decode.
struct AudioBuffers {
  Tensor latents, proj, x, u, h, t1, t2, col, out;
};

namespace {

struct BufferSizes {
  int64_t latents = 0, proj = 0, signal = 0, col = 0, out = 0;
};

// Elements of every buffer for decodes of `rows` latent rows (B · A).
BufferSizes buffer_sizes(const AudioVaeConfig& c, int64_t rows) {
  BufferSizes s;
  s.latents = rows * c.latent_channels;
  s.proj = rows * c.latent_dim;
  s.signal = rows * c.decoder_dim;           // conv_pre's output
  s.col = rows * 7 * c.latent_dim;           // conv_pre's im2col
  int64_t steps = rows;                      // B · L before stage i
  for (int64_t i = 0; i < c.num_stages(); ++i) {
    const int64_t ch = c.stage_channels(i);
    s.col = std::max(s.col, steps * c.decoder_kernel_sizes[i] * ch);  // the upsampler's products
    steps *= c.decoder_rates[i];
    s.signal = std::max(s.signal, steps * ch);
    for (int64_t k : c.resblock_kernel_sizes) s.col = std::max(s.col, steps * k * ch);
  }
  s.out = steps;
  return s;
}

size_t bytes_of(int64_t elements) {
  const size_t a = cuda::DeviceArena::kAlignment;
  return (static_cast<size_t>(elements) * sizeof(float) + a - 1) / a * a;
}

Tensor view(const Tensor& flat, const Shape& shape) {
  const int64_t n = shape_numel(shape);
  OROCHI_CHECK(n >= 0 && n <= flat.numel(), "buffer of ", flat.numel(), " elements viewed as ", shape_to_string(shape));
  return flat.slice(0, 0, n).view(shape);
}

}  // namespace

size_t audio_activation_bytes(const AudioVaeConfig& config, int64_t rows) {
  const BufferSizes s = buffer_sizes(config, rows);
  return bytes_of(s.latents) + bytes_of(s.proj) + 5 * bytes_of(s.signal) + bytes_of(s.col) + bytes_of(s.out) +
         cuda::DeviceArena::kAlignment;
}

Expected<std::unique_ptr<GpuAudioDecoder>> GpuAudioDecoder::create(const AudioVaeConfig& config, int device,
                                                                   int64_t max_latents, int64_t max_batch) {
  OROCHI_RETURN_IF_ERROR(config.validate());
  if (max_latents < 1 || max_batch < 1 || max_latents > (int64_t{1} << 24) / max_batch)
    return invalid_argument("GpuAudioDecoder: max_latents (" + std::to_string(max_latents) + ") and max_batch (" +
                            std::to_string(max_batch) + ") must be positive (and their product below 2^24)");
  OROCHI_CUDA_RETURN_IF_ERROR(cudaSetDevice(device));
  std::unique_ptr<GpuAudioDecoder> d(new GpuAudioDecoder());
  d->config_ = config;
  d->device_ = device;
  d->max_rows_ = max_latents * max_batch;
  OROCHI_CUDA_RETURN_IF_ERROR(cudaStreamCreateWithFlags(&d->stream_, cudaStreamNonBlocking));
  OROCHI_ASSIGN_OR_RETURN(d->gemm_, cuda::GemmRunner::create(device));
  // cuBLASLt's first pick, not a timed one: a timed pick can differ from one decoder to the next, and
  // an engine makes a decoder per request, so the same seed would not give the same bits.
  d->gemm_->set_autotune(false);
  OROCHI_ASSIGN_OR_RETURN(d->weight_arena_,
                          cuda::DeviceArena::create(device, weight_arena_bytes(config), "audio VAE weights"));
  OROCHI_ASSIGN_OR_RETURN(d->weights_, allocate_weights(config, *d->weight_arena_));
  OROCHI_ASSIGN_OR_RETURN(d->activation_arena_,
                          cuda::DeviceArena::create(device, audio_activation_bytes(config, d->max_rows_),
                                                    "audio VAE activations"));
  const BufferSizes s = buffer_sizes(config, d->max_rows_);
  cuda::DeviceArena& arena = *d->activation_arena_;
  auto buf = std::make_unique<AudioBuffers>();
  OROCHI_ASSIGN_OR_RETURN(buf->latents, arena.tensor({s.latents}, DType::kF32));
  OROCHI_ASSIGN_OR_RETURN(buf->proj, arena.tensor({s.proj}, DType::kF32));
  for (Tensor* t : {&buf->x, &buf->u, &buf->h, &buf->t1, &buf->t2}) {
    OROCHI_ASSIGN_OR_RETURN(*t, arena.tensor({s.signal}, DType::kF32));
  }
  OROCHI_ASSIGN_OR_RETURN(buf->col, arena.tensor({s.col}, DType::kF32));
  OROCHI_ASSIGN_OR_RETURN(buf->out, arena.tensor({s.out}, DType::kF32));
  d->buf_ = std::move(buf);
  log_debug("audio VAE GPU decoder: ", d->weight_arena_->capacity() >> 20, " MiB weights, ",
            d->activation_arena_->capacity() >> 20, " MiB activations for ", d->max_rows_, " latent rows");
  return d;
}

GpuAudioDecoder::~GpuAudioDecoder() {
  if (stream_) {
    cudaStreamSynchronize(stream_);
    cudaStreamDestroy(stream_);
  }
}

size_t GpuAudioDecoder::weight_bytes() const { return weight_arena_ ? weight_arena_->used() : 0; }
size_t GpuAudioDecoder::activation_bytes_used() const { return activation_arena_ ? activation_arena_->used() : 0; }

Status GpuAudioDecoder::upload(const AudioDecoderWeights& host) {
  OROCHI_CUDA_RETURN_IF_ERROR(cudaSetDevice(device_));
  has_weights_ = false;
  OROCHI_RETURN_IF_ERROR(upload_weights(host, weights_, stream_).with_context("uploading the audio VAE decoder"));
  has_weights_ = true;
  return Status::ok();
}

Status GpuAudioDecoder::init_random(uint64_t seed) {
  OROCHI_CUDA_RETURN_IF_ERROR(cudaSetDevice(device_));
  has_weights_ = false;
  OROCHI_RETURN_IF_ERROR(fill_random_weights(config_, weights_, seed, stream_));
  OROCHI_CUDA_RETURN_IF_ERROR(cudaStreamSynchronize(stream_));
  has_weights_ = true;
  return Status::ok();
}

Status GpuAudioDecoder::snake(const GpuSnake& a, const Tensor& x, const Tensor& out) {
  return cuda::audio_alias_free_snake(x, a.log_alpha, a.log_beta, a.up_filter, a.down_filter, out, stream_);
}

Status GpuAudioDecoder::stage(const GpuStage& s, int64_t B, int64_t Lin, int64_t Cin) {
  const AudioBuffers& b = *buf_;
  const int64_t L = Lin * s.rate, C = Cin / 2;
  const Tensor up = view(b.u, {B, L, C});
  OROCHI_RETURN_IF_ERROR(cuda::audio_conv_transpose1d(*gemm_, view(b.x, {B, Lin, Cin}), s.up.weight,
                                                      s.up.bias_or_null(), s.kernel, s.rate,
                                                      (s.kernel - s.rate) / 2, b.col, up, stream_));
  // x is consumed: it becomes the sum of the AMP blocks, each starting from `up`.
  const Tensor sum = view(b.x, {B, L, C}), h = view(b.h, {B, L, C});
  const Tensor t1 = view(b.t1, {B, L, C}), t2 = view(b.t2, {B, L, C});
  const size_t num_blocks = s.blocks.size();
  for (size_t j = 0; j < num_blocks; ++j) {
    const GpuAmpBlock& block = s.blocks[j];
    const size_t num_dilations = block.dilations.size();
    for (size_t d = 0; d < num_dilations; ++d) {
      const int64_t dilation = block.dilations[d];
      const Tensor& residual = d == 0 ? up : h;  // h = up + r_0 + r_1 + ...
      OROCHI_RETURN_IF_ERROR(snake(block.acts[2 * d], residual, t1));
      OROCHI_RETURN_IF_ERROR(cuda::audio_conv1d(*gemm_, t1, block.convs1[d].weight, block.convs1[d].bias_or_null(),
                                                dilation, (block.kernel * dilation - dilation) / 2, b.col, t2,
                                                stream_));
      OROCHI_RETURN_IF_ERROR(snake(block.acts[2 * d + 1], t2, t1));
      OROCHI_RETURN_IF_ERROR(cuda::audio_conv1d(*gemm_, t1, block.convs2[d].weight, block.convs2[d].bias_or_null(),
                                                1, (block.kernel - 1) / 2, b.col, t2, stream_));
      if (d + 1 < num_dilations) {
        OROCHI_RETURN_IF_ERROR(cuda::audio_residual_sum(h, Tensor(), residual, t2, 1.0f, stream_));
      } else {
        // The block's output goes straight into the running sum; the last block divides by the
        // count (as the reference: a division, not a multiplication by 1/n).
        const float divisor = j + 1 == num_blocks ? static_cast<float>(num_blocks) : 1.0f;
        OROCHI_RETURN_IF_ERROR(
            cuda::audio_residual_sum(sum, j == 0 ? Tensor() : sum, residual, t2, divisor, stream_));
      }
    }
  }
  return Status::ok();
}

Expected<Tensor> GpuAudioDecoder::decode(const Tensor& latents) {
  const AudioVaeConfig& c = config_;
  if (!has_weights_) return invalid_argument("GpuAudioDecoder::decode: no weights; call upload() or init_random()");
  if (!latents.defined() || latents.device().kind != DeviceKind::kCPU || latents.ndim() != 3 || latents.dim(0) < 1 ||
      latents.dim(1) < 1 || latents.dim(2) != c.latent_channels || !dtype_is_float(latents.dtype()))
    return shape_mismatch("audio VAE GPU decode: latents must be a host float tensor [channels, A, " +
                          std::to_string(c.latent_channels) + "] with A >= 1, got " +
                          (latents.defined() ? latents.describe() : std::string("nothing")));
  const int64_t B = latents.dim(0), A = latents.dim(1);
  if (B * A > max_rows_)
    return invalid_argument("audio VAE GPU decode: " + std::to_string(B) + " x " + std::to_string(A) +
                            " latents exceed the " + std::to_string(max_rows_) +
                            " latent rows the decoder was created for; create it with a larger max_latents");
  OROCHI_CUDA_RETURN_IF_ERROR(cudaSetDevice(device_));
  const AudioBuffers& b = *buf_;
  const GpuAudioDecoderWeights& w = weights_;
  const Tensor z = view(b.latents, {B, A, c.latent_channels});
  OROCHI_RETURN_IF_ERROR(cuda::upload_into(latents, z, stream_));
  const Tensor proj = view(b.proj, {B, A, c.latent_dim});
  OROCHI_RETURN_IF_ERROR(
      cuda::audio_conv1d(*gemm_, z, w.dec_in_proj.weight, w.dec_in_proj.bias_or_null(), 1, 0, b.col, proj, stream_));
  OROCHI_RETURN_IF_ERROR(cuda::audio_conv1d(*gemm_, proj, w.conv_pre.weight, w.conv_pre.bias_or_null(), 1, 3, b.col,
                                            view(b.x, {B, A, c.decoder_dim}), stream_));
  int64_t L = A, C = c.decoder_dim;
  for (const GpuStage& s : w.stages) {
    OROCHI_RETURN_IF_ERROR(stage(s, B, L, C));
    L *= s.rate;
    C /= 2;
  }
  const Tensor act = view(b.t1, {B, L, C});
  OROCHI_RETURN_IF_ERROR(snake(w.act_post, view(b.x, {B, L, C}), act));
  const Tensor out = view(b.out, {B, L});
  OROCHI_RETURN_IF_ERROR(cuda::audio_conv1d_mono_clamp(act, w.conv_post, nullptr, 3, -1.0f, 1.0f, out, stream_));
  OROCHI_CHECK(L == c.hop_length() * A, "decoded ", L, " samples for ", A, " latents");
  return cuda::download(out, stream_);
}

}  // namespace orochi::h3_audio::gpu
