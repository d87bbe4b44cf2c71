// Engine::plan: a request's defaults filled and checked, its shape made once, and on a GPU the
// memory plan and parallel layout (the planner decides); the CPU's refusal of hours-long requests.
#include "engine/engine.h"

#include <algorithm>
#include <chrono>
#include <filesystem>

#include "core/format.h"
#include "core/host_memory.h"
#include "core/stopwatch.h"
#include "engine/presentation_plan.h"
#include "engine/reference_checks.h"
#include "engine/random_presentation.h"
#include "engine/reference_inputs.h"
#include "models/h3/flops.h"
#include "models/h3/model_folder_parts.h"
#include "pipeline/fl2va.h"
#include "pipeline/text_features.h"
#include "planner/parallel_choice.h"

namespace orochi::engine {
namespace {


// The CPU reference's speed for the refusal below, on the generous side: the demo (320x192, 124
// frames, 8 steps: 0.05 TFLOP in the denoiser) runs at a few GFLOP/s on a 2-core machine.
constexpr double kCpuFlopsPerSecond = 20e9;
constexpr double kCpuLongestSeconds = 4 * 3600.0;

// The plan's figures for one phase on the first GPU.
uint64_t phase_bytes(const planner::MemoryPlan& plan, const std::string& name, planner::PoolKind* only = nullptr) {
  for (const planner::PhasePlan& phase : plan.phases)
    if (phase.name == name && !phase.gpus.empty())
      return only ? phase.gpus[0].pool_bytes(*only) : phase.gpus[0].total();
  return 0;
}

// The planner's view of a filled-in request.
planner::PlanRequest plan_request_of(const RunPlan& plan) {
  const GenerateRequest& r = plan.request;
  planner::PlanRequest p;
  p.width = r.width;
  p.height = r.height;
  p.frames = r.frames;
  p.text_rows = r.text_rows;
  p.steps = r.steps;
  p.video_shift = r.video_shift;
  p.audio_shift = r.audio_shift;
  p.video_sigmas = r.video_sigmas;
  p.audio_sigmas = r.audio_sigmas;
  p.keyframes = keyframe_anchors(r);  // fl2va's keyframe rows
  p.references = pipeline::reference_geometry(plan.references);  // ref2va's reference blocks
  if (plan.conditioner) {  // the presentation's vision rows are tagged video, and the tower reads its patches
    p.text_tags = plan.conditioner->presentation.dit_tags;
    p.vision_patches = plan.conditioner->vision_patches();
  }
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

// The partition the workflow runs on (Engine::use_partition): MODEL_DIR's transformer/ or
// transformer_ref/, the release's FL2VA/ or Ref2VA/ transformer; a transformer given as a file is
// the one the user chose.
Status check_partition(const ModelSource& source, const std::string& workflow) {
  if (!source.dir || source.transformer_file) return Status::ok();
  OROCHI_ASSIGN_OR_RETURN(const h3::FolderParts parts, h3::model_folder_parts(*source.dir));
  return parts.partition_folder(workflow).status();
}

// fl2va and ref2va on a checkpoint condition the denoiser on their presentation through the Qwen3-VL
// conditioner (engine/presentation_plan.h), so they take --prompt: a features file carries no
// per-row tags for the pictures' rows. Refused before any weight is read, from check_conditioning.
Status check_workflow_source(const ModelSource& source, const GenerateRequest& r, const std::string& workflow) {
  // The demo has its own encoders; --random-weights makes them on the GPU (and its text rows are random).
  if (workflow == "t2va" || source.demo() || source.random_weights) return check_partition(source, workflow);
  if (r.text_features_file)
    return invalid_argument(workflow + " on a checkpoint takes --prompt: its presentation to the Qwen3-VL "
                            "conditioner carries the pictures' vision tokens (tagged as video rows), which a "
                            "--text-features file cannot say; pass --prompt TEXT instead");
  return check_partition(source, workflow);
}

// ref2va: the references read and normalized by the rules of the model and --ref-size (REF2VA.md
// §1-§3), on the request's canvas; their rows join the layout through the plan request.
Status plan_references(RunPlan& plan, bool demo) {
  const GenerateRequest& r = plan.request;
  OROCHI_RETURN_IF_ERROR(pipeline::video_geometry(r.width, r.height, r.frames).status());
  const pipeline::ReferenceRules rules = reference_rules(r.ref_size, demo);
  OROCHI_ASSIGN_OR_RETURN(plan.references, read_references(r, rules));
  int64_t images = 0, videos = 0, soundtracks = 0, clips = 0;
  for (const pipeline::Ref2vaReference& ref : plan.references) {
    images += ref.kind == pipeline::ReferenceKind::kImage;
    videos += ref.kind == pipeline::ReferenceKind::kVideo;
    soundtracks += ref.kind == pipeline::ReferenceKind::kVideo && ref.has_audio();
    clips += ref.kind == pipeline::ReferenceKind::kAudio;
  }
  plan.notes.push_back("ref2va: " + std::to_string(images) + " image(s) at " +
                       (r.ref_size == RefSize::kMatch ? std::string("the target's area (--ref-size match)")
                                                      : "a " + std::to_string(rules.image_short_edge) +
                                                            " px short edge" + (demo ? " (the demo's 2048)" : "")) +
                       ", " + std::to_string(videos) + " video(s) (" + std::to_string(soundtracks) +
                       " with their soundtrack), " + std::to_string(clips) + " audio clip(s)");
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
  if (conditioner) {  // the presentation to Qwen3-VL: its tokens, the vision rows (tag 0), the tower's input
    const std::vector<int64_t>& tags = conditioner->presentation.dit_tags;
    j["presentation"] = {{"tokens", conditioner->size()},
                         {"vision_rows", std::count(tags.begin(), tags.end(), pipeline::kH3VideoTag)},
                         {"vision_patches", conditioner->vision_patches()},
                         {"images", conditioner->images.grids.size()},
                         {"videos", conditioner->videos.grids.size()}};
  }
  if (memory) {  // its bytes per phase stand beside the measured ones (RunReport::gpu_memory)
    j["fits"] = memory->fits;
    j["streamed_denoiser_blocks"] = std::count(placement.streamed.begin(), placement.streamed.end(), true);
    j["streamed_text_encoder_layers"] =
        std::count(text_placement.streamed.begin(), text_placement.streamed.end(), true);
  }
  return j;
}

Engine::~Engine() = default;

Expected<planner::RequestShape> Engine::shape_of(const RunPlan& plan) const {
  planner::ModelConfigs configs;
  if (configs_) {
    configs = *configs_;
  } else {  // the host models' own configs (the demo, or a folder without text_encoder/)
    configs.transformer = models_.transformer.config;
    configs.video_vae = models_.video_vae.config;
    configs.audio_vae = models_.audio_vae.config;
  }
  return planner::request_shape(configs, plan_request_of(plan));
}

Status Engine::check_conditioning(const ModelSource& source, const GenerateRequest& r) {
  if (r.prompt && r.text_features_file) return invalid_argument("pass --prompt or --text-features, not both");
  if ((source.dir || source.comfy_models) && !r.prompt && !r.text_features_file)
    return invalid_argument("a checkpoint needs conditioning: pass --prompt TEXT, or --text-features FILE "
                            "(prompt_embeds [L, 5120]); without MODEL_DIR the built-in demo model runs");
  if (r.prompt) {
    // The tokenizer and the text encoder's config, before any weight is read.
    OROCHI_ASSIGN_OR_RETURN(const ModelComponents parts, resolve_components(source));
    if (source.demo() && !parts.text_encoder && !parts.tokenizer)
      return invalid_argument("--prompt needs a MODEL_DIR with tokenizer/ and text_encoder/, or --tokenizer DIR and "
                              "--text-encoder FILE (the built-in demo model has no text encoder: it runs on random "
                              "features)");
    if (!parts.tokenizer)
      return not_found("--prompt needs MiniMax-H3's tokenizer: " +
                       (source.comfy_models ? std::string("ComfyUI keeps none in its models/ folder")
                                            : std::string("none given")) +
                       "; pass --tokenizer DIR (the release's tokenizer/ folder, holding tokenizer.json)");
    const std::filesystem::path tokenizer(*parts.tokenizer);
    if (!std::filesystem::is_regular_file(tokenizer) && !std::filesystem::is_regular_file(tokenizer / "tokenizer.json"))
      return not_found((tokenizer / "tokenizer.json").string() + " is missing: --prompt needs the checkpoint's tokenizer");
    if (!parts.text_encoder)
      return not_found("--prompt needs the Qwen3-VL text encoder: " +
                       (source.dir ? *source.dir + " has no text_encoder/ folder"
                                   : source.comfy_models ? std::string("--comfy-models holds none in text_encoders/")
                                                         : std::string("none given")) +
                       "; pass --text-encoder FILE");
    OROCHI_RETURN_IF_ERROR(pipeline::check_text_encoder(*parts.text_encoder, r.text_layer));
  }
  // The references: counts, every file's headers, aspects, lengths, the frame rule (reference_checks.h);
  // then whether this source runs their workflow.
  OROCHI_ASSIGN_OR_RETURN(const ReferenceCheck checked, check_references(r));
  return check_workflow_source(source, r, checked.workflow);
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
  OROCHI_RETURN_IF_ERROR(check_workflow_source(source_, r, plan.workflow));
  if (plan.workflow == "fl2va") {
    const auto t_read = Clock::now();
    OROCHI_RETURN_IF_ERROR(plan_keyframes(plan, demo));
    plan.media_decode_s = seconds_since(t_read);
  }
  if (r.width == 0) r.width = demo ? 320 : 1344;
  if (r.height == 0) r.height = demo ? 192 : 768;
  OROCHI_ASSIGN_OR_RETURN(const pipeline::Sampling sampling, pipeline::resolve_sampling(sampling_of(r), demo ? 8 : 20));
  set_sampling(r, sampling);
  if (!sampling.preset.empty() || !sampling.video_sigmas.empty() || !sampling.audio_sigmas.empty())
    plan.notes.push_back("schedule " + pipeline::describe_sampling(sampling));
  if (r.text_rows == 0) r.text_rows = demo ? 32 : 256;
  plan.on_gpu = on_gpu_;

  // Conditioning, and with it the exact number of text rows L (a presentation with pictures: once
  // they are read, below).
  OROCHI_RETURN_IF_ERROR(check_conditioning(source_, r));
  int64_t max_tokens = 0;
  if (r.prompt) {
    const std::string& tokenizer = *components_.tokenizer;  // check_conditioning found both
    int64_t hidden = 0;
    OROCHI_RETURN_IF_ERROR(
        pipeline::check_text_encoder(*components_.text_encoder, r.text_layer, &max_tokens, &hidden));
    if (hidden != transformer_config_.text_dim)
      return unsupported("the text encoder's hidden size is " + std::to_string(hidden) + " but the transformer reads " +
                         std::to_string(transformer_config_.text_dim) + "-wide features: not one checkpoint's parts");
    if (plan.workflow == "t2va") {
      OROCHI_ASSIGN_OR_RETURN(plan.prompt_ids, pipeline::tokenize_prompt(tokenizer, *r.prompt, max_tokens));
      r.text_rows = plan.prompt_ids.numel();
    }
  } else if (r.text_features_file) {
    OROCHI_ASSIGN_OR_RETURN(plan.text_features,
                            pipeline::load_text_features(*r.text_features_file, transformer_config_.text_dim));
    r.text_rows = plan.text_features.dim(0);
  }
  if (plan.workflow == "ref2va") {
    const auto t_read = Clock::now();
    OROCHI_RETURN_IF_ERROR(plan_references(plan, demo));
    plan.media_decode_s = seconds_since(t_read);
  }
  if (source_.random_weights && plan.workflow != "t2va") {  // random rows of the presentation's length
    OROCHI_ASSIGN_OR_RETURN(r.text_rows, random_presentation_rows(plan));
    plan.notes.push_back("random text rows: " + std::to_string(r.text_rows) + ", the presentation's length");
  }
  if (r.prompt && plan.workflow != "t2va") {
    const auto t_present = Clock::now();
    OROCHI_RETURN_IF_ERROR(plan_presentation(plan, components_, source_.dir, max_tokens));
    plan.presentation_s = seconds_since(t_present);
  }
  OROCHI_ASSIGN_OR_RETURN(plan.shape, shape_of(plan));
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
  p.precision = options_.precision;
  plan.text_placement.device = first_gpu_;
  plan.text_placement.precision = options_.switches.conditioner_precision;
  if (r.prompt && !configs_)
    return not_found("no text encoder config to plan --prompt on the GPU from" +
                     (source_.dir ? ": " + *source_.dir + "/text_encoder/config.json is missing" : std::string()) +
                     "; pass --text-encoder");
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
    in.request = plan_request_of(plan);
    in.gpus.vram_bytes = vram;
    in.gpus.count = options_.gpus;
    in.tiers.peer = false;
    in.tiers.host = options_.gpus == 1;  // several GPUs split the weights instead of streaming them
    in.text_encoder_tiers = planner::TierPolicy{/*peer=*/false, /*host=*/true, in.tiers.staging_slots};
    in.sp = options_.switches.sp;
    in.precision = options_.precision;
    in.fp8_attention = options_.switches.kernels.fp8_attention(options_.precision);
    in.conditioner_precision = options_.switches.conditioner_precision;
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
    if (laid_out.plan.pre_overlap) {  // the planner placed the text encoder on the last GPU, beside the encoders
      plan.pre_overlap = true;
      plan.text_placement.device = first_gpu_ + options_.gpus - 1;
      plan.notes.push_back("the conditioner runs on cuda:" + std::to_string(plan.text_placement.device) +
                           " while the VAE encoders run on the other " + std::to_string(options_.gpus - 1) + " GPU(s)");
    }
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

}  // namespace orochi::engine
