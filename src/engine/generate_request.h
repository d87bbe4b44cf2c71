// One video request to an engine: the workflow's inputs and sizes as a user gives them (t2va; fl2va
// and ref2va through their references). Zero sizes take the model's defaults in
// Engine::plan, which fills and checks every field.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "engine/engine_options.h"
#include "pipeline/packed_layout.h"
#include "pipeline/prompt_features.h"
#include "pipeline/sampling.h"

namespace orochi::engine {

// A file the request conditions on. Their order is the command line's: the packed layout keeps it
// (REF2VA.md §5). fl2va takes the keyframes; ref2va the images, videos and audio clips.
struct ReferenceInput {
  enum class Kind { kFirstFrame, kLastFrame, kImage, kVideo, kAudio };
  Kind kind = Kind::kImage;
  std::string path;
  bool video_audio = true;  // kVideo: its soundtrack, if any, joins as reference audio (--ref-video-audio)
};
const char* reference_flag(ReferenceInput::Kind kind);  // "--image", "--last-image", "--ref-image", ...

// How ref2va sizes its image references: the reference pipeline's 2048-px short edge, or the
// target's area (ComfyUI's and SGLang's default; the ref2va turbo LoRA was trained with it).
enum class RefSize { k2048, kMatch };

struct GenerateRequest {
  int64_t width = 0, height = 0;  // canvas; 0: the model's default (demo 320x192, else 1344x768)
  int64_t frames = 124;           // 17n + 5 at 24 fps
  // The schedule, as asked (Engine::plan resolves it: pipeline::resolve_sampling). steps: denoiser
  // evaluations; 0: the preset's or the list's, else demo 8, checkpoint 20. Shifts 0: the preset's,
  // else 12 and 3. A preset name, or given sigma grids (1 first, 0 last) that replace the shifted ones.
  int64_t steps = 0;
  uint64_t seed = 0;              // keys every noise tensor: the same video on any device and layout
  double video_shift = 0, audio_shift = 0;
  std::string preset;
  std::vector<double> video_sigmas, audio_sigmas;
  // Conditioning: one of a prompt (the model's tokenizer and text encoder), a features file
  // (prompt_embeds [L, text_dim]), or `text_rows` random rows (the demo, benchmarks).
  std::optional<std::string> prompt, text_features_file;
  int64_t text_rows = 0;  // 0: demo 32, else 256
  int64_t text_layer = pipeline::kH3TextLayer;
  std::vector<ReferenceInput> references;  // none: t2va
  RefSize ref_size = RefSize::k2048;
  // The LoRAs this request runs with, in order (Engine::use_loras): none: those the engine was
  // opened with (ModelSource::loras); an empty list: none. A set the engine holds merged already is
  // not merged again.
  std::optional<std::vector<LoraSource>> loras;
};

// t2va without references, fl2va with keyframes only, ref2va with images / videos / audio only; a
// mix of keyframes and references is an error (check_references).
std::string workflow_of(const GenerateRequest& request);
// The request's schedule fields as pipeline::resolve_sampling takes and gives them.
pipeline::Sampling sampling_of(const GenerateRequest& request);
void set_sampling(GenerateRequest& request, const pipeline::Sampling& sampling);
// fl2va's keyframe rows in packed order (first, then last), whatever the command-line order.
std::vector<pipeline::KeyframeAnchor> keyframe_anchors(const GenerateRequest& request);

}  // namespace orochi::engine
