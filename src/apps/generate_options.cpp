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
#include "pipeline/scheduler_h3.h"
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

Expected<GenerateOptions> parse_generate_options(const std::vector<std::string>& argv) {
  std::set<std::string> valued = {"text-features", "width", "height", "frames", "steps", "seed",
                                  "video-shift", "audio-shift", "out", "crf", "prompt", "device",
                                  "text-rows", "text-layer", "gpus", "parallel", "comm-timeout", "set",
                                  "transformer", "transformer-config", "qkv-order"};
  std::set<std::string> repeatable = {"lora"};
  valued.insert("lora");
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
  OROCHI_ASSIGN_OR_RETURN(o.steps, args.get_int("steps", demo ? 8 : 20, limits::kStepsMin, limits::kStepsMax));
  OROCHI_ASSIGN_OR_RETURN(o.seed, args.get_uint64("seed", 0));
  OROCHI_ASSIGN_OR_RETURN(o.crf, args.get_int("crf", 18, limits::kCrfMin, limits::kCrfMax));
  OROCHI_ASSIGN_OR_RETURN(o.video_shift, args.get_double("video-shift", pipeline::kH3VideoShift));
  OROCHI_ASSIGN_OR_RETURN(o.audio_shift, args.get_double("audio-shift", pipeline::kH3AudioShift));
  if (!(o.video_shift > 0)) return usage_error("--video-shift must be > 0, got " + args.get("video-shift", ""));
  if (!(o.audio_shift > 0)) return usage_error("--audio-shift must be > 0, got " + args.get("audio-shift", ""));
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
  r.steps = o.steps;
  r.seed = o.seed;
  r.video_shift = o.video_shift;
  r.audio_shift = o.audio_shift;
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
