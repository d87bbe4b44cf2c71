// The Qwen3-VL conditioner of a presentation with pictures on one GPU: the vision tower (bf16) over
// each modality, its memory given back, then the text stack (bf16, or its linears quantized at
// --set conditioner-precision; streamed layers as the plan says) over the mixed sequence; the same
// steps as pipeline::encode_conditioner_inputs_cpu.
#include <algorithm>

#include "engine/cuda/cuda_backend.h"
#include "models/qwen3vl/cuda/gpu_text_encoder.h"
#include "models/qwen3vl/cuda/gpu_vision_tower.h"
#include "models/qwen3vl/text_model.h"
#include "models/qwen3vl/vision_weights.h"
#include "pipeline/prompt_features.h"

namespace orochi::engine::cuda_backend {
namespace {

// Both modalities through one tower, each in its own call (rows follow its grids), host f32 out.
Status run_tower(const std::string& dir, const pipeline::ConditionerInputs& inputs, int device,
                 qwen3vl::VisionFeatures& images, qwen3vl::VisionFeatures& videos) {
  OROCHI_ASSIGN_OR_RETURN(const qwen3vl::VisionWeights host, qwen3vl::load_vision_weights(dir));
  OROCHI_RETURN_IF_ERROR(pipeline::check_processors_match_tower(inputs, host.config, dir));
  const int64_t max_patches = std::max(inputs.images.pixel_values.defined() ? inputs.images.pixel_values.dim(0) : 0,
                                       inputs.videos.pixel_values.defined() ? inputs.videos.pixel_values.dim(0) : 0);
  OROCHI_ASSIGN_OR_RETURN(auto tower, qwen3vl::gpu::GpuVisionTower::create(host.config, device, max_patches));
  OROCHI_RETURN_IF_ERROR(tower->upload(host));
  if (!inputs.images.grids.empty()) {
    OROCHI_ASSIGN_OR_RETURN(images, tower->run(inputs.images.pixel_values, inputs.images.grids));
  }
  if (!inputs.videos.grids.empty()) {
    OROCHI_ASSIGN_OR_RETURN(videos, tower->run(inputs.videos.pixel_values, inputs.videos.grids));
  }
  return Status::ok();  // the tower and its arenas go here, before the text stack takes its memory
}

}  // namespace

Expected<Tensor> cuda_encode_presentation(const std::string& dir, const pipeline::ConditionerInputs& inputs,
                                          int64_t layer, const TextEncoderPlacement& placement) {
  OROCHI_RETURN_IF_ERROR(pipeline::check_text_encoder(dir, layer));
  qwen3vl::VisionFeatures images, videos;
  if (inputs.has_vision()) OROCHI_RETURN_IF_ERROR(run_tower(dir, inputs, placement.device, images, videos));
  OROCHI_ASSIGN_OR_RETURN(const qwen3vl::TextWeights host, qwen3vl::load_text_weights(dir, layer));
  qwen3vl::VisionEmbeddings vision;
  if (inputs.has_vision()) {
    OROCHI_ASSIGN_OR_RETURN(vision, qwen3vl::vision_embeddings(inputs.presentation.kinds, host.config.hidden_size,
                                                               images.features, images.deepstack, videos.features,
                                                               videos.deepstack));
  }
  const qwen3vl::gpu::TextStreaming streaming{placement.streamed, placement.slots, weights::WeightTier::kHost, -1};
  OROCHI_ASSIGN_OR_RETURN(auto encoder, qwen3vl::gpu::GpuTextEncoder::create(host.config, layer, placement.device,
                                                                             inputs.size(), streaming,
                                                                             placement.precision));
  OROCHI_RETURN_IF_ERROR(encoder->upload(host));
  return encoder->encode(inputs.token_ids, inputs.positions, vision);  // the encoder and its memory go here
}

}  // namespace orochi::engine::cuda_backend
