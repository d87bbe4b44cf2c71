#include "apps/generate_options.h"

#include <filesystem>
#include <nlohmann/json.hpp>

#include "apps/args.h"
#include "apps/format.h"
#include "apps/gpu_t2va.h"
#include "apps/host_memory.h"
#include "io/mp4.h"
#include "io/output_file.h"
#include "models/h3/summary.h"
#include "pipeline/prompt_features.h"
#include "pipeline/scheduler_h3.h"
#include "pipeline/video_geometry.h"
#include "weights/model_folder.h"

namespace orochi::apps {

const char* const kGenerateUsage =
    "usage: orochi generate [MODEL_DIR] [options]\n"
    "  MODEL_DIR              a diffusers-layout MiniMax-H3 folder (transformer/, vae/, audio_vae/);\n"
    "                         without it: the built-in tiny demo model (random weights, CPU)\n"
    "  --prompt TEXT          the prompt, through MODEL_DIR's tokenizer/ and text_encoder/ (Qwen3-VL, the\n"
    "                         residual after layer --text-layer, default 50), on --device\n"
    "  --text-layer N         the text encoder layer whose residual conditions the denoiser (default 50)\n"
    "  --text-features FILE   instead of --prompt: safetensors with prompt_embeds [L, 5120]; the demo\n"
    "                         uses random features\n"
    "  --width W --height H   canvas, multiples of 32 (demo 320x192, checkpoint 1344x768)\n"
    "  --frames F             17n + 5 frames at 24 fps (default 124 = 5.2 s)\n"
    "  --steps N              denoiser evaluations (demo 8, checkpoint 20)\n"
    "  --seed S               noise seed (default 0); the same seed gives the same video on any device\n"
    "  --video-shift X --audio-shift Y   schedule shifts (default 12 and 3, the release's)\n"
    "  --out PATH             the MP4 to write (default output.mp4); the stage report goes beside it,\n"
    "                         with .json for the extension\n"
    "  --crf Q                H.264 quality 0..51 (default 18)\n"
    "  --device D             cpu, cuda or cuda:N (default: cpu for the demo, cuda:0 for a checkpoint when\n"
    "                         this build and machine have a GPU)\n"
    "  --gpus N               the denoiser on N GPUs from --device on, every GPU on this video (default 1);\n"
    "                         the decoders run on the first\n"
    "  --parallel MODE        how N GPUs share it: auto (sequence parallel when the model fits on each\n"
    "                         GPU, else the least tensor parallel that fits), sp, tp or tpxsp\n"
    "  --comm-timeout S       seconds any GPU-to-GPU exchange may take before the run stops with an\n"
    "                         error naming the rank (default 60)\n"
    "  --random-weights       the released shapes (33 B denoiser, 2.4 B video VAE, 151 M audio VAE) with\n"
    "                         random weights generated on the GPU: the full-size pipeline without a\n"
    "                         checkpoint, for benchmarks (needs --device cuda)\n"
    "  --text-rows L          rows of random text features without --text-features / --prompt (demo 32,\n"
    "                         else 256; also the plan's estimate of a prompt's length)\n"
    "  --json                 print the stage report as JSON on stdout\n"
    "  --quiet                no progress lines\n";


Expected<GenerateOptions> parse_generate_options(const std::vector<std::string>& argv) {
  OROCHI_ASSIGN_OR_RETURN(Args args, Args::parse(argv,
                                                 {"text-features", "width", "height", "frames", "steps", "seed",
                                                  "video-shift", "audio-shift", "out", "crf", "prompt", "device",
                                                  "text-rows", "text-layer", "gpus", "parallel", "comm-timeout"},
                                                 {"json", "quiet", "random-weights"}));
  if (args.positionals().size() > 1)
    return invalid_argument("generate takes at most one MODEL_DIR, got " + std::to_string(args.positionals().size()) +
                            " positional arguments");
  GenerateOptions o;
  if (!args.positionals().empty()) o.model_dir = args.positionals()[0];
  if (args.has("text-features")) o.text_features = args.get("text-features", "");
  if (args.has("prompt")) o.prompt = args.get("prompt", "");
  if (o.prompt && o.text_features) return invalid_argument("pass --prompt or --text-features, not both");
  if (o.prompt && !o.model_dir)
    return invalid_argument("--prompt needs a MODEL_DIR with tokenizer/ and text_encoder/ (the built-in demo model "
                            "has no text encoder: it runs on random features)");
  OROCHI_ASSIGN_OR_RETURN(o.text_layer, args.get_int("text-layer", pipeline::kH3TextLayer));
  o.random_weights = args.has("random-weights");
  if (o.random_weights && o.model_dir)
    return invalid_argument("--random-weights replaces MODEL_DIR's weights; pass one or the other");
  const bool demo = !o.model_dir && !o.random_weights;
  o.device = args.get("device", !demo && gpu_present() ? "cuda:0" : "cpu");
  if (o.device == "cuda") o.device = "cuda:0";
  const bool valid_gpu = o.device.rfind("cuda:", 0) == 0 && o.device.size() > 5 &&
                         o.device.find_first_not_of("0123456789", 5) == std::string::npos;
  if (o.device != "cpu" && !valid_gpu)
    return invalid_argument("--device must be cpu, cuda or cuda:N, got '" + o.device + "'");
  if (o.random_weights && !o.on_gpu())
    return invalid_argument("--random-weights makes the full-size model, which needs a GPU: add --device cuda");
  OROCHI_ASSIGN_OR_RETURN(o.gpus, args.get_int("gpus", 1));
  OROCHI_ASSIGN_OR_RETURN(o.comm_timeout_s, args.get_int("comm-timeout", 60));
  o.parallel = args.get("parallel", "auto");
  if (o.gpus < 1 || o.gpus > 64) return invalid_argument("--gpus must be in [1, 64], got " + std::to_string(o.gpus));
  if (o.gpus > 1 && !o.on_gpu()) return invalid_argument("--gpus " + std::to_string(o.gpus) + " needs --device cuda");
  if (o.parallel != "auto" && o.parallel != "tp" && o.parallel != "sp" && o.parallel != "tpxsp")
    return invalid_argument("--parallel must be auto, tp, sp or tpxsp, got '" + o.parallel + "'");
  if (o.comm_timeout_s < 1) return invalid_argument("--comm-timeout must be >= 1 second");
  OROCHI_ASSIGN_OR_RETURN(o.text_rows, args.get_int("text-rows", demo ? 32 : 256));
  if (o.text_rows < 1 || o.text_rows > 65536) return invalid_argument("--text-rows must be in [1, 65536]");
  OROCHI_ASSIGN_OR_RETURN(o.width, args.get_int("width", demo ? 320 : 1344));
  OROCHI_ASSIGN_OR_RETURN(o.height, args.get_int("height", demo ? 192 : 768));
  OROCHI_ASSIGN_OR_RETURN(o.frames, args.get_int("frames", 124));
  OROCHI_ASSIGN_OR_RETURN(o.steps, args.get_int("steps", demo ? 8 : 20));
  OROCHI_ASSIGN_OR_RETURN(o.seed, args.get_int("seed", 0));
  OROCHI_ASSIGN_OR_RETURN(o.crf, args.get_int("crf", 18));
  OROCHI_ASSIGN_OR_RETURN(o.video_shift, args.get_double("video-shift", pipeline::kH3VideoShift));
  OROCHI_ASSIGN_OR_RETURN(o.audio_shift, args.get_double("audio-shift", pipeline::kH3AudioShift));
  o.out = args.get("out", "output.mp4");
  o.json = args.has("json");
  o.quiet = args.has("quiet");
  if (o.seed < 0) return invalid_argument("--seed must be >= 0");
  if (o.crf < 0 || o.crf > 51) return invalid_argument("--crf must be in 0..51, got " + std::to_string(o.crf));
  return o;
}

// Everything that can be refused before loading a weight: sizes, steps, output file, encoder.
Status check_generate_request(const GenerateOptions& o) {
  OROCHI_RETURN_IF_ERROR(pipeline::video_geometry(o.width, o.height, o.frames).status());
  if (o.steps < 1 || o.steps > 1000) return invalid_argument("--steps must be in [1, 1000], got " + std::to_string(o.steps));
  if (!io::mp4_supported())
    return unsupported("this build cannot write MP4 (it was built without FFmpeg's libraries); run "
                       "scripts/install_deps.sh, then rebuild with scripts/build.sh");
  OROCHI_RETURN_IF_ERROR(io::check_output_path(o.out));
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
  if (o.model_dir && !o.on_gpu()) {
    // The CPU path holds every transformer weight in f32: refuse a model that cannot fit.
    OROCHI_ASSIGN_OR_RETURN(const nlohmann::json json, weights::read_model_config(*o.model_dir + "/transformer"));
    OROCHI_ASSIGN_OR_RETURN(h3::H3Config config, h3::H3Config::from_json(json));
    const uint64_t need = static_cast<uint64_t>(h3::summarize_config(config, DType::kF32).total.bytes);
    const uint64_t have = available_ram_bytes();
    if (have != 0 && need > have * 9 / 10)
      return invalid_argument("the CPU path holds the transformer in f32: " + format_bytes(need) + " needed, " +
                              format_bytes(have) + " of RAM available. The real MiniMax-H3 needs a GPU.");
  }
  return Status::ok();
}

}  // namespace orochi::apps
