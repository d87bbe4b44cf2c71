#include "engine/run_report.h"

#include <algorithm>
#include <cstdio>
#include <numeric>

#include "core/format.h"

namespace orochi::engine {
namespace {

struct StepStats {
  double median = 0, min = 0, max = 0, total = 0;
};
StepStats step_stats(std::vector<double> s) {
  StepStats st;
  if (s.empty()) return st;
  st.total = std::accumulate(s.begin(), s.end(), 0.0);
  std::sort(s.begin(), s.end());
  st.min = s.front();
  st.max = s.back();
  st.median = s.size() % 2 ? s[s.size() / 2] : 0.5 * (s[s.size() / 2 - 1] + s[s.size() / 2]);
  return st;
}

// The encode and the text features at once count as their pair's wall time (less the encoders'
// weights, which load counts), one after the other as their sum.
double encode_and_text_seconds(const RunReport& r) {
  if (r.pre_pair_s > 0) return std::max(0.0, r.pre_pair_s - r.encoders_load_s);
  return r.text_s + r.result.times.condition_encode_s;
}
double pre_seconds(const RunReport& r) {
  return r.request_memory_s + r.media_decode_s + r.presentation_s + encode_and_text_seconds(r) +
         r.result.times.prepare_s;
}
double post_seconds(const RunReport& r) {
  return r.result.times.video_decode_s + r.result.times.audio_decode_s + r.encode_s;
}

// The packed rows by what they hold: text tokens, the target, each reference kind.
nlohmann::json rows_json(const pipeline::RowCounts& n) {
  return {{"text", n.text},
          {"target", {{"video", n.target_video}, {"audio", n.target_audio}}},
          {"keyframes", n.keyframes},
          {"references",
           {{"images", {{"count", n.images}, {"rows", n.image_rows}}},
            {"videos", {{"count", n.videos}, {"rows", n.video_rows}, {"soundtrack_rows", n.soundtrack_rows}}},
            {"audio_clips", {{"count", n.audio_clips}, {"rows", n.audio_clip_rows}}}}}};
}

}  // namespace

nlohmann::json report_json(const RunReport& r) {
  const pipeline::T2vaResult& res = r.result;
  const StepStats st = step_stats(res.times.step_s);
  nlohmann::json at_once;  // null: one after the other
  if (r.pre_pair_s > 0) at_once = encode_and_text_seconds(r);
  return nlohmann::json{
      {"model", r.model},
      {"loras", r.loras},
      {"demo", r.demo},
      {"request_index", r.request_index},
      {"device", r.device},
      {"output", r.output},
      {"request",
       {{"workflow", r.workflow}, {"width", res.geometry.width}, {"height", res.geometry.height},
        {"frames", res.geometry.frames}, {"fps", 24}, {"steps", r.steps}, {"seed", r.seed},
        {"video_shift", r.video_shift}, {"audio_shift", r.audio_shift},
        {"preset", r.preset.empty() ? nlohmann::json() : nlohmann::json(r.preset)},
        {"video_sigmas", r.video_sigmas}, {"audio_sigmas", r.audio_sigmas}, {"text_rows", res.text_rows}}},
      {"sizes",
       {{"latent_frames", res.geometry.latent_frames}, {"latent_height", res.geometry.latent_height},
        {"latent_width", res.geometry.latent_width}, {"audio_latents", res.geometry.audio_latents},
        {"packed_rows", res.packed_rows}, {"condition_rows", res.condition_rows},
        {"condition_audio_rows", res.condition_audio_rows}, {"rows", rows_json(res.rows)},
        {"table_timesteps", res.table_timesteps}}},
      {"stages_s",
       {{"load", r.load_s},
        {"pre", pre_seconds(r)},
        {"pre_detail",
         {{"request_memory", r.request_memory_s},
          {"media_decode", r.media_decode_s},
          {"vision_inputs", r.presentation_s},
          {"vae_encode", res.times.condition_encode_s},
          {"text_features", r.text_s},
          {"vae_encode_and_text_at_once", at_once},
          {"layout_noise_tables", res.times.prepare_s}}},
        {"per_step", {{"median", st.median}, {"min", st.min}, {"max", st.max}, {"all", res.times.step_s}}},
        {"denoise", st.total},
        {"post", post_seconds(r)},
        {"post_detail",
         {{"video_decode", res.times.video_decode_s}, {"audio_decode", res.times.audio_decode_s},
          {"encode", r.encode_s}}},
        {"e2e", r.e2e_s}}},
      {"peak_memory", {{"host_bytes", r.host_peak_bytes}, {"gpus", r.gpu_memory}}},
      {"plan", r.plan},
      {"precision", r.precision},
      {"switches", r.switches},
  };
}

std::string report_text(const RunReport& r) {
  const pipeline::T2vaResult& res = r.result;
  const StepStats st = step_stats(res.times.step_s);
  char buf[1024];
  std::snprintf(buf, sizeof buf,
                "stage report (%s):\n"
                "  load      %8.3f s\n"
                "  pre       %8.3f s  (request memory %.3f, media decode %.3f, VAE encode %.3f, text features %.3f, layout + noise + AdaLN tables for %lld timesteps %.3f)\n"
                "  per step  %8.3f s  median of %zu (min %.3f, max %.3f); denoise %.3f s\n"
                "  post      %8.3f s  (video decode %.3f, audio decode %.3f, MP4 encode %.3f)\n"
                "  e2e       %8.3f s\n"
                "  peak host memory %s\n",
                r.device.c_str(), r.load_s, pre_seconds(r), r.request_memory_s, r.media_decode_s,
                res.times.condition_encode_s, r.text_s, static_cast<long long>(res.table_timesteps),
                res.times.prepare_s, st.median, res.times.step_s.size(), st.min, st.max, st.total, post_seconds(r),
                res.times.video_decode_s, res.times.audio_decode_s, r.encode_s, r.e2e_s,
                format_bytes(r.host_peak_bytes).c_str());
  std::string text = buf;
  if (r.presentation_s > 0 || r.pre_pair_s > 0) {
    std::snprintf(buf, sizeof buf, "  pre parts vision inputs %.3f s (tokens, patches); VAE encode %.3f s and vision + "
                  "text %.3f s %s %.3f s\n", r.presentation_s, res.times.condition_encode_s, r.text_s,
                  r.pre_pair_s > 0 ? "at once, on separate GPUs, in" : "one after the other,",
                  encode_and_text_seconds(r));
    text += buf;
  }
  const pipeline::RowCounts& n = res.rows;
  if (n.images + n.videos + n.audio_clips > 0) {
    std::snprintf(buf, sizeof buf,
                  "  rows      %lld packed: text %lld, target video %lld + audio %lld, references: %lld image(s) "
                  "%lld, %lld video(s) %lld + soundtracks %lld, %lld audio clip(s) %lld\n",
                  static_cast<long long>(res.packed_rows), static_cast<long long>(n.text),
                  static_cast<long long>(n.target_video), static_cast<long long>(n.target_audio),
                  static_cast<long long>(n.images), static_cast<long long>(n.image_rows),
                  static_cast<long long>(n.videos), static_cast<long long>(n.video_rows),
                  static_cast<long long>(n.soundtrack_rows), static_cast<long long>(n.audio_clips),
                  static_cast<long long>(n.audio_clip_rows));
    text += buf;
  }
  return text;
}

}  // namespace orochi::engine
