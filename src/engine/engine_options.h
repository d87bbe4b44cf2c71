// What an engine is opened on: a model source and the options every request of it shares (where it
// runs, how GPUs share it, the run switches). Checked once, by Engine::open.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "core/precision.h"
#include "engine/run_switches.h"

namespace orochi::engine {

// A LoRA merged into the transformer's host weights when the engine opens (W += strength · scale · B·A).
struct LoraSource {
  std::string path;
  float strength = 1.0f;
};

// Where the weights come from. Neither a folder nor random weights: the built-in tiny demo model.
struct ModelSource {
  std::optional<std::string> dir;  // a diffusers-layout MiniMax-H3 folder (transformer/, vae/, audio_vae/, ...)
  bool random_weights = false;     // the released shapes, random weights generated on the GPU (benchmarks)
  // A transformer folder alone (config.json + safetensors): enough for Engine::forward, not a run.
  std::optional<std::string> transformer_dir;
  // A single-file transformer (ComfyUI layout, h3::load_transformer_file) that replaces the
  // transformer of `dir`, or of the demo model without `dir` (whose VAEs then decode it: its
  // channels must be the demo's). Its config: `transformer_config`, else a config.json beside the
  // file, else the released MiniMax-H3 config. `qkv_order`: auto (detected), interleaved or thirds.
  std::optional<std::string> transformer_file;
  std::optional<std::string> transformer_config;
  std::string qkv_order = "auto";
  std::vector<LoraSource> loras;   // in order; not with random_weights (generated on the GPU)
  // Single parts (engine/model_components.h): each a .safetensors file as ComfyUI keeps it or a
  // diffusers component folder, replacing `dir`'s part or the demo's; `tokenizer` a folder holding
  // tokenizer.json. `comfy_models`: a ComfyUI models/ folder whose files are found by their keys.
  std::optional<std::string> text_encoder, vae, audio_vae, tokenizer;
  std::optional<std::string> comfy_models;
  bool demo() const { return !dir && !transformer_dir && !random_weights && !comfy_models; }
};

struct EngineOptions {
  // "cpu", "cuda" or "cuda:N"; empty: cuda:0 for a checkpoint or random weights when a GPU is
  // visible, else the CPU (the demo always defaults to the CPU).
  std::string device;
  int gpus = 1;                   // GPUs from `device` on that share every request's denoiser
  std::string parallel = "auto";  // auto, none, tpN, spN, tpNxspM (planner::parse_parallel_choice)
  int comm_timeout_s = 60;        // deadline of every GPU-to-GPU exchange
  RunSwitches switches;
  // The denoiser's linears (--precision). The planner counts each precision's bytes (orochi plan);
  // fp8 / int8 run on one GPU (the GPU runner quantizes at load); open() refuses them on the CPU.
  Precision precision = Precision::kBf16;
  // Where the engine's one-line notes go (the plan's choices, streaming, the link it measured);
  // none: dropped.
  std::function<void(const std::string&)> on_note;
};

}  // namespace orochi::engine
