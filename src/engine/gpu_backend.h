// What the engine asks of a GPU backend: the devices, their memory and link, and the GPU models of
// a run. The CUDA backend (src/engine/cuda/) implements it in a CUDA build; src/engine/no_gpu/
// otherwise, where every device count is 0 and every model request says there is no GPU. The
// backend registers itself by being linked (CMakeLists.txt picks the folder): nothing above the
// engine tests for CUDA.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "core/status.h"
#include "core/tensor.h"
#include "engine/engine_options.h"
#include "engine/run_switches.h"
#include "models/h3/denoiser.h"
#include "models/h3_video_vae/encoder_memory.h"
#include "pipeline/decoders.h"
#include "pipeline/encoders.h"
#include "pipeline/ref2va_layout.h"
#include "pipeline/t2va.h"
#include "pipeline/t2va_models.h"
#include "pipeline/vision_prompt.h"

namespace orochi::engine {

// Where a GPU run goes: the first GPU (decoders, text encoder) and how tp x sp GPUs from it on
// share the denoiser; from the run's plan.
struct GpuPlacement {
  int device = 0;
  int tp = 1, sp = 1;
  int comm_timeout_s = 60;
  std::vector<bool> streamed;  // denoiser blocks the plan streams from pinned host RAM (one GPU)
  int slots = 2;
  int decode_gpus = 1;         // GPUs from `device` on that share the video decode's chunks
  RunSwitches switches;
  Precision precision = Precision::kBf16;  // the denoiser blocks' linears (--precision)
};

// The GPU models of a t2va run behind the pipeline's interfaces. The denoiser keeps its weights
// between requests (Denoiser::fit_request reserves a larger request arena when one comes); the
// decoders are made when their phase starts and freed when it ends.
struct GpuT2va {
  std::unique_ptr<models::Denoiser> denoiser;
  std::unique_ptr<pipeline::VideoDecoder> video;
  std::unique_ptr<pipeline::AudioDecoder> audio;
  std::string device_name;
};

// Where the reference-encode phase runs (fl2va keyframes, ref2va references) and what its encoders
// are sized for, as the plan's encode phase counts them (planner/encode_memory.h).
struct EncoderPlacement {
  int device = 0;
  h3vae::EncoderTileShape first_tile;  // the video encoder's first input's; each later input refits it
  int64_t audio_samples = 0;           // the longest sound per channel, padded to the hop; 0: no audio encoder
  int gpus = 1;  // GPUs from `device` on that share a video's clips (h3vae::encode_moments_split; bit-identical)
};

// Where the text encoder runs and where its layers live meanwhile (the plan's text-encoder phase):
// on `device`, each layer resident or, when `streamed[i]`, kept in pinned host RAM and copied
// through `slots` staging slots just in time. The embedding table stays in host RAM.
struct TextEncoderPlacement {
  int device = 0;
  std::vector<bool> streamed;  // per loaded layer; empty: every layer resident
  int slots = 2;
  Precision precision = Precision::kBf16;  // the text stack's linears (--set conditioner-precision)
};

// `orochi bench dit`: the denoiser forward with random weights of the released shapes.
struct BenchDitOptions {
  std::string res = "480p";
  int64_t width = 832, height = 480, frames = 124, text_rows = 256, layers = 50;
  int64_t warmup = 2, iters = 5, seed = 1;
  int device = 0, gpus = 1;
  std::string parallel = "auto";
  int comm_timeout_s = 60;
  std::optional<double> vram_per_gpu_gib;  // stream the blocks the planner places off a GPU this size
  std::string tier = "host";               // where they stream from: host or peer
  int slots = 2;
  bool profile = false;
  std::string dump_outputs;  // non-empty: write the last forward's inputs and outputs there
  std::vector<LoraSource> loras;  // merged on the GPU into the random weights, in order
  Precision precision = Precision::kBf16;  // the blocks' linears: bf16, or fp8 / int8 quantized at load
  // ref2va: reference blocks packed before the target (parse_bench_references), in order; empty: t2va.
  std::vector<pipeline::ReferenceGeometry> references;
  std::string references_spec;  // as given, for the report
  RunSwitches switches;
  std::function<void(const std::string&)> on_note;
};

// `bench dit --refs LIST`: comma-separated reference blocks by their encoded pixel sizes, for timing
// the denoiser at ref2va lengths without media: `image:WxH` (an encode size, multiples of 32, e.g.
// 2048x3072 for a 2:3 picture at the 2048 short edge), `video:WxHxF` (F frames on a WxH canvas,
// multiples of 32, snapped down to 17n + 5 as the encoder does) with `+audio` for its soundtrack
// (F / 24 s at 32 kHz), `audio:SECONDS` (a clip). The latents follow pipeline/reference's rules.
Expected<std::vector<pipeline::ReferenceGeometry>> parse_bench_references(const std::string& spec);

// `orochi bench text`: the Qwen3-VL text stack, random weights of the real shapes or a checkpoint's.
struct BenchTextOptions {
  int64_t tokens = 256, layers = 50, warmup = 2, iters = 5;
  uint64_t seed = 7;
  int device = 0;
  int64_t stream_layers = 0;  // the last N layers stay in pinned host RAM (or on the other GPU)
  int64_t slots = 2;
  std::string tier = "host";
  std::string checkpoint, write_checkpoint, dump_outputs;  // empty: not asked
  // The stack's linears: bf16, or fp8 / int8 quantized at load (what --set conditioner-precision runs).
  Precision precision = Precision::kBf16;
  std::function<void(const std::string&)> on_note;
};

// Its options' consistency (layers, streamed layers, checkpoint writing), without a GPU.
Status check_bench_text_options(const BenchTextOptions& options);

class GpuBackend {
 public:
  virtual ~GpuBackend() = default;
  virtual std::string name() const = 0;  // "CUDA", or "none"
  // GPUs the driver shows (0 without a backend or a GPU).
  virtual int device_count() const = 0;
  virtual Expected<uint64_t> memory_total(int device) const = 0;
  virtual uint64_t memory_used(int device) const = 0;   // 0 when unknown
  virtual nlohmann::json memory_report(int device) const = 0;
  // The slowest GPU-to-GPU copy bandwidth from `first` to each of the next `count - 1` GPUs, GB/s.
  virtual Expected<double> link_gbps(int first, int count) const = 0;

  // Host weights (a checkpoint, or the demo) uploaded to the placement's GPUs, the denoiser sized
  // for requests up to `plan`'s.
  virtual Expected<GpuT2va> t2va_from_host(const pipeline::T2vaModels& models, const GpuPlacement& placement,
                                           const pipeline::T2vaPlan& plan) = 0;
  // The released configurations with counter-based random weights generated on the GPU.
  virtual Expected<GpuT2va> t2va_random(const h3::H3Config& transformer, const GpuPlacement& placement,
                                        const pipeline::T2vaPlan& plan, uint64_t seed) = 0;
  // A prompt's conditioning: the first `layer` layers of `text_encoder_dir` on the GPU, freed again
  // before returning f32 [L, hidden].
  virtual Expected<Tensor> encode_prompt(const std::string& text_encoder_dir, const Tensor& token_ids, int64_t layer,
                                         const TextEncoderPlacement& placement) = 0;
  // A presentation with pictures (fl2va, ref2va): the vision tower of `text_encoder_dir` over the
  // images and the videos' frames, freed, then its first `layer` text layers over the mixed
  // sequence (the tower's features at the pad rows, DeepStack after the first layers), freed
  // again before returning f32 [L, hidden]. The GPU twin of pipeline::encode_conditioner_inputs_cpu.
  virtual Expected<Tensor> encode_presentation(const std::string& text_encoder_dir,
                                               const pipeline::ConditionerInputs& inputs, int64_t layer,
                                               const TextEncoderPlacement& placement) = 0;
  // The reference-encode phase's VAE encoders on placement.device, weights uploaded from `host`, or
  // with `host` null random weights of `config` generated on the GPU from `seed` (--random-weights);
  // their weights and activations are freed when the caller drops them, before the next phase.
  virtual Expected<std::unique_ptr<pipeline::VideoEncoder>> video_encoder(const h3vae::VideoVaeConfig& config,
                                                                          const h3vae::EncoderWeights* host,
                                                                          const EncoderPlacement& placement,
                                                                          uint64_t seed) = 0;
  virtual Expected<std::unique_ptr<pipeline::AudioEncoder>> audio_encoder(const h3_audio::AudioVaeConfig& config,
                                                                          const h3_audio::AudioEncoderWeights* host,
                                                                          const EncoderPlacement& placement,
                                                                          uint64_t seed) = 0;
  // `orochi bench dit` / `bench text`: timings, memory and the outputs' hash as JSON.
  virtual Expected<nlohmann::json> bench_dit(const BenchDitOptions& options) = 0;
  virtual Expected<nlohmann::json> bench_text(const BenchTextOptions& options) = 0;
};

// The backend this build links.
GpuBackend& gpu_backend();

}  // namespace orochi::engine
