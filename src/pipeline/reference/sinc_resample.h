// torchaudio's band-limited resampler (`torchaudio.transforms.Resample(orig, new)` with its defaults:
// sinc_interp_hann, lowpass_filter_width 6, rolloff 0.99), which the reference pipeline applies once
// to every reference soundtrack and clip to bring it to the audio VAE's 32 kHz
// (../shared/docs/REF2VA.md §3.5). The kernel is built as torchaudio builds it (fp64, cast to fp32);
// the convolution sums in fp64 and rounds once, so it lands within a few fp32 ulps of torch's conv1d.
#pragma once

#include <cstdint>
#include <vector>

#include "core/status.h"
#include "core/tensor.h"

namespace orochi::pipeline::reference {

// The polyphase kernel for orig -> new Hz: `phases` = new/g rows of `taps` = 2 * width + orig/g fp32
// weights (g = gcd), and `width`, the zero padding on the left.
struct SincKernel {
  int64_t orig = 0, target = 0;  // the rates divided by their gcd
  int64_t width = 0;
  int64_t taps = 0;
  std::vector<float> weights;    // [phases, taps]
};

// invalid_argument for a rate <= 0.
Expected<SincKernel> sinc_resample_kernel(int64_t orig_rate, int64_t new_rate);

// Samples sinc_resample gives for `length` input samples: torchaudio's ceil(new·N/orig) on the reduced
// rates, the quotient rounded to fp32 first (length itself for equal rates). Both rates must be positive.
int64_t sinc_resample_length(int64_t length, int64_t orig_rate, int64_t new_rate);

// f32 [C, N] at orig_rate -> f32 [C, ceil(N * new / orig)] at new_rate. Equal rates return the input
// unchanged (torchaudio's shortcut). invalid_argument for a rate <= 0 or a waveform that is not f32 [C, N].
Expected<Tensor> sinc_resample(const Tensor& waveform, int64_t orig_rate, int64_t new_rate);

}  // namespace orochi::pipeline::reference
