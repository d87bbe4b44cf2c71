#include "planner/request_shape.h"

#include <algorithm>

#include "models/h3_video_vae/temporal.h"
#include "models/h3_video_vae/tiling.h"
#include "pipeline/denoise_loop.h"
#include "pipeline/packed_layout.h"
#include "pipeline/scheduler_h3.h"

namespace orochi::planner {

Expected<RequestShape> request_shape(const ModelConfigs& models, const PlanRequest& request) {
  RequestShape s;
  OROCHI_ASSIGN_OR_RETURN(s.geometry, pipeline::video_geometry(request.width, request.height, request.frames));
  if (request.steps < 1 || request.steps > 1000)
    return invalid_argument("--steps must be in [1, 1000], got " + std::to_string(request.steps));
  if (request.text_rows < 1 || request.text_rows > 65536)
    return invalid_argument("--text-rows must be in [1, 65536], got " + std::to_string(request.text_rows));
  const h3::H3Config& c = models.transformer;
  // The t2va layout and schedules exactly as pipeline::plan_t2va builds them.
  pipeline::LayoutRequest lr;
  lr.text_rows = request.text_rows;
  lr.latent_frames = s.geometry.latent_frames;
  lr.latent_height = s.geometry.latent_height;
  lr.latent_width = s.geometry.latent_width;
  lr.audio_latents = s.geometry.audio_latents;
  lr.patch_h = c.patch_size[1];
  lr.patch_w = c.patch_size[2];
  OROCHI_ASSIGN_OR_RETURN(const pipeline::PackedLayout layout, pipeline::build_packed_layout(lr));
  OROCHI_ASSIGN_OR_RETURN(const pipeline::H3Schedule video,
                          pipeline::make_h3_schedule(request.steps + 1, pipeline::kH3VideoShift));
  OROCHI_ASSIGN_OR_RETURN(const pipeline::H3Schedule audio,
                          pipeline::make_h3_schedule(request.steps + 1, pipeline::kH3AudioShift));
  const pipeline::TimestepPlan tables = pipeline::plan_timesteps(layout, video, audio);
  s.rows = layout.rows;
  s.text_rows = request.text_rows;
  s.video_rows = layout.video_indices.numel();
  s.audio_rows = layout.audio_indices.numel();
  s.timesteps = tables.timesteps.numel();
  s.steps = tables.steps();

  // The decoder's temporal chunks and spatial tiles (tiling is on in the release).
  const h3vae::VideoVaeConfig& v = models.video_vae;
  const h3vae::DecodeOptions options;
  const h3vae::TilePlan tiles = h3vae::plan_tiles(v, s.geometry.latent_height, s.geometry.latent_width, options);
  int64_t tile_h = 0, tile_w = 0;
  for (int64_t l : tiles.rows.lengths) tile_h = std::max(tile_h, l / v.spatial_ratio);
  for (int64_t l : tiles.cols.lengths) tile_w = std::max(tile_w, l / v.spatial_ratio);
  s.vae_tiles_per_chunk = tiles.count();
  OROCHI_ASSIGN_OR_RETURN(s.vae_chunks, h3vae::count_chunks(v, s.geometry.latent_frames));
  // As h3vae::gpu::max_tile_tokens sizes the GPU decoder's activation arena.
  s.vae_tile_tokens = v.window_latents() * tile_h * tile_w;
  return s;
}

}  // namespace orochi::planner
