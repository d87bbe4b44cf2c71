// GpuVideoDecoder's clip, chunk and video decodes: the CPU decoder's tile plan, stitching and chunk
// assembly (tiling.h, temporal.h) around GPU tiles, so the result equals the CPU decode's
// arithmetic everywhere outside the tile ViT.
#include <algorithm>
#include <mutex>
#include <string>
#include <vector>

#include "backends/cuda/cuda_check.h"
#include "backends/cuda/kernels/vae_stitch.h"
#include "models/h3_video_vae/cuda/gpu_decoder.h"

namespace orochi::h3vae::gpu {
namespace {

Status require_host_latents(const Tensor& latents) {
  if (latents.defined() && latents.device().kind != DeviceKind::kCPU)
    return invalid_argument("GpuVideoDecoder decodes host latents (f32 [C, T, H, W]); got a device tensor " +
                            latents.describe() + ": download it first");
  return Status::ok();
}

// The device buffers a decode of `latents` needs, in f32 values: every raw tile of one chunk
// (each keeps its slot until the chunk is stitched), and one clip [ch, window_frames, H, W].
struct ClipSizes {
  int64_t tile_values = 0, ch = 0, frames = 0, H = 0, W = 0;
  int64_t clip_values() const { return ch * frames * H * W; }
};
ClipSizes clip_sizes(const VideoVaeConfig& c, const Tensor& latents, const DecodeOptions& options) {
  const TilePlan plan = plan_tiles(c, latents.dim(2), latents.dim(3), options);
  ClipSizes z;
  z.ch = c.out_channels, z.frames = c.window_frames();
  z.H = latents.dim(2) * c.spatial_ratio, z.W = latents.dim(3) * c.spatial_ratio;
  for (int64_t len_r : plan.rows.lengths)
    for (int64_t len_c : plan.cols.lengths) z.tile_values += z.ch * z.frames * len_r * len_c;
  return z;
}

}  // namespace

Expected<int64_t> max_tile_tokens(const VideoVaeConfig& config, const DecodeOptions& options, int64_t latent_h,
                                  int64_t latent_w) {
  OROCHI_RETURN_IF_ERROR(options.validate(config));
  if (latent_h < 1 || latent_w < 1)
    return invalid_argument("max_tile_tokens: empty latent canvas " + std::to_string(latent_h) + "x" +
                            std::to_string(latent_w));
  const TilePlan plan = plan_tiles(config, latent_h, latent_w, options);
  int64_t rows = 0, cols = 0;
  for (int64_t len : plan.rows.lengths) rows = std::max(rows, len / config.spatial_ratio);
  for (int64_t len : plan.cols.lengths) cols = std::max(cols, len / config.spatial_ratio);
  return config.window_latents() * rows * cols;
}

Expected<Tensor> GpuVideoDecoder::decode_clip(const Tensor& window, const DecodeOptions& options) {
  OROCHI_RETURN_IF_ERROR(check_ready("decode_clip"));
  OROCHI_RETURN_IF_ERROR(require_host_latents(window));
  OROCHI_RETURN_IF_ERROR(options.validate(config_));
  if (!window.defined() || window.dtype() != DType::kF32 || window.ndim() != 4 ||
      window.dim(0) != config_.latent_channels || window.dim(2) < 1 || window.dim(3) < 1)
    return shape_mismatch("GpuVideoDecoder::decode_clip wants f32 [" + std::to_string(config_.latent_channels) +
                          ", T, h, w] latents, got " + (window.defined() ? window.describe() : std::string("nothing")));
  const TilePlan plan = plan_tiles(config_, window.dim(2), window.dim(3), options);
  std::vector<std::vector<Tensor>> tiles(plan.rows.count());
  for (int64_t r = 0; r < plan.rows.count(); ++r)
    for (int64_t c = 0; c < plan.cols.count(); ++c) {
      OROCHI_ASSIGN_OR_RETURN(Tensor tile, decode_tile(tile_latents(config_, window, plan, r, c)));
      tiles[r].push_back(std::move(tile));
    }
  if (plan.count() == 1) return tiles[0][0];
  return stitch_tiles(tiles, plan, options.blend_precision);
}

Expected<Tensor> GpuVideoDecoder::decode_chunk(const Tensor& latents, int64_t chunk, const DecodeOptions& options) {
  OROCHI_RETURN_IF_ERROR(check_ready("decode_chunk"));
  OROCHI_RETURN_IF_ERROR(require_host_latents(latents));
  OROCHI_RETURN_IF_ERROR(validate_latents(config_, latents));
  OROCHI_RETURN_IF_ERROR(options.validate(config_));
  OROCHI_ASSIGN_OR_RETURN(const int64_t chunks, count_chunks(config_, latents.dim(1)));
  if (chunk < 0 || chunk >= chunks)
    return invalid_argument("chunk " + std::to_string(chunk) + " does not exist: " + std::to_string(latents.dim(1)) +
                            " latent frames make " + std::to_string(chunks) + " chunks");
  return decode_clip(chunk_window(config_, latents, chunk), options);
}

Expected<Tensor> GpuVideoDecoder::decode(const Tensor& latents, const DecodeOptions& options,
                                         const ChunkProgress& progress, const std::vector<GpuVideoDecoder*>& helpers,
                                         dist::ParallelContext* workers) {
  OROCHI_RETURN_IF_ERROR(check_ready("decode"));
  OROCHI_ASSIGN_OR_RETURN(const int64_t chunks, check_decodable(latents, options));
  for (GpuVideoDecoder* h : helpers)
    if (h == nullptr || h == this || !h->has_weights() || h->max_tokens() < max_tokens_)
      return invalid_argument("a helper decoder must be another loaded GpuVideoDecoder planned for these tiles");
  if (!helpers.empty() && (workers == nullptr || workers->workers() < 1 + static_cast<int>(helpers.size())))
    return invalid_argument("a decode with " + std::to_string(helpers.size()) +
                            " helpers needs a parallel context of one worker per GPU (" +
                            std::to_string(1 + helpers.size()) + ")");
  OROCHI_CUDA_RETURN_IF_ERROR(cudaSetDevice(device_));
  // One arena for this decode: every tile of a chunk, the current and previous clip, the video.
  const VideoVaeConfig& c = config_;
  const ClipSizes z = clip_sizes(c, latents, options);
  const int64_t ch = z.ch, wf = z.frames, H = z.H, W = z.W, F = video_frames(c, chunks);
  const size_t align = cuda::DeviceArena::kAlignment;
  const size_t bytes = 4 * static_cast<size_t>(z.tile_values + 2 * z.clip_values() + ch * F * H * W) + 8 * align;
  OROCHI_ASSIGN_OR_RETURN(auto arena, cuda::DeviceArena::create(device_, bytes, "video VAE decode"));
  OROCHI_ASSIGN_OR_RETURN(const Tensor tiles, arena->tensor({z.tile_values}, DType::kF32));
  OROCHI_ASSIGN_OR_RETURN(const Tensor clip_a, arena->tensor({ch, wf, H, W}, DType::kF32));
  OROCHI_ASSIGN_OR_RETURN(const Tensor clip_b, arena->tensor({ch, wf, H, W}, DType::kF32));
  OROCHI_ASSIGN_OR_RETURN(const Tensor video, arena->tensor({ch, F, H, W}, DType::kF32));

  // The helpers decode the later chunks at the same time, each a contiguous run, into their own
  // memory; this GPU decodes the first run, then copies theirs over in order.
  const int parts = static_cast<int>(std::min<int64_t>(1 + static_cast<int64_t>(helpers.size()), chunks));
  auto run_of = [&](int part) {
    return std::pair<int64_t, int64_t>{chunks * part / parts, chunks * (part + 1) / parts};
  };
  std::mutex progress_mutex;
  int64_t done = 0;
  auto report = [&] {
    std::lock_guard<std::mutex> lock(progress_mutex);
    ++done;
    if (progress) progress(done, chunks);
  };
  std::vector<Expected<DeviceClips>> helped(static_cast<size_t>(parts),
                                            Status(ErrorCode::kInternal, "the helper's decode did not run"));

  const bool f16 = options.blend_precision == BlendPrecision::kF16;
  OROCHI_CHECK(f16 || options.blend_precision == BlendPrecision::kF32, "device blends run in f16 or f32");
  const int64_t pre = c.frame_pre_padding(), block = c.chunk_frames() - pre;
  const int64_t tail_start = std::min(c.chunk_frames() + pre, wf), tail_len = wf - tail_start;
  // Writes `frames` frames of `clip` from frame `from` to output frame `to`; null `tail_clip` copies.
  auto place = [&](const Tensor& clip, int64_t from, int64_t frames, int64_t to, const Tensor* tail_clip) {
    cuda::kernels::CrossFade fade;
    fade.out = static_cast<float*>(const_cast<void*>(video.raw_data()));
    fade.out_frames = F;
    fade.out_f0 = to;
    fade.channels = ch;
    fade.frames = frames;
    fade.plane = H * W;
    fade.head = clip.data<float>() + from * H * W;
    fade.head_stride_frames = wf;
    if (tail_clip) {
      fade.tail = tail_clip->data<float>() + tail_start * H * W;
      fade.tail_stride_frames = wf;
      fade.tail_len = tail_len;
      fade.n = std::min({tail_len, frames, c.frame_overlap()});
    }
    return cuda::kernels::launch_vae_cross_fade(fade, f16, stream_);
  };
  // Chunk i's clip is in `clip`: its output frames, faded in from the previous clip's tail.
  auto consume = [&](int64_t i) -> Status {
    const Tensor& clip = i % 2 ? clip_b : clip_a;
    const Tensor& previous = i % 2 ? clip_a : clip_b;
    const bool fade_in = i > 0 && c.token_drop > 0;
    OROCHI_CUDA_RETURN_IF_ERROR(place(clip, pre, block, i * block, fade_in ? &previous : nullptr));
    if (i + 1 == chunks && c.token_drop > 0)  // the last clip's tail ends the video
      OROCHI_CUDA_RETURN_IF_ERROR(place(clip, tail_start, tail_len, chunks * block, nullptr));
    return Status::ok();
  };
  // One worker per part (the context's fan-out: a failed check comes back as that part's error):
  // part 0 is this GPU's own run, the others are the helpers'. Alone, on the caller's thread.
  auto run_part = [&](int part) -> Status {
    if (part > 0) {
      const auto [first, last] = run_of(part);
      helped[static_cast<size_t>(part)] =
          helpers[static_cast<size_t>(part - 1)]->decode_clips(latents, first, last, options, [&](int64_t) { report(); });
      return Status::ok();  // its result is read below, with the GPU it ran on
    }
    OROCHI_CUDA_RETURN_IF_ERROR(cudaSetDevice(device_));  // a worker thread starts on device 0
    for (int64_t i = run_of(0).first; i < run_of(0).second; ++i) {
      OROCHI_RETURN_IF_ERROR(stitch_chunk_on_device(latents, i, options, tiles, i % 2 ? clip_b : clip_a));
      OROCHI_RETURN_IF_ERROR(consume(i));
      if (progress) OROCHI_CUDA_RETURN_IF_ERROR(cudaStreamSynchronize(stream_));  // so the callback's clock is honest
      report();
    }
    return Status::ok();
  };
  const Status ran = parts == 1 ? dist::call_rank(run_part, 0) : workers->run(parts, run_part);
  OROCHI_CUDA_RETURN_IF_ERROR(cudaSetDevice(device_));
  OROCHI_RETURN_IF_ERROR(ran);
  for (int part = 1; part < parts; ++part) {
    Expected<DeviceClips>& got = helped[static_cast<size_t>(part)];
    if (!got) return got.status().with_context("video decode on GPU " + std::to_string(helpers[part - 1]->device()));
    const auto [first, last] = run_of(part);
    for (int64_t i = first; i < last; ++i) {
      const Tensor& from = got->clips[static_cast<size_t>(i - first)];
      const Tensor& clip = i % 2 ? clip_b : clip_a;
      OROCHI_CUDA_RETURN_IF_ERROR(cudaMemcpyPeerAsync(clip.raw_data(), device_, from.raw_data(), got->device,
                                                      clip.nbytes(), stream_));
      OROCHI_RETURN_IF_ERROR(consume(i));
    }
  }
  return cuda::download(video, stream_);
}

Expected<int64_t> GpuVideoDecoder::check_decodable(const Tensor& latents, const DecodeOptions& options) const {
  OROCHI_RETURN_IF_ERROR(require_host_latents(latents));
  OROCHI_RETURN_IF_ERROR(validate_latents(config_, latents));
  OROCHI_RETURN_IF_ERROR(options.validate(config_));
  OROCHI_ASSIGN_OR_RETURN(const int64_t chunks, count_chunks(config_, latents.dim(1)));
  // Refuse a canvas whose tiles do not fit before decoding anything.
  OROCHI_ASSIGN_OR_RETURN(const int64_t tokens, max_tile_tokens(config_, options, latents.dim(2), latents.dim(3)));
  if (tokens > max_tokens_)
    return invalid_argument("a " + std::to_string(latents.dim(2)) + "x" + std::to_string(latents.dim(3)) +
                            " latent canvas decodes tiles of " + std::to_string(tokens) +
                            " tokens; this GpuVideoDecoder was created for at most " + std::to_string(max_tokens_) +
                            ": create it with max_tile_tokens() of the canvas, or turn tiling on");
  return chunks;
}

Expected<GpuVideoDecoder::DeviceClips> GpuVideoDecoder::decode_clips(const Tensor& latents, int64_t first,
                                                                     int64_t last, const DecodeOptions& options,
                                                                     const std::function<void(int64_t)>& done) {
  OROCHI_RETURN_IF_ERROR(check_ready("decode_clips"));
  OROCHI_ASSIGN_OR_RETURN(const int64_t count, check_decodable(latents, options));
  if (first < 0 || last > count || first >= last)
    return invalid_argument("chunks [" + std::to_string(first) + ", " + std::to_string(last) + ") of a " +
                            std::to_string(count) + "-chunk video");
  OROCHI_CUDA_RETURN_IF_ERROR(cudaSetDevice(device_));
  // One arena for this call: every tile of a chunk and each clip of the run.
  const ClipSizes z = clip_sizes(config_, latents, options);
  const size_t bytes = 4 * static_cast<size_t>(z.tile_values + (last - first) * z.clip_values()) +
                       (2 + static_cast<size_t>(last - first)) * cuda::DeviceArena::kAlignment;
  DeviceClips out;
  out.device = device_;
  OROCHI_ASSIGN_OR_RETURN(out.arena, cuda::DeviceArena::create(device_, bytes, "video VAE clips"));
  OROCHI_ASSIGN_OR_RETURN(const Tensor tiles, out.arena->tensor({z.tile_values}, DType::kF32));
  for (int64_t i = first; i < last; ++i) {
    OROCHI_ASSIGN_OR_RETURN(Tensor clip, out.arena->tensor({z.ch, z.frames, z.H, z.W}, DType::kF32));
    OROCHI_RETURN_IF_ERROR(stitch_chunk_on_device(latents, i, options, tiles, clip));
    OROCHI_CUDA_RETURN_IF_ERROR(cudaStreamSynchronize(stream_));  // the clip is whole before anyone reads it
    out.clips.push_back(std::move(clip));
    if (done) done(i);
  }
  return out;
}

Status GpuVideoDecoder::stitch_chunk_on_device(const Tensor& latents, int64_t chunk, const DecodeOptions& options,
                                               const Tensor& tiles, const Tensor& clip) {
  const VideoVaeConfig& c = config_;
  const Tensor window = chunk_window(c, latents, chunk);
  const TilePlan plan = plan_tiles(c, window.dim(2), window.dim(3), options);
  const int64_t ch = c.out_channels, wf = c.window_frames();
  const int64_t rows = plan.rows.count(), cols = plan.cols.count();
  // Each raw tile keeps its slot until the chunk is stitched: later tiles blend with raw neighbours.
  std::vector<const float*> slot(static_cast<size_t>(rows * cols));
  int64_t offset = 0;
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t col = 0; col < cols; ++col) {
      OROCHI_ASSIGN_OR_RETURN(const Tensor tile, tile_on_device(tile_latents(c, window, plan, r, col)));
      float* dst = static_cast<float*>(const_cast<void*>(tiles.raw_data())) + offset;
      OROCHI_CUDA_RETURN_IF_ERROR(
          cudaMemcpyAsync(dst, tile.raw_data(), tile.nbytes(), cudaMemcpyDeviceToDevice, stream_));
      slot[static_cast<size_t>(r * cols + col)] = dst;
      offset += tile.numel();
    }
  const int64_t H = clip.dim(2), W = clip.dim(3);
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t col = 0; col < cols; ++col) {
      const int64_t th = plan.rows.lengths[r], tw = plan.cols.lengths[col];
      cuda::kernels::StitchTile t;
      t.out = static_cast<float*>(const_cast<void*>(clip.raw_data()));
      t.out_h = H;
      t.out_w = W;
      t.tile = slot[static_cast<size_t>(r * cols + col)];
      t.planes = ch * wf;
      t.tile_h = th;
      t.tile_w = tw;
      t.keep_h = r + 1 < rows ? th - plan.rows.overlaps[r] : th;
      t.keep_w = col + 1 < cols ? tw - plan.cols.overlaps[col] : tw;
      t.y0 = plan.rows.starts[r];
      t.x0 = plan.cols.starts[col];
      if (r > 0) {
        t.up = slot[static_cast<size_t>((r - 1) * cols + col)];
        t.up_h = plan.rows.lengths[r - 1];
        t.n_up = std::min({t.up_h, th, plan.rows.overlaps[r - 1]});
      }
      if (col > 0) {
        t.left = slot[static_cast<size_t>(r * cols + col - 1)];
        t.left_w = plan.cols.lengths[col - 1];
        t.n_left = std::min({t.left_w, tw, plan.cols.overlaps[col - 1]});
      }
      OROCHI_CUDA_RETURN_IF_ERROR(
          cuda::kernels::launch_vae_stitch_tile(t, options.blend_precision == BlendPrecision::kF16, stream_));
    }
  return Status::ok();
}

}  // namespace orochi::h3vae::gpu
