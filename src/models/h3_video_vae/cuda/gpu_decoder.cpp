#include "models/h3_video_vae/cuda/gpu_decoder.h"

#include <string>
#include <utility>
#include <vector>

#include "backends/cuda/cuda_check.h"
#include "backends/cuda/ops_vae.h"
#include "models/h3_video_vae/parameters.h"

namespace orochi::h3vae::gpu {

// A tile's activations at the largest tile size; a tile uses the leading rows of each (row slices
// of a contiguous buffer stay contiguous). S = tokens + registers + 1.
struct ActivationBuffers {
  Tensor latents;        // [N, C] f16: the tile's latents, token-major
  Tensor post_quant;     // [N, C] f16
  Tensor h;              // [S, D] f32: the residual stream
  Tensor normed;         // [S, D] f16: norm outputs, the linears' inputs
  Tensor q, k, v, attn;  // [S, D] f16
  Tensor proj;           // [S, D] f16: proj_in, to_out and ff_out outputs
  Tensor ff_hidden;      // [S, 2F] f16: [value | gate]
  Tensor ff_gated;       // [S, F] f16
  Tensor patches;        // [N, out_ch·pt·p·p] f16
  Tensor pixels;         // [N · out_ch·pt·p·p] f32: the unpatchified tile
  Tensor cos, sin;       // [S, rope_dim] f16
};

namespace {

struct BufferSpec {
  Tensor ActivationBuffers::*member;
  Shape shape;
  DType dtype;
};

std::vector<BufferSpec> buffer_specs(const VideoVaeConfig& c, int64_t N) {
  const int64_t S = N + c.decoder_num_register_tokens + 1, D = c.dim(), C = c.latent_channels;
  const int64_t F = c.ffn_inner(), P = c.patch_values();
  using B = ActivationBuffers;
  const DType f16 = DType::kF16, f32 = DType::kF32;
  return {{&B::latents, {N, C}, f16},         {&B::post_quant, {N, C}, f16}, {&B::h, {S, D}, f32},
          {&B::normed, {S, D}, f16},          {&B::q, {S, D}, f16},          {&B::k, {S, D}, f16},
          {&B::v, {S, D}, f16},               {&B::attn, {S, D}, f16},       {&B::proj, {S, D}, f16},
          {&B::ff_hidden, {S, 2 * F}, f16},   {&B::ff_gated, {S, F}, f16},   {&B::patches, {N, P}, f16},
          {&B::pixels, {N * P}, f32},         {&B::cos, {S, c.rope_dim()}, f16},
          {&B::sin, {S, c.rope_dim()}, f16}};
}

Tensor rows(const Tensor& t, int64_t n) { return t.slice(0, 0, n); }

// The parameter list (names and shapes) two configs' weights must share to use the same buffers.
bool same_parameters(const VideoVaeConfig& a, const VideoVaeConfig& b) {
  const std::vector<ParamSpec> pa = decoder_parameters(a), pb = decoder_parameters(b);
  if (pa.size() != pb.size() || a.rope_dim() != b.rope_dim() || a.temporal_ratio != b.temporal_ratio ||
      a.spatial_ratio != b.spatial_ratio || a.decoder_num_attention_heads != b.decoder_num_attention_heads)
    return false;
  for (size_t i = 0; i < pa.size(); ++i)
    if (pa[i].name != pb[i].name || pa[i].shape != pb[i].shape) return false;
  return true;
}

}  // namespace

size_t activation_bytes(const VideoVaeConfig& config, int64_t max_tokens) {
  size_t bytes = 4 * cuda::DeviceArena::kAlignment;
  for (const BufferSpec& b : buffer_specs(config, max_tokens)) {
    const size_t n = static_cast<size_t>(shape_numel(b.shape)) * dtype_size(b.dtype);
    bytes += (n + cuda::DeviceArena::kAlignment - 1) / cuda::DeviceArena::kAlignment * cuda::DeviceArena::kAlignment;
  }
  return bytes;
}

Expected<std::unique_ptr<GpuVideoDecoder>> GpuVideoDecoder::create(const VideoVaeConfig& config, int device,
                                                                   int64_t max_tile_tokens) {
  OROCHI_RETURN_IF_ERROR(config.validate().with_context("video VAE config"));
  if (max_tile_tokens < 1 || max_tile_tokens > (int64_t{1} << 24))
    return invalid_argument("GpuVideoDecoder: max_tile_tokens must be in [1, 2^24], got " +
                            std::to_string(max_tile_tokens) + " (use max_tile_tokens() for a canvas)");
  std::unique_ptr<GpuVideoDecoder> d(new GpuVideoDecoder());
  d->config_ = config;
  d->device_ = device;
  d->max_tokens_ = max_tile_tokens;
  OROCHI_CUDA_RETURN_IF_ERROR(cudaSetDevice(device));
  OROCHI_CUDA_RETURN_IF_ERROR(cudaStreamCreateWithFlags(&d->stream_, cudaStreamNonBlocking));
  d->attention_ = std::make_unique<cuda::CudnnAttention>(d->stream_);
  OROCHI_ASSIGN_OR_RETURN(d->gemm_, cuda::GemmRunner::create(device));
  d->gemm_->set_autotune(false);  // see the header: the same algorithms on every GPU
  OROCHI_ASSIGN_OR_RETURN(d->weight_arena_,
                          cuda::DeviceArena::create(device, gpu_weight_bytes(config) + (1 << 20), "video VAE weights"));
  OROCHI_ASSIGN_OR_RETURN(d->activation_arena_, cuda::DeviceArena::create(device,
                                                                          activation_bytes(config, max_tile_tokens),
                                                                          "video VAE tile activations"));
  d->buf_ = std::make_unique<ActivationBuffers>();
  for (const BufferSpec& b : buffer_specs(config, max_tile_tokens)) {
    OROCHI_ASSIGN_OR_RETURN((*d->buf_).*(b.member), d->activation_arena_->tensor(b.shape, b.dtype));
  }
  return d;
}

GpuVideoDecoder::~GpuVideoDecoder() {
  if (stream_) cudaStreamSynchronize(stream_);
  attention_.reset();  // the cuDNN handle is bound to the stream
  gemm_.reset();
  buf_.reset();
  weights_ = {};
  if (stream_) cudaStreamDestroy(stream_);
}

size_t GpuVideoDecoder::weight_bytes() const { return weight_arena_ ? weight_arena_->used() : 0; }
size_t GpuVideoDecoder::activation_bytes_used() const { return activation_arena_ ? activation_arena_->used() : 0; }

Status GpuVideoDecoder::upload(const DecoderWeights& host) {
  if (!same_parameters(host.config, config_))
    return shape_mismatch("these video VAE weights are for another decoder (" + host.config.summary() +
                          ") than the GpuVideoDecoder was created for (" + config_.summary() +
                          "): create it with the weights' config");
  OROCHI_CUDA_RETURN_IF_ERROR(cudaSetDevice(device_));
  has_weights_ = false;
  weight_arena_->reset(0);
  OROCHI_ASSIGN_OR_RETURN(weights_, upload_gpu_weights(host, *weight_arena_, stream_));
  config_ = host.config;  // the same shapes; eps, theta and the chunk geometry come with the weights
  rope_grid_[0] = rope_grid_[1] = rope_grid_[2] = 0;
  has_weights_ = true;
  return Status::ok();
}

Status GpuVideoDecoder::init_random(uint64_t seed) {
  OROCHI_CUDA_RETURN_IF_ERROR(cudaSetDevice(device_));
  has_weights_ = false;
  weight_arena_->reset(0);
  // One-off f32 scratch for drawing the f16 parameters; freed when this returns.
  const int64_t largest = largest_parameter(config_);
  OROCHI_ASSIGN_OR_RETURN(auto scratch_arena,
                          cuda::DeviceArena::create(device_, static_cast<size_t>(largest) * 4 + 4096, "VAE scratch"));
  OROCHI_ASSIGN_OR_RETURN(Tensor scratch, scratch_arena->tensor({largest}, DType::kF32));
  OROCHI_ASSIGN_OR_RETURN(weights_, init_random_gpu_weights(config_, *weight_arena_, scratch, seed, stream_));
  OROCHI_CUDA_RETURN_IF_ERROR(cudaStreamSynchronize(stream_));  // before the scratch goes
  has_weights_ = true;
  return Status::ok();
}

Status GpuVideoDecoder::check_ready(const char* what) const {
  if (!has_weights_)
    return invalid_argument(std::string("GpuVideoDecoder::") + what +
                            ": no weights: call upload() or init_random() first");
  return Status::ok();
}

Status GpuVideoDecoder::upload_rope(int64_t T, int64_t H, int64_t W) {
  if (rope_grid_[0] == T && rope_grid_[1] == H && rope_grid_[2] == W) return Status::ok();
  const int64_t S = T * H * W + config_.decoder_num_register_tokens + 1;
  // The reference builds the table in fp32 and casts cos/sin to the f16 of q and k.
  const cpu::RopeTable table = tile_rope_table(config_, T, H, W, config_.decoder_num_register_tokens + 1);
  OROCHI_RETURN_IF_ERROR(cuda::upload_into(table.cos, rows(buf_->cos, S), stream_));
  OROCHI_RETURN_IF_ERROR(cuda::upload_into(table.sin, rows(buf_->sin, S), stream_));
  rope_grid_[0] = T, rope_grid_[1] = H, rope_grid_[2] = W;
  return Status::ok();
}

Status GpuVideoDecoder::linear(const GpuLinear& l, const Tensor& x, const Tensor& y) {
  return gemm_->linear(x, l.weight, &l.bias, y, stream_);
}

Status GpuVideoDecoder::block(const GpuBlock& b, int64_t S) {
  const VideoVaeConfig& c = config_;
  const float eps = static_cast<float>(c.decoder_norm_eps);
  const int64_t heads = c.decoder_num_attention_heads, hd = c.decoder_attention_head_dim;
  const ActivationBuffers& a = *buf_;
  const Tensor h = rows(a.h, S), x = rows(a.normed, S), y = rows(a.proj, S);  // [S, D]
  const Tensor q = rows(a.q, S), k = rows(a.k, S), v = rows(a.v, S), o = rows(a.attn, S);
  const Tensor cos = rows(a.cos, S), sin = rows(a.sin, S);  // [S, rope_dim]

  // h += to_out(attention(rope(norm(q)), rope(norm(k)), v)) · scale1
  OROCHI_RETURN_IF_ERROR(cuda::vae_rms_norm(h, b.norm1, eps, x, stream_));
  OROCHI_RETURN_IF_ERROR(linear(b.to_q, x, q));
  OROCHI_RETURN_IF_ERROR(linear(b.to_k, x, k));
  OROCHI_RETURN_IF_ERROR(linear(b.to_v, x, v));
  OROCHI_RETURN_IF_ERROR(cuda::vae_qk_norm_rope(q.view({S, heads, hd}), eps, cos, sin, stream_));
  OROCHI_RETURN_IF_ERROR(cuda::vae_qk_norm_rope(k.view({S, heads, hd}), eps, cos, sin, stream_));
  OROCHI_RETURN_IF_ERROR(attention_->run(q.raw_data(), k.raw_data(), v.raw_data(), o.raw_data(),
                                         cuda::AttentionShape{S, S, heads, hd, DType::kF16}, stream_));
  OROCHI_RETURN_IF_ERROR(linear(b.to_out, o, y));
  OROCHI_RETURN_IF_ERROR(cuda::vae_add_scaled(h, y, b.scale1, stream_));

  // h += ff_out(swiglu(ff_in(norm(h)))) · scale2
  const Tensor u = rows(a.ff_hidden, S), g = rows(a.ff_gated, S);
  OROCHI_RETURN_IF_ERROR(cuda::vae_rms_norm(h, b.norm2, eps, x, stream_));
  OROCHI_RETURN_IF_ERROR(linear(b.ff_in, x, u));  // [S, 2F]
  OROCHI_RETURN_IF_ERROR(cuda::vae_swiglu(u, g, stream_));  // [S, F]
  OROCHI_RETURN_IF_ERROR(linear(b.ff_out, g, y));
  return cuda::vae_add_scaled(h, y, b.scale2, stream_);
}

Expected<Tensor> GpuVideoDecoder::run_tile(int64_t T, int64_t H, int64_t W) {
  const VideoVaeConfig& c = config_;
  const int64_t N = T * H * W, S = N + c.decoder_num_register_tokens + 1;
  const ActivationBuffers& a = *buf_;
  OROCHI_RETURN_IF_ERROR(linear(weights_.post_quant_conv, rows(a.latents, N), rows(a.post_quant, N)));  // [N, C]
  OROCHI_RETURN_IF_ERROR(linear(weights_.proj_in, rows(a.post_quant, N), rows(a.proj, N)));  // [N, D]
  OROCHI_RETURN_IF_ERROR(cuda::vae_tokens(rows(a.proj, N), weights_.register_tokens, rows(a.h, S), stream_));
  OROCHI_RETURN_IF_ERROR(upload_rope(T, H, W));
  for (const GpuBlock& b : weights_.blocks) OROCHI_RETURN_IF_ERROR(block(b, S));
  // Registers and the zero token are dropped after proj_out; norm and project only the N patches.
  OROCHI_RETURN_IF_ERROR(cuda::vae_layer_norm(rows(a.h, N), weights_.norm_out_weight, weights_.norm_out_bias,
                                              static_cast<float>(c.decoder_norm_eps), rows(a.normed, N), stream_));
  OROCHI_RETURN_IF_ERROR(linear(weights_.proj_out, rows(a.normed, N), rows(a.patches, N)));  // [N, P]
  const Tensor tile = rows(a.pixels, N * c.patch_values())
                          .view({c.out_channels, T * c.temporal_ratio, H * c.spatial_ratio, W * c.spatial_ratio});
  OROCHI_RETURN_IF_ERROR(
      cuda::vae_unpatchify(rows(a.patches, N), T, H, W, c.temporal_ratio, c.spatial_ratio, tile, stream_));
  return tile;
}

Expected<Tensor> GpuVideoDecoder::decode_tile(const Tensor& z_in) {
  OROCHI_ASSIGN_OR_RETURN(const Tensor tile, tile_on_device(z_in));
  return cuda::download(tile, stream_);
}

Expected<Tensor> GpuVideoDecoder::tile_on_device(const Tensor& z_in) {
  OROCHI_RETURN_IF_ERROR(check_ready("decode_tile"));
  const int64_t C = config_.latent_channels;
  if (!z_in.defined() || z_in.device().kind != DeviceKind::kCPU || z_in.dtype() != DType::kF32 || z_in.ndim() != 4 ||
      z_in.dim(0) != C)
    return shape_mismatch("GpuVideoDecoder::decode_tile wants host f32 latents [" + std::to_string(C) +
                          ", T, h, w], got " + (z_in.defined() ? z_in.describe() : std::string("nothing")));
  const int64_t T = z_in.dim(1), H = z_in.dim(2), W = z_in.dim(3), N = T * H * W;
  if (N < 1 || N > max_tokens_)
    return invalid_argument("a tile of " + std::to_string(T) + "x" + std::to_string(H) + "x" + std::to_string(W) +
                            " latents has " + std::to_string(N) + " tokens; this GpuVideoDecoder was created for at "
                            "most " + std::to_string(max_tokens_) + ": create it with max_tile_tokens() of the canvas");
  OROCHI_CUDA_RETURN_IF_ERROR(cudaSetDevice(device_));
  // [C, N] -> [N, C] on the host: one token per latent voxel, channels last.
  const Tensor z = z_in.contiguous();
  Tensor tokens = Tensor::empty({N, C}, DType::kF32);
  const float* src = z.data<float>();
  float* dst = tokens.data<float>();
  for (int64_t ch = 0; ch < C; ++ch)
    for (int64_t n = 0; n < N; ++n) dst[n * C + ch] = src[ch * N + n];
  // f16 as the autocast conv casts its input (nearest even).
  OROCHI_RETURN_IF_ERROR(cuda::upload_into(tokens, rows(buf_->latents, N), stream_));
  return run_tile(T, H, W);
}

}  // namespace orochi::h3vae::gpu
