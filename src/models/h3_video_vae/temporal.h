// Temporal chunking of the video VAE decode (clip_length 17, token_drop 3 in the release). For
// T = 5n+2 latents there are n chunks; chunk i decodes latents [5i, 5i+7) into a 28-frame clip.
// Its head (frames [3, 20)) fills output frames [17i, 17i+17), the first 5 cross-faded with the
// previous clip's tail (frames [23, 28)); the last tail ends the video: 17n+5 frames.
//
// The unit of work for a multi-GPU split is decode_chunk: chunks are independent, and
// output_block / assemble_chunks join them bit-exactly however they were distributed.
#pragma once

#include <cstdint>
#include <vector>

#include "core/status.h"
#include "core/tensor.h"
#include "models/h3_video_vae/tiling.h"

namespace orochi::h3vae {

// Chunks for T latent frames. T must be 5n+2 with n >= 1 (7, 12, 17, ...); the error says so.
Expected<int64_t> count_chunks(const VideoVaeConfig& config, int64_t latent_frames);
// Pixel frames n chunks decode to: 17n + 5.
int64_t video_frames(const VideoVaeConfig& config, int64_t chunks);

// Checks latents are f32 [C, T, H, W] with C = latent_channels and a decodable T.
Status validate_latents(const VideoVaeConfig& config, const Tensor& latents);

// Chunk i's latent window of the whole latent video [C, T, H, W]: frames [5i, 5i+7), a view.
Tensor chunk_window(const VideoVaeConfig& config, const Tensor& latents, int64_t chunk);

// Decodes chunk `chunk` of `latents` (denormalized, [C, T, H, W]) into its raw clip
// [out_ch, 28, H·p, W·p], spatially tiled per `options`. `latents` may be the whole latent video or
// any slice z[5a : 5b+2] of it; chunk indices are then relative to the slice (chunk 0 of z[5a:...]
// is chunk a). Observer names as decode_clip's.
Expected<Tensor> decode_chunk(const DecoderWeights& weights, const Tensor& latents, int64_t chunk,
                              const DecodeOptions& options, const DecodeObserver& observer = nullptr);

// The two parts of a raw clip that reach the output (views): head [ch, 17, H, W], tail [ch, 5, H, W]
// (the tail is empty when token_drop is 0).
struct ClipParts {
  Tensor head, tail;
};
ClipParts split_clip(const VideoVaeConfig& config, const Tensor& clip);

// Output frames [17i, 17i+17) of chunk i from its clip: the head, its first frames cross-faded from
// `previous_clip`'s tail (pass nullptr for chunk 0).
Tensor output_block(const VideoVaeConfig& config, const Tensor& clip, const Tensor* previous_clip,
                    BlendPrecision precision);

// The video [ch, 17n+5, H, W] from the n raw clips in chunk order.
Expected<Tensor> assemble_chunks(const VideoVaeConfig& config, const std::vector<Tensor>& clips,
                                 BlendPrecision precision);

// One call, as vae.decode(latents): validate, decode every chunk, assemble. `latents` are
// denormalized (see pixels.h). Observer names are decode_chunk's prefixed "chunk.<i>.".
Expected<Tensor> decode(const DecoderWeights& weights, const Tensor& latents, const DecodeOptions& options = {},
                        const DecodeObserver& observer = nullptr);

}  // namespace orochi::h3vae
