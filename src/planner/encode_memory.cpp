#include "planner/encode_memory.h"

#include <algorithm>

#include "models/h3_audio_vae/encoder_memory.h"

namespace orochi::planner {

Expected<EncodeWork> encode_work(const ModelConfigs& models, const PlanRequest& request,
                                 const pipeline::VideoGeometry& target) {
  const h3vae::VideoVaeConfig& v = models.video_vae;
  const int64_t r = v.spatial_ratio, clip = v.clip_length;
  const h3vae::EncodeOptions options;  // the pipeline's: tiled, 256 px tiles, 64 px overlaps
  EncodeWork work;
  auto visual = [&](std::string what, int64_t latent_frames, int64_t lh, int64_t lw) -> Status {
    VisualEncode e;
    e.what = std::move(what);
    e.latent_frames = latent_frames;
    e.latent_height = lh;
    e.latent_width = lw;
    e.height = lh * r;
    e.width = lw * r;
    if (latent_frames > 1) {
      // 17-frame clips give 5 latents each, less the last 3 of the whole sequence: T_r = 5n + 2.
      if ((latent_frames - 2) % 5 != 0)
        return invalid_argument(e.what + " has " + std::to_string(latent_frames) +
                                " latent frames; a reference video encodes to 5n + 2");
      e.clips = (latent_frames + 3) / 5;
      e.frames = clip * (e.clips - 1) + 5;
    }
    if (e.height < 1 || e.width < 1) return invalid_argument(e.what + " has an empty latent grid");
    OROCHI_RETURN_IF_ERROR(options.validate(v));
    e.tiles = options.plan(v, e.height, e.width).count();
    work.visuals.push_back(std::move(e));
    return Status::ok();
  };
  const int64_t hop = models.audio_vae.encoder_hop_length();
  for (size_t i = 0; i < request.keyframes.size(); ++i) {
    const char* which = request.keyframes[i] == pipeline::KeyframeAnchor::kFirst ? "first" : "last";
    OROCHI_RETURN_IF_ERROR(visual(std::string(which) + " keyframe", 1, target.latent_height, target.latent_width));
  }
  int64_t images = 0, videos = 0, clips = 0;
  for (const pipeline::ReferenceGeometry& g : request.references) {
    switch (g.kind) {
      case pipeline::ReferenceKind::kImage:
        OROCHI_RETURN_IF_ERROR(visual("image " + std::to_string(++images), 1, g.latent_height, g.latent_width));
        break;
      case pipeline::ReferenceKind::kVideo:
        OROCHI_RETURN_IF_ERROR(
            visual("video " + std::to_string(++videos), g.latent_frames, g.latent_height, g.latent_width));
        if (g.audio_latents > 0)
          work.audio.push_back({"video " + std::to_string(videos) + " soundtrack", g.audio_latents, g.audio_latents * hop});
        break;
      case pipeline::ReferenceKind::kAudio:
        if (g.audio_latents < 1) return invalid_argument("audio " + std::to_string(clips + 1) + " has no latents");
        work.audio.push_back({"audio " + std::to_string(++clips), g.audio_latents, g.audio_latents * hop});
        break;
    }
  }
  return work;
}

Expected<h3vae::EncoderTileShape> video_encoder_tile(const ModelConfigs& models, const VisualEncode& e) {
  return h3vae::max_tile_shape(models.video_vae, h3vae::EncodeOptions{}, e.frames, e.height, e.width);
}

Expected<int> largest_visual_encode(const ModelConfigs& models, const EncodeWork& work) {
  int largest = -1;
  size_t most = 0;
  for (size_t i = 0; i < work.visuals.size(); ++i) {
    OROCHI_ASSIGN_OR_RETURN(const h3vae::EncoderTileShape tile, video_encoder_tile(models, work.visuals[i]));
    const size_t bytes = h3vae::encoder_activation_arena_bytes(models.video_vae, tile, kEncoderDeviceTiles);
    if (largest < 0 || bytes > most) largest = static_cast<int>(i), most = bytes;
  }
  return largest;
}

int64_t audio_encoder_samples(const EncodeWork& work) {
  int64_t most = 0;
  for (const AudioEncode& a : work.audio) most = std::max(most, a.samples);
  return most;
}

std::vector<WeightGroup> encode_weight_groups(const ModelConfigs& models, const EncodeWork& work) {
  std::vector<WeightGroup> groups;
  if (!work.visuals.empty())
    groups.push_back({"video VAE encoder", h3vae::encoder_weight_arena_bytes(models.video_vae), false});
  if (!work.audio.empty())
    groups.push_back({"audio VAE encoder", h3_audio::audio_encoder_weight_bytes(models.audio_vae), false});
  return groups;
}

Expected<std::vector<BufferBytes>> encode_buffers(const ModelConfigs& models, const EncodeWork& work) {
  std::vector<BufferBytes> b;
  if (!work.visuals.empty()) {
    OROCHI_ASSIGN_OR_RETURN(const int largest, largest_visual_encode(models, work));
    const VisualEncode& e = work.visuals[static_cast<size_t>(largest)];
    OROCHI_ASSIGN_OR_RETURN(const h3vae::EncoderTileShape tile, video_encoder_tile(models, e));
    std::string what = "video VAE encoder for " + e.what + ": " + std::to_string(tile.frames) + "x" +
                       std::to_string(tile.height) + "x" + std::to_string(tile.width) + " tile";
    if (kEncoderDeviceTiles)
      what += ", clip " + std::to_string(tile.frames) + "x" + std::to_string(tile.clip_height) + "x" +
              std::to_string(tile.clip_width) + " on the GPU";
    b.push_back({PoolKind::kActivations, what + " (cuDNN workspace included)",
                 h3vae::encoder_activation_arena_bytes(models.video_vae, tile, kEncoderDeviceTiles)});
  }
  if (!work.audio.empty()) {
    const int64_t samples = audio_encoder_samples(work);
    b.push_back({PoolKind::kActivations, "audio VAE encoder: 2 x " + std::to_string(samples) + " samples",
                 h3_audio::audio_encoder_activation_bytes(models.audio_vae, samples, 2)});
  }
  return b;
}

uint64_t reference_media_bytes(const ModelConfigs& models, const EncodeWork& work) {
  uint64_t bytes = 0;
  for (const VisualEncode& e : work.visuals)
    bytes += static_cast<uint64_t>(models.video_vae.in_channels * e.frames * e.height * e.width);  // u8
  for (const AudioEncode& a : work.audio) bytes += static_cast<uint64_t>(2 * a.samples) * 4;   // f32 stereo
  return bytes;
}

uint64_t reference_latent_bytes(const ModelConfigs& models, const EncodeWork& work) {
  uint64_t bytes = 0;
  for (const VisualEncode& e : work.visuals)
    bytes += static_cast<uint64_t>(models.video_vae.latent_channels * e.latent_frames * e.latent_height *
                                   e.latent_width) * 4;
  for (const AudioEncode& a : work.audio)
    bytes += static_cast<uint64_t>(2 * a.latents * models.audio_vae.latent_channels) * 4;
  return bytes;
}

}  // namespace orochi::planner
