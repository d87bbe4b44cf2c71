// The stage report of a run: where the time and memory went, what the plan chose and which switches
// were set. The engine fills it; `orochi generate` adds the MP4 encode, prints it and writes it as
// JSON next to the video.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "pipeline/t2va.h"

namespace orochi::engine {

struct RunReport {
  std::string model, device, output;
  std::string workflow = "t2va";
  bool demo = false;
  int64_t request_index = 1;    // 1 for an engine's first request, 2 for the next, ...
  int64_t steps = 0;
  uint64_t seed = 0;
  double video_shift = 0, audio_shift = 0;
  std::string preset;                            // the sampling preset, empty: none
  std::vector<float> video_sigmas, audio_sigmas;  // the schedules run (fp32, 1 first, 0 last)
  pipeline::T2vaResult result;  // geometry, sizes and stage times (tensors are not reported)
  // load: weights read or uploaded for this request (an engine that keeps its model loaded shows
  // ~0 from the second request on). request_memory: a kept model's request buffers reserved
  // anew (its denoiser gives them back for the decode), counted under pre.
  double load_s = 0, request_memory_s = 0, text_s = 0, encode_s = 0, e2e_s = 0;
  // fl2va / ref2va: reading the keyframes or references from their files and normalizing them (in
  // Engine::plan), counted under pre; their VAE encode is result.times.condition_encode_s.
  double media_decode_s = 0;
  // With a prompt: the conditioner's inputs made from the pictures (tokens, vision patches; in
  // Engine::plan), counted under pre as "vision inputs"; text_s is the vision tower + text encoder.
  double presentation_s = 0;
  // The reference encode and the conditioner run at once (RunPlan::pre_overlap): the pair's wall
  // time, the encoders' weights included (0: one after the other). pre counts the pair less
  // encoders_load_s (reported under load) instead of VAE encode + text features.
  double pre_pair_s = 0, encoders_load_s = 0;
  uint64_t host_peak_bytes = 0;
  std::vector<nlohmann::json> gpu_memory;  // one entry per GPU used
  nlohmann::json plan;                     // the run plan's summary (RunPlan::summary_json)
  std::string precision = "bf16";          // the denoiser's linears (--precision)
  nlohmann::json switches;                 // every run switch and its value
  std::vector<nlohmann::json> loras;       // merged LoRAs: file, strength, format, parameters, merge_s
};

nlohmann::json report_json(const RunReport& report);
// A few lines for the terminal: pre, per step (median and range), post, e2e, peak memory.
std::string report_text(const RunReport& report);

}  // namespace orochi::engine
