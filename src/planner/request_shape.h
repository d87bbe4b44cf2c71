// The sizes a request gives each phase, computed as the pipeline computes them (no tensor of the
// model is made): packed rows, AdaLN table timesteps, VAE tiles.
#pragma once

#include <cstdint>
#include <string>

#include "core/status.h"
#include "pipeline/t2va.h"
#include "pipeline/video_geometry.h"
#include "planner/plan_request.h"

namespace orochi::planner {

struct RequestShape {
  std::string workflow = "t2va";  // "fl2va" with keyframes, "ref2va" with references
  pipeline::T2vaPlan t2va;  // the run's own plan of the layout and schedules (pipeline::plan_t2va)
  pipeline::RowCounts row_counts;  // the packed rows by what they hold (pipeline::row_counts)
  pipeline::VideoGeometry geometry;
  int64_t rows = 0;        // S, the packed sequence
  int64_t text_rows = 0;   // L
  int64_t video_rows = 0, audio_rows = 0;
  int64_t timesteps = 0;   // distinct t of the whole schedule: the AdaLN tables built per request
  int64_t steps = 0;       // denoiser evaluations
  int64_t vae_chunks = 0, vae_tiles_per_chunk = 0;
  int64_t vae_tile_tokens = 0;  // latent voxels of the largest tile (7·16·16 = 1792 released)
};

// Errors: pipeline::plan_t2va's (the canvas or frame count with pipeline::video_geometry's advice,
// steps outside [1, 1000], text rows outside [1, pipeline::kMaxTextRows]).
Expected<RequestShape> request_shape(const ModelConfigs& models, const PlanRequest& request);

}  // namespace orochi::planner
