// Engine::forward: one denoiser forward with random inputs over a packed t2va layout, through the
// family-neutral denoiser interface (the same one the denoising loop drives).
#include <chrono>

#include "core/stopwatch.h"
#include "engine/engine.h"
#include "models/h3/denoiser.h"
#include "pipeline/random_inputs.h"
#include "pipeline/t2va.h"
#include "pipeline/video_geometry.h"

namespace orochi::engine {

Status Engine::check_forward(const ForwardRequest& r) {
  if (!(r.t_video >= 0 && r.t_video <= 1 && r.t_audio >= 0 && r.t_audio <= 1))
    return invalid_argument("--t-video and --t-audio are timesteps in [0, 1] (1 = clean)");
  // The canvas and frames are the pipeline's to check (video_geometry suggests valid requests).
  return pipeline::video_geometry(r.width, r.height, r.frames).status();
}

Expected<ForwardResult> Engine::forward(const ForwardRequest& r) {
  if (on_gpu_ || source_.random_weights)
    return invalid_argument("the forward runs the CPU reference (--device cpu); `orochi bench dit` times the GPU "
                            "forward");
  OROCHI_RETURN_IF_ERROR(check_forward(r));
  // The t2va plan's geometry and packed layout (one step: only the layout is used).
  const h3::H3Config& config = models_.transformer.config;
  pipeline::T2vaShape shape;
  shape.width = r.width;
  shape.height = r.height;
  shape.frames = r.frames;
  shape.steps = 1;
  shape.text_rows = r.text_rows;
  OROCHI_ASSIGN_OR_RETURN(const pipeline::T2vaPlan t2va, pipeline::plan_t2va(config, shape));
  const pipeline::VideoGeometry& geometry = t2va.geometry;
  const pipeline::PackedLayout& layout = t2va.layout;
  const pipeline::RowTimesteps ts =
      pipeline::assign_row_timesteps(layout, static_cast<float>(r.t_video), static_cast<float>(r.t_audio));
  // Counter-based noise: the same seed gives the same rows everywhere.
  const h3::H3Inputs in = pipeline::random_h3_inputs(config, layout, ts, r.seed);

  ForwardResult out;
  out.load_s = open_load_s_;
  open_load_s_ = 0;
  out.rows = layout.rows;
  out.rows_per_frame = layout.rows_per_frame;
  out.latent_frames = geometry.latent_frames;
  out.audio_latents = geometry.audio_latents;
  out.timesteps = ts.timesteps.numel();
  h3::CpuDenoiser denoiser(models_.transformer);
  out.device = denoiser.device_name();
  const auto t_tables = Clock::now();
  OROCHI_RETURN_IF_ERROR(denoiser.prepare(ts.timesteps));  // AdaLN tables once
  out.tables_s = seconds_since(t_tables);
  const auto t_forward = Clock::now();
  OROCHI_ASSIGN_OR_RETURN(std::vector<Tensor> velocity, denoiser.forward(h3::packed_sequence(in)));
  out.forward_s = seconds_since(t_forward);
  out.video = std::move(velocity[h3::kVideoStream]);
  out.audio = std::move(velocity[h3::kAudioStream]);
  return out;
}

}  // namespace orochi::engine
