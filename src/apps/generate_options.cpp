#include "apps/generate_options.h"

#include <filesystem>
#include <nlohmann/json.hpp>

#include "apps/args.h"
#include "apps/help.h"
#include "apps/request_limits.h"
#include "io/mp4.h"
#include "io/output_file.h"
#include "pipeline/prompt_features.h"
#include "pipeline/scheduler_h3.h"
#include "pipeline/video_geometry.h"
#include "planner/plan_request.h"
#include "weights/model_folder.h"

namespace orochi::apps {

namespace {
const std::string generate_help_text = command_help("generate");
}  // namespace

const char* const kGenerateUsage = generate_help_text.c_str();

Expected<GenerateOptions> parse_generate_options(const std::vector<std::string>& argv) {
  OROCHI_ASSIGN_OR_RETURN(Args args, Args::parse(argv,
                                                 {"text-features", "width", "height", "frames", "steps", "seed",
                                                  "video-shift", "audio-shift", "out", "crf", "prompt", "device",
                                                  "text-rows", "text-layer", "gpus", "parallel", "comm-timeout",
                                                  "set"},
                                                 {"json", "quiet", "random-weights"}));
  if (args.positionals().size() > 1)
    return usage_error("generate takes at most one MODEL_DIR, got " + std::to_string(args.positionals().size()) +
                            " positional arguments");
  GenerateOptions o;
  if (!args.positionals().empty()) o.model_dir = args.positionals()[0];
  if (args.has("text-features")) o.text_features = args.get("text-features", "");
  if (args.has("prompt")) o.prompt = args.get("prompt", "");
  if (o.prompt && o.text_features) return invalid_argument("pass --prompt or --text-features, not both");
  if (o.prompt && !o.model_dir)
    return invalid_argument("--prompt needs a MODEL_DIR with tokenizer/ and text_encoder/ (the built-in demo model "
                            "has no text encoder: it runs on random features)");
  OROCHI_ASSIGN_OR_RETURN(o.text_layer, args.get_int("text-layer", pipeline::kH3TextLayer, 1, 1 << 20));
  o.random_weights = args.has("random-weights");
  if (o.random_weights && o.model_dir)
    return invalid_argument("--random-weights replaces MODEL_DIR's weights; pass one or the other");
  const bool demo = !o.model_dir && !o.random_weights;
  o.device = args.get("device", "");  // empty: the engine decides (the CPU for the demo)
  if (o.device == "cuda") o.device = "cuda:0";
  const bool valid_gpu = o.device.rfind("cuda:", 0) == 0 && o.device.size() > 5 && o.device.size() < 9 &&
                         o.device.find_first_not_of("0123456789", 5) == std::string::npos;
  if (!o.device.empty() && o.device != "cpu" && !valid_gpu)
    return usage_error("--device must be cpu, cuda or cuda:N, got '" + o.device + "'");
  if (o.random_weights && o.device == "cpu")
    return invalid_argument("--random-weights makes the full-size model, which needs a GPU: add --device cuda");
  OROCHI_ASSIGN_OR_RETURN(o.gpus, args.get_int("gpus", 1, limits::kGpusMin, limits::kGpusMax));
  OROCHI_ASSIGN_OR_RETURN(o.comm_timeout_s, args.get_int("comm-timeout", 60, 1, 7 * 24 * 3600));
  o.parallel = args.get("parallel", "auto");
  if (o.parallel != "auto") {  // the planner's vocabulary, checked here so a typo stops before any work
    if (Status s = planner::parse_parallel_layout(o.parallel).status(); !s.is_ok())
      return usage_error("--parallel must be auto, none, tpN, spN or tpNxspM (e.g. tp2, sp4, tp2xsp2), got '" +
                         o.parallel + "'");
  }
  o.set = args.get("set", "");
  if (o.gpus > 1 && o.device == "cpu") return invalid_argument("--gpus " + std::to_string(o.gpus) + " needs --device cuda");
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
  return o;
}

// Everything that can be refused before loading a weight: sizes, steps, output file, encoder.
Status check_generate_request(const GenerateOptions& o) {
  OROCHI_RETURN_IF_ERROR(pipeline::video_geometry(o.width, o.height, o.frames).status());
  // The video and the report beside it, before any work (the folder takes a probe file).
  OROCHI_RETURN_IF_ERROR(io::check_output_target(o.out).status());
  if (o.steps < 1 || o.steps > 1000) return invalid_argument("--steps must be in [1, 1000], got " + std::to_string(o.steps));
  if (!io::mp4_supported())
    return unsupported("this build cannot write MP4 (it was built without FFmpeg's libraries); run "
                       "scripts/install_deps.sh, then rebuild with scripts/build.sh");
  if (o.model_dir && !o.text_features && !o.prompt)
    return invalid_argument("a checkpoint needs conditioning: pass --prompt TEXT, or --text-features FILE "
                            "(prompt_embeds [L, 5120]); without MODEL_DIR the built-in demo model runs");
  if (o.prompt) {
    // The tokenizer and the text encoder's config, before any weight is read.
    const std::string tokenizer = *o.model_dir + "/tokenizer";
    if (!std::filesystem::exists(tokenizer + "/tokenizer.json"))
      return not_found(tokenizer + "/tokenizer.json is missing: --prompt needs the checkpoint's tokenizer");
    OROCHI_RETURN_IF_ERROR(pipeline::check_text_encoder(*o.model_dir + "/text_encoder", o.text_layer));
  }
  return Status::ok();
}

}  // namespace orochi::apps
