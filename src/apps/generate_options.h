// `orochi generate`'s command line: the options, their defaults, and every check that can refuse a
// request before any weight is read.
#pragma once

#include <cstdint>
#include <cstdlib>
#include <optional>
#include <string>
#include <vector>

#include "core/status.h"

namespace orochi::apps {

extern const char* const kGenerateUsage;

struct GenerateOptions {
  std::optional<std::string> model_dir, text_features, prompt;
  int64_t text_layer = 0;
  int64_t width = 0, height = 0, frames = 0, steps = 0, seed = 0, crf = 18;
  double video_shift = 0, audio_shift = 0;
  std::string out, device;
  int64_t gpus = 1;              // GPUs from --device on that share the denoiser
  std::string parallel = "auto"; // how they share it: auto, tp, sp, tpxsp
  int64_t comm_timeout_s = 60;   // deadline of every collective
  int64_t text_rows = 0;
  bool json = false, quiet = false, random_weights = false;
  bool on_gpu() const { return device.rfind("cuda", 0) == 0; }
  int gpu_index() const { return device.size() > 5 ? std::atoi(device.c_str() + 5) : 0; }
};

// Parses and defaults the options (defaults depend on demo / checkpoint / --random-weights).
Expected<GenerateOptions> parse_generate_options(const std::vector<std::string>& argv);

// Everything that can be refused before loading a weight: sizes, steps, output file, encoder,
// conditioning, the tokenizer and text encoder's config, host RAM for a CPU run.
Status check_generate_request(const GenerateOptions& o);

}  // namespace orochi::apps
