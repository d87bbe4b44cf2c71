#include "engine/engine.h"

#include <algorithm>
#include <chrono>
#include <filesystem>

#include "core/format.h"
#include "core/host_memory.h"
#include "engine/reference_checks.h"
#include "models/h3/denoiser.h"
#include "models/h3/flops.h"
#include "models/h3/lora.h"
#include "models/h3/summary.h"
#include "models/h3/weights.h"
#include "models/h3_audio_vae/weights.h"
#include "models/h3_video_vae/weights.h"
#include "pipeline/decoders.h"
#include "pipeline/fl2va.h"
#include "pipeline/finite_check.h"
#include "pipeline/text_features.h"
#include "planner/parallel_choice.h"
#include "weights/model_folder.h"

namespace orochi::engine {
namespace {

using Clock = std::chrono::steady_clock;
double seconds_since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

// The CPU reference's speed for the refusal below, on the generous side: the demo (320x192, 124
// frames, 8 steps: 0.05 TFLOP in the denoiser) runs at a few GFLOP/s on a 2-core machine.
constexpr double kCpuFlopsPerSecond = 20e9;
constexpr double kCpuLongestSeconds = 4 * 3600.0;

// "cpu", "cuda", "cuda:N" -> "cpu" / "cuda:N"; the index in `index`.
Expected<std::string> normalized_device(const std::string& device, int* index) {
  *index = 0;
  if (device == "cpu") return device;
  const std::string d = device == "cuda" ? "cuda:0" : device;
  const bool valid = d.rfind("cuda:", 0) == 0 && d.size() > 5 && d.size() <= 8 &&
                     d.find_first_not_of("0123456789", 5) == std::string::npos;
  if (!valid) return usage_error("--device must be cpu, cuda or cuda:N, got '" + device + "'");
  *index = std::stoi(d.substr(5));
  return d;
}

// The GPUs a run asks for must be visible before any model is built.
Status check_gpus_visible(int first, int count) {
  GpuBackend& gpus = gpu_backend();
  if (gpus.name() == "none")
    return unsupported("this build has no CUDA backend, so there is no GPU to run on; use --device cpu, or build on a "
                       "machine with the CUDA toolkit (scripts/build.sh enables it when nvcc is found)");
  const int visible = gpus.device_count();
  if (visible == 0) return unsupported("no CUDA GPU visible; use --device cpu");
  if (first + count > visible)
    return invalid_argument(std::string(count > 1 ? "--gpus " + std::to_string(count) + " from " : "") + "cuda:" +
                            std::to_string(first) + " needs GPU" + (count > 1 ? "s " : " ") + std::to_string(first) +
                            (count > 1 ? ".." + std::to_string(first + count - 1) : "") + ", but " +
                            std::to_string(visible) + " GPU" + (visible == 1 ? " is" : "s are") +
                            " visible (cuda:0" + (visible > 1 ? "..cuda:" + std::to_string(visible - 1) : "") +
                            "); use fewer --gpus or another --device");
  return Status::ok();
}

// The plan's figures for one phase on the first GPU.
uint64_t phase_bytes(const planner::MemoryPlan& plan, const std::string& name, planner::PoolKind* only = nullptr) {
  for (const planner::PhasePlan& phase : plan.phases)
    if (phase.name == name && !phase.gpus.empty())
      return only ? phase.gpus[0].pool_bytes(*only) : phase.gpus[0].total();
  return 0;
}

bool same_placement(const GpuPlacement& a, const GpuPlacement& b) {
  return a.device == b.device && a.tp == b.tp && a.sp == b.sp && a.streamed == b.streamed && a.slots == b.slots &&
         a.decode_gpus == b.decode_gpus && a.comm_timeout_s == b.comm_timeout_s &&
         run_switches_json(a.switches) == run_switches_json(b.switches);
}

// The planner's view of a filled-in request.
planner::PlanRequest plan_request_of(const GenerateRequest& r) {
  planner::PlanRequest p;
  p.width = r.width;
  p.height = r.height;
  p.frames = r.frames;
  p.text_rows = r.text_rows;
  p.steps = r.steps;
  p.video_shift = r.video_shift;
  p.audio_shift = r.audio_shift;
  p.keyframes = keyframe_anchors(r);  // fl2va's keyframe rows
  return p;
}

// fl2va: the keyframes read and put onto the canvas (the request's size, else the canvas rule on the
// first keyframe present: REF2VA.md §0). The demo's rule is the release's scaled to its 320x192
// default (short edge 192, at most 320·192 pixels), so a demo fl2va stays a CPU-sized request.
Status plan_keyframes(RunPlan& plan, bool demo) {
  GenerateRequest& r = plan.request;
  if ((r.width == 0) != (r.height == 0))
    return invalid_argument("fl2va takes --width and --height together, or neither (the canvas then follows the first "
                            "keyframe's aspect)");
  std::vector<pipeline::Fl2vaKeyframe> keyframes;
  for (const ReferenceInput& ref : r.references) {
    pipeline::Fl2vaKeyframe k;
    k.anchor = ref.kind == ReferenceInput::Kind::kFirstFrame ? pipeline::KeyframeAnchor::kFirst
                                                             : pipeline::KeyframeAnchor::kLast;
    Expected<io::RgbImage> image = io::read_image(ref.path);
    if (!image)
      return Status(image.status().code(), std::string(reference_flag(ref.kind)) + " " + ref.path + ": " +
                                               image.status().message());
    k.image = std::move(image).value();
    keyframes.push_back(std::move(k));
  }
  std::optional<pipeline::reference::Size> canvas;
  if (r.width != 0) canvas = pipeline::reference::Size{r.width, r.height};
  pipeline::reference::CanvasRule rule;
  if (demo) rule = pipeline::reference::CanvasRule{32, 192, 192 * 320};
  OROCHI_ASSIGN_OR_RETURN(pipeline::Fl2vaKeyframes prepared, pipeline::prepare_fl2va_keyframes(keyframes, canvas, rule));
  r.width = prepared.canvas.width;
  r.height = prepared.canvas.height;
  plan.keyframes = std::move(prepared.images);
  plan.notes.push_back("fl2va: " + std::to_string(plan.keyframes.size()) + " keyframe(s) on the " +
                       std::to_string(r.width) + "x" + std::to_string(r.height) + " canvas" +
                       (canvas ? "" : " (from the first keyframe's aspect)"));
  return Status::ok();
}

}  // namespace

nlohmann::json RunPlan::summary_json() const {
  nlohmann::json j{{"device", on_gpu ? "cuda:" + std::to_string(placement.device) : "cpu"},
                   {"layout", {{"tp", degrees.tp}, {"sp", degrees.sp}, {"why", degrees.why}}},
                   {"packed_rows", shape.rows},
                   {"text_rows", shape.text_rows},
                   {"keep_denoiser_weights", keep_denoiser_weights},
                   {"notes", notes}};
  if (memory) {  // its bytes per phase stand beside the measured ones (RunReport::gpu_memory)
    j["fits"] = memory->fits;
    j["streamed_denoiser_blocks"] = std::count(placement.streamed.begin(), placement.streamed.end(), true);
    j["streamed_text_encoder_layers"] =
        std::count(text_placement.streamed.begin(), text_placement.streamed.end(), true);
  }
  return j;
}

Engine::~Engine() = default;

void Engine::note(const std::string& line) const {
  if (options_.on_note) options_.on_note(line);
}

// The CPU path holds every transformer weight in f32: a model that cannot fit is refused before
// any weight is read.
static Status check_config_fits_ram(const h3::H3Config& config) {
  const uint64_t need = static_cast<uint64_t>(h3::summarize_config(config, DType::kF32).total.bytes);
  const uint64_t have = available_ram_bytes();
  if (have != 0 && need > have * 9 / 10)
    return invalid_argument("the CPU path holds the transformer in f32: " + format_bytes(need) + " needed, " +
                            format_bytes(have) + " of RAM available. The real MiniMax-H3 needs a GPU.");
  return Status::ok();
}

static Status check_transformer_fits_ram(const std::string& transformer_dir) {
  OROCHI_ASSIGN_OR_RETURN(const nlohmann::json json, weights::read_model_config(transformer_dir));
  OROCHI_ASSIGN_OR_RETURN(const h3::H3Config config, h3::H3Config::from_json(json));
  return check_config_fits_ram(config);
}

// --transformer FILE: the single-file transformer with `dir`'s VAEs, or the demo's VAEs without a
// folder (whose channels must then be the demo's).
static Expected<pipeline::T2vaModels> load_with_transformer_file(const ModelSource& source, bool on_gpu,
                                                                 std::string* described) {
  const std::string& file = *source.transformer_file;
  OROCHI_ASSIGN_OR_RETURN(const auto config, h3::transformer_file_config(file, source.transformer_config));
  if (!on_gpu) OROCHI_RETURN_IF_ERROR(check_config_fits_ram(config.first));
  OROCHI_ASSIGN_OR_RETURN(const std::optional<h3::QkvOrder> order, h3::parse_qkv_order(source.qkv_order));
  pipeline::T2vaModels m;
  if (source.dir) {
    namespace fs = std::filesystem;
    m.name = *source.dir + " with the transformer " + file;
    OROCHI_ASSIGN_OR_RETURN(m.video_vae, h3vae::load_decoder_weights((fs::path(*source.dir) / "vae").string()));
    OROCHI_ASSIGN_OR_RETURN(m.audio_vae, h3_audio::load_decoder((fs::path(*source.dir) / "audio_vae").string()));
  } else {
    m = pipeline::demo_t2va_models(kDemoWeightSeed);
    const h3::H3Config demo = m.transformer.config;
    if (config.first.in_channels != demo.in_channels || config.first.audio_in_channels != demo.audio_in_channels)
      return invalid_argument("--transformer " + file + " (config from " + config.second + ") denoises " +
                              std::to_string(config.first.in_channels) + " video / " +
                              std::to_string(config.first.audio_in_channels) +
                              " audio latent channels; without MODEL_DIR it runs with the demo model's VAEs, which "
                              "decode " + std::to_string(demo.in_channels) + " / " +
                              std::to_string(demo.audio_in_channels) + ": pass MODEL_DIR for its VAEs");
    m.name = file + " with the demo model's VAEs (random weights)";
  }
  h3::TransformerFileOptions o;
  o.config_path = source.transformer_config;
  o.qkv_order = order;
  o.as_stored = on_gpu;
  OROCHI_ASSIGN_OR_RETURN(h3::TransformerFile loaded, h3::load_transformer_file(file, o));
  m.transformer = std::move(loaded.weights);
  OROCHI_RETURN_IF_ERROR(pipeline::check_t2va_models(m));
  *described = file + ": " + loaded.layout + "; config from " + loaded.config_from;
  return m;
}

Expected<std::unique_ptr<Engine>> Engine::open(const ModelSource& source, const EngineOptions& options) {
  std::unique_ptr<Engine> e(new Engine());
  e->source_ = source;
  e->options_ = options;
  if (source.dir && source.random_weights)
    return invalid_argument("--random-weights replaces MODEL_DIR's weights; pass one or the other");
  if (source.transformer_dir && (source.dir || source.random_weights || source.transformer_file))
    return invalid_argument("a transformer folder alone is a source of its own (for a forward): not with a model "
                            "folder, --transformer or --random-weights");
  if (source.transformer_file && source.random_weights)
    return invalid_argument("--transformer FILE gives the transformer's weights, --random-weights makes them: pass "
                            "one or the other");
  if ((source.transformer_config || source.qkv_order != "auto") && !source.transformer_file)
    return usage_error("--transformer-config and --qkv-order describe a --transformer FILE");
  // Where it runs: a checkpoint or random weights default to the first GPU when there is one.
  std::string device = options.device;
  if (device.empty())
    device = (source.dir || source.random_weights) && gpu_backend().device_count() > 0 ? "cuda:0" : "cpu";
  OROCHI_ASSIGN_OR_RETURN(e->device_, normalized_device(device, &e->first_gpu_));
  e->on_gpu_ = e->device_ != "cpu";
  if (options.gpus < 1 || options.gpus > 64)
    return usage_error("--gpus must be in [1, 64], got " + std::to_string(options.gpus));
  if (options.gpus > 1 && !e->on_gpu_)
    return invalid_argument("--gpus " + std::to_string(options.gpus) + " needs --device cuda");
  if (options.comm_timeout_s < 1) return usage_error("--comm-timeout must be >= 1 second");
  if (Status s = planner::parse_parallel_choice(options.parallel).status(); !s.is_ok()) return usage_error(s.message());
  if (source.random_weights && !e->on_gpu_)
    return invalid_argument("--random-weights makes the full-size model, which needs a GPU: add --device cuda");
  if (e->on_gpu_) OROCHI_RETURN_IF_ERROR(check_gpus_visible(e->first_gpu_, options.gpus));

  // The host weights, read once for every request of this engine.
  const auto t_load = Clock::now();
  e->family_ = model_families().front();  // the demo and random weights are MiniMax-H3's
  if (source.transformer_file) {
    if (source.dir) {
      OROCHI_ASSIGN_OR_RETURN(e->family_, detect_family(*source.dir));
    }
    std::string described;
    OROCHI_ASSIGN_OR_RETURN(e->models_, load_with_transformer_file(source, e->on_gpu_, &described));
    e->transformer_config_ = e->models_.transformer.config;
    e->note("transformer " + described);
    if (source.dir && e->on_gpu_ && std::filesystem::exists(*source.dir + "/text_encoder/config.json")) {
      OROCHI_ASSIGN_OR_RETURN(e->configs_, planner::load_model_configs(*source.dir));
      e->configs_->transformer = e->transformer_config_;
    }
  } else if (source.dir) {
    const std::string& dir = *source.dir;
    OROCHI_ASSIGN_OR_RETURN(e->family_, detect_family(dir));
    if (!e->on_gpu_) OROCHI_RETURN_IF_ERROR(check_transformer_fits_ram(dir + "/transformer"));
    // A GPU run keeps the denoiser's weights as stored (bf16 views of the files): its upload converts.
    OROCHI_ASSIGN_OR_RETURN(e->models_, pipeline::load_t2va_models(dir, e->on_gpu_));
    e->transformer_config_ = e->models_.transformer.config;
    // A GPU run is planned from the four configs; a folder without text_encoder/ has no full set
    // and runs unplanned unless a prompt needs it (plan() says so).
    if (e->on_gpu_ && std::filesystem::exists(dir + "/text_encoder/config.json")) {
      OROCHI_ASSIGN_OR_RETURN(e->configs_, planner::load_model_configs(dir));
    }
  } else if (source.transformer_dir) {
    const std::string& dir = *source.transformer_dir;
    if (e->on_gpu_)
      return invalid_argument("a transformer folder alone runs the CPU forward; on a GPU, `orochi bench dit` times "
                              "the forward");
    OROCHI_RETURN_IF_ERROR(check_transformer_fits_ram(dir));
    OROCHI_ASSIGN_OR_RETURN(e->models_.transformer, h3::load_weights(dir));
    e->models_.name = dir;
    e->transformer_config_ = e->models_.transformer.config;
  } else if (source.random_weights) {
    e->models_.name = "MiniMax-H3 released shapes with random weights (generated on the GPU, not a checkpoint)";
    OROCHI_ASSIGN_OR_RETURN(e->configs_, planner::load_model_configs("h3"));
    e->transformer_config_ = e->configs_->transformer;
  } else {
    e->models_ = pipeline::demo_t2va_models(kDemoWeightSeed);
    e->transformer_config_ = e->models_.transformer.config;
  }
  OROCHI_RETURN_IF_ERROR(e->merge_loras());
  e->open_load_s_ = seconds_since(t_load);
  return e;
}

// The LoRAs merge into the host weights in f32, before any upload: the CPU forward and the GPU
// upload (which rounds the merged f32 weights to bf16) both see them.
Status Engine::merge_loras() {
  if (source_.loras.empty()) return Status::ok();
  if (source_.random_weights)
    return invalid_argument("--lora merges into host weights, and --random-weights makes its weights on the GPU: "
                            "use a model folder or the demo model");
  for (const LoraSource& l : source_.loras) {
    OROCHI_ASSIGN_OR_RETURN(const h3::H3Lora lora, h3::read_lora(l.path, models_.transformer.config));
    const auto t0 = Clock::now();
    OROCHI_RETURN_IF_ERROR(h3::merge_lora(models_.transformer, lora, l.strength));
    loras_.push_back({{"file", l.path},
                      {"strength", l.strength},
                      {"format", h3::lora_format_name(lora.format)},
                      {"parameters", lora.deltas.size()},
                      {"merge_s", seconds_since(t0)}});
    note("LoRA " + l.path + " (" + h3::lora_format_name(lora.format) + ", " + std::to_string(lora.deltas.size()) +
         " parameters) merged at strength " + std::to_string(l.strength));
  }
  return Status::ok();
}

Expected<planner::RequestShape> Engine::shape_of(const GenerateRequest& r) const {
  planner::ModelConfigs configs;
  if (configs_) {
    configs = *configs_;
  } else {  // the host models' own configs (the demo, or a folder without text_encoder/)
    configs.transformer = models_.transformer.config;
    configs.video_vae = models_.video_vae.config;
    configs.audio_vae = models_.audio_vae.config;
  }
  return planner::request_shape(configs, plan_request_of(r));
}

Status Engine::check_conditioning(const ModelSource& source, const GenerateRequest& r) {
  if (r.prompt && r.text_features_file) return invalid_argument("pass --prompt or --text-features, not both");
  if (r.prompt && !source.dir)
    return invalid_argument("--prompt needs a MODEL_DIR with tokenizer/ and text_encoder/ (the built-in demo model has "
                            "no text encoder: it runs on random features)");
  if (source.dir && !r.prompt && !r.text_features_file)
    return invalid_argument("a checkpoint needs conditioning: pass --prompt TEXT, or --text-features FILE "
                            "(prompt_embeds [L, 5120]); without MODEL_DIR the built-in demo model runs");
  if (r.prompt) {
    // The tokenizer and the text encoder's config, before any weight is read.
    const std::string tokenizer = *source.dir + "/tokenizer";
    if (!std::filesystem::exists(tokenizer + "/tokenizer.json"))
      return not_found(tokenizer + "/tokenizer.json is missing: --prompt needs the checkpoint's tokenizer");
    OROCHI_RETURN_IF_ERROR(pipeline::check_text_encoder(*source.dir + "/text_encoder", r.text_layer));
  }
  // The references: counts, every file's headers, aspects, lengths, the frame rule (reference_checks.h).
  return check_references(r).status();
}

Expected<RunPlan> Engine::plan(const GenerateRequest& asked) const {
  if (source_.transformer_dir)
    return invalid_argument(*source_.transformer_dir + " is a transformer folder alone: a generation needs the "
                            "model folder above it (with vae/ and audio_vae/)");
  RunPlan plan;
  plan.workflow = workflow_of(asked);
  OROCHI_RETURN_IF_ERROR(check_references(asked).status());  // a bad file before "not built yet"
  OROCHI_RETURN_IF_ERROR(check_workflow(*family_, plan.workflow));
  GenerateRequest& r = plan.request;
  r = asked;
  const bool demo = source_.demo();
  if (plan.workflow == "fl2va") {
    if (!demo)
      return unsupported("fl2va on a checkpoint conditions the denoiser on its presentation (\"<Picture i>: \" and "
                         "each keyframe's vision tokens, then the prompt) through the Qwen3-VL conditioner with the "
                         "keyframes' vision features; that prompt path is not wired into the engine yet. The built-in "
                         "demo model (no MODEL_DIR) runs fl2va on random text rows");
    OROCHI_RETURN_IF_ERROR(plan_keyframes(plan, demo));
  }
  if (r.width == 0) r.width = demo ? 320 : 1344;
  if (r.height == 0) r.height = demo ? 192 : 768;
  if (r.steps == 0) r.steps = demo ? 8 : 20;
  if (r.text_rows == 0) r.text_rows = demo ? 32 : 256;
  plan.on_gpu = on_gpu_;

  // Conditioning, and with it the exact number of text rows L.
  OROCHI_RETURN_IF_ERROR(check_conditioning(source_, r));
  if (r.prompt) {
    const std::string tokenizer = *source_.dir + "/tokenizer";
    int64_t max_tokens = 0, hidden = 0;
    OROCHI_RETURN_IF_ERROR(
        pipeline::check_text_encoder(*source_.dir + "/text_encoder", r.text_layer, &max_tokens, &hidden));
    if (hidden != transformer_config_.text_dim)
      return unsupported("the text encoder's hidden size is " + std::to_string(hidden) + " but the transformer reads " +
                         std::to_string(transformer_config_.text_dim) + "-wide features: not one checkpoint's parts");
    OROCHI_ASSIGN_OR_RETURN(plan.prompt_ids, pipeline::tokenize_prompt(tokenizer, *r.prompt, max_tokens));
    r.text_rows = plan.prompt_ids.numel();
  } else if (r.text_features_file) {
    OROCHI_ASSIGN_OR_RETURN(plan.text_features,
                            pipeline::load_text_features(*r.text_features_file, transformer_config_.text_dim));
    r.text_rows = plan.text_features.dim(0);
  }
  OROCHI_ASSIGN_OR_RETURN(plan.shape, shape_of(r));
  if (on_gpu_) OROCHI_RETURN_IF_ERROR(plan_gpu(plan));
  else OROCHI_RETURN_IF_ERROR(check_cpu_request(plan));
  return plan;
}

// A CPU request that would take hours or more memory than the machine has is refused here, with
// its estimate, instead of sitting silent for a day.
Status Engine::check_cpu_request(RunPlan& plan) const {
  const planner::RequestShape& s = plan.shape;
  const double flops = h3::forward_flops(transformer_config_, s.rows, s.text_rows).total() * static_cast<double>(s.steps);
  const double seconds = flops / kCpuFlopsPerSecond;
  const std::string sizes = std::to_string(plan.request.width) + "x" + std::to_string(plan.request.height) + ", " +
                            std::to_string(plan.request.frames) + " frames, " + std::to_string(s.steps) + " steps, " +
                            std::to_string(s.rows) + " packed rows";
  if (seconds > kCpuLongestSeconds) {
    char estimate[160];
    std::snprintf(estimate, sizeof estimate, "about %.0f hours (%.3g TFLOP in the denoiser alone at ~%.0f GFLOP/s)",
                  seconds / 3600, flops / 1e12, kCpuFlopsPerSecond / 1e9);
    return invalid_argument("on the CPU this request (" + sizes + ") would take " + estimate +
                            "; run it on a GPU (--device cuda), or ask for a smaller canvas, fewer frames or steps");
  }
  // The decoded video in f32 twice over (the decoder's output and the pixel frames) and the
  // denoiser's largest activations (f32 rows of the hidden width, a few at once).
  const pipeline::VideoGeometry& g = s.geometry;
  const uint64_t video = static_cast<uint64_t>(3 * g.frames) * static_cast<uint64_t>(g.width * g.height) * 4;
  const uint64_t need = 2 * video + static_cast<uint64_t>(s.rows) * static_cast<uint64_t>(transformer_config_.hidden_size) * 4 * 8;
  const uint64_t have = available_ram_bytes();
  if (have != 0 && need > have * 9 / 10)
    return invalid_argument("on the CPU this request (" + sizes + ") needs about " + format_bytes(need) +
                            " of host memory and " + format_bytes(have) +
                            " is available; ask for a smaller canvas or fewer frames, or run it on a GPU");
  if (seconds > 60) {
    char note[160];
    std::snprintf(note, sizeof note, "on the CPU: the denoiser alone needs %.3g TFLOP, at least %.0f minutes", flops / 1e12,
                  seconds / 60);
    plan.notes.push_back(note);
  }
  return Status::ok();
}

// Memory per phase and GPU from the configs (before any weight is read), against the GPUs' memory
// as the driver reports it, and the layout: refused with the plan's numbers when it cannot fit.
Status Engine::plan_gpu(RunPlan& plan) const {
  const GenerateRequest& r = plan.request;
  GpuBackend& gpus = gpu_backend();
  GpuPlacement& p = plan.placement;
  p.device = first_gpu_;
  p.comm_timeout_s = options_.comm_timeout_s;
  p.decode_gpus = options_.gpus;  // the decode shares its chunks among all of them
  p.switches = options_.switches;
  plan.text_placement.device = first_gpu_;
  if (r.prompt && !configs_)
    return not_found(*source_.dir + "/text_encoder/config.json is missing: --prompt needs the checkpoint's text encoder");
  OROCHI_ASSIGN_OR_RETURN(const uint64_t vram, gpus.memory_total(first_gpu_));
  if (!configs_) {
    // Unplanned (the demo on a GPU, or a folder without text_encoder/): the heads decide, and the
    // tiny weights stay loaded.
    OROCHI_ASSIGN_OR_RETURN(plan.degrees, planner::choose_parallel(options_.parallel, transformer_config_, options_.gpus,
                                                                   static_cast<double>(vram) / (1 << 30), 0, 0));
  } else {
    planner::PlanInput in;
    in.models = *configs_;
    in.models.text_layers = r.prompt ? r.text_layer : 0;
    in.request = plan_request_of(r);
    in.gpus.vram_bytes = vram;
    in.gpus.count = options_.gpus;
    in.tiers.peer = false;
    in.tiers.host = options_.gpus == 1;  // several GPUs split the weights instead of streaming them
    in.text_encoder_tiers = planner::TierPolicy{/*peer=*/false, /*host=*/true, in.tiers.staging_slots};
    in.sp = options_.switches.sp;
    if (options_.gpus > 1 && options_.parallel == "auto") {  // the link decides between the layout and one GPU
      OROCHI_ASSIGN_OR_RETURN(in.gpus.peer_gbps, gpus.link_gbps(first_gpu_, options_.gpus));
      char line[160];
      std::snprintf(line, sizeof line, "GPU link measured at %.0f GB/s (GPU %d to the next %d)", in.gpus.peer_gbps,
                    first_gpu_, options_.gpus - 1);
      plan.notes.push_back(line);
    }
    OROCHI_ASSIGN_OR_RETURN(planner::LayoutPlan laid_out, planner::plan_for_gpus(in, options_.parallel, plan.shape));
    OROCHI_RETURN_IF_ERROR(planner::check_fits(laid_out.plan));
    plan.degrees = laid_out.degrees;
    // Before any weight is read: only the denoiser's blocks and the text encoder's layers (from
    // host RAM) stream at run time.
    OROCHI_ASSIGN_OR_RETURN(p.streamed, planner::streamed_denoiser_blocks(laid_out.plan, in.models.transformer.num_layers));
    p.slots = laid_out.plan.input.tiers.staging_slots;
    OROCHI_ASSIGN_OR_RETURN(plan.text_placement.streamed, planner::streamed_text_encoder_layers(laid_out.plan));
    plan.text_placement.slots = laid_out.plan.input.text_encoder_tiers.value_or(in.tiers).staging_slots;
    // The model stays loaded through the decode when the denoiser's resident weights and the decode
    // phase fit together; otherwise the weights make room and the next request uploads them again.
    planner::PoolKind weights = planner::PoolKind::kWeights;
    const uint64_t kept = phase_bytes(laid_out.plan, "denoiser", &weights) + phase_bytes(laid_out.plan, "decode");
    plan.keep_denoiser_weights = kept <= vram;
    plan.notes.push_back(plan.keep_denoiser_weights
                             ? "the denoiser's weights stay loaded through the decode (" + format_bytes(kept) + " of " +
                                   format_bytes(vram) + "), for the next request"
                             : "the denoiser's weights make room for the decode (" + format_bytes(kept) + " with them, " +
                                   format_bytes(vram) + " on the GPU): the next request uploads them again");
    const auto streamed = std::count(p.streamed.begin(), p.streamed.end(), true);
    if (streamed > 0)
      plan.notes.push_back(std::to_string(streamed) + " of " + std::to_string(p.streamed.size()) +
                           " denoiser blocks stream from pinned host RAM (the plan)");
    const auto text_streamed = std::count(plan.text_placement.streamed.begin(), plan.text_placement.streamed.end(), true);
    if (text_streamed > 0)
      plan.notes.push_back(std::to_string(text_streamed) + " of " + std::to_string(plan.text_placement.streamed.size()) +
                           " text-encoder layers stream from pinned host RAM (the plan)");
    plan.memory = std::move(laid_out.plan);
  }
  p.tp = plan.degrees.tp;
  p.sp = plan.degrees.sp;
  if (options_.gpus > 1)
    plan.notes.push_back("denoiser on " + std::to_string(p.tp * p.sp) + " of " + std::to_string(options_.gpus) +
                         " GPUs, tp " + std::to_string(p.tp) + " x sp " + std::to_string(p.sp) + " (" + plan.degrees.why +
                         ")");
  return Status::ok();
}

Expected<Tensor> Engine::text_features(const RunPlan& plan, RunReport& report) {
  const auto t0 = Clock::now();
  Tensor features;
  if (plan.text_features.defined()) {
    features = plan.text_features;
  } else if (plan.prompt_ids.defined()) {
    const std::string text_encoder = *source_.dir + "/text_encoder";
    note("prompt of " + std::to_string(plan.prompt_ids.numel()) + " tokens through " +
         std::to_string(plan.request.text_layer) + " text-encoder layers on " + device_);
    if (on_gpu_) {
      OROCHI_ASSIGN_OR_RETURN(features, gpu_backend().encode_prompt(text_encoder, plan.prompt_ids, plan.request.text_layer,
                                                                    plan.text_placement));
    } else {
      OROCHI_ASSIGN_OR_RETURN(features, pipeline::encode_prompt_cpu(text_encoder, plan.prompt_ids, plan.request.text_layer));
    }
    OROCHI_RETURN_IF_ERROR(pipeline::check_finite(features, "the text encoder"));
  } else {
    features = pipeline::random_text_features(plan.request.text_rows, transformer_config_.text_dim, plan.request.seed);
  }
  report.text_s = seconds_since(t0);
  return features;
}

// The GPU models of this plan: kept from the last request when the placement is the same (a new
// request arena only when this request is larger, timed as request memory, not load), else made
// and their weights uploaded.
Status Engine::ensure_gpu_models(const RunPlan& plan, RunReport& report) {
  const auto t0 = Clock::now();
  const h3::gpu::RequestSize size = pipeline::request_size(plan.shape.t2va);
  if (gpu_ && same_placement(gpu_placement_, plan.placement)) {
    if (Status s = gpu_->denoiser->fit_request(h3::sequence_size(size)); !s.is_ok()) {
      gpu_.reset();  // never run on a half-reserved model
      return s;
    }
    report.request_memory_s += seconds_since(t0);
    return Status::ok();
  }
  gpu_.reset();  // a different placement: the old models give their memory back first
  Expected<GpuT2va> made = source_.random_weights
                               ? gpu_backend().t2va_random(transformer_config_, plan.placement, plan.shape.t2va,
                                                           kDemoWeightSeed)
                               : gpu_backend().t2va_from_host(models_, plan.placement, plan.shape.t2va);
  if (!made) return made.status();
  gpu_ = std::make_unique<GpuT2va>(std::move(made).value());
  gpu_placement_ = plan.placement;
  report.load_s += seconds_since(t0);
  return Status::ok();
}

Expected<RunResult> Engine::run(const RunPlan& plan, const ProgressCallback& progress, const std::atomic<bool>* cancel) {
  if (plan.on_gpu != on_gpu_) return Status(ErrorCode::kInternal, "Engine::run: the plan was made by another engine");
  RunResult out;
  RunReport& report = out.report;
  report.model = models_.name;
  report.loras = loras_;
  report.demo = source_.demo();
  report.request_index = ++requests_;
  report.load_s = open_load_s_;  // the host weights, read by open(): the first request's
  open_load_s_ = 0;
  report.steps = plan.request.steps;
  report.seed = plan.request.seed;
  report.video_shift = plan.request.video_shift;
  report.audio_shift = plan.request.audio_shift;
  report.plan = plan.summary_json();
  report.workflow = plan.workflow;
  report.switches = run_switches_json(options_.switches);
  for (const std::string& line : plan.notes) note(line);

  pipeline::T2vaRequest request;
  request.width = plan.request.width;
  request.height = plan.request.height;
  request.frames = plan.request.frames;
  request.steps = plan.request.steps;
  request.seed = plan.request.seed;
  request.video_shift = plan.request.video_shift;
  request.audio_shift = plan.request.audio_shift;
  OROCHI_ASSIGN_OR_RETURN(request.text_features, text_features(plan, report));
  if (cancel && cancel->load()) return Status(ErrorCode::kCancelled, "cancelled before the denoiser");

  pipeline::T2vaRunOptions run_options;
  run_options.cancel = cancel;
  run_options.keep_denoiser_weights = plan.keep_denoiser_weights;
  uint64_t used_denoise = 0, used_decode = 0;  // device bytes in use at the end of each phase
  run_options.progress = [&](const Progress& p) {
    if (on_gpu_ && p.done == p.total) {
      if (p.stage == "denoise") used_denoise = gpu_backend().memory_used(first_gpu_);
      if (p.stage == "video decode") used_decode = gpu_backend().memory_used(first_gpu_);
    }
    if (progress) progress(p);
  };
  // fl2va: the keyframes go through the video VAE's encoder (on the CPU), then t2va's stages.
  const bool fl2va = !plan.keyframes.empty();
  if (fl2va && !models_.video_encoder) {
    if (!source_.dir) return Status(ErrorCode::kInternal, "fl2va: this engine has no video VAE encoder");
    const auto t_encoder = Clock::now();
    OROCHI_ASSIGN_OR_RETURN(models_.video_encoder, pipeline::load_video_encoder(*source_.dir, models_));
    report.load_s += seconds_since(t_encoder);
  }
  auto run_workflow = [&](models::Denoiser& denoiser, pipeline::VideoDecoder& video, pipeline::AudioDecoder& audio) {
    if (!fl2va) return pipeline::run_t2va(denoiser, video, audio, request, plan.shape.t2va, run_options);
    return pipeline::run_fl2va(denoiser, video, audio, *models_.video_encoder, {request, plan.keyframes},
                               plan.shape.t2va, run_options);
  };
  auto run_models = [&]() -> Expected<pipeline::T2vaResult> {
    if (!on_gpu_) {
      h3::CpuDenoiser denoiser(models_.transformer);
      pipeline::CpuVideoDecoder video(models_.video_vae);
      pipeline::CpuAudioDecoder audio(models_.audio_vae);
      report.device = denoiser.device_name();
      return run_workflow(denoiser, video, audio);
    }
    OROCHI_RETURN_IF_ERROR(ensure_gpu_models(plan, report));
    report.device = gpu_->device_name;
    Expected<pipeline::T2vaResult> r = run_workflow(*gpu_->denoiser, *gpu_->video, *gpu_->audio);
    // A failed run may leave device state half-done, and a released denoiser has no weights left:
    // the next request makes the models anew.
    if (!r || !plan.keep_denoiser_weights) gpu_.reset();
    return r;
  };
  Expected<pipeline::T2vaResult> result = run_models();
  if (!result) return result.status();
  if (on_gpu_) {
    nlohmann::json gpu = gpu_backend().memory_report(first_gpu_);
    gpu["used_bytes_end_of_denoise"] = used_denoise;
    gpu["used_bytes_end_of_video_decode"] = used_decode;
    if (plan.memory)
      for (const planner::PhasePlan& phase : plan.memory->phases)
        if (!phase.gpus.empty()) gpu["planned_bytes"][phase.name] = phase.gpus[0].total();
    report.gpu_memory.push_back(std::move(gpu));
    for (int i = 1; i < options_.gpus; ++i) report.gpu_memory.push_back(gpu_backend().memory_report(first_gpu_ + i));
  }
  report.host_peak_bytes = peak_rss_bytes();
  out.result = std::move(result).value();
  return out;
}

}  // namespace orochi::engine
