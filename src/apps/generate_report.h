// The stage report of `orochi generate`: where the time and memory went, printed at the end and
// written as JSON next to the video.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "pipeline/t2va.h"

namespace orochi::apps {

struct GenerateReport {
  std::string model, device, output;
  bool demo = false;
  pipeline::T2vaRequest request;
  pipeline::T2vaResult result;  // geometry, sizes and stage times (tensors are not reported)
  double load_s = 0, text_s = 0, encode_s = 0, e2e_s = 0;
  uint64_t host_peak_bytes = 0;
  std::vector<nlohmann::json> gpu_memory;  // one entry per GPU used
};

nlohmann::json report_json(const GenerateReport& report);
// A few lines for the terminal: pre, per step (median and range), post, e2e, peak memory.
std::string report_text(const GenerateReport& report);
// `video.mp4` -> `video.json` (the report's place next to the video).
std::string report_path_for(const std::string& video_path);

}  // namespace orochi::apps
