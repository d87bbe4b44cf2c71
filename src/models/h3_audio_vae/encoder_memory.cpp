#include "models/h3_audio_vae/encoder_memory.h"

#include <algorithm>
#include <string>

#include "models/h3_audio_vae/encoder_input.h"
#include "models/h3_audio_vae/parameters.h"

namespace orochi::h3_audio {

EncoderBufferSizes encoder_buffer_sizes(const AudioVaeConfig& c, int64_t samples, int64_t batch) {
  EncoderBufferSizes s;
  int64_t L = latents_for_samples(c, samples) * c.encoder_hop_length();  // zero-padded to the hop
  s.wave = batch * L;
  s.signal = batch * L * c.encoder_dim;
  int64_t im2col = batch * L * 7, width = 7;  // conv_in
  for (int64_t i = 0; i < c.num_encoder_blocks(); ++i) {
    const int64_t half = c.encoder_block_channels(i) / 2, stride = c.encoder_rates[i];
    s.signal = std::max(s.signal, batch * L * half);
    im2col = std::max(im2col, batch * L * kEncoderResidualKernel * half);
    width = std::max(width, kEncoderResidualKernel * half);
    L /= stride;
    s.signal = std::max(s.signal, batch * L * 2 * half);
    im2col = std::max(im2col, batch * L * 2 * stride * half);
    width = std::max(width, 2 * stride * half);
  }
  const int64_t trunk = c.encoder_block_channels(c.num_encoder_blocks() - 1);
  s.signal = std::max(s.signal, batch * L * c.latent_dim);
  im2col = std::max(im2col, batch * L * 3 * trunk);
  width = std::max(width, 3 * trunk);
  // No more scratch than the largest im2col needs, no less than its widest row.
  s.col = std::max(width, std::min(im2col, kIm2colScratchFloats));
  s.rows = batch * L;  // B · A
  return s;
}

size_t encoder_buffer_bytes(int64_t elements) {
  const size_t a = kEncoderArenaAlignment;
  return (static_cast<size_t>(elements) * sizeof(float) + a - 1) / a * a;
}

size_t audio_encoder_weight_bytes(const AudioVaeConfig& config) {
  size_t bytes = 0;
  for (const TensorSpec& spec : encoder_tensors(config)) {
    const std::string& n = spec.name;
    if (n.size() >= 9 && n.compare(n.size() - 9, 9, ".weight_g") == 0) continue;  // folded into weight_v's size
    bytes += encoder_buffer_bytes(shape_numel(spec.shape));
  }
  return bytes + 4 * kEncoderArenaAlignment;  // the three biases become one tensor; slack
}

size_t audio_encoder_activation_bytes(const AudioVaeConfig& c, int64_t max_samples, int64_t max_batch) {
  const EncoderBufferSizes s = encoder_buffer_sizes(c, max_samples, max_batch);
  const int64_t in = c.latent_dim, out = c.latent_channels;
  return encoder_buffer_bytes(s.wave) + 3 * encoder_buffer_bytes(s.signal) + encoder_buffer_bytes(s.col) +
         encoder_buffer_bytes(s.rows * in) + encoder_buffer_bytes(s.rows * 3 * in) +
         7 * encoder_buffer_bytes(s.rows * out) + 2 * encoder_buffer_bytes(s.rows * 2 * out) + kEncoderArenaAlignment;
}

}  // namespace orochi::h3_audio
