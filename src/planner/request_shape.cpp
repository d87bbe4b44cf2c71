#include "planner/request_shape.h"

#include <algorithm>

#include "models/h3_video_vae/temporal.h"
#include "models/h3_video_vae/tiling.h"
#include "pipeline/packed_layout.h"

namespace orochi::planner {

Expected<RequestShape> request_shape(const ModelConfigs& models, const PlanRequest& request) {
  RequestShape s;
  // The layout and schedules as the run makes them: pipeline::plan_t2va, once.
  pipeline::T2vaShape t2va;
  t2va.width = request.width;
  t2va.height = request.height;
  t2va.frames = request.frames;
  t2va.steps = request.steps;
  t2va.video_shift = request.video_shift;
  t2va.audio_shift = request.audio_shift;
  t2va.video_sigmas = request.video_sigmas;
  t2va.audio_sigmas = request.audio_sigmas;
  t2va.text_rows = request.text_rows;
  t2va.text_tags = request.text_tags;
  t2va.keyframes = request.keyframes;
  t2va.references = request.references;
  OROCHI_ASSIGN_OR_RETURN(s.t2va, pipeline::plan_t2va(models.transformer, t2va));
  s.geometry = s.t2va.geometry;
  s.workflow = !request.references.empty() ? "ref2va" : !request.keyframes.empty() ? "fl2va" : "t2va";
  s.row_counts = pipeline::row_counts(s.t2va);
  const pipeline::PackedLayout& layout = s.t2va.layout;
  s.rows = layout.rows;
  s.text_rows = request.text_rows;
  s.video_rows = layout.video_indices.numel();
  s.audio_rows = layout.audio_indices.numel();
  s.timesteps = s.t2va.table_timesteps;
  s.steps = s.t2va.steps;

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
