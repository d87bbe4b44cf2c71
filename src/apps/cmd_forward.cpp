// `orochi forward [PATH] [options]`: one MiniMax-H3 denoiser forward on the CPU over a packed t2va
// layout with random inputs (Engine::forward): the built-in tiny demo model without PATH, else a
// transformer folder.
#include <cmath>
#include <cstdio>
#include <nlohmann/json.hpp>
#include <string>

#include "apps/args.h"
#include "apps/commands.h"
#include "apps/request_limits.h"
#include "engine/engine.h"
#include "models/h3/transformer.h"

namespace orochi::apps {
namespace {

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
  engine::ForwardRequest request;
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
  request.width = *width;
  request.height = *height;
  request.frames = *frames;
  request.text_rows = *text_rows;
  request.seed = *seed;
  request.t_video = *t_video;
  request.t_audio = *t_audio;

  if (Status s = engine::Engine::check_forward(request); !s.is_ok()) return fail(s);
  // The engine reads the weights (a checkpoint's checked against free RAM first: the CPU path
  // holds every weight in f32) and runs the forward.
  engine::ModelSource source;
  if (!demo) source.transformer_dir = args->positionals()[0];
  engine::EngineOptions options;
  options.device = "cpu";
  Expected<std::unique_ptr<engine::Engine>> engine = engine::Engine::open(source, options);
  if (!engine) return fail(engine.status());
  Expected<engine::ForwardResult> out = (*engine)->forward(request);
  if (!out) return fail(out.status());
  const std::string model_name = demo ? "built-in tiny demo model (random weights)" : (*engine)->model_name();
  const h3::H3Config& config = (*engine)->transformer_config();

  const Stats v = stats_of(out->video), a = stats_of(out->audio);
  if (args->has("json")) {
    nlohmann::json j{{"model", model_name}, {"rows", out->rows},
                     {"video_rows", out->video.dim(0)}, {"audio_rows", out->audio.dim(0)},
                     {"text_rows", request.text_rows}, {"load_s", out->load_s}, {"tables_s", out->tables_s},
                     {"forward_s", out->forward_s},
                     {"video", {{"mean", v.mean}, {"std", v.stddev}, {"absmax", v.absmax}, {"finite", v.finite}}},
                     {"audio", {{"mean", a.mean}, {"std", a.stddev}, {"absmax", a.absmax}, {"finite", a.finite}}}};
    std::printf("%s\n", j.dump(2).c_str());
  } else {
    std::printf("MiniMax-H3 denoiser forward on %s: %s\n", out->device.c_str(), model_name.c_str());
    std::printf("%s", config.summary().c_str());
    std::printf("  request: %lldx%lld px, %lld frames -> %lld latent frames x %lld rows, %lld audio latents x 2 ch, %lld text rows\n",
                static_cast<long long>(request.width), static_cast<long long>(request.height),
                static_cast<long long>(request.frames), static_cast<long long>(out->latent_frames),
                static_cast<long long>(out->rows_per_frame), static_cast<long long>(out->audio_latents),
                static_cast<long long>(request.text_rows));
    std::printf("  packed sequence: %lld rows, %lld distinct timesteps (t_video %.3f, t_audio %.3f)\n",
                static_cast<long long>(out->rows), static_cast<long long>(out->timesteps), request.t_video,
                request.t_audio);
    std::printf("  time: load %.3f s, AdaLN tables %.3f s, forward %.3f s\n", out->load_s, out->tables_s,
                out->forward_s);
    std::printf("  video velocity [%lld, %lld]: mean %+.4f std %.4f absmax %.4f%s\n",
                static_cast<long long>(out->video.dim(0)), static_cast<long long>(out->video.dim(1)), v.mean,
                v.stddev, v.absmax, v.finite ? "" : "  NOT FINITE");
    std::printf("  audio velocity [%lld, %lld]: mean %+.4f std %.4f absmax %.4f%s\n",
                static_cast<long long>(out->audio.dim(0)), static_cast<long long>(out->audio.dim(1)), a.mean,
                a.stddev, a.absmax, a.finite ? "" : "  NOT FINITE");
  }
  if (!v.finite || !a.finite) return fail(Status(ErrorCode::kNonFinite, "the forward produced non-finite values"));
  return 0;
}

}  // namespace orochi::apps
