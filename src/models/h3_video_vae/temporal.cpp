#include "models/h3_video_vae/temporal.h"

#include <cstring>
#include <string>

namespace orochi::h3vae {
namespace {

// Copies frames of `src` [ch, f, H, W] into `dst` [ch, F, H, W] starting at frame `at`.
void copy_frames(const Tensor& src_in, Tensor& dst, int64_t at) {
  const Tensor src = src_in.contiguous();
  const int64_t ch = src.dim(0), f = src.dim(1), plane = src.dim(2) * src.dim(3), F = dst.dim(1);
  OROCHI_CHECK(dst.dim(0) == ch && at + f <= F && dst.dim(2) * dst.dim(3) == plane, "copy_frames: ",
               src.describe(), " into ", dst.describe(), " at ", at);
#pragma omp parallel for collapse(2) schedule(static)
  for (int64_t c = 0; c < ch; ++c)
    for (int64_t k = 0; k < f; ++k)  // one frame's plane per task: big videos copy on every core
      std::memcpy(dst.data<float>() + (c * F + at + k) * plane, src.data<float>() + (c * f + k) * plane,
                  plane * sizeof(float));
}

}  // namespace

Expected<int64_t> count_chunks(const VideoVaeConfig& c, int64_t latent_frames) {
  const int64_t chunk = c.tokens_chunk(), drop = c.token_drop;
  const int64_t owned = chunk - drop;  // latents the first chunk needs: 2 in the release
  const int64_t tokens = latent_frames + drop;
  if (latent_frames < 1 || tokens % chunk != 0 || tokens / chunk - (drop > 0 ? 1 : 0) < 1) {
    const int64_t first = drop > 0 ? chunk + owned : chunk;
    return invalid_argument("the video VAE decodes " + std::to_string(chunk) + "n+" + std::to_string(owned % chunk) +
                            " latent frames (" + std::to_string(first) + ", " + std::to_string(first + chunk) +
                            ", " + std::to_string(first + 2 * chunk) + ", ...; that is " +
                            std::to_string(c.clip_length) + "n+" + std::to_string(c.frame_overlap()) +
                            " video frames), got " + std::to_string(latent_frames));
  }
  return tokens / chunk - (drop > 0 ? 1 : 0);
}

int64_t video_frames(const VideoVaeConfig& c, int64_t chunks) {
  return chunks * (c.chunk_frames() - c.frame_pre_padding()) + (c.token_drop > 0 ? c.frame_overlap() : 0);
}

Status validate_latents(const VideoVaeConfig& c, const Tensor& z) {
  if (!z.defined() || z.dtype() != DType::kF32 || z.ndim() != 4 || z.dim(0) != c.latent_channels)
    return shape_mismatch("video latents must be f32 [" + std::to_string(c.latent_channels) +
                          ", frames, height, width] (one video, no batch dim), got " +
                          (z.defined() ? z.describe() : std::string("nothing")));
  if (z.dim(2) < 1 || z.dim(3) < 1) return shape_mismatch("video latents have an empty canvas: " + z.describe());
  return count_chunks(c, z.dim(1)).status();
}

Tensor chunk_window(const VideoVaeConfig& c, const Tensor& latents, int64_t chunk) {
  const int64_t start = chunk * c.tokens_chunk();
  OROCHI_CHECK(chunk >= 0 && start + c.window_latents() <= latents.dim(1), "chunk ", chunk, " outside ",
               latents.describe());
  return latents.slice(1, start, start + c.window_latents());
}

Expected<Tensor> decode_chunk(const DecoderWeights& w, const Tensor& latents, int64_t chunk,
                              const DecodeOptions& options, const DecodeObserver& observer) {
  OROCHI_RETURN_IF_ERROR(validate_latents(w.config, latents));
  OROCHI_RETURN_IF_ERROR(options.validate(w.config));
  OROCHI_ASSIGN_OR_RETURN(const int64_t chunks, count_chunks(w.config, latents.dim(1)));
  if (chunk < 0 || chunk >= chunks)
    return invalid_argument("chunk " + std::to_string(chunk) + " does not exist: " + std::to_string(latents.dim(1)) +
                            " latent frames make " + std::to_string(chunks) + " chunks");
  return decode_clip(w, chunk_window(w.config, latents, chunk), options, observer);
}

ClipParts split_clip(const VideoVaeConfig& c, const Tensor& clip) {
  OROCHI_CHECK(clip.ndim() == 4 && clip.dim(1) == c.window_frames(), "a raw clip has ", c.window_frames(),
               " frames, got ", clip.describe());
  const int64_t pre = c.frame_pre_padding(), cf = c.chunk_frames();
  return {clip.slice(1, pre, cf), clip.slice(1, std::min(cf + pre, c.window_frames()), c.window_frames())};
}

Tensor output_block(const VideoVaeConfig& c, const Tensor& clip, const Tensor* previous_clip,
                    BlendPrecision precision) {
  const Tensor head = split_clip(c, clip).head.contiguous();
  if (!previous_clip || c.token_drop == 0) return head;
  const Tensor tail = split_clip(c, *previous_clip).tail.contiguous();
  return linear_blend(tail, head, c.frame_overlap(), 1, precision);
}

Expected<Tensor> assemble_chunks(const VideoVaeConfig& c, const std::vector<Tensor>& clips, BlendPrecision precision) {
  if (clips.empty()) return invalid_argument("assemble_chunks: no clips");
  const Tensor& first = clips[0];
  for (const Tensor& clip : clips)
    if (!clip.defined() || clip.dtype() != DType::kF32 || clip.ndim() != 4 || clip.dim(1) != c.window_frames() ||
        clip.shape() != first.shape())
      return shape_mismatch("assemble_chunks: every clip must be f32 [ch, " + std::to_string(c.window_frames()) +
                            ", H, W] of one shape, got " + (clip.defined() ? clip.describe() : "nothing") +
                            " next to " + first.describe());
  const int64_t n = static_cast<int64_t>(clips.size()), block = c.chunk_frames() - c.frame_pre_padding();
  // Every frame is written below: n blocks and the last tail.
  Tensor video = Tensor::uninitialized({first.dim(0), video_frames(c, n), first.dim(2), first.dim(3)}, DType::kF32);
  for (int64_t i = 0; i < n; ++i)
    copy_frames(output_block(c, clips[i], i > 0 ? &clips[i - 1] : nullptr, precision), video, i * block);
  if (c.token_drop > 0) {
    const Tensor tail = split_clip(c, clips.back()).tail;
    OROCHI_CHECK(n * block + tail.dim(1) == video.dim(1), "assemble_chunks: the blocks and the tail must fill ",
                 video.describe());
    copy_frames(tail, video, n * block);
  }
  return video;
}

Expected<Tensor> decode(const DecoderWeights& w, const Tensor& latents, const DecodeOptions& options,
                        const DecodeObserver& observer) {
  OROCHI_RETURN_IF_ERROR(validate_latents(w.config, latents));
  OROCHI_RETURN_IF_ERROR(options.validate(w.config));
  OROCHI_ASSIGN_OR_RETURN(const int64_t chunks, count_chunks(w.config, latents.dim(1)));
  std::vector<Tensor> clips;
  for (int64_t i = 0; i < chunks; ++i) {
    DecodeObserver chunk_observer;
    if (observer) {
      const std::string prefix = "chunk." + std::to_string(i) + ".";
      chunk_observer = [&observer, prefix](const std::string& name, const Tensor& t) { observer(prefix + name, t); };
    }
    OROCHI_ASSIGN_OR_RETURN(Tensor clip, decode_chunk(w, latents, i, options, chunk_observer));
    clips.push_back(std::move(clip));
  }
  return assemble_chunks(w.config, clips, options.blend_precision);
}

}  // namespace orochi::h3vae
