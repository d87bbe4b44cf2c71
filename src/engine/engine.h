// The engine: the one place that opens a model, plans a request and runs it. `orochi generate`,
// `plan`, `bench` and `forward` (and the server to come) are its clients: options in, reports out.
//
//   auto engine = Engine::open(ModelSource{.dir = "H3"}, EngineOptions{.device = "cuda", .gpus = 2});
//   auto plan = (*engine)->plan(GenerateRequest{.prompt = "..."});     // before any weight moves
//   auto result = (*engine)->run(*plan, on_progress, &cancel);          // frames, waveform, report
//   ... more requests on the same engine: the model stays loaded (the report's load is ~0).
//
// open() checks the options and the devices (a missing GPU, --gpus beyond the visible count) and
// reads the host weights once. plan() fills the request's defaults, checks it, tokenizes a prompt,
// and on a GPU plans memory per phase and GPU and chooses the parallel layout (the planner is the
// one decider); a request that cannot fit is refused there. run() executes the plan.
#pragma once

#include <atomic>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "core/status.h"
#include "engine/engine_options.h"
#include "engine/forward_request.h"
#include "engine/generate_request.h"
#include "engine/gpu_backend.h"
#include "engine/model_components.h"
#include "engine/model_family.h"
#include "engine/run_plan.h"
#include "engine/run_report.h"
#include "models/h3/lora.h"
#include "pipeline/t2va.h"
#include "pipeline/t2va_models.h"
#include "planner/plan_request.h"

namespace orochi::engine {

// The seed of the built-in demo model's random weights (pipeline::demo_t2va_models).
inline constexpr uint64_t kDemoWeightSeed = 20261129;

using Progress = pipeline::T2vaProgress;
using ProgressCallback = pipeline::T2vaProgressCallback;

struct RunResult {
  pipeline::T2vaResult result;  // frames f32 [F, 3, H, W] in [0, 1], waveform f32 [2, N] at 32 kHz
  RunReport report;             // everything but the caller's own stages (encode, e2e, output)
};

// The reference-encode phase's output (Engine::encode_conditions): what the packed layout's
// conditioning rows are made of.
struct EncodedConditions {
  std::vector<Tensor> video_latents;  // fl2va keyframes (packed order) or ref2va images and videos (request
                                      // order): normalized f32 [C, T, h, w]
  std::vector<Tensor> audio_rows;     // ref2va soundtracks and clips, request order: normalized f32 [2a, C_a]
  std::string device;                 // where the encoders ran ("CPU", "cuda:0")
  double load_s = 0;                  // the encoders' weights read, uploaded or generated
  double encode_s = 0;                // the encodes
};

class Engine {
 public:
  static Expected<std::unique_ptr<Engine>> open(const ModelSource& source, const EngineOptions& options);
  // The request's conditioning against the source, from the files' presence and configs alone (no
  // weight read): plan() runs it, and a client may run it before open() to refuse sooner.
  static Status check_conditioning(const ModelSource& source, const GenerateRequest& request);
  ~Engine();

  Expected<RunPlan> plan(const GenerateRequest& request) const;
  // The plan's keyframes or references through the VAE encoders on the engine's device (run()'s
  // first phase; empty for t2va). On a GPU the encoders are made for the plan's encode phase and
  // freed, weights and activations, before this returns. `progress` sees "keyframe encode" or
  // "reference encode" once per input.
  Expected<EncodedConditions> encode_conditions(const RunPlan& plan, const ProgressCallback& progress = nullptr,
                                                const std::atomic<bool>* cancel = nullptr);
  // The plan's text features alone, f32 [L, text_dim], as run() makes them: the conditioner over the
  // prompt or its presentation with the pictures (on the engine's device), a features file's rows,
  // or the demo's random rows.
  Expected<Tensor> conditioning(const RunPlan& plan);
  // `cancel` set (a signal, a server's cancel): kCancelled at the next step or stage.
  Expected<RunResult> run(const RunPlan& plan, const ProgressCallback& progress = nullptr,
                          const std::atomic<bool>* cancel = nullptr);

  // One denoiser forward with random inputs on the engine's device (the CPU reference; a GPU engine
  // says to use `orochi bench dit`). Works on an engine opened with a transformer folder alone.
  Expected<ForwardResult> forward(const ForwardRequest& request);
  // The forward request's own checks (timesteps, canvas, frames), before any weight is read.
  static Status check_forward(const ForwardRequest& request);

  const std::string& model_name() const { return models_.name; }
  const ModelFamily& family() const { return *family_; }
  bool demo() const { return source_.demo(); }
  bool on_gpu() const { return on_gpu_; }
  const std::string& device() const { return device_; }
  const EngineOptions& options() const { return options_; }
  // The transformer's config (the released one for random weights).
  const h3::H3Config& transformer_config() const { return transformer_config_; }

 private:
  Engine() = default;
  void note(const std::string& line) const;
  Expected<planner::RequestShape> shape_of(const RunPlan& plan) const;
  Status plan_gpu(RunPlan& plan) const;
  Status check_cpu_request(RunPlan& plan) const;
  Expected<Tensor> text_features(const RunPlan& plan, RunReport& report);
  // The reference encode and the text features, one after the other or at once (RunPlan::pre_overlap;
  // engine_pre.cpp); the report gets text_s and, at once, the pair's wall time.
  struct PreConditions {
    EncodedConditions encoded;
    Tensor text_features;
  };
  Expected<PreConditions> pre_conditions(const RunPlan& plan, RunReport& report, const ProgressCallback& progress,
                                         const std::atomic<bool>* cancel);
  Status ensure_gpu_models(const RunPlan& plan, RunReport& report);
  // source_.loras into models_.transformer (mapped for `partition`), recorded in loras_.
  Status merge_loras(h3::LoraPartition partition = h3::LoraPartition::kTransformer);
  // The denoiser partition the workflow runs (engine_partition.cpp).
  Status use_partition(const std::string& workflow, RunReport& report);
  // The request's LoRA set (engine_loras.cpp): when it differs from the merged one (file contents
  // and strengths, in order), the base weights are read again and the set merged anew (the GPU
  // models rebuilt); before use_partition, which does that read for MODEL_DIR's partitions.
  Status use_loras(const GenerateRequest& request, RunReport& report);
  // loras_ for a request's report: each with its content hash and whether it was merged for an
  // earlier request ("cached", merge_s 0).
  std::vector<nlohmann::json> lora_report() const;

  ModelSource source_;
  mutable std::mutex note_mutex_;  // the conditioner's thread notes too (pre_conditions)
  const ModelFamily* family_ = nullptr;
  EngineOptions options_;
  std::string device_;  // "cpu" or "cuda:N"
  bool on_gpu_ = false;
  int first_gpu_ = 0;
  ModelComponents components_;           // where each part came from (tokenizer, text encoder: read per request)
  pipeline::T2vaModels models_;           // host weights (none for random weights)
  h3::H3Config transformer_config_;
  std::optional<planner::ModelConfigs> configs_;  // the four configs a GPU run is planned from
  double open_load_s_ = 0;   // reported by the first request
  std::vector<nlohmann::json> loras_;  // the merged LoRAs, for every request's report
  // The LoRA sets (engine_loras.cpp): those open() merged (a request without its own list runs them),
  // the merged set's key (none: unknown, read the base again), whether the last request found it
  // merged, and each file's content hash by path (kept while its size and time stay).
  std::optional<std::vector<LoraSource>> opened_loras_;
  std::optional<std::string> merged_lora_key_;
  bool loras_cached_ = false;
  struct FileHash {
    uint64_t size = 0;
    int64_t mtime = 0;
    std::string hash;
  };
  std::map<std::string, FileHash> lora_hashes_;
  int64_t requests_ = 0;
  // The partition of MODEL_DIR models_.transformer holds: "transformer" (t2va, fl2va) or
  // "transformer_ref" (ref2va); empty while none is loaded.
  std::string partition_ = "transformer";
  // The GPU models, kept between requests while the placement stays the same.
  std::unique_ptr<GpuT2va> gpu_;
  GpuPlacement gpu_placement_;
};

}  // namespace orochi::engine
