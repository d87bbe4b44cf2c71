#include "apps/generate_options.h"

#include <cmath>
#include <cstdlib>
#include "planner/parallel_choice.h"

#include "apps/args.h"
#include "apps/reference_options.h"
#include "apps/request_limits.h"
#include "io/mp4.h"
#include "io/output_file.h"
#include "models/h3/weights.h"
#include "pipeline/prompt_features.h"
#include "pipeline/sampling.h"
#include "pipeline/video_geometry.h"

namespace orochi::apps {

// FILE or FILE:STRENGTH; a suffix after the last ':' that is not a number belongs to the path.
Expected<engine::LoraSource> parse_lora_option(const std::string& value) {
  engine::LoraSource l{value, 1.0f};
  const size_t colon = value.rfind(':');
  if (colon != std::string::npos && colon + 1 < value.size()) {
    const std::string tail = value.substr(colon + 1);
    char* end = nullptr;
    const float s = std::strtof(tail.c_str(), &end);
    if (end == tail.c_str() + tail.size()) {
      if (!std::isfinite(s) || s < -16.0f || s > 16.0f)
        return usage_error("--lora " + value + ": strength must be a finite number in [-16, 16], got " + tail);
      l.path = value.substr(0, colon);
      l.strength = s;
    }
  }
  if (l.path.empty()) return usage_error("--lora takes FILE[:STRENGTH], got '" + value + "'");
  return l;
}

Expected<std::vector<double>> parse_sigma_list(const std::string& flag, const std::string& text) {
  std::vector<double> values;
  size_t begin = 0;
  while (true) {
    const size_t comma = text.find(',', begin);
    std::string item = text.substr(begin, comma == std::string::npos ? std::string::npos : comma - begin);
    const size_t first = item.find_first_not_of(' '), last = item.find_last_not_of(' ');
    item = first == std::string::npos ? "" : item.substr(first, last - first + 1);
    // Parsed to a double, as Python reads the number; the scheduler rounds it to fp32 as torch does.
    OROCHI_ASSIGN_OR_RETURN(const double v, parse_double(flag + " value " + std::to_string(values.size() + 1), item));
    values.push_back(v);
    if (comma == std::string::npos) break;
    begin = comma + 1;
  }
  return values;
}

void add_sampling_options(std::set<std::string>& valued) {
  valued.insert({"steps", "video-shift", "audio-shift", "preset", "sigmas", "audio-sigmas"});
}

Expected<pipeline::Sampling> parse_sampling_options(const Args& args, int64_t default_steps) {
  pipeline::Sampling asked;
  asked.preset = args.get("preset", "");
  if (args.has("preset") && asked.preset.empty()) return usage_error("--preset takes a name (turbo8, turbo4)");
  OROCHI_ASSIGN_OR_RETURN(asked.steps, args.get_int("steps", 0, limits::kStepsMin, limits::kStepsMax));
  OROCHI_ASSIGN_OR_RETURN(asked.video_shift, args.get_double("video-shift", 0));
  OROCHI_ASSIGN_OR_RETURN(asked.audio_shift, args.get_double("audio-shift", 0));
  if (args.has("video-shift") && !(asked.video_shift > 0))
    return usage_error("--video-shift must be > 0, got " + args.get("video-shift", ""));
  if (args.has("audio-shift") && !(asked.audio_shift > 0))
    return usage_error("--audio-shift must be > 0, got " + args.get("audio-shift", ""));
  if (args.has("sigmas")) {
    OROCHI_ASSIGN_OR_RETURN(asked.video_sigmas, parse_sigma_list("--sigmas", args.get("sigmas", "")));
  }
  if (args.has("audio-sigmas")) {
    OROCHI_ASSIGN_OR_RETURN(asked.audio_sigmas, parse_sigma_list("--audio-sigmas", args.get("audio-sigmas", "")));
  }
  // Every check now, before any weight is read; the engine resolves the request again the same way.
  if (Status s = pipeline::resolve_sampling(asked, default_steps).status(); !s.is_ok()) return usage_error(s.message());
  return asked;
}

Expected<GenerateOptions> parse_generate_options(const std::vector<std::string>& argv) {
  std::set<std::string> valued = {"text-features", "width", "height", "frames", "seed",
                                  "out", "crf", "prompt", "device",
                                  "text-rows", "text-layer", "gpus", "parallel", "comm-timeout", "set",
                                  "transformer", "transformer-config", "qkv-order"};
  std::set<std::string> repeatable = {"lora"};
  valued.insert("lora");
  add_sampling_options(valued);
  add_reference_options(valued, repeatable);
  OROCHI_ASSIGN_OR_RETURN(Args args, Args::parse(argv, valued, {"json", "quiet", "random-weights"}, repeatable));
  if (args.positionals().size() > 1)
    return usage_error("generate takes at most one MODEL_DIR, got " + std::to_string(args.positionals().size()) +
                            " positional arguments");
  GenerateOptions o;
  if (!args.positionals().empty()) o.model_dir = args.positionals()[0];
  if (args.has("text-features")) o.text_features = args.get("text-features", "");
  if (args.has("prompt")) o.prompt = args.get("prompt", "");
  OROCHI_ASSIGN_OR_RETURN(o.text_layer, args.get_int("text-layer", pipeline::kH3TextLayer, 1, 1 << 20));
  o.random_weights = args.has("random-weights");
  const bool demo = !o.model_dir && !o.random_weights;
  // Where it runs, how GPUs share it and the switches are the engine's to check (Engine::open).
  o.device = args.get("device", "");  // empty: the engine decides (the CPU for the demo)
  OROCHI_ASSIGN_OR_RETURN(o.gpus, args.get_int("gpus", 1, limits::kGpusMin, limits::kGpusMax));
  OROCHI_ASSIGN_OR_RETURN(o.comm_timeout_s, args.get_int("comm-timeout", 60, 1, 7 * 24 * 3600));
  o.parallel = args.get("parallel", planner::kDefaultParallel);
  o.set = args.get("set", "");
  OROCHI_ASSIGN_OR_RETURN(o.text_rows,
                          args.get_int("text-rows", demo ? 32 : 256, limits::kTextRowsMin, limits::kTextRowsMax));
  OROCHI_ASSIGN_OR_RETURN(o.width,
                          args.get_int("width", demo ? 320 : 1344, limits::kCanvasMinSide, limits::kCanvasMaxSide));
  OROCHI_ASSIGN_OR_RETURN(o.height,
                          args.get_int("height", demo ? 192 : 768, limits::kCanvasMinSide, limits::kCanvasMaxSide));
  OROCHI_ASSIGN_OR_RETURN(o.frames, args.get_int("frames", 124, limits::kFramesMin, limits::kFramesMax));
  OROCHI_ASSIGN_OR_RETURN(o.sampling, parse_sampling_options(args, demo ? 8 : 20));
  OROCHI_ASSIGN_OR_RETURN(o.seed, args.get_uint64("seed", 0));
  OROCHI_ASSIGN_OR_RETURN(o.crf, args.get_int("crf", 18, limits::kCrfMin, limits::kCrfMax));
  o.out = args.get("out", "output.mp4");
  o.json = args.has("json");
  o.quiet = args.has("quiet");
  o.canvas_given = args.has("width") || args.has("height");
  OROCHI_ASSIGN_OR_RETURN(ReferenceOptions refs, parse_reference_options(args));
  o.references = std::move(refs.references);
  o.ref_size = refs.ref_size;
  if (args.has("transformer")) o.transformer_file = args.get("transformer", "");
  if (args.has("transformer-config")) o.transformer_config = args.get("transformer-config", "");
  o.qkv_order = args.get("qkv-order", "auto");
  if (Status s = h3::parse_qkv_order(o.qkv_order).status(); !s.is_ok()) return s;
  if ((o.transformer_config || o.qkv_order != "auto") && !o.transformer_file)
    return usage_error("--transformer-config and --qkv-order describe a --transformer FILE");
  for (const std::string& v : args.get_all("lora")) {
    OROCHI_ASSIGN_OR_RETURN(engine::LoraSource lora, parse_lora_option(v));
    o.loras.push_back(std::move(lora));
  }
  return o;
}

engine::GenerateRequest request_of(const GenerateOptions& o) {
  engine::GenerateRequest r;
  r.width = o.width;
  r.height = o.height;
  r.frames = o.frames;
  engine::set_sampling(r, o.sampling);
  r.seed = o.seed;
  r.prompt = o.prompt;
  r.text_features_file = o.text_features;
  r.text_rows = o.text_rows;
  r.text_layer = o.text_layer;
  r.references = o.references;
  r.ref_size = o.ref_size;
  if (engine::workflow_of(r) == "fl2va" && !o.canvas_given) r.width = r.height = 0;
  return r;
}

// What the command itself can refuse before the engine opens a model: the canvas and frames (the
// pipeline's own check, cheap) and the output (the engine checks the rest in open() and plan()).
Status check_generate_request(const GenerateOptions& o) {
  OROCHI_RETURN_IF_ERROR(pipeline::video_geometry(o.width, o.height, o.frames).status());
  // The video and the report beside it, before any work (the folder takes a probe file).
  OROCHI_RETURN_IF_ERROR(io::check_output_target(o.out).status());
  if (!io::mp4_supported())
    return unsupported("this build cannot write MP4 (it was built without FFmpeg's libraries); run "
                       "scripts/install_deps.sh, then rebuild with scripts/build.sh");
  return Status::ok();
}

}  // namespace orochi::apps
