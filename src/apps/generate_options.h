// `orochi generate`'s command line: the options, their defaults, and every check that can refuse a
// request before any weight is read.
#pragma once

#include <cstdint>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "apps/args.h"
#include "apps/engine_options_cli.h"
#include "core/status.h"
#include "engine/engine_options.h"
#include "engine/generate_request.h"

namespace orochi::apps {

struct GenerateOptions {
  engine::ModelSource source;  // MODEL_DIR and the model-source options (apps/model_source_options.h)
  EngineCli engine;            // --device, --gpus, --parallel, --comm-timeout, --set (apps/engine_options_cli.h)
  std::optional<std::string> text_features, prompt;
  int64_t text_layer = 0;
  int64_t width = 0, height = 0, frames = 0, crf = 18;
  uint64_t seed = 0;  // every value in [0, 2^64 - 1]
  // --steps, --video-shift, --audio-shift, --preset, --sigmas, --audio-sigmas as given (0 / empty:
  // not given); checked by parsing, resolved by the engine (pipeline::resolve_sampling).
  pipeline::Sampling sampling;
  std::string out;
  int64_t text_rows = 0;
  bool json = false, quiet = false;
  bool canvas_given = false;     // --width or --height on the command line (fl2va's canvas follows its keyframe otherwise)
  std::vector<engine::ReferenceInput> references;  // --image ... --ref-audio, in command-line order
  engine::RefSize ref_size = engine::RefSize::k2048;
};

// The engine's request for these options: with fl2va keyframes and no --width/--height, the canvas
// is left to the engine (0 x 0: the first keyframe's aspect).
engine::GenerateRequest request_of(const GenerateOptions& o);

// The schedule options as asked (parse_sigma_list for the lists), every check of
// pipeline::resolve_sampling applied (usage errors); `generate` and `plan` share them.
Expected<pipeline::Sampling> parse_sampling_options(const Args& args, int64_t default_steps);
// "1,0.99391, ... ,0": numbers separated by commas (spaces around them allowed).
Expected<std::vector<double>> parse_sigma_list(const std::string& flag, const std::string& text);
// The option names parse_sampling_options reads, for a command's valued set.
void add_sampling_options(std::set<std::string>& valued);

// Parses and defaults the options (defaults depend on demo / checkpoint / --random-weights). The
// parser's errors and the values outside their stated limits (apps/request_limits.h) are usage
// errors (exit 2); combinations that cannot run are invalid_argument (exit 1).
Expected<GenerateOptions> parse_generate_options(const std::vector<std::string>& argv);

// What the command refuses before the engine opens a model: the canvas and frames (the pipeline's
// own check), the output pair (io::check_output_target), an MP4-less build. Devices, conditioning,
// the tokenizer and memory are the engine's checks (Engine::open, Engine::plan).
Status check_generate_request(const GenerateOptions& o);

}  // namespace orochi::apps
