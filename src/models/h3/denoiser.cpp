#include "models/h3/denoiser.h"

namespace orochi::h3 {

Expected<H3Inputs> h3_inputs(const models::PackedSequence& s) {
  if (s.streams.size() != kStreams || s.stream_indices.size() != kStreams)
    return invalid_argument("an H3 denoiser takes 2 latent streams (video patches, audio frames) with their index "
                            "lists, got " + std::to_string(s.streams.size()) + " streams and " +
                            std::to_string(s.stream_indices.size()) + " index lists");
  H3Inputs in;
  in.video = s.streams[kVideoStream];
  in.audio = s.streams[kAudioStream];
  in.video_indices = s.stream_indices[kVideoStream];
  in.audio_indices = s.stream_indices[kAudioStream];
  in.text = s.context;
  in.text_indices = s.context_indices;
  in.token_tags = s.token_tags;
  in.positions = s.positions;
  in.timestep_indices = s.timestep_indices;
  return in;
}

models::PackedSequence packed_sequence(const H3Inputs& in) {
  models::PackedSequence s;
  s.streams = {in.video, in.audio};
  s.stream_indices = {in.video_indices, in.audio_indices};
  s.context = in.text;
  s.context_indices = in.text_indices;
  s.token_tags = in.token_tags;
  s.positions = in.positions;
  s.timestep_indices = in.timestep_indices;
  return s;
}

std::vector<Tensor> stream_outputs(H3Outputs out) { return {std::move(out.video), std::move(out.audio)}; }

models::SequenceWidths sequence_widths(const H3Config& config) {
  return {{config.video_patch_dim(), config.audio_in_channels}, config.text_dim};
}

models::SequenceSize sequence_size(const gpu::RequestSize& size) {
  return {.rows = size.rows, .context_rows = size.text_rows, .timesteps = size.timesteps,
          .stream_rows = {size.video_rows, size.audio_rows}};
}

Expected<gpu::RequestSize> request_size(const models::SequenceSize& size) {
  if (size.stream_rows.size() != kStreams)
    return invalid_argument("an H3 request size has 2 streams (video, audio), got " +
                            std::to_string(size.stream_rows.size()));
  return gpu::RequestSize{.rows = size.rows, .text_rows = size.context_rows, .video_rows = size.stream_rows[kVideoStream],
                          .audio_rows = size.stream_rows[kAudioStream], .timesteps = size.timesteps};
}

Status CpuDenoiser::prepare(const Tensor& timesteps) {
  if (!timesteps.defined() || timesteps.dtype() != DType::kF32 || timesteps.ndim() != 1 || timesteps.numel() == 0)
    return invalid_argument("the denoiser needs a non-empty f32 [n_t] list of timesteps, got " +
                            (timesteps.defined() ? timesteps.describe() : std::string("nothing")));
  tables_ = compute_modulation_tables(weights_, timesteps);
  return Status::ok();
}

Expected<std::vector<Tensor>> CpuDenoiser::forward(const models::PackedSequence& sequence) {
  if (!tables_.timesteps.defined())
    return Status(ErrorCode::kInternal, "CpuDenoiser::forward called before prepare()");
  OROCHI_ASSIGN_OR_RETURN(const H3Inputs in, h3_inputs(sequence));
  OROCHI_ASSIGN_OR_RETURN(H3Outputs out, h3::forward(weights_, in, tables_));
  return stream_outputs(std::move(out));
}

}  // namespace orochi::h3
