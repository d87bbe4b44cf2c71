#include "pipeline/denoise_loop.h"

#include <algorithm>
#include <chrono>
#include <string>

#include "models/h3/denoiser.h"
#include "pipeline/finite_check.h"

namespace orochi::pipeline {
namespace {

Status expect_rows(const char* what, const Tensor& t, int64_t rows, int64_t width) {
  if (t.defined() && t.dtype() == DType::kF32 && t.ndim() == 2 && t.dim(0) == rows && t.dim(1) == width)
    return Status::ok();
  return shape_mismatch(std::string(what) + " must be f32 [" + std::to_string(rows) + ", " + std::to_string(width) +
                        "] for this request and model, got " + (t.defined() ? t.describe() : std::string("nothing")));
}

}  // namespace

TimestepPlan plan_timesteps(const PackedLayout& layout, const H3Schedule& video, const H3Schedule& audio) {
  const int64_t steps = std::min(video.num_evaluations(), audio.num_evaluations());
  std::vector<RowTimesteps> per_step;
  std::vector<float> all;
  for (int64_t i = 0; i < steps; ++i) {
    per_step.push_back(assign_row_timesteps(layout, video.timesteps[i], audio.timesteps[i]));
    const Tensor& ts = per_step.back().timesteps;
    all.insert(all.end(), ts.data<float>(), ts.data<float>() + ts.numel());
  }
  std::sort(all.begin(), all.end());
  all.erase(std::unique(all.begin(), all.end()), all.end());

  TimestepPlan plan;
  plan.timesteps = Tensor::empty({static_cast<int64_t>(all.size())}, DType::kF32);
  std::copy(all.begin(), all.end(), plan.timesteps.data<float>());
  for (const RowTimesteps& step : per_step) {
    // Local index (into this step's sorted distinct t) -> index into the request-wide table.
    std::vector<int64_t> to_global(static_cast<size_t>(step.timesteps.numel()));
    for (size_t k = 0; k < to_global.size(); ++k)
      to_global[k] = std::lower_bound(all.begin(), all.end(), step.timesteps.data<float>()[k]) - all.begin();
    Tensor indices = Tensor::empty({step.indices.numel()}, DType::kI64);  // [S]
    const int64_t* local = step.indices.data<int64_t>();
    int64_t* global = indices.data<int64_t>();
    for (int64_t r = 0; r < indices.numel(); ++r) global[r] = to_global[static_cast<size_t>(local[r])];
    plan.step_indices.push_back(std::move(indices));
  }
  return plan;
}

Expected<DenoiseResult> denoise(models::Denoiser& denoiser, const DenoiseRequest& request, const StepCallback& on_step,
                                const std::atomic<bool>* cancel) {
  using Clock = std::chrono::steady_clock;
  OROCHI_CHECK(request.layout && request.video_schedule && request.audio_schedule, "denoise: incomplete request");
  const PackedLayout& layout = *request.layout;
  const models::SequenceWidths widths = denoiser.widths();
  if (widths.streams.size() != h3::kStreams)
    return invalid_argument("the H3 denoising loop needs a denoiser of 2 streams (video, audio), " +
                            denoiser.device_name() + "'s has " + std::to_string(widths.streams.size()));
  OROCHI_RETURN_IF_ERROR(expect_rows("text features", request.text, layout.text_indices.numel(), widths.context));
  OROCHI_RETURN_IF_ERROR(expect_rows("video rows", request.video_rows, layout.video_indices.numel(),
                                     widths.streams[h3::kVideoStream]));
  OROCHI_RETURN_IF_ERROR(expect_rows("audio rows", request.audio_rows, layout.audio_indices.numel(),
                                     widths.streams[h3::kAudioStream]));

  const TimestepPlan plan = plan_timesteps(layout, *request.video_schedule, *request.audio_schedule);
  DenoiseResult result;
  result.table_timesteps = plan.timesteps.numel();
  const auto t_prepare = Clock::now();
  OROCHI_RETURN_IF_ERROR(denoiser.prepare(plan.timesteps));
  result.prepare_seconds = std::chrono::duration<double>(Clock::now() - t_prepare).count();

  result.video_rows = request.video_rows.clone();
  result.audio_rows = request.audio_rows.clone();
  models::PackedSequence in;
  in.context = request.text;
  in.context_indices = layout.text_indices;
  in.token_tags = layout.token_tags;
  in.positions = layout.positions;
  in.stream_indices = {layout.video_indices, layout.audio_indices};
  const int64_t conditioning = layout.condition_video_rows;
  const int64_t target_video = result.video_rows.dim(0) - conditioning;
  const int64_t reference_audio = layout.condition_audio_rows;  // ref2va: clean, held at 1.0, never stepped
  const int64_t target_audio = result.audio_rows.dim(0) - reference_audio;
  if (on_step) on_step({0, plan.steps(), 0.0});  // the loop has started: progress from the first second
  for (int64_t i = 0; i < plan.steps(); ++i) {
    if (cancel && cancel->load()) return Status(ErrorCode::kCancelled, "cancelled before denoising step " + std::to_string(i + 1));
    const auto t_step = Clock::now();
    in.streams = {result.video_rows, result.audio_rows};
    in.timestep_indices = plan.step_indices[static_cast<size_t>(i)];
    OROCHI_ASSIGN_OR_RETURN(const std::vector<Tensor> velocity, denoiser.forward(in));
    const std::string step = "denoising step " + std::to_string(i + 1) + " of " + std::to_string(plan.steps());
    if (velocity.size() != h3::kStreams)
      return Status(ErrorCode::kInternal, step + ": the denoiser returned " + std::to_string(velocity.size()) +
                                              " velocities for 2 streams");
    const Tensor& video_velocity = velocity[h3::kVideoStream];
    const Tensor& audio_velocity = velocity[h3::kAudioStream];
    OROCHI_RETURN_IF_ERROR(check_finite(video_velocity, step + " (video velocity)"));
    OROCHI_RETURN_IF_ERROR(check_finite(audio_velocity, step + " (audio velocity)"));
    // Only the target rows move (D LoopSchedulerStep: latents[ncv:], audio[nca:]); the slices are
    // views into the rows the next forward reads.
    Tensor video_target = result.video_rows.slice(0, conditioning, conditioning + target_video);
    h3_euler_step_inplace(*request.video_schedule, i, video_target,
                          video_velocity.slice(0, conditioning, conditioning + target_video).contiguous());
    Tensor audio_target = result.audio_rows.slice(0, reference_audio, reference_audio + target_audio);
    h3_euler_step_inplace(*request.audio_schedule, i, audio_target,
                          audio_velocity.slice(0, reference_audio, reference_audio + target_audio).contiguous());
    result.step_seconds.push_back(std::chrono::duration<double>(Clock::now() - t_step).count());
    if (on_step) on_step({i + 1, plan.steps(), result.step_seconds.back()});
  }
  return result;
}

}  // namespace orochi::pipeline
