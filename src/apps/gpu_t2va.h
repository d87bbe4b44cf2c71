// The GPU parts of `orochi generate`: the H3 denoiser (on one GPU or several), the video VAE (its
// temporal chunks shared by the run's GPUs) and the audio VAE on the first GPU, behind the
// pipeline's interfaces, with memory sized from the request's plan. Without the CUDA backend every
// function returns `unsupported` with advice.
#pragma once

#include <cstdint>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "core/status.h"
#include "models/h3/denoiser.h"
#include "pipeline/decoders.h"
#include "pipeline/t2va.h"
#include "pipeline/t2va_models.h"

namespace orochi::apps {

// Where a GPU run goes: the first GPU (decoders, text encoder) and how tp x sp GPUs from it on
// share the denoiser.
struct GpuPlacement {
  int device = 0;
  int tp = 1, sp = 1;
  int64_t comm_timeout_s = 60;
  std::vector<bool> streamed;  // denoiser blocks the plan streams from pinned host RAM (one GPU)
  int slots = 2;
  int decode_gpus = 1;         // GPUs from `device` on that share the video decode's chunks
};

struct GpuT2va {
  std::unique_ptr<h3::Denoiser> denoiser;
  std::unique_ptr<pipeline::VideoDecoder> video;
  std::unique_ptr<pipeline::AudioDecoder> audio;
  std::string device_name;
  int device = 0;
};

// Host weights (a checkpoint, or the demo) uploaded to the placement's GPUs.
Expected<GpuT2va> gpu_t2va_from_host(const pipeline::T2vaModels& models, const GpuPlacement& placement,
                                     const pipeline::T2vaPlan& plan);

// The released configurations with counter-based random weights generated on the GPU (no
// checkpoint, no host copy): the full-size pipeline for benchmarks. `transformer_config` must be
// the released H3 config (the caller passes it so the plan was made with it).
Expected<GpuT2va> gpu_t2va_random(const h3::H3Config& transformer_config, const GpuPlacement& placement,
                                  const pipeline::T2vaPlan& plan, uint64_t seed);

// Where the text encoder runs and where its layers live meanwhile (the plan's text-encoder phase):
// on `device`, each layer resident or, when `streamed[i]`, kept in pinned host RAM and copied
// through `slots` staging slots just in time. The embedding table stays in host RAM: only the
// prompt's rows go to the GPU.
struct TextEncoderPlacement {
  int device = 0;
  std::vector<bool> streamed;  // per loaded layer; empty: every layer resident
  int slots = 2;
};

// The prompt's conditioning: the first `layer` layers of `text_encoder_dir` uploaded (bf16) as
// `placement` says, run on token ids i64 [L], freed again before returning f32 [L, hidden].
Expected<Tensor> gpu_encode_prompt(const std::string& text_encoder_dir, const Tensor& token_ids, int64_t layer,
                                   const TextEncoderPlacement& placement);

// The slowest GPU-to-GPU copy bandwidth from GPU `first` to each of the next `count - 1` GPUs, in
// GB/s: a 256 MiB cudaMemcpyPeer per pair, timed after a warm-up (over NVLink, PCIe peer access, or
// staged through host RAM when the pair has none). For --parallel auto; takes about 50 ms a pair.
Expected<double> gpu_link_gbps(int first, int count);

// True when this build has the CUDA backend and the driver shows at least one GPU.
bool gpu_present();

// cudaMemGetInfo of `device`: its total and the bytes in use now (0 / unsupported without CUDA).
Expected<uint64_t> gpu_memory_total(int device);
uint64_t gpu_memory_used(int device);

// Per-GPU memory after a run: the device's used bytes (cudaMemGetInfo) and its total.
nlohmann::json gpu_memory_report(int device);

}  // namespace orochi::apps
