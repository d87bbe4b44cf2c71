// `orochi generate [MODEL_DIR] [options]`: a MiniMax-H3 t2va run that writes an MP4 with its
// soundtrack and a stage report next to it. Without MODEL_DIR it runs the built-in tiny demo model
// (random weights) on the CPU, so a first-time user gets a file without a checkpoint.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <memory>
#include <optional>
#include <string>

#include "apps/args.h"
#include "apps/commands.h"
#include "apps/format.h"
#include "apps/generate_options.h"
#include "apps/generate_report.h"
#include "apps/gpu_t2va.h"
#include "apps/host_memory.h"
#include "apps/progress.h"
#include "io/mp4.h"
#include "io/output_file.h"
#include "io/video_frames.h"
#include "models/h3/denoiser.h"
#include "models/h3/summary.h"
#include "pipeline/decoders.h"
#include "planner/parallel_choice.h"
#include "planner/plan_memory.h"
#include "pipeline/prompt_features.h"
#include "pipeline/t2va.h"
#include "pipeline/t2va_models.h"
#include "pipeline/text_features.h"
#include "weights/model_folder.h"

namespace orochi::apps {
namespace {

using Clock = std::chrono::steady_clock;
double seconds_since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

constexpr uint64_t kDemoWeightSeed = 20261129;

// What a GPU run is planned to look like before any weight is read.
struct GpuRunPlan {
  std::optional<planner::MemoryPlan> memory;        // none for the demo and unplannable folders
  std::optional<planner::ParallelDegrees> degrees;  // --gpus > 1: how they share the denoiser
};

// The text encoder runs on the run's first GPU: its layers the plan puts in pinned host RAM stream
// from there; unplanned runs keep every layer resident.
Expected<TextEncoderPlacement> place_text_encoder(const GenerateOptions& o, const GpuRunPlan& run) {
  TextEncoderPlacement p;
  p.device = o.gpu_index();
  if (!run.memory) return p;
  OROCHI_ASSIGN_OR_RETURN(p.streamed, planner::streamed_text_encoder_layers(*run.memory));
  const planner::PlanInput& in = run.memory->input;
  p.slots = in.text_encoder_tiers.value_or(in.tiers).staging_slots;
  const auto count = std::count(p.streamed.begin(), p.streamed.end(), true);
  if (count > 0 && !o.quiet)
    std::fprintf(stderr, "orochi generate: %lld of %lld text-encoder layers stream from pinned host RAM (the plan)\n",
                 static_cast<long long>(count), static_cast<long long>(p.streamed.size()));
  return p;
}

// --prompt: tokenize, then the text encoder on the run's device; its memory is freed before the
// denoiser's is used.
Expected<Tensor> encode_prompt(const GenerateOptions& o, const h3::H3Config& transformer, const GpuRunPlan& run) {
  const std::string text_encoder = *o.model_dir + "/text_encoder";
  int64_t max_tokens = 0, hidden = 0;
  OROCHI_RETURN_IF_ERROR(pipeline::check_text_encoder(text_encoder, o.text_layer, &max_tokens, &hidden));
  if (hidden != transformer.text_dim)
    return unsupported("the text encoder's hidden size is " + std::to_string(hidden) + " but the transformer reads " +
                       std::to_string(transformer.text_dim) + "-wide features: not one checkpoint's parts");
  OROCHI_ASSIGN_OR_RETURN(const Tensor ids, pipeline::tokenize_prompt(*o.model_dir + "/tokenizer", *o.prompt, max_tokens));
  if (!o.quiet)
    std::fprintf(stderr, "orochi generate: prompt of %lld tokens through %lld text-encoder layers on %s\n",
                 static_cast<long long>(ids.numel()), static_cast<long long>(o.text_layer), o.device.c_str());
  if (!o.on_gpu()) return pipeline::encode_prompt_cpu(text_encoder, ids, o.text_layer);
  OROCHI_ASSIGN_OR_RETURN(const TextEncoderPlacement placement, place_text_encoder(o, run));
  return gpu_encode_prompt(text_encoder, ids, o.text_layer, placement);
}

// A GPU run is planned from the configs before any weight is read (planner/), against the GPU's
// memory as the driver reports it, and refused with the plan's numbers when it cannot fit. On one
// GPU the denoiser blocks the plan puts in pinned host RAM stream from there at run time; on
// several, the one-GPU figures choose the layout (--parallel) and the layout's plan must fit. The
// text encoder runs on the first GPU alone, so its layers may stream from host RAM either way.
// Without a prompt the text-encoder phase does not run (0 layers planned); a folder without
// text_encoder/ then has no full set of configs to plan from, and the run goes unplanned.
Expected<GpuRunPlan> plan_gpu_run(const GenerateOptions& o) {
  if (o.model_dir && !o.prompt && !std::filesystem::exists(*o.model_dir + "/text_encoder/config.json"))
    return GpuRunPlan{};
  planner::PlanInput in;
  OROCHI_ASSIGN_OR_RETURN(in.models, planner::load_model_configs(o.model_dir ? *o.model_dir : "h3"));
  in.models.text_layers = o.prompt ? o.text_layer : 0;
  in.request.width = o.width;
  in.request.height = o.height;
  in.request.frames = o.frames;
  in.request.text_rows = o.text_rows;  // an estimate for a prompt or a features file
  in.request.steps = o.steps;
  OROCHI_ASSIGN_OR_RETURN(in.gpus.vram_bytes, gpu_memory_total(o.gpu_index()));
  in.tiers.peer = false;
  in.tiers.host = o.gpus == 1;  // several GPUs split the weights instead of streaming them
  in.text_encoder_tiers = planner::TierPolicy{/*peer=*/false, /*host=*/true, in.tiers.staging_slots};
  in.gpus.count = static_cast<int>(o.gpus);
  if (o.gpus > 1 && o.parallel == "auto") {  // the link decides between the layout and one GPU
    OROCHI_ASSIGN_OR_RETURN(in.gpus.peer_gbps, gpu_link_gbps(o.gpu_index(), static_cast<int>(o.gpus)));
    if (!o.quiet)
      std::fprintf(stderr, "orochi generate: GPU link measured at %.0f GB/s (GPU %d to the next %lld)\n",
                   in.gpus.peer_gbps, o.gpu_index(), static_cast<long long>(o.gpus - 1));
  }
  OROCHI_ASSIGN_OR_RETURN(planner::LayoutPlan laid_out, planner::plan_for_gpus(in, o.parallel));
  planner::MemoryPlan plan = std::move(laid_out.plan);
  GpuRunPlan run;
  if (o.gpus > 1) run.degrees = laid_out.degrees;
  OROCHI_RETURN_IF_ERROR(planner::check_fits(plan));
  // Before any weight is read: only the denoiser's blocks and the text encoder's layers (from host
  // RAM) stream at run time.
  OROCHI_RETURN_IF_ERROR(planner::streamed_denoiser_blocks(plan, in.models.transformer.num_layers).status());
  OROCHI_RETURN_IF_ERROR(planner::streamed_text_encoder_layers(plan).status());
  run.memory = std::move(plan);
  return run;
}

// Where the GPU run goes: the streamed blocks on one GPU, the layout on several.
Expected<GpuPlacement> place_on_gpus(const GenerateOptions& o, const h3::H3Config& config, const GpuRunPlan& run) {
  GpuPlacement p;
  p.device = o.gpu_index();
  p.comm_timeout_s = o.comm_timeout_s;
  p.decode_gpus = static_cast<int>(o.gpus);  // the decode shares its chunks among all of them
  if (run.memory) {
    OROCHI_ASSIGN_OR_RETURN(p.streamed, planner::streamed_denoiser_blocks(*run.memory, config.num_layers));
    p.slots = run.memory->input.tiers.staging_slots;
    const auto count = std::count(p.streamed.begin(), p.streamed.end(), true);
    if (count > 0 && !o.quiet)
      std::fprintf(stderr, "orochi generate: %lld of %lld denoiser blocks stream from pinned host RAM (the plan)\n",
                   static_cast<long long>(count), static_cast<long long>(config.num_layers));
  }
  if (o.gpus == 1) return p;
  planner::ParallelDegrees d;
  if (run.degrees) {
    d = *run.degrees;
  } else {  // unplanned (the demo): the heads decide
    OROCHI_ASSIGN_OR_RETURN(const uint64_t vram, gpu_memory_total(o.gpu_index()));
    OROCHI_ASSIGN_OR_RETURN(d, planner::choose_parallel(o.parallel, config, static_cast<int>(o.gpus),
                                                        static_cast<double>(vram) / (1 << 30), 0, 0));
  }
  p.tp = d.tp;
  p.sp = d.sp;
  if (!o.quiet) std::fprintf(stderr, "orochi generate: denoiser on %d of %lld GPUs, tp %d x sp %d (%s)\n", d.tp * d.sp,
                             static_cast<long long>(o.gpus), d.tp, d.sp, d.why.c_str());
  return p;
}

}  // namespace

int run_generate(const std::vector<std::string>& argv) {
  for (const std::string& a : argv)
    if (a == "--help" || a == "-h") {
      std::fputs(kGenerateUsage, stdout);
      return 0;
    }
  const auto t_start = Clock::now();
  Expected<GenerateOptions> opts = parse_generate_options(argv);
  if (!opts) return fail(opts.status());
  if (Status s = check_generate_request(*opts); !s.is_ok()) return fail(s);
  GpuRunPlan gpu_plan;  // the demo's tiny models need none
  if (opts->on_gpu() && (opts->random_weights || opts->model_dir)) {
    Expected<GpuRunPlan> planned = plan_gpu_run(*opts);
    if (!planned) return fail(planned.status());
    gpu_plan = std::move(planned).value();
  }
  const std::optional<planner::MemoryPlan>& memory_plan = gpu_plan.memory;

  // 1. Models on the host (a checkpoint or the demo); --random-weights makes them on the GPU instead.
  const auto t_load = Clock::now();
  pipeline::T2vaModels models;
  h3::H3Config transformer_config;  // the released one, for --random-weights
  if (opts->model_dir) {
    // A GPU run keeps the denoiser's weights as stored (bf16 views of the files): its upload converts.
    Expected<pipeline::T2vaModels> loaded = pipeline::load_t2va_models(*opts->model_dir, opts->on_gpu());
    if (!loaded) return fail(loaded.status());
    models = std::move(loaded).value();
  } else if (!opts->random_weights) {
    models = pipeline::demo_t2va_models(kDemoWeightSeed);
  } else {
    models.name = "MiniMax-H3 released shapes with random weights (generated on the GPU, not a checkpoint)";
  }
  if (!opts->random_weights) transformer_config = models.transformer.config;
  GenerateReport report;
  report.model = models.name;
  report.demo = models.demo;
  report.output = opts->out;
  if (!opts->quiet)
    std::fprintf(stderr, "orochi generate: %s%s\n", models.name.c_str(),
                 models.demo || opts->random_weights ? " -- the frames and sound are noise-like by design" : "");

  // 2. Conditioning and the request's plan (sizes every GPU buffer).
  const auto t_text = Clock::now();
  pipeline::T2vaRequest request;
  request.width = opts->width;
  request.height = opts->height;
  request.frames = opts->frames;
  request.steps = opts->steps;
  request.seed = static_cast<uint64_t>(opts->seed);
  request.video_shift = opts->video_shift;
  request.audio_shift = opts->audio_shift;
  if (opts->text_features) {
    Expected<Tensor> features = pipeline::load_text_features(*opts->text_features, transformer_config.text_dim);
    if (!features) return fail(features.status());
    request.text_features = std::move(features).value();
  } else if (opts->prompt) {
    Expected<Tensor> features = encode_prompt(*opts, transformer_config, gpu_plan);
    if (!features) return fail(features.status());
    request.text_features = std::move(features).value();
  } else {
    request.text_features = pipeline::random_text_features(opts->text_rows, transformer_config.text_dim, request.seed);
  }
  report.text_s = seconds_since(t_text);
  report.request = request;
  Expected<pipeline::T2vaPlan> plan = pipeline::plan_t2va(transformer_config, request);
  if (!plan) return fail(plan.status());

  // 3. The denoiser and decoders on the chosen device, then denoise and decode, with progress.
  std::unique_ptr<h3::Denoiser> denoiser;
  std::unique_ptr<pipeline::VideoDecoder> video_decoder;
  std::unique_ptr<pipeline::AudioDecoder> audio_decoder;
  if (opts->on_gpu()) {
    Expected<GpuPlacement> placement = place_on_gpus(*opts, transformer_config, gpu_plan);
    if (!placement) return fail(placement.status());
    Expected<GpuT2va> gpu = opts->random_weights
                                ? gpu_t2va_random(transformer_config, *placement, *plan, kDemoWeightSeed)
                                : gpu_t2va_from_host(models, *placement, *plan);
    if (!gpu) return fail(gpu.status());
    denoiser = std::move(gpu->denoiser);
    video_decoder = std::move(gpu->video);
    audio_decoder = std::move(gpu->audio);
  } else {
    denoiser = std::make_unique<h3::CpuDenoiser>(models.transformer);
    video_decoder = std::make_unique<pipeline::CpuVideoDecoder>(models.video_vae);
    audio_decoder = std::make_unique<pipeline::CpuAudioDecoder>(models.audio_vae);
  }
  report.load_s = seconds_since(t_load) - report.text_s;
  report.device = denoiser->device_name();
  std::optional<ProgressLine> line;
  std::string line_stage;
  uint64_t used_denoise = 0, used_decode = 0;  // device bytes in use at the end of each phase
  auto on_progress = [&](const pipeline::T2vaProgress& p) {
    if (opts->on_gpu() && p.done == p.total) {
      if (p.stage == "denoise") used_denoise = gpu_memory_used(opts->gpu_index());
      if (p.stage == "video decode") used_decode = gpu_memory_used(opts->gpu_index());
    }
    if (line_stage != p.stage) {
      line.emplace(p.stage, p.stage == "denoise" ? "step" : (p.stage == "video decode" ? "chunk" : "pass"),
                   opts->quiet);
      line_stage = p.stage;
    }
    line->update(p.done, p.total, p.seconds);
  };
  Expected<pipeline::T2vaResult> result =
      pipeline::run_t2va(*denoiser, *video_decoder, *audio_decoder, request, on_progress);
  if (!result) return fail(result.status());
  if (opts->on_gpu()) {
    nlohmann::json gpu = gpu_memory_report(opts->gpu_index());
    gpu["used_bytes_end_of_denoise"] = used_denoise;
    gpu["used_bytes_end_of_video_decode"] = used_decode;
    if (memory_plan) {
      for (const planner::PhasePlan& phase : memory_plan->phases)
        if (!phase.gpus.empty()) gpu["planned_bytes"][phase.name] = phase.gpus[0].total();
    }
    report.gpu_memory.push_back(std::move(gpu));
    for (int64_t i = 1; i < opts->gpus; ++i) report.gpu_memory.push_back(gpu_memory_report(opts->gpu_index() + static_cast<int>(i)));
  }

  // 4. MP4 (H.264 + AAC), then the report next to it.
  const auto t_encode = Clock::now();
  Expected<io::VideoFrames> video = io::video_from_planar_floats(result->frames);
  if (!video) return fail(video.status());
  Expected<io::AudioTrack> audio = io::audio_from_planar_floats(result->waveform, result->sample_rate);
  if (!audio) return fail(audio.status());
  io::Mp4Options mp4;
  mp4.crf = static_cast<int>(opts->crf);
  if (Status s = io::write_mp4(opts->out, *video, &*audio, mp4); !s.is_ok()) return fail(s);
  report.encode_s = seconds_since(t_encode);
  report.result = std::move(result).value();
  report.result.frames = Tensor();
  report.result.waveform = Tensor();
  report.host_peak_bytes = peak_rss_bytes();
  report.e2e_s = seconds_since(t_start);

  const nlohmann::json j = report_json(report);
  const std::string report_path = report_path_for(opts->out);
  const Status written = io::write_file_atomically(report_path, [&](std::ostream& os) {
    os << j.dump(2) << "\n";
    return os ? Status::ok() : io_error("writing " + report_path + " failed");
  });
  if (!written.is_ok()) return fail(written);
  if (opts->json) {
    std::printf("%s\n", j.dump(2).c_str());
  } else {
    std::printf("wrote %s (%lldx%lld, %lld frames at 24 fps, %.2f s, stereo AAC) and %s\n", opts->out.c_str(),
                static_cast<long long>(video->width), static_cast<long long>(video->height),
                static_cast<long long>(video->frames), video->duration_seconds(), report_path.c_str());
    std::printf("%s", report_text(report).c_str());
  }
  return 0;
}

}  // namespace orochi::apps
