// `orochi forward [PATH] [options]`: one MiniMax-H3 denoiser forward on the CPU over a packed t2va
// layout with random inputs: the built-in tiny demo model without PATH, else a transformer folder.
#include <chrono>
#include <cmath>
#include <cstdio>
#include <nlohmann/json.hpp>
#include <string>

#include "apps/args.h"
#include "apps/commands.h"
#include "apps/request_limits.h"
#include "core/format.h"
#include "core/host_memory.h"
#include "models/h3/summary.h"
#include "models/h3/transformer.h"
#include "pipeline/packed_layout.h"
#include "pipeline/random_inputs.h"
#include "pipeline/video_geometry.h"
#include "weights/model_folder.h"

namespace orochi::apps {
namespace {

using Clock = std::chrono::steady_clock;
double seconds_since(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

struct Stats {
  double mean = 0, stddev = 0, absmax = 0;
  bool finite = true;
};
Stats stats_of(const Tensor& t) {
  Stats s;
  const float* p = t.data<float>();
  double sum = 0, sum2 = 0;
  for (int64_t i = 0; i < t.numel(); ++i) {
    if (!std::isfinite(p[i])) s.finite = false;
    sum += p[i];
    sum2 += static_cast<double>(p[i]) * p[i];
    s.absmax = std::max(s.absmax, std::fabs(static_cast<double>(p[i])));
  }
  const double n = static_cast<double>(std::max<int64_t>(t.numel(), 1));
  s.mean = sum / n;
  s.stddev = std::sqrt(std::max(0.0, sum2 / n - s.mean * s.mean));
  return s;
}

}  // namespace

int run_forward(const std::vector<std::string>& argv) {
  Expected<Args> args = Args::parse(
      argv, {"width", "height", "frames", "text-rows", "seed", "t-video", "t-audio"}, {"json"});
  if (!args) return fail(args.status());
  const bool demo = args->positionals().empty();
  // The canvas and frames are the pipeline's to check (video_geometry suggests valid requests).
  Expected<int64_t> width = args->get_int("width", demo ? 128 : 256);
  Expected<int64_t> height = args->get_int("height", demo ? 64 : 256);
  Expected<int64_t> frames = args->get_int("frames", 22);
  Expected<int64_t> text_rows = args->get_int("text-rows", 16, limits::kTextRowsMin, limits::kTextRowsMax);
  Expected<uint64_t> seed = args->get_uint64("seed", 0);
  Expected<double> t_video = args->get_double("t-video", 0.3, 0.0, 1.0);
  Expected<double> t_audio = args->get_double("t-audio", 0.4, 0.0, 1.0);
  for (const Status& s : {width.status(), height.status(), frames.status(), text_rows.status(), seed.status(),
                          t_video.status(), t_audio.status()})
    if (!s.is_ok()) return fail(s);
  if (!(*t_video >= 0 && *t_video <= 1 && *t_audio >= 0 && *t_audio <= 1))
    return fail(invalid_argument("--t-video and --t-audio are timesteps in [0, 1] (1 = clean)"));

  Expected<pipeline::VideoGeometry> geometry = pipeline::video_geometry(*width, *height, *frames);
  if (!geometry) return fail(geometry.status());

  // 1. Weights: the demo's are generated, a checkpoint's are checked against free RAM first
  //    (the CPU path holds every weight in f32).
  const auto t_load = Clock::now();
  h3::H3Weights weights;
  std::string model_name;
  if (demo) {
    weights = h3::random_weights(h3::H3Config::tiny_demo(), 20261129);
    model_name = "built-in tiny demo model (random weights)";
  } else {
    const std::string& path = args->positionals()[0];
    Expected<weights::ModelFolder> folder = weights::ModelFolder::open(path);
    if (!folder) return fail(folder.status());
    Expected<h3::H3Config> config = h3::H3Config::from_json(folder->config);
    if (!config) return fail(config.status().with_context(path));
    const uint64_t need = static_cast<uint64_t>(h3::summarize_config(*config, DType::kF32).total.bytes);
    const uint64_t have = available_ram_bytes();
    if (have != 0 && need > have * 9 / 10)
      return fail(invalid_argument("the CPU forward holds all weights in f32: " + format_bytes(need) +
                                   " needed, " + format_bytes(have) +
                                   " of RAM available. Use a GPU build or a smaller model."));
    Expected<h3::H3Weights> loaded = h3::load_weights(path);
    if (!loaded) return fail(loaded.status());
    weights = std::move(loaded).value();
    model_name = path;
  }
  const double load_s = seconds_since(t_load);
  const h3::H3Config& config = weights.config;

  // 2. Packed layout and random inputs (counter-based noise: same seed, same numbers everywhere).
  pipeline::LayoutRequest request;
  request.text_rows = *text_rows;
  request.latent_frames = geometry->latent_frames;
  request.latent_height = geometry->latent_height;
  request.latent_width = geometry->latent_width;
  request.audio_latents = geometry->audio_latents;
  request.patch_h = config.patch_size[1];
  request.patch_w = config.patch_size[2];
  Expected<pipeline::PackedLayout> layout = pipeline::build_packed_layout(request);
  if (!layout) return fail(layout.status());
  const pipeline::RowTimesteps ts =
      pipeline::assign_row_timesteps(*layout, static_cast<float>(*t_video), static_cast<float>(*t_audio));
  const h3::H3Inputs in = pipeline::random_h3_inputs(config, *layout, ts, static_cast<uint64_t>(*seed));

  // 3. AdaLN tables once, then the forward.
  const auto t_tables = Clock::now();
  const h3::ModulationTables tables = h3::compute_modulation_tables(weights, ts.timesteps);
  const double tables_s = seconds_since(t_tables);
  const auto t_fwd = Clock::now();
  Expected<h3::H3Outputs> out = h3::forward(weights, in, tables);
  if (!out) return fail(out.status());
  const double forward_s = seconds_since(t_fwd);

  const Stats v = stats_of(out->video), a = stats_of(out->audio);
  if (args->has("json")) {
    nlohmann::json j{{"model", model_name}, {"rows", layout->rows},
                     {"video_rows", out->video.dim(0)}, {"audio_rows", out->audio.dim(0)},
                     {"text_rows", *text_rows}, {"load_s", load_s}, {"tables_s", tables_s},
                     {"forward_s", forward_s},
                     {"video", {{"mean", v.mean}, {"std", v.stddev}, {"absmax", v.absmax}, {"finite", v.finite}}},
                     {"audio", {{"mean", a.mean}, {"std", a.stddev}, {"absmax", a.absmax}, {"finite", a.finite}}}};
    std::printf("%s\n", j.dump(2).c_str());
  } else {
    std::printf("MiniMax-H3 denoiser forward on CPU: %s\n", model_name.c_str());
    std::printf("%s", config.summary().c_str());
    std::printf("  request: %lldx%lld px, %lld frames -> %lld latent frames x %lld rows, %lld audio latents x 2 ch, %lld text rows\n",
                static_cast<long long>(*width), static_cast<long long>(*height), static_cast<long long>(*frames),
                static_cast<long long>(geometry->latent_frames), static_cast<long long>(layout->rows_per_frame),
                static_cast<long long>(geometry->audio_latents), static_cast<long long>(*text_rows));
    std::printf("  packed sequence: %lld rows, %lld distinct timesteps (t_video %.3f, t_audio %.3f)\n",
                static_cast<long long>(layout->rows), static_cast<long long>(ts.timesteps.numel()), *t_video, *t_audio);
    std::printf("  time: load %.3f s, AdaLN tables %.3f s, forward %.3f s\n", load_s, tables_s, forward_s);
    std::printf("  video velocity [%lld, %lld]: mean %+.4f std %.4f absmax %.4f%s\n",
                static_cast<long long>(out->video.dim(0)), static_cast<long long>(out->video.dim(1)), v.mean,
                v.stddev, v.absmax, v.finite ? "" : "  NOT FINITE");
    std::printf("  audio velocity [%lld, %lld]: mean %+.4f std %.4f absmax %.4f%s\n",
                static_cast<long long>(out->audio.dim(0)), static_cast<long long>(out->audio.dim(1)), a.mean,
                a.stddev, a.absmax, a.finite ? "" : "  NOT FINITE");
  }
  if (!v.finite || !a.finite) return fail(Status(ErrorCode::kInternal, "the forward produced non-finite values"));
  return 0;
}

}  // namespace orochi::apps
