// A MiniMax-H3 presentation with vision (fl2va's keyframes, ref2va's images and videos) made ready
// for the Qwen3-VL conditioner, and its CPU run (MODELS_H3.md §3, REF2VA.md §4): the token ids and
// M-RoPE positions of the presentation, the images' and the videos' pixel values from the
// processors; then the vision tower once per modality (as transformers' get_image_features /
// get_video_features), its features scattered at the pad rows in sequence order with DeepStack
// added after the first layers, and hidden_states[layer] out. The builders of the inputs are
// fl2va_prompt.h and ref2va_prompt.h; the GPU run is the engine backend's encode_presentation.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/status.h"
#include "core/tensor.h"
#include "models/qwen3vl/processor.h"
#include "models/qwen3vl/vision_config.h"
#include "pipeline/h3_presentation.h"

namespace orochi::pipeline {

struct ConditionerInputs {
  Presentation presentation;
  Tensor token_ids;              // i64 [L]
  Tensor positions;              // i64 [L, 3]: qwen3vl::rope_index of the presentation
  qwen3vl::VisionInputs images;  // f32 [patches, 3·tp·p·p] and one grid per image, in sequence order
  qwen3vl::VisionInputs videos;  // the same for the videos' sampled frames
  // The processors that cut the patches (checked against the tower before it runs).
  qwen3vl::VisionProcessorConfig image_processor = qwen3vl::VisionProcessorConfig::h3_images();
  qwen3vl::VisionProcessorConfig video_processor = qwen3vl::VisionProcessorConfig::h3_videos();
  int64_t size() const { return presentation.size(); }
  int64_t vision_patches() const;  // the patches the tower reads (both modalities)
  bool has_vision() const { return !images.grids.empty() || !videos.grids.empty(); }
};

struct PromptConditioning {
  Tensor features;                // f32 [L, hidden]: hidden_states[layer]
  std::vector<int64_t> tags;      // [L]: kH3VideoTag on the vision blocks' rows, kH3TextTag elsewhere
  std::vector<int32_t> token_ids; // [L]: the presentation
};

// The processors a model folder ships (processor/preprocessor_config.json and
// processor/video_preprocessor_config.json, the release's), or H3's when the folder has none
// (ComfyUI's files, a bare text_encoder/). Errors: a malformed file, named.
Expected<qwen3vl::VisionProcessorConfig> image_processor_config(const std::string& model_dir);
Expected<qwen3vl::VisionProcessorConfig> video_processor_config(const std::string& model_dir);

// Fills `inputs.token_ids` and `positions` from its presentation (whose grids must be the processors'
// outputs', in the same order). invalid_argument when the presentation is longer than `max_tokens`
// (the text encoder's max_position_embeddings), naming `what` ("the fl2va presentation").
Status finish_conditioner_inputs(ConditionerInputs& inputs, int64_t max_tokens, const std::string& what);

// The processors' patches must be the ones the tower was trained on: invalid_argument naming both
// and `text_encoder` otherwise.
Status check_processors_match_tower(const ConditionerInputs& inputs, const qwen3vl::VisionConfig& tower,
                                    const std::string& text_encoder);

// On the CPU: the tower over both modalities and the first `layer` layers of the text stack in
// `text_encoder` (a Qwen3VLForConditionalGeneration folder or file). Errors: the loaders' (no vision
// tower, too few layers), a hidden width that differs from the tower's output.
Expected<PromptConditioning> encode_conditioner_inputs_cpu(const std::string& text_encoder, int64_t layer,
                                                           const ConditionerInputs& inputs);

}  // namespace orochi::pipeline
