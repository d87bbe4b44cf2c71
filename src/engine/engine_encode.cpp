// Engine::encode_conditions: the reference-encode phase of fl2va and ref2va, the run's first (the
// plan's phases: reference encode, text encoder, denoiser, decode, each freeing its memory before
// the next). The encoders run where the engine runs: on the CPU over the host weights, on a GPU
// through the backend (the host weights uploaded, or random ones generated there for
// --random-weights), sized by the plan's own encode work (planner/encode_memory.h).
#include <algorithm>

#include "core/format.h"
#include "core/stopwatch.h"
#include "engine/engine.h"
#include "pipeline/fl2va.h"
#include "pipeline/ref2va.h"
#include "planner/encode_memory.h"

namespace orochi::engine {
namespace {

// The random encoders' seeds beside the random denoiser's (kDemoWeightSeed) and decoders' (+1, +2).
constexpr uint64_t kRandomVideoEncoderSeed = kDemoWeightSeed + 3;
constexpr uint64_t kRandomAudioEncoderSeed = kDemoWeightSeed + 4;

}  // namespace

Expected<EncodedConditions> Engine::encode_conditions(const RunPlan& plan, const ProgressCallback& progress,
                                                      const std::atomic<bool>* cancel) {
  EncodedConditions out;
  const bool fl2va = !plan.keyframes.empty(), ref2va = !plan.references.empty();
  if (!fl2va && !ref2va) return out;
  if (plan.on_gpu != on_gpu_) return Status(ErrorCode::kInternal, "encode_conditions: the plan was made by another engine");
  const auto t_load = Clock::now();
  const bool random = source_.random_weights;  // no host weights: the GPU generates them
  if (!random && !models_.video_encoder) {  // a checkpoint's encoder, read when first needed
    if (!components_.vae) return Status(ErrorCode::kInternal, plan.workflow + ": this engine has no video VAE encoder");
    OROCHI_ASSIGN_OR_RETURN(models_.video_encoder, pipeline::load_video_encoder(*components_.vae, models_));
  }
  if (ref2va && !random && !models_.audio_encoder) {  // likewise the audio VAE's encoder
    if (!components_.audio_vae) return Status(ErrorCode::kInternal, "ref2va: this engine has no audio VAE encoder");
    OROCHI_ASSIGN_OR_RETURN(h3_audio::AudioEncoderWeights audio, h3_audio::load_encoder(*components_.audio_vae));
    if (audio.config.latent_channels != models_.audio_vae.config.latent_channels)
      return unsupported(*components_.audio_vae + ": the audio encoder makes " +
                         std::to_string(audio.config.latent_channels) + " latent channels, the decoder reads " +
                         std::to_string(models_.audio_vae.config.latent_channels));
    models_.audio_encoder = std::move(audio);
  }
  if (random && !configs_) return Status(ErrorCode::kInternal, "random weights without the released configs");

  std::unique_ptr<pipeline::VideoEncoder> video;
  std::unique_ptr<pipeline::AudioEncoder> audio;
  if (!on_gpu_) {
    video = std::make_unique<pipeline::CpuVideoEncoder>(*models_.video_encoder);
    if (ref2va) audio = std::make_unique<pipeline::CpuAudioEncoder>(*models_.audio_encoder);
  } else {
    // A model kept from the last request stays beside the encoders only when the plan's encode
    // phase fits next to its weights; otherwise it makes room (and the denoiser phase uploads it).
    if (gpu_ && plan.memory) {
      const planner::PhasePlan* encode = plan.memory->phase("reference encode");
      const planner::PhasePlan* denoise = plan.memory->phase("denoiser");
      OROCHI_ASSIGN_OR_RETURN(const uint64_t vram, gpu_backend().memory_total(first_gpu_));
      if (encode && denoise && !encode->gpus.empty() && !denoise->gpus.empty() &&
          encode->gpus[0].total() + denoise->gpus[0].pool_bytes(planner::PoolKind::kWeights) > vram) {
        note("the kept denoiser makes room for the reference encode");
        gpu_.reset();
      }
    }
    planner::ModelConfigs configs;
    configs.video_vae = random ? configs_->video_vae : models_.video_encoder->config;
    if (ref2va) configs.audio_vae = random ? configs_->audio_vae : models_.audio_encoder->config;
    planner::PlanRequest request;  // what the encode phase was planned from
    request.keyframes = plan.shape.t2va.shape.keyframes;
    request.references = plan.shape.t2va.shape.references;
    OROCHI_ASSIGN_OR_RETURN(const planner::EncodeWork work, planner::encode_work(configs, request, plan.shape.geometry));
    if (work.visuals.empty()) return invalid_argument(plan.workflow + " needs a picture or a video to encode");
    EncoderPlacement where;
    where.device = first_gpu_;
    OROCHI_ASSIGN_OR_RETURN(where.first_tile, planner::video_encoder_tile(configs, work.visuals.front()));
    where.audio_samples = planner::audio_encoder_samples(work);
    // Every GPU of the run holds the encoders (the plan's encode phase), but the conditioner's when
    // it runs at the same time.
    where.gpus = plan.pre_overlap ? options_.gpus - 1 : options_.gpus;
    OROCHI_ASSIGN_OR_RETURN(video, gpu_backend().video_encoder(configs.video_vae, random ? nullptr : &*models_.video_encoder,
                                                               where, kRandomVideoEncoderSeed));
    if (ref2va) {
      OROCHI_ASSIGN_OR_RETURN(audio, gpu_backend().audio_encoder(configs.audio_vae,
                                                                 random ? nullptr : &*models_.audio_encoder, where,
                                                                 kRandomAudioEncoderSeed));
    }
  }
  out.load_s = seconds_since(t_load);
  out.device = video->device_name();

  const auto t_encode = Clock::now();
  if (fl2va) {
    OROCHI_ASSIGN_OR_RETURN(out.video_latents, pipeline::encode_keyframes(*video, plan.keyframes, progress, cancel));
  } else {
    OROCHI_ASSIGN_OR_RETURN(pipeline::Ref2vaConditions c,
                            pipeline::encode_ref2va_references(*video, *audio, plan.references, progress, cancel));
    out.video_latents = std::move(c.video_latents);
    out.audio_rows = std::move(c.audio_rows);
  }
  out.encode_s = seconds_since(t_encode);
  note(format_printf("%s: %zu input(s) through the VAE encoders on %s in %.3f s (weights %.3f s)", plan.workflow.c_str(),
                     fl2va ? plan.keyframes.size() : plan.references.size(), out.device.c_str(), out.encode_s,
                     out.load_s));
  return out;  // the encoders go here: on a GPU, all their memory before the next phase
}

}  // namespace orochi::engine
