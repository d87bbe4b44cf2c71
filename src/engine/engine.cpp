// Engine::run: a plan executed — the text features, the GPU models kept or made, the workflow's
// pipeline, the report.
#include "engine/engine.h"

#include <algorithm>
#include <chrono>
#include <filesystem>

#include "core/stopwatch.h"
#include "core/host_memory.h"
#include "models/h3/denoiser.h"
#include "models/h3/adaln_curve.h"
#include "models/h3/lora.h"
#include "pipeline/decoders.h"
#include "pipeline/fl2va.h"
#include "pipeline/ref2va.h"
#include "pipeline/finite_check.h"
#include "pipeline/text_features.h"

namespace orochi::engine {
namespace {


bool same_placement(const GpuPlacement& a, const GpuPlacement& b) {
  return a.device == b.device && a.tp == b.tp && a.sp == b.sp && a.streamed == b.streamed && a.slots == b.slots &&
         a.decode_gpus == b.decode_gpus && a.comm_timeout_s == b.comm_timeout_s &&
         run_switches_json(a.switches) == run_switches_json(b.switches);
}

}  // namespace

Expected<Tensor> Engine::text_features(const RunPlan& plan, RunReport& report) {
  const auto t0 = Clock::now();
  Tensor features;
  if (plan.text_features.defined()) {
    features = plan.text_features;
  } else if (plan.conditioner) {  // fl2va / ref2va: the presentation with its pictures
    const std::string text_encoder = *components_.text_encoder;  // plan() checked it
    note(plan.workflow + " presentation of " + std::to_string(plan.conditioner->size()) + " tokens (" +
         std::to_string(plan.conditioner->vision_patches()) + " vision-tower patches) through " +
         std::to_string(plan.request.text_layer) + " text-encoder layers on " + device_);
    if (on_gpu_) {
      OROCHI_ASSIGN_OR_RETURN(features, gpu_backend().encode_presentation(text_encoder, *plan.conditioner,
                                                                          plan.request.text_layer, plan.text_placement));
    } else {
      OROCHI_ASSIGN_OR_RETURN(const pipeline::PromptConditioning c,
                              pipeline::encode_conditioner_inputs_cpu(text_encoder, plan.request.text_layer,
                                                                      *plan.conditioner));
      features = c.features;
    }
    OROCHI_RETURN_IF_ERROR(pipeline::check_finite(features, "the text encoder"));
  } else if (plan.prompt_ids.defined()) {
    const std::string text_encoder = *components_.text_encoder;  // plan() checked it
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

Expected<Tensor> Engine::conditioning(const RunPlan& plan) {
  if (plan.on_gpu != on_gpu_) return Status(ErrorCode::kInternal, "Engine::conditioning: the plan was made by another engine");
  RunReport unused;
  return text_features(plan, unused);
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
  report.demo = source_.demo();
  report.request_index = ++requests_;
  report.load_s = open_load_s_;  // the host weights, read by open(): the first request's
  open_load_s_ = 0;
  report.media_decode_s = plan.media_decode_s;
  report.steps = plan.request.steps;
  report.seed = plan.request.seed;
  report.video_shift = plan.request.video_shift;
  report.audio_shift = plan.request.audio_shift;
  report.preset = plan.request.preset;
  report.video_sigmas = plan.shape.t2va.video_schedule.sigmas;
  report.audio_sigmas = plan.shape.t2va.audio_schedule.sigmas;
  report.plan = plan.summary_json();
  if (transformer_config_.adaln_curve_points > 0)  // a pruned transformer: its AdaLN is an approximation
    report.plan["notes"].push_back(h3::describe_adaln_curve(transformer_config_));
  report.workflow = plan.workflow;
  report.switches = run_switches_json(options_.switches);
  report.precision = precision_name(options_.precision);
  for (const std::string& line : plan.notes) note(line);

  pipeline::T2vaRequest request;
  request.width = plan.request.width;
  request.height = plan.request.height;
  request.frames = plan.request.frames;
  request.steps = plan.request.steps;
  request.seed = plan.request.seed;
  request.video_shift = plan.request.video_shift;
  request.audio_shift = plan.request.audio_shift;
  request.video_sigmas = plan.request.video_sigmas;
  request.audio_sigmas = plan.request.audio_sigmas;
  // fl2va / ref2va: the reference-encode phase first (its encoders are gone before the text
  // encoder), or beside the conditioner on another GPU (RunPlan::pre_overlap).
  report.presentation_s = plan.presentation_s;
  OROCHI_ASSIGN_OR_RETURN(PreConditions pre, pre_conditions(plan, report, progress, cancel));
  EncodedConditions& conditions = pre.encoded;
  report.load_s += conditions.load_s;
  report.encoders_load_s = conditions.load_s;
  request.condition_latents = std::move(conditions.video_latents);
  request.condition_audio_rows = std::move(conditions.audio_rows);
  request.text_features = std::move(pre.text_features);
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
  // The conditions are in the request: every workflow runs t2va's stages from here.
  auto run_workflow = [&](models::Denoiser& denoiser, pipeline::VideoDecoder& video, pipeline::AudioDecoder& audio) {
    return pipeline::run_t2va(denoiser, video, audio, request, plan.shape.t2va, run_options);
  };
  OROCHI_RETURN_IF_ERROR(use_loras(plan.request, report));       // another LoRA set: merged anew
  OROCHI_RETURN_IF_ERROR(use_partition(plan.workflow, report));  // ref2va: transformer_ref/
  report.loras = lora_report();
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
    if (!r && r.status().code() == ErrorCode::kCancelled && plan.keep_denoiser_weights) {
      // A cancel stops between steps or stages, with the device idle: the model stays loaded for
      // the next request (a server's next job) and only this request's memory goes.
      gpu_->denoiser->release_request();
      return r;
    }
    // A failed run may leave device state half-done, and a released denoiser has no weights left:
    // the next request makes the models anew.
    if (!r || !plan.keep_denoiser_weights) gpu_.reset();
    return r;
  };
  Expected<pipeline::T2vaResult> result = run_models();
  if (!result) return result.status();
  result->times.condition_encode_s = conditions.encode_s;
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
