// H3 behind the family-neutral denoiser interface (models/denoiser.h): stream 0 is the video
// patches, stream 1 the audio frames, the context the text features joined into the sequence.
// The conversions are the one place H3's typed inputs meet the neutral ones.
#pragma once

#include <string>

#include "core/status.h"
#include "core/tensor.h"
#include "models/denoiser.h"
#include "models/h3/request_buffers.h"
#include "models/h3/transformer.h"

namespace orochi::h3 {

constexpr size_t kVideoStream = 0, kAudioStream = 1, kStreams = 2;

// The neutral sequence as H3's inputs (tensors shared, not copied); an error unless it has H3's two
// streams with their index lists.
Expected<H3Inputs> h3_inputs(const models::PackedSequence& sequence);
models::PackedSequence packed_sequence(const H3Inputs& inputs);
std::vector<Tensor> stream_outputs(H3Outputs outputs);
models::SequenceWidths sequence_widths(const H3Config& config);
models::SequenceSize sequence_size(const gpu::RequestSize& size);
Expected<gpu::RequestSize> request_size(const models::SequenceSize& size);

// The CPU reference forward over host weights (which must outlive it).
class CpuDenoiser final : public models::Denoiser {
 public:
  explicit CpuDenoiser(const H3Weights& weights) : weights_(weights) {}
  const H3Config& config() const { return weights_.config; }
  std::string device_name() const override { return "CPU"; }
  models::SequenceWidths widths() const override { return sequence_widths(weights_.config); }
  Status prepare(const Tensor& timesteps) override;
  Expected<std::vector<Tensor>> forward(const models::PackedSequence& sequence) override;

 private:
  const H3Weights& weights_;
  ModulationTables tables_;
};

}  // namespace orochi::h3
