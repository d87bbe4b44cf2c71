#include "apps/generate_options.h"

#include "apps/args.h"
#include "apps/model_source_options.h"
#include "apps/reference_options.h"
#include "apps/request_limits.h"
#include "io/mp4.h"
#include "io/output_file.h"
#include "pipeline/prompt_features.h"
#include "pipeline/sampling.h"
#include "pipeline/video_geometry.h"

namespace orochi::apps {

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
  std::set<std::string> valued = {"text-features", "width", "height", "frames", "seed", "out", "crf", "prompt",
                                  "text-rows", "text-layer"};
  std::set<std::string> flags = {"json", "quiet"}, repeatable;
  add_model_source_options(valued, flags, repeatable);
  add_engine_options(valued);
  add_sampling_options(valued);
  add_reference_options(valued, repeatable);
  OROCHI_ASSIGN_OR_RETURN(Args args, Args::parse(argv, valued, flags, repeatable));
  GenerateOptions o;
  OROCHI_ASSIGN_OR_RETURN(o.source, parse_model_source(args, "generate"));
  OROCHI_ASSIGN_OR_RETURN(o.engine, parse_engine_cli(args, args.has("quiet"), "orochi generate"));
  if (args.has("text-features")) o.text_features = args.get("text-features", "");
  if (args.has("prompt")) o.prompt = args.get("prompt", "");
  OROCHI_ASSIGN_OR_RETURN(o.text_layer, args.get_int("text-layer", pipeline::kH3TextLayer, 1, 1 << 20));
  const bool demo = o.source.demo();
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
