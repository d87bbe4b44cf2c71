// The reference-encode phase's memory (fl2va keyframes; ref2va images, videos with their soundtracks
// and audio clips): the video VAE encoder (fp32 causal 3-D CNN + quant_conv, tile by tile) and the
// audio VAE encoder (fp32 DAC + pre_block), each sized by the encoder's own functions
// (models/h3_video_vae/encoder_memory.h, models/h3_audio_vae/encoder_memory.h), so what the plan
// adds up is what GpuVideoEncoder::create and GpuAudioEncoder::create reserve.
//
// The run's contract, which these figures assume: on each GPU, a GPU video encoder created with
// kEncoderDeviceTiles for one input's own max_tile_shape at a time (a picture's single frame and a
// video's 17-frame clips differ too much for one covering shape: 17 frames of the largest picture),
// so the peak is its weights and the largest input's arenas (largest_visual_encode); and one GPU
// audio encoder created for audio_encoder_samples(work) samples, batch 2 (a stereo reference is two
// mono items). Each tile's moments come back to the host, where they are stitched and sampled with
// the seed-42 CPU generator (REF2VA.md §1.3): the latents live in host RAM.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/status.h"
#include "models/h3_video_vae/encoder_memory.h"
#include "pipeline/video_geometry.h"
#include "planner/h3_denoiser_memory.h"
#include "planner/plan_request.h"

namespace orochi::planner {

// The GPU video encoder cuts each clip's tiles on the device from one uploaded clip
// (GpuEncoderOptions::device_tiles): the frame size is known from the plan, and it is the faster
// path by measurement (bench/RESULTS.md, issue 28).
inline constexpr bool kEncoderDeviceTiles = true;

// One image, keyframe or video as the video VAE encoder reads it.
struct VisualEncode {
  std::string what;               // "keyframe 1", "image 2", "video 1"
  int64_t frames = 1;             // pixel frames encoded (a video: 17n + 5)
  int64_t height = 0, width = 0;  // pixels
  int64_t latent_frames = 1, latent_height = 0, latent_width = 0;
  int64_t clips = 1, tiles = 1;   // 17-frame clips, spatial tiles per clip
};

// One soundtrack or audio clip as the audio VAE encoder reads it (stereo, 32 kHz).
struct AudioEncode {
  std::string what;  // "audio 1" (a clip), "video 1 soundtrack"
  int64_t latents = 0;  // a per channel
  int64_t samples = 0;  // per channel, padded to the hop: a x hop
};

struct EncodeWork {
  std::vector<VisualEncode> visuals;  // request order
  std::vector<AudioEncode> audio;     // request order
  bool empty() const { return visuals.empty() && audio.empty(); }
};

// What the request's keyframes (each one frame on the target canvas) and references (their latent
// geometry, pipeline::ReferenceGeometry) give the encoders. A video of T_r latents was 17n + 5
// pixel frames with T_r = 5n + 2.
Expected<EncodeWork> encode_work(const ModelConfigs& models, const PlanRequest& request,
                                 const pipeline::VideoGeometry& target);

// The tile shape a GPU video encoder is created for to encode `e` (max_tile_shape with the pipeline's
// EncodeOptions), and the visual input whose encoder's activation arena is the largest (its index in
// work.visuals; -1 without any).
Expected<h3vae::EncoderTileShape> video_encoder_tile(const ModelConfigs& models, const VisualEncode& e);
Expected<int> largest_visual_encode(const ModelConfigs& models, const EncodeWork& work);
// The most samples per channel the audio encoder reads (0 without audio).
int64_t audio_encoder_samples(const EncodeWork& work);

// "video VAE encoder" and, with audio, "audio VAE encoder": fp32, resident (they run tile by tile).
std::vector<WeightGroup> encode_weight_groups(const ModelConfigs& models, const EncodeWork& work);
// The two encoders' activation arenas (the video encoder's for the largest input).
Expected<std::vector<BufferBytes>> encode_buffers(const ModelConfigs& models, const EncodeWork& work);

// Host RAM the references take: the normalized media the encoders read (u8 pixels, f32 stereo
// waveforms at 32 kHz) and the f32 latents they give.
uint64_t reference_media_bytes(const ModelConfigs& models, const EncodeWork& work);
uint64_t reference_latent_bytes(const ModelConfigs& models, const EncodeWork& work);

}  // namespace orochi::planner
