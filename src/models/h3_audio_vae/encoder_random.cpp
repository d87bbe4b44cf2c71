#include "models/h3_audio_vae/encoder_random.h"

#include <algorithm>
#include <cmath>

namespace orochi::h3_audio {

NormalInit encoder_random_init(const TensorSpec& spec) {
  const std::string& n = spec.name;
  if (n.ends_with(".alpha")) return {1.0f, 0.1f};  // Snake's frequency
  if (n.ends_with(".weight_g")) return {1.0f, 0.0f};
  if (n.find("norm") != std::string::npos && n.ends_with(".weight")) return {1.0f, 0.1f};
  if (n.ends_with("bias")) return {0.0f, 0.02f};
  int64_t fan_in = 1;  // everything but the first (output) dimension
  for (size_t d = 1; d < spec.shape.size(); ++d) fan_in *= spec.shape[d];
  return {0.0f, 1.0f / std::sqrt(static_cast<float>(std::max<int64_t>(fan_in, 1)))};
}

Expected<AudioEncoderWeights> random_encoder_weights(const AudioVaeConfig& config, const NormalDraw& draw) {
  uint64_t stream = kEncoderRandomStream;
  return assemble_encoder(config, [&](const TensorSpec& spec) -> Expected<Tensor> {
    return draw(spec.shape, ++stream, encoder_random_init(spec));
  });
}

}  // namespace orochi::h3_audio
