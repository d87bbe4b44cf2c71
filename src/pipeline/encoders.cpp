#include "pipeline/encoders.h"

#include "models/h3_audio_vae/encoder.h"
#include "models/h3_video_vae/encoder_posterior.h"

namespace orochi::pipeline {

Expected<Tensor> CpuVideoEncoder::encode_condition(const Tensor& pixels_u8) {
  return h3vae::encode_condition(weights_, pixels_u8);
}

Expected<Tensor> CpuAudioEncoder::encode_reference_audio(const Tensor& waveform) {
  return h3_audio::encode_reference_audio(weights_, waveform);
}

}  // namespace orochi::pipeline
