#include "pipeline/sampling.h"

#include <cmath>

#include "core/format.h"

namespace orochi::pipeline {
namespace {

constexpr int64_t kMaxSteps = 1000;

std::string preset_names() {
  std::string names;
  for (const SamplingPreset& p : sampling_presets()) names += (names.empty() ? "" : ", ") + p.name;
  return names;
}

// Up to 8 significant digits: shifts and the published grids print as written ("6", "0.99391").
std::string number(double v) { return format_printf("%.8g", v); }

// Our rules on a given grid, on top of the scheduler's (strictly decreasing in fp32, 0 last): every
// value in [0, 1] and the first exactly 1. A run starts from pure noise; a grid that starts lower
// would denoise it as if it were partly clean (diffusers does that, ComfyUI scales the noise to the
// first sigma instead), so it is refused rather than given one of the two meanings.
Status check_sigma_list(const std::vector<double>& sigmas, const char* flag) {
  const std::string hint = std::string(flag) +
                           " takes the whole grid, 1 first and 0 last, strictly decreasing: N evaluations take N + 1 "
                           "values (e.g. 1,0.83494,0.46875,0)";
  if (sigmas.size() < 2)
    return invalid_argument(std::string(flag) + " has " + std::to_string(sigmas.size()) + " value(s); " + hint);
  if (sigmas.size() > static_cast<size_t>(kMaxSteps) + 1)
    return invalid_argument(std::string(flag) + " has " + std::to_string(sigmas.size()) + " values: at most " +
                            std::to_string(kMaxSteps) + " evaluations (" + std::to_string(kMaxSteps + 1) + " values)");
  for (size_t i = 0; i < sigmas.size(); ++i)
    if (!std::isfinite(sigmas[i]) || sigmas[i] < 0 || sigmas[i] > 1)
      return invalid_argument(std::string(flag) + " value " + std::to_string(i + 1) + " is " + number(sigmas[i]) +
                              ": every sigma must be in [0, 1]");
  if (sigmas.front() != 1.0)
    return invalid_argument(std::string(flag) + " starts at " + number(sigmas.front()) +
                            ": a run starts from pure noise, so the first sigma must be 1 (" + hint + ")");
  if (sigmas.back() != 0.0)
    return invalid_argument(std::string(flag) + " ends at " + number(sigmas.back()) +
                            ": the last sigma must be 0, the clean result (" + hint + ")");
  for (size_t i = 1; i < sigmas.size(); ++i)
    if (!(static_cast<float>(sigmas[i]) < static_cast<float>(sigmas[i - 1])))
      return invalid_argument(std::string(flag) + " is not strictly decreasing at value " + std::to_string(i + 1) +
                              " (" + number(sigmas[i - 1]) + " then " + number(sigmas[i]) +
                              (sigmas[i] < sigmas[i - 1] ? ", one fp32 value" : "") + "); " + hint);
  return Status::ok();
}

Status check_shift(double shift, const char* flag) {
  if (!std::isfinite(shift) || shift <= 0)
    return invalid_argument(std::string(flag) + " must be a finite number > 0, got " + number(shift));
  return Status::ok();
}

}  // namespace

const std::vector<SamplingPreset>& sampling_presets() {
  static const std::vector<SamplingPreset> presets = {
      {"turbo8", 8, 6.0, 3.0, "lightx2v's 8-step turbo LoRA (768p): 8 evaluations on q_i = (8 - i)/8, shifts 6/3"},
      {"turbo4", 4, 6.0, 3.0, "lightx2v's 4-step turbo LoRA v1.1 (768p): 4 evaluations on q_i = (4 - i)/4, shifts 6/3"},
  };
  return presets;
}

Expected<Sampling> resolve_sampling(const Sampling& asked, int64_t default_steps) {
  Sampling s = asked;
  const bool video_list = !s.video_sigmas.empty(), audio_list = !s.audio_sigmas.empty();
  if (!s.preset.empty()) {
    const SamplingPreset* preset = nullptr;
    for (const SamplingPreset& p : sampling_presets())
      if (p.name == s.preset) preset = &p;
    if (!preset) return invalid_argument("--preset " + s.preset + " is not a preset; the presets are " + preset_names());
    std::vector<std::string> conflicts;
    if (s.steps != 0) conflicts.push_back("--steps");
    if (s.video_shift != 0) conflicts.push_back("--video-shift");
    if (s.audio_shift != 0) conflicts.push_back("--audio-shift");
    if (video_list) conflicts.push_back("--sigmas");
    if (audio_list) conflicts.push_back("--audio-sigmas");
    if (!conflicts.empty()) {
      std::string names;
      for (const std::string& c : conflicts) names += (names.empty() ? "" : ", ") + c;
      return invalid_argument("--preset " + preset->name + " sets " + std::to_string(preset->steps) +
                              " steps and shifts " + number(preset->video_shift) + "/" + number(preset->audio_shift) +
                              " (" + preset->source + "); drop " + names + ", or drop --preset and give the schedule "
                              "yourself");
    }
    s.steps = preset->steps;
    s.video_shift = preset->video_shift;
    s.audio_shift = preset->audio_shift;
    return s;
  }
  if (video_list && s.video_shift != 0)
    return invalid_argument("--sigmas gives the video grid as it is and --video-shift shapes the computed one: pass one");
  if (audio_list && s.audio_shift != 0)
    return invalid_argument("--audio-sigmas gives the audio grid as it is and --audio-shift shapes the computed one: "
                            "pass one");
  if (video_list) OROCHI_RETURN_IF_ERROR(check_sigma_list(s.video_sigmas, "--sigmas"));
  if (audio_list) OROCHI_RETURN_IF_ERROR(check_sigma_list(s.audio_sigmas, "--audio-sigmas"));
  if (video_list && audio_list && s.video_sigmas.size() != s.audio_sigmas.size())
    return invalid_argument("--sigmas has " + std::to_string(s.video_sigmas.size()) + " values and --audio-sigmas " +
                            std::to_string(s.audio_sigmas.size()) +
                            ": the two schedules step in lockstep, so they need as many values");
  if (video_list || audio_list) {
    const char* flag = video_list ? "--sigmas" : "--audio-sigmas";
    const int64_t listed = static_cast<int64_t>((video_list ? s.video_sigmas : s.audio_sigmas).size()) - 1;
    if (s.steps != 0 && s.steps != listed)
      return invalid_argument("--steps " + std::to_string(s.steps) + " but " + flag + " has " +
                              std::to_string(listed + 1) + " values, " + std::to_string(listed) +
                              " evaluations (N evaluations take N + 1 values, the last 0); drop --steps");
    s.steps = listed;
  }
  if (s.steps == 0) s.steps = default_steps;
  if (s.steps < 1 || s.steps > kMaxSteps)
    return invalid_argument("--steps must be in [1, " + std::to_string(kMaxSteps) + "], got " + std::to_string(s.steps));
  if (s.video_shift == 0) s.video_shift = kH3VideoShift;
  if (s.audio_shift == 0) s.audio_shift = kH3AudioShift;
  OROCHI_RETURN_IF_ERROR(check_shift(s.video_shift, "--video-shift"));
  OROCHI_RETURN_IF_ERROR(check_shift(s.audio_shift, "--audio-shift"));
  return s;
}

Expected<H3Schedule> sampling_schedule(int64_t steps, double shift, const std::vector<double>& sigmas,
                                       const char* flag) {
  if (sigmas.empty()) return make_h3_schedule(steps + 1, shift);  // N + 1 grid points, N evaluations
  OROCHI_RETURN_IF_ERROR(check_sigma_list(sigmas, flag));
  if (static_cast<int64_t>(sigmas.size()) != steps + 1)
    return invalid_argument(std::string(flag) + " has " + std::to_string(sigmas.size()) + " values for " +
                            std::to_string(steps) + " steps: N evaluations take N + 1 values");
  return make_h3_schedule_from_sigmas(sigmas);
}

std::string describe_sampling(const Sampling& s) {
  auto stream = [](const char* name, double shift, const std::vector<double>& sigmas) {
    if (sigmas.empty()) return std::string(name) + " grid shift " + number(shift);
    std::string list;
    for (double v : sigmas) list += (list.empty() ? "" : ",") + number(v);
    return std::string(name) + " sigmas " + list;
  };
  return (s.preset.empty() ? std::string() : s.preset + ": ") + std::to_string(s.steps) + " evaluations, " +
         stream("video", s.video_shift, s.video_sigmas) + ", " + stream("audio", s.audio_shift, s.audio_sigmas);
}

}  // namespace orochi::pipeline
