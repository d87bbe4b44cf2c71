// One video request to an engine: the workflow's inputs and sizes as a user gives them (t2va now;
// fl2va and ref2va add their references here). Zero sizes take the model's defaults in
// Engine::plan, which fills and checks every field.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "pipeline/prompt_features.h"
#include "pipeline/scheduler_h3.h"

namespace orochi::engine {

struct GenerateRequest {
  int64_t width = 0, height = 0;  // canvas; 0: the model's default (demo 320x192, else 1344x768)
  int64_t frames = 124;           // 17n + 5 at 24 fps
  int64_t steps = 0;              // denoiser evaluations; 0: demo 8, else 20
  uint64_t seed = 0;              // keys every noise tensor: the same video on any device and layout
  double video_shift = pipeline::kH3VideoShift, audio_shift = pipeline::kH3AudioShift;
  // Conditioning: one of a prompt (the model's tokenizer and text encoder), a features file
  // (prompt_embeds [L, text_dim]), or `text_rows` random rows (the demo, benchmarks).
  std::optional<std::string> prompt, text_features_file;
  int64_t text_rows = 0;  // 0: demo 32, else 256
  int64_t text_layer = pipeline::kH3TextLayer;
};

}  // namespace orochi::engine
