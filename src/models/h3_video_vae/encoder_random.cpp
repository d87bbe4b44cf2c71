#include "models/h3_video_vae/encoder_random.h"

#include <algorithm>
#include <cmath>

namespace orochi::h3vae {

NormalInit encoder_random_init(const ParamSpec& spec) {
  const std::string& n = spec.name;
  if (n.find("norm") != std::string::npos && n.ends_with(".weight")) return {1.0f, 0.1f};
  if (n.ends_with(".bias")) return {0.0f, 0.05f};
  int64_t fan_in = 1;  // [Cout, Cin, kt, kh, kw]: everything but the output channels
  for (size_t d = 1; d < spec.shape.size(); ++d) fan_in *= spec.shape[d];
  return {0.0f, 1.0f / std::sqrt(static_cast<float>(std::max<int64_t>(fan_in, 1)))};
}

Expected<EncoderWeights> random_encoder_weights(const VideoVaeConfig& config, const NormalDraw& draw) {
  uint64_t stream = kEncoderRandomStream;
  return assemble_encoder_weights(config, [&](const ParamSpec& spec) -> Expected<Tensor> {
    return draw(spec.shape, ++stream, encoder_random_init(spec));
  });
}

}  // namespace orochi::h3vae
