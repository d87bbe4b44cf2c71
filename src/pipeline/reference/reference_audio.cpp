#include "pipeline/reference/reference_audio.h"

#include <algorithm>
#include <cstring>
#include <string>

#include "pipeline/reference/sinc_resample.h"

namespace orochi::pipeline::reference {
namespace {

Status check_waveform(const Tensor& w) {
  if (!w.defined() || w.dtype() != DType::kF32 || w.ndim() != 2)
    return invalid_argument("a reference waveform must be f32 [channels, samples], got " +
                            (w.defined() ? w.describe() : std::string("nothing")));
  return Status::ok();
}

// D truncates at the native rate to the target's duration: wav[:, : int((F / 24) * sr)].
int64_t kept_samples(int64_t samples, int64_t sample_rate, double max_seconds) {
  return std::min(samples, static_cast<int64_t>(max_seconds * static_cast<double>(sample_rate)));
}
}  // namespace

int64_t reference_audio_samples(int64_t samples, int64_t sample_rate, double max_seconds) {
  const int64_t keep = kept_samples(samples, sample_rate, max_seconds);
  return keep <= 0 ? 0 : sinc_resample_length(keep, sample_rate, kAudioVaeRate);
}

Expected<Tensor> normalize_reference_audio(const Tensor& waveform, int64_t sample_rate, double max_seconds) {
  OROCHI_RETURN_IF_ERROR(check_waveform(waveform));
  const int64_t channels = waveform.dim(0);
  if (channels != 1 && channels != 2)
    return invalid_argument("a reference soundtrack must be mono or stereo, got " + std::to_string(channels) +
                            " channels; downmix it to stereo first (e.g. ffmpeg -ac 2)");
  if (sample_rate <= 0) return invalid_argument("the sample rate must be positive, got " + std::to_string(sample_rate));
  if (!(max_seconds > 0))
    return invalid_argument("the target duration must be positive, got " + std::to_string(max_seconds));
  // D: waveform[:, : int(max_duration * sample_rate)], Python's int() truncating the float product.
  const int64_t keep = kept_samples(waveform.dim(1), sample_rate, max_seconds);
  if (keep <= 0) return invalid_argument("the reference audio has no samples; give a clip of at least a few seconds");
  const Tensor in = waveform.contiguous();
  Tensor stereo = Tensor::uninitialized({2, keep}, DType::kF32);  // [2, keep]
  for (int64_t c = 0; c < 2; ++c) {
    const int64_t from = channels == 1 ? 0 : c;  // mono repeats its one channel
    std::memcpy(stereo.data<float>() + c * keep, in.data<float>() + from * waveform.dim(1),
                static_cast<size_t>(keep) * sizeof(float));
  }
  return sinc_resample(stereo, sample_rate, kAudioVaeRate);
}

Expected<Tensor> pad_to_hop(const Tensor& waveform, int64_t hop) {
  OROCHI_RETURN_IF_ERROR(check_waveform(waveform));
  if (hop <= 0) return invalid_argument("the hop must be positive, got " + std::to_string(hop));
  const int64_t channels = waveform.dim(0), n = waveform.dim(1);
  const int64_t padded = (n + hop - 1) / hop * hop;
  const Tensor in = waveform.contiguous();
  Tensor out = Tensor::zeros({channels, padded}, DType::kF32);  // [C, padded]
  for (int64_t c = 0; c < channels; ++c)
    std::memcpy(out.data<float>() + c * padded, in.data<float>() + c * n, static_cast<size_t>(n) * sizeof(float));
  return out;
}

}  // namespace orochi::pipeline::reference
