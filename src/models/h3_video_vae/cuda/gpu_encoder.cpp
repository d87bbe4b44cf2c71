#include "models/h3_video_vae/cuda/gpu_encoder.h"

#include <algorithm>
#include <iterator>
#include <map>

#include "backends/cuda/cuda_check.h"
#include "backends/cuda/random_fill.h"
#include "models/h3_video_vae/blend.h"
#include "models/h3_video_vae/encoder_posterior.h"
#include "models/h3_video_vae/encoder_random.h"
#include "models/h3_video_vae/tiling.h"

namespace orochi::h3vae::gpu {
namespace {

static_assert(kEncoderArenaAlignment == cuda::DeviceArena::kAlignment,
              "encoder_memory.h sizes the arenas with the DeviceArena's alignment");

// w[:, :, kt − 1] of a host kernel [Cout, Cin, kt, kh, kw] as [Cout, Cin, 1, kh, kw].
Tensor last_temporal_tap(const Tensor& w) {
  const int64_t outer = w.dim(0) * w.dim(1), kt = w.dim(2), plane = w.dim(3) * w.dim(4);
  Tensor t = Tensor::uninitialized({w.dim(0), w.dim(1), 1, w.dim(3), w.dim(4)}, DType::kF32);
  const Tensor src = w.contiguous().to(DType::kF32);
  for (int64_t i = 0; i < outer; ++i)
    std::copy_n(src.data<float>() + (i * kt + kt - 1) * plane, plane, t.data<float>() + i * plane);
  return t;
}

// A host kernel [Cout, Cin, kt, kh, kw] as channels last [Cout, kt, kh, kw, Cin'], with Cin' = Cin
// rounded up to a multiple of 4 with zero taps for conv_in (cuDNN's TF32 kernels want 16-byte
// channel vectors; its padded input gets as many zero channels, so every added product is an exact 0).
Tensor channels_last_kernel(const Tensor& w, bool round_channels = false) {
  const int64_t Co = w.dim(0), Ci = w.dim(1), taps = w.dim(2) * w.dim(3) * w.dim(4);
  const int64_t Cp = round_channels ? (Ci + 3) / 4 * 4 : Ci;
  const Tensor src = w.contiguous().to(DType::kF32);
  Tensor t = Tensor::zeros({Co, w.dim(2), w.dim(3), w.dim(4), Cp}, DType::kF32);
  const float* a = src.data<float>();
  float* b = t.data<float>();
  for (int64_t o = 0; o < Co; ++o)
    for (int64_t i = 0; i < Ci; ++i)
      for (int64_t k = 0; k < taps; ++k) b[(o * taps + k) * Cp + i] = a[(o * Ci + i) * taps + k];
  return t;
}

double conv_flops(const Tensor& kernel, const Tensor& y) { return 2.0 * static_cast<double>(kernel.numel() / kernel.dim(0)) * static_cast<double>(y.numel()); }

constexpr const char* kConvStages[] = {"conv3x3x3 level 0", "conv3x3x3 level 1", "conv3x3x3 level 2",
                                       "conv3x3x3 level 3", "conv3x3x3 level 4", "conv3x3x3 level 5+"};

}  // namespace

const char* encoder_path_name(EncoderPath path) {
  switch (path) {
    case EncoderPath::kPaddedCopies: return "padded-copies NCDHW";
    case EncoderPath::kFusedNcdhw: return "fused NCDHW";
    case EncoderPath::kFusedNdhwc: return "fused NDHWC";
  }
  return "?";
}

// CUDA events recorded at every stage boundary of a tile; read back after the tile's download.
struct GpuVideoEncoder::Profiler {
  bool on = false;
  std::vector<cudaEvent_t> events;  // a pool, reused per tile
  std::vector<std::pair<int, double>> interval;  // per recorded event i >= 1: stage index, flops
  size_t used = 0;
  std::vector<EncoderStageTime> stages;
  std::map<std::string, int> index;
  ~Profiler() {
    for (cudaEvent_t e : events) cudaEventDestroy(e);
  }
  void record(cudaStream_t stream, const char* stage, double flops) {
    if (!stage) {  // a new base: what is pending is read first (a failed tile's events are dropped)
      collect();
      used = 0;
    }
    if (used == events.size()) {
      cudaEvent_t e = nullptr;
      if (cudaEventCreate(&e) != cudaSuccess) return;  // timing is best effort
      events.push_back(e);
      interval.emplace_back(-1, 0.0);
    }
    int s = -1;
    if (stage) {
      auto [it, fresh] = index.emplace(stage, static_cast<int>(stages.size()));
      if (fresh) stages.push_back({stage, 0.0, 0.0, 0});
      s = it->second;
    }
    interval[used] = {s, flops};
    cudaEventRecord(events[used++], stream);
  }
  void collect() {
    if (used == 0) return;
    cudaEventSynchronize(events[used - 1]);
    for (size_t i = 1; i < used; ++i) {
      float ms = 0.0f;
      if (interval[i].first < 0 || cudaEventElapsedTime(&ms, events[i - 1], events[i]) != cudaSuccess) continue;
      EncoderStageTime& st = stages[interval[i].first];
      st.ms += ms;
      st.flops += interval[i].second;
      ++st.calls;
    }
    used = 0;
  }
};

void GpuVideoEncoder::set_profiling(bool on) { profiler_->on = on; }
std::vector<EncoderStageTime> GpuVideoEncoder::stage_times() const { return profiler_->stages; }
void GpuVideoEncoder::reset_stage_times() {
  profiler_->stages.clear();
  profiler_->index.clear();
}
void GpuVideoEncoder::mark(const char* stage, double flops) {
  if (profiler_->on) profiler_->record(stream_, stage, flops);
}

// The device copy of the weights has the host struct's layout, with CUDA tensors. A single frame
// sees two causal zero frames and itself, so a 3x3x3 conv of it is exactly the 1x3x3 conv with the
// last temporal tap (REF2VA.md §1.3): those taps are kept too, keyed by the full kernel's address,
// and the image path runs a third of the multiply-adds.
struct GpuVideoEncoder::DeviceWeights : EncoderWeights {
  std::map<const void*, Tensor> last_tap;
};

struct GpuVideoEncoder::Buffers {
  void* region[kEncoderActivationBuffers] = {};
  int64_t elems = 0;  // floats per region
};

Status GpuVideoEncoder::check_tile_shape(const EncoderTileShape& tile) const {
  if (tile.frames < 1 || tile.height < 1 || tile.width < 1 || tile.frames > config_.clip_length)
    return invalid_argument("GpuVideoEncoder: a tile shape of " + std::to_string(tile.frames) + " x " +
                            std::to_string(tile.height) + " x " + std::to_string(tile.width) +
                            " is not one the encoder meets (use max_tile_shape())");
  if (options_.device_tiles && (tile.clip_height < tile.height || tile.clip_width < tile.width))
    return invalid_argument("GpuVideoEncoder: device_tiles needs the clip's frame size in the tile shape (use max_tile_shape())");
  return Status::ok();
}

Status GpuVideoEncoder::reserve_activations(const EncoderTileShape& tile) {
  OROCHI_ASSIGN_OR_RETURN(activation_arena_,
                          cuda::DeviceArena::create(device_, encoder_activation_bytes(config_, tile, options_),
                                                    "video VAE encoder tile activations"));
  buf_ = std::make_unique<Buffers>();
  buf_->elems = encoder_tile_max_elems(config_, tile.frames, tile.height, tile.width);
  for (void*& r : buf_->region) {
    OROCHI_ASSIGN_OR_RETURN(r, activation_arena_->allocate(static_cast<size_t>(buf_->elems) * 4));
  }
  clip_ = nullptr;
  clip_elems_ = 0;
  if (options_.device_tiles) {
    clip_elems_ = encoder_clip_elems(config_, tile);
    OROCHI_ASSIGN_OR_RETURN(clip_, activation_arena_->allocate(static_cast<size_t>(clip_elems_) * 4));
  }
  max_tile_ = tile;
  return Status::ok();
}

Expected<std::unique_ptr<GpuVideoEncoder>> GpuVideoEncoder::create(const VideoVaeConfig& config, int device,
                                                                   const EncoderTileShape& max_tile,
                                                                   const GpuEncoderOptions& options) {
  OROCHI_RETURN_IF_ERROR(config.validate().with_context("video VAE config"));
  OROCHI_RETURN_IF_ERROR(config.validate_encoder().with_context("video VAE config"));
  if (options.device_tiles && options.path == EncoderPath::kPaddedCopies)
    return invalid_argument("GpuVideoEncoder: device_tiles needs a fused path (the padded-copies path takes host tiles)");
  std::unique_ptr<GpuVideoEncoder> e(new GpuVideoEncoder());
  e->config_ = config;
  e->options_ = options;
  e->device_ = device;
  OROCHI_RETURN_IF_ERROR(e->check_tile_shape(max_tile));
  e->profiler_ = std::make_unique<Profiler>();
  OROCHI_CUDA_RETURN_IF_ERROR(cudaSetDevice(device));
  OROCHI_CUDA_RETURN_IF_ERROR(cudaStreamCreateWithFlags(&e->stream_, cudaStreamNonBlocking));
  OROCHI_ASSIGN_OR_RETURN(e->conv_, cuda::Conv3dRunner::create(e->stream_, options.math));
  e->conv_->set_autotune(options.autotune);
  OROCHI_ASSIGN_OR_RETURN(e->weight_arena_,
                          cuda::DeviceArena::create(device, encoder_weight_arena_bytes(config), "video VAE encoder weights"));
  OROCHI_RETURN_IF_ERROR(e->reserve_activations(max_tile));
  return e;
}

Status GpuVideoEncoder::fit(const EncoderTileShape& tile) {
  OROCHI_RETURN_IF_ERROR(check_tile_shape(tile));
  if (tile == max_tile_) return Status::ok();
  OROCHI_CUDA_RETURN_IF_ERROR(cudaSetDevice(device_));
  OROCHI_CUDA_RETURN_IF_ERROR(cudaStreamSynchronize(stream_));  // nothing may still use the old arena
  // The old arena goes first, so the peak is one input's arena (the plan's), never two.
  buf_.reset();
  clip_ = nullptr;
  activation_arena_.reset();
  return reserve_activations(tile);
}

size_t GpuVideoEncoder::reserved_bytes() const {
  return (weight_arena_ ? weight_arena_->capacity() : 0) + (activation_arena_ ? activation_arena_->capacity() : 0);
}

GpuVideoEncoder::~GpuVideoEncoder() {
  if (stream_) cudaStreamSynchronize(stream_);
  conv_.reset();  // the cuDNN handle is bound to the stream
  weights_.reset();
  buf_.reset();
  profiler_.reset();
  if (stream_) cudaStreamDestroy(stream_);
}

Status GpuVideoEncoder::upload(const EncoderWeights& host) {
  if (encoder_parameters(host.config).size() != encoder_parameters(config_).size() ||
      host.config.block_out_channels != config_.block_out_channels ||
      host.config.latent_channels != config_.latent_channels || host.config.layers_per_block != config_.layers_per_block)
    return invalid_argument("these encoder weights are for another config than the GpuVideoEncoder was created for (" +
                            config_.summary() + "): create it with the weights' config");
  OROCHI_CUDA_RETURN_IF_ERROR(cudaSetDevice(device_));
  weight_arena_->reset(0);
  auto w = std::make_unique<DeviceWeights>();
  static_cast<EncoderWeights&>(*w) = host;  // the layout; every tensor is replaced by its device copy below
  auto put = [&](Tensor& t) -> Status {
    if (!t.defined()) return Status::ok();
    OROCHI_ASSIGN_OR_RETURN(t, cuda::upload(t, *weight_arena_, DType::kF32, stream_));
    return Status::ok();
  };
  const bool channels_last = options_.path == EncoderPath::kFusedNdhwc;
  auto put_conv = [&](Conv3dWeights& c) -> Status {
    const bool round = &c == &w->conv_in;
    if (c.weight.defined() && c.weight.dim(2) == 3) {
      Tensor tap = last_temporal_tap(c.weight);
      if (channels_last) {
        tap = channels_last_kernel(tap, round);
        c.weight = channels_last_kernel(c.weight, round);
      }
      OROCHI_RETURN_IF_ERROR(put(tap));
      OROCHI_RETURN_IF_ERROR(put(c.weight));
      w->last_tap[c.weight.raw_data()] = tap;
    } else {
      if (channels_last && c.weight.defined()) c.weight = channels_last_kernel(c.weight, round);
      OROCHI_RETURN_IF_ERROR(put(c.weight));
    }
    return put(c.bias);
  };
  auto put_norm = [&](GroupNormWeights& n) -> Status {
    OROCHI_RETURN_IF_ERROR(put(n.weight));
    return put(n.bias);
  };
  OROCHI_RETURN_IF_ERROR(put_conv(w->conv_in));
  for (EncoderLevelWeights& level : w->levels) {
    for (EncoderResnetWeights& r : level.resnets) {
      OROCHI_RETURN_IF_ERROR(put_norm(r.norm1));
      OROCHI_RETURN_IF_ERROR(put_conv(r.conv1));
      OROCHI_RETURN_IF_ERROR(put_norm(r.norm2));
      OROCHI_RETURN_IF_ERROR(put_conv(r.conv2));
      OROCHI_RETURN_IF_ERROR(put_conv(r.shortcut));
    }
    OROCHI_RETURN_IF_ERROR(put_conv(level.downsample));
  }
  OROCHI_RETURN_IF_ERROR(put_norm(w->norm_out));
  OROCHI_RETURN_IF_ERROR(put_conv(w->conv_out));
  OROCHI_RETURN_IF_ERROR(put_conv(w->quant_conv));
  weights_ = std::move(w);
  has_weights_ = true;
  return Status::ok();
}

Status GpuVideoEncoder::init_random(uint64_t seed) {
  OROCHI_CUDA_RETURN_IF_ERROR(cudaSetDevice(device_));
  has_weights_ = false;
  OROCHI_CUDA_RETURN_IF_ERROR(cudaStreamSynchronize(stream_));
  weights_.reset();  // upload() refills the arena below; the draws use it as scratch first
  const NormalDraw draw = [&](const Shape& shape, uint64_t stream_id, NormalInit init) -> Expected<Tensor> {
    weight_arena_->reset(0);
    OROCHI_ASSIGN_OR_RETURN(const Tensor t, weight_arena_->tensor(shape, DType::kF32));
    OROCHI_RETURN_IF_ERROR(cuda::fill_normal(t, seed, stream_id, init.mean, init.stddev, stream_));
    return cuda::download(t, stream_);
  };
  OROCHI_ASSIGN_OR_RETURN(const EncoderWeights host, random_encoder_weights(config_, draw));
  return upload(host);
}

Status GpuVideoEncoder::conv(const Conv3dWeights& c, const Tensor& x, int64_t stride_t, int64_t stride_s,
                             const Tensor& y) {
  return conv_->forward(x, c.weight, c.bias, stride_t, stride_s, y, *activation_arena_);
}

namespace {

// A CUDA f32 view of `shape` over device memory the arena owns.
Tensor device_view(void* p, const Shape& shape, int device, const std::shared_ptr<cuda::DeviceArena>& owner) {
  const size_t bytes = static_cast<size_t>(shape_numel(shape)) * 4;
  return Tensor::from_buffer(Buffer::wrap(p, bytes, owner, Device{DeviceKind::kCUDA, device}), 0, shape, DType::kF32);
}

}  // namespace

Expected<Tensor> GpuVideoEncoder::padded_conv(const Conv3dWeights& c, const Tensor& x, int64_t front, int64_t top,
                                              int64_t bottom, int64_t left, int64_t right, int64_t stride_t,
                                              int64_t stride_s, void* out, const char* stage) {
  const int64_t C = x.dim(0), T = x.dim(1), H = x.dim(2), W = x.dim(3);
  Conv3dWeights kernel = c;
  if (T == 1 && front == 2 && c.weight.dim(2) == 3) {  // [0, 0, x]: only the last temporal tap sees data
    kernel.weight = weights_->last_tap.at(c.weight.raw_data());
    front = 0;
  }
  const Shape padded_shape = {C, T + front, H + top + bottom, W + left + right};
  Tensor padded = x;
  if (front + top + bottom + left + right > 0) {
    padded = device_view(buf_->region[3], padded_shape, device_, activation_arena_);
    OROCHI_RETURN_IF_ERROR(cuda::encoder_pad(x, front, top, bottom, left, right, padded, stream_));
    mark("pad copy");
  }
  const int64_t kt = kernel.weight.dim(2), kh = kernel.weight.dim(3), kw = kernel.weight.dim(4);
  const Shape out_shape = {kernel.weight.dim(0), (padded_shape[1] - kt) / stride_t + 1, (padded_shape[2] - kh) / stride_s + 1,
                           (padded_shape[3] - kw) / stride_s + 1};
  Tensor y = device_view(out, out_shape, device_, activation_arena_);
  OROCHI_RETURN_IF_ERROR(conv(kernel, padded, stride_t, stride_s, y));
  mark(stage, conv_flops(kernel.weight, y));
  return y;
}

Expected<Tensor> GpuVideoEncoder::norm(const GroupNormWeights& n, const Tensor& x, bool silu, void* out) {
  Tensor y = device_view(out, x.shape(), device_, activation_arena_);
  OROCHI_RETURN_IF_ERROR(cuda::group_norm_frames(x, n.weight, n.bias, config_.norm_num_groups,
                                                 static_cast<float>(config_.norm_eps), silu, y, stream_));
  mark("norm");
  return y;
}

Expected<Tensor> GpuVideoEncoder::encode_tile(const Tensor& x) {
  if (!has_weights_) return invalid_argument("GpuVideoEncoder: upload() the weights before encoding");
  if (!x.defined() || x.dtype() != DType::kF32 || x.ndim() != 4 || x.dim(0) != config_.in_channels)
    return invalid_argument("GpuVideoEncoder::encode_tile takes host f32 [3, T, h, w], got " +
                            (x.defined() ? x.describe() : std::string("nothing")));
  if (x.dim(1) > max_tile_.frames || encoder_tile_max_elems(config_, x.dim(1), x.dim(2), x.dim(3)) > buf_->elems)
    return invalid_argument("a tile " + x.describe() + " is larger than this GpuVideoEncoder was created for (" +
                            std::to_string(max_tile_.frames) + " x " + std::to_string(max_tile_.height) + " x " +
                            std::to_string(max_tile_.width) + "): create it with max_tile_shape() of the input");
  OROCHI_RETURN_IF_ERROR(check_frame_size(config_, x.dim(2), x.dim(3)));
  OROCHI_CUDA_RETURN_IF_ERROR(cudaSetDevice(device_));
  if (options_.path != EncoderPath::kPaddedCopies) return encode_tile_fused(x);
  const EncoderWeights& w = *weights_;
  void** r = buf_->region;
  mark(nullptr);  // the tile's first event
  // Buffers: r[0] the state h, r[1] normed / shortcut, r[2] conv output, r[3] padded copies.
  Tensor input = device_view(r[1], x.shape(), device_, activation_arena_);
  OROCHI_RETURN_IF_ERROR(cuda::upload_into(x.contiguous(), input, stream_));
  mark("upload");
  OROCHI_ASSIGN_OR_RETURN(Tensor h, padded_conv(w.conv_in, input, 2, 1, 1, 1, 1, 1, 1, r[0], "conv_in"));  // [C0, T, H, W]
  for (size_t li = 0; li < w.levels.size(); ++li) {
    const EncoderLevelWeights& level = w.levels[li];
    const char* const conv_stage = kConvStages[std::min<size_t>(li, std::size(kConvStages) - 1)];
    for (const EncoderResnetWeights& res : level.resnets) {
      OROCHI_ASSIGN_OR_RETURN(Tensor n1, norm(res.norm1, h, true, r[1]));
      OROCHI_ASSIGN_OR_RETURN(Tensor c1, padded_conv(res.conv1, n1, 2, 1, 1, 1, 1, 1, 1, r[2], conv_stage));
      OROCHI_ASSIGN_OR_RETURN(Tensor n2, norm(res.norm2, c1, true, r[1]));
      OROCHI_ASSIGN_OR_RETURN(Tensor c2, padded_conv(res.conv2, n2, 2, 1, 1, 1, 1, 1, 1, r[2], conv_stage));  // [Cout, T, H, W]
      if (res.shortcut.weight.defined()) {
        OROCHI_ASSIGN_OR_RETURN(Tensor sc, padded_conv(res.shortcut, h, 0, 0, 0, 0, 0, 1, 1, r[1], "shortcut 1x1x1"));
        OROCHI_RETURN_IF_ERROR(cuda::add_into(sc, c2, stream_));  // shortcut(x) + h
        std::swap(r[0], r[1]);
        h = sc;
      } else {
        OROCHI_RETURN_IF_ERROR(cuda::add_into(h, c2, stream_));  // x + h
      }
      mark("residual / bias");
    }
    if (level.has_downsample()) {
      // A stride-2 level reflect-pads one pixel at the bottom and right; the conv has no spatial padding.
      const int64_t extra = level.spatial_stride == 2 ? 1 : 0;
      OROCHI_ASSIGN_OR_RETURN(Tensor d, padded_conv(level.downsample, h, 2, 0, extra, 0, extra, level.temporal_stride,
                                                    level.spatial_stride, r[2], "downsample"));
      std::swap(r[0], r[2]);
      h = d;
    }
  }
  OROCHI_ASSIGN_OR_RETURN(Tensor n, norm(w.norm_out, h, true, r[1]));
  OROCHI_ASSIGN_OR_RETURN(Tensor out, padded_conv(w.conv_out, n, 2, 1, 1, 1, 1, 1, 1, r[2], "conv_out + quant_conv"));  // [2L, T', h, w]
  OROCHI_ASSIGN_OR_RETURN(Tensor moments, padded_conv(w.quant_conv, out, 0, 0, 0, 0, 0, 1, 1, r[0], "conv_out + quant_conv"));
  Expected<Tensor> host = cuda::download(moments, stream_);
  mark("download");
  if (profiler_->on) profiler_->collect();
  return host;
}

namespace {
cuda::VideoLayout layout_of(EncoderPath path) {
  return path == EncoderPath::kFusedNdhwc ? cuda::VideoLayout::kNdhwc : cuda::VideoLayout::kNcdhw;
}
// conv_in's input channels as its kernel takes them (channels last: rounded up to 4).
int64_t conv_in_channels(const EncoderWeights& w, cuda::VideoLayout layout) {
  return layout == cuda::VideoLayout::kNdhwc ? w.conv_in.weight.dim(4) : w.conv_in.weight.dim(1);
}
}  // namespace

// The tile arrives [3, T, H, W] from the host; conv_in reads it padded (and channels last with zero
// channels up to its kernel's input width).
Expected<Tensor> GpuVideoEncoder::encode_tile_fused(const Tensor& x) {
  const cuda::VideoLayout L = layout_of(options_.path);
  void** r = buf_->region;
  const int64_t T = x.dim(1), H = x.dim(2), W = x.dim(3), front = T == 1 ? 0 : 2;
  Tensor input = device_view(r[2], x.shape(), device_, activation_arena_);
  mark(nullptr);
  OROCHI_RETURN_IF_ERROR(cuda::upload_into(x.contiguous(), input, stream_));
  mark("upload");
  Tensor padded_in = device_view(r[1], cuda::video_shape(L, conv_in_channels(*weights_, L), T + front, H + 2, W + 2),
                                 device_, activation_arena_);
  OROCHI_RETURN_IF_ERROR(
      cuda::encoder_pad_to(input, cuda::VideoLayout::kNcdhw, Tensor(), front, 1, 1, 1, 1, padded_in, L, stream_));
  mark("pad copy");
  return encode_padded_fused(padded_in, T, H, W);
}

Expected<Tensor> GpuVideoEncoder::device_tiles_clip(const Tensor& input, int64_t k, const TilePlan& plan) {
  // Clip k of input [C, F, H, W]: uploaded once, its tiles cut on the device, stitched on the host.
  const int64_t C = input.dim(0), F = input.dim(1), H = input.dim(2), W = input.dim(3), r = config_.spatial_ratio;
  const int64_t L = config_.clip_length, Tc = F == 1 ? 1 : L;
  const cuda::VideoLayout layout = layout_of(options_.path);
  const int64_t front = Tc == 1 ? 0 : 2, plane = H * W;
  const Tensor clip = device_view(clip_, {C, Tc, H, W}, device_, activation_arena_);
  TilePlan latent = plan;  // the stitch runs on the latent grid (encode_clip_with's)
  for (TileAxis* axis : {&latent.rows, &latent.cols}) {
    for (int64_t& v : axis->starts) v /= r;
    for (int64_t& v : axis->lengths) v /= r;
    for (int64_t& v : axis->overlaps) v /= r;
  }
  mark(nullptr);
  // Frame f of clip k is input frame min(kL + f, F − 1): the last frame repeats up to whole clips.
  for (int64_t c = 0; c < C; ++c)
    for (int64_t f = 0; f < Tc; ++f) {
      const int64_t src = std::min(k * L + f, F - 1);
      OROCHI_CUDA_RETURN_IF_ERROR(cudaMemcpyAsync(static_cast<float*>(clip_) + (c * Tc + f) * plane,
                                                  input.data<float>() + (c * F + src) * plane, plane * sizeof(float),
                                                  cudaMemcpyHostToDevice, stream_));
    }
  mark("upload");
  std::vector<std::vector<Tensor>> tiles(plan.rows.count());
  for (int64_t i = 0; i < plan.rows.count(); ++i)
    for (int64_t j = 0; j < plan.cols.count(); ++j) {
      const int64_t th = plan.rows.lengths[i], tw = plan.cols.lengths[j];
      if (i + j > 0) mark(nullptr);
      Tensor padded_in = device_view(
          buf_->region[1], cuda::video_shape(layout, conv_in_channels(*weights_, layout), Tc + front, th + 2, tw + 2),
          device_, activation_arena_);
      OROCHI_RETURN_IF_ERROR(cuda::encoder_tile_pad(clip, plan.rows.starts[i], plan.cols.starts[j], th, tw, front, 1,
                                                    padded_in, layout, stream_));
      mark("pad copy");
      OROCHI_ASSIGN_OR_RETURN(Tensor m, encode_padded_fused(padded_in, Tc, th, tw));
      OROCHI_CHECK(m.ndim() == 4 && m.dim(2) == th / r && m.dim(3) == tw / r, "tile moments ", m.describe(),
                   " do not cover the tile's latents");
      tiles[i].push_back(std::move(m));
    }
  return plan.count() == 1 ? tiles[0][0] : stitch_tiles(tiles, latent, BlendPrecision::kF32);
}

Expected<Tensor> GpuVideoEncoder::encode_moments_device_tiles(const Tensor& x, const EncodeOptions& options,
                                                              bool join) {
  // The checks and the clip / tile / stitch arithmetic of encode_moments_with (encoder.cpp), with the
  // tiles cut on the device from one uploaded clip.
  if (!x.defined() || x.dtype() != DType::kF32 || x.ndim() != 4 || x.dim(0) != config_.in_channels)
    return invalid_argument("the video VAE encoder takes fp32 pixels [" + std::to_string(config_.in_channels) +
                            ", frames, height, width], got " + (x.defined() ? x.describe() : "nothing"));
  const int64_t C = x.dim(0), F = x.dim(1), H = x.dim(2), W = x.dim(3), r = config_.spatial_ratio;
  if (F < 1 || H < 1 || W < 1) return invalid_argument("the video VAE encoder got an empty input " + x.describe());
  if (H % r != 0 || W % r != 0)
    return invalid_argument("frames of " + std::to_string(W) + "x" + std::to_string(H) +
                            " px: the video VAE encoder needs both sides to be multiples of " + std::to_string(r));
  OROCHI_RETURN_IF_ERROR(options.validate(config_));
  const TilePlan plan = options.plan(config_, H, W);
  OROCHI_RETURN_IF_ERROR(check_frame_size(config_, plan.rows.lengths[0], plan.cols.lengths[0]));
  const int64_t L = config_.clip_length, Tc = F == 1 ? 1 : L, clips = F == 1 ? 1 : (F + L - 1) / L;
  if (C * Tc * H * W > clip_elems_ || Tc > max_tile_.frames)
    return invalid_argument("a clip of " + x.describe() + " is larger than this GpuVideoEncoder was created for (" +
                            std::to_string(max_tile_.clip_width) + "x" + std::to_string(max_tile_.clip_height) +
                            "): create it with max_tile_shape() of the input");
  for (int64_t i = 0; i < plan.rows.count(); ++i)
    for (int64_t j = 0; j < plan.cols.count(); ++j)
      if (encoder_tile_max_elems(config_, Tc, plan.rows.lengths[i], plan.cols.lengths[j]) > buf_->elems)
        return invalid_argument("the tiles of " + x.describe() + " are larger than this GpuVideoEncoder was created for");
  OROCHI_CUDA_RETURN_IF_ERROR(cudaSetDevice(device_));
  const Tensor input = x.contiguous();
  std::vector<Tensor> moments_of_clips;
  for (int64_t k = 0; k < clips; ++k) {
    OROCHI_ASSIGN_OR_RETURN(Tensor m, device_tiles_clip(input, k, plan));
    moments_of_clips.push_back(std::move(m));
  }
  if (F == 1 || !join) return moments_of_clips[0];  // one clip: nothing to join or cut
  // concat over time, then drop the last token_drop latent frames (encode_moments_with's).
  const int64_t Cm = moments_of_clips[0].dim(0), h = moments_of_clips[0].dim(2), w = moments_of_clips[0].dim(3);
  int64_t total = 0;
  for (const Tensor& m : moments_of_clips) total += m.dim(1);
  if (config_.token_drop > 0 && total <= config_.token_drop)
    return invalid_argument("the encode gave " + std::to_string(total) +
                            " latent frames, no more than token_drop; the config's clip geometry is unusable");
  const int64_t keep = total - std::max<int64_t>(config_.token_drop, 0);
  Tensor out = Tensor::uninitialized({Cm, keep, h, w}, DType::kF32);
  const int64_t lp = h * w;
  int64_t t0 = 0;
  for (const Tensor& m : moments_of_clips) {
    const Tensor mc = m.contiguous();
    for (int64_t c = 0; c < Cm; ++c)
      for (int64_t t = 0; t < m.dim(1) && t0 + t < keep; ++t)
        std::copy_n(mc.data<float>() + (c * m.dim(1) + t) * lp, lp, out.data<float>() + (c * keep + t0 + t) * lp);
    t0 += m.dim(1);
  }
  return out;
}

Expected<Tensor> GpuVideoEncoder::encode_padded_fused(const Tensor& padded_in, int64_t T, int64_t H, int64_t W) {
  using cuda::VideoLayout;
  const VideoLayout L = layout_of(options_.path);
  const bool cl = L == VideoLayout::kNdhwc;
  const EncoderWeights& w = *weights_;
  void** r = buf_->region;
  const int64_t groups = config_.norm_num_groups;
  const float eps = static_cast<float>(config_.norm_eps);
  // A single frame sees two causal zero frames and itself: every 3-tap kernel runs as its last tap on
  // the unpadded frame (as padded_conv does), so no zero frames are written either.
  const bool single = T == 1;
  const int64_t front = single ? 0 : 2;
  auto view = [&](void* p, int64_t C, int64_t t, int64_t hh, int64_t ww) {
    return device_view(p, cuda::video_shape(L, C, t, hh, ww), device_, activation_arena_);
  };
  // The kernel a conv runs (the last temporal tap for a single frame) and its sizes.
  auto kernel_of = [&](const Conv3dWeights& c) -> const Tensor& {
    const int64_t kt = cl ? c.weight.dim(1) : c.weight.dim(2);
    return single && kt == 3 ? weights_->last_tap.at(c.weight.raw_data()) : c.weight;
  };
  // y = conv(x) without its bias (folded into whatever reads y next), into buffer `out`.
  auto conv_into = [&](const Conv3dWeights& c, const Tensor& in, int64_t st, int64_t ss, void* out,
                       const char* stage) -> Expected<Tensor> {
    const Tensor& k = kernel_of(c);
    const cuda::VideoDims d = cuda::video_dims(in, L);
    const int64_t kt = cl ? k.dim(1) : k.dim(2), kh = cl ? k.dim(2) : k.dim(3), kw = cl ? k.dim(3) : k.dim(4);
    Tensor y = view(out, k.dim(0), (d.T - kt) / st + 1, (d.H - kh) / ss + 1, (d.W - kw) / ss + 1);
    OROCHI_RETURN_IF_ERROR(conv_->forward(in, k, Tensor(), st, ss, y, *activation_arena_, L));
    mark(stage, conv_flops(k, y));
    return y;
  };
  const cuda::VideoDims pd = cuda::video_dims(padded_in, L);
  OROCHI_CHECK(pd.T == T + front && pd.H == H + 2 && pd.W == W + 2, "encode_padded_fused: ", padded_in.describe(),
               " is not the padded input of a ", T, " x ", H, " x ", W, " tile");
  OROCHI_ASSIGN_OR_RETURN(Tensor h, conv_into(w.conv_in, padded_in, 1, 1, r[0], "conv_in"));
  Tensor h_bias = w.conv_in.bias;  // h's bias, not yet added (undefined once it is)
  auto settle = [&]() -> Status {  // add h's pending bias in place
    if (!h_bias.defined()) return Status::ok();
    OROCHI_RETURN_IF_ERROR(cuda::bias_residual(h, h_bias, Tensor(), Tensor(), L, h, stream_));
    h_bias = Tensor();
    mark("residual / bias");
    return Status::ok();
  };
  // GroupNorm(x + bias) + SiLU written straight into the padded input of the 3x3x3 conv that follows.
  auto norm_padded = [&](const GroupNormWeights& n, const Tensor& in, const Tensor& in_bias) -> Expected<Tensor> {
    const cuda::VideoDims d = cuda::video_dims(in, L);
    Tensor p = view(r[1], d.C, d.T + front, d.H + 2, d.W + 2);
    OROCHI_RETURN_IF_ERROR(cuda::group_norm_pad(in, in_bias, n.weight, n.bias, groups, eps, true, L, front, 1, p,
                                                *activation_arena_, stream_));
    mark("norm + pad");
    return p;
  };
  for (size_t li = 0; li < w.levels.size(); ++li) {
    const EncoderLevelWeights& level = w.levels[li];
    const char* const conv_stage = kConvStages[std::min<size_t>(li, std::size(kConvStages) - 1)];
    for (const EncoderResnetWeights& res : level.resnets) {
      if (res.shortcut.weight.defined()) OROCHI_RETURN_IF_ERROR(settle());  // the shortcut conv reads h itself
      OROCHI_ASSIGN_OR_RETURN(Tensor p1, norm_padded(res.norm1, h, h_bias));
      OROCHI_ASSIGN_OR_RETURN(Tensor c1, conv_into(res.conv1, p1, 1, 1, r[2], conv_stage));
      OROCHI_ASSIGN_OR_RETURN(Tensor p2, norm_padded(res.norm2, c1, res.conv1.bias));
      OROCHI_ASSIGN_OR_RETURN(Tensor c2, conv_into(res.conv2, p2, 1, 1, r[2], conv_stage));
      if (res.shortcut.weight.defined()) {
        OROCHI_ASSIGN_OR_RETURN(Tensor sc, conv_into(res.shortcut, h, 1, 1, r[3], "shortcut 1x1x1"));
        // shortcut(x) + h, each with its bias: (sc + b_sc) + (c2 + b2)
        OROCHI_RETURN_IF_ERROR(cuda::bias_residual(sc, res.shortcut.bias, c2, res.conv2.bias, L, sc, stream_));
        std::swap(r[0], r[3]);
        h = sc;
      } else {
        OROCHI_RETURN_IF_ERROR(cuda::bias_residual(h, h_bias, c2, res.conv2.bias, L, h, stream_));  // x + h
      }
      h_bias = Tensor();
      mark("residual / bias");
    }
    if (level.has_downsample()) {
      OROCHI_RETURN_IF_ERROR(settle());
      const int64_t extra = level.spatial_stride == 2 ? 1 : 0;
      const cuda::VideoDims d = cuda::video_dims(h, L);
      Tensor p = view(r[1], d.C, d.T + front, d.H + extra, d.W + extra);
      OROCHI_RETURN_IF_ERROR(cuda::encoder_pad_to(h, L, Tensor(), front, 0, extra, 0, extra, p, L, stream_));
      mark("pad copy");
      OROCHI_ASSIGN_OR_RETURN(Tensor dn, conv_into(level.downsample, p, level.temporal_stride, level.spatial_stride,
                                                   r[2], "downsample"));
      std::swap(r[0], r[2]);
      h = dn;
      h_bias = level.downsample.bias;
    }
  }
  OROCHI_ASSIGN_OR_RETURN(Tensor pn, norm_padded(w.norm_out, h, h_bias));
  OROCHI_ASSIGN_OR_RETURN(Tensor out, conv_into(w.conv_out, pn, 1, 1, r[2], "conv_out + quant_conv"));
  OROCHI_RETURN_IF_ERROR(cuda::bias_residual(out, w.conv_out.bias, Tensor(), Tensor(), L, out, stream_));
  OROCHI_ASSIGN_OR_RETURN(Tensor q, conv_into(w.quant_conv, out, 1, 1, r[0], "conv_out + quant_conv"));
  // quant_conv's bias added on the way back to [2·latent, T', h, w].
  const cuda::VideoDims qd = cuda::video_dims(q, L);
  Tensor moments = device_view(r[3], {qd.C, qd.T, qd.H, qd.W}, device_, activation_arena_);
  OROCHI_RETURN_IF_ERROR(
      cuda::encoder_pad_to(q, L, w.quant_conv.bias, 0, 0, 0, 0, 0, moments, VideoLayout::kNcdhw, stream_));
  mark("residual / bias");
  Expected<Tensor> host = cuda::download(moments, stream_);
  mark("download");
  if (profiler_->on) profiler_->collect();
  return host;
}

Expected<Tensor> GpuVideoEncoder::encode_moments(const Tensor& x, const EncodeOptions& options) {
  if (options_.device_tiles) {
    if (!has_weights_) return invalid_argument("GpuVideoEncoder: upload() the weights before encoding");
    return encode_moments_device_tiles(x, options);
  }
  const TileEncoder gpu = [this](const Tensor& tile, const std::string&) { return encode_tile(tile); };
  return encode_moments_with(config_, gpu, x, options);
}

Expected<Tensor> GpuVideoEncoder::encode_clip(const Tensor& clip, const EncodeOptions& options) {
  if (!has_weights_) return invalid_argument("GpuVideoEncoder: upload() the weights before encoding");
  if (!clip.defined() || clip.ndim() != 4 || (clip.dim(1) != 1 && clip.dim(1) != config_.clip_length))
    return invalid_argument("GpuVideoEncoder::encode_clip takes one clip [3, 1 or " +
                            std::to_string(config_.clip_length) + ", H, W], got " +
                            (clip.defined() ? clip.describe() : std::string("nothing")));
  if (options_.device_tiles) return encode_moments_device_tiles(clip, options, /*join=*/false);
  const TileEncoder gpu = [this](const Tensor& tile, const std::string&) { return encode_tile(tile); };
  return encode_clip_with(config_, gpu, clip.contiguous(), options, "");
}

Expected<Tensor> GpuVideoEncoder::encode_condition(const Tensor& pixels_u8, const EncodeOptions& options,
                                                   uint64_t seed) {
  OROCHI_ASSIGN_OR_RETURN(Tensor pixels, normalize_pixels(pixels_u8));
  OROCHI_ASSIGN_OR_RETURN(Tensor moments, encode_moments(pixels, options));
  pixels = Tensor();
  return condition_from_moments(config_, moments, seed);
}

}  // namespace orochi::h3vae::gpu
