// `orochi generate [MODEL_DIR] [options]`: a MiniMax-H3 t2va run that writes an MP4 with its
// soundtrack and a stage report next to it. Without MODEL_DIR it runs the built-in tiny demo model
// (random weights) on the CPU, so a first-time user gets a file without a checkpoint. A client of
// the engine: options in, the engine opens, plans and runs, the video and report out.
#include <chrono>
#include <cstdio>
#include <optional>
#include <string>

#include "apps/args.h"
#include "core/stopwatch.h"
#include "apps/commands.h"
#include "apps/engine_options_cli.h"
#include "apps/generate_options.h"
#include "apps/progress.h"
#include "apps/video_output.h"
#include "engine/engine.h"
#include "io/output_pair.h"

namespace orochi::apps {

int run_generate(const std::vector<std::string>& argv) {
  const auto t_start = Clock::now();
  Expected<GenerateOptions> opts = parse_generate_options(argv);
  if (!opts) return fail(opts.status());
  if (Status s = check_generate_request(*opts); !s.is_ok()) return fail(s);
  // The output pair is checked and reserved before any work: an unwritable folder shows now.
  Expected<io::OutputPair> output = io::OutputPair::reserve(opts->out);
  if (!output) return fail(output.status());

  const engine::ModelSource& source = opts->source;
  const engine::GenerateRequest request = request_of(*opts);
  // The conditioning is checked before the model is read (the engine checks it again in plan()).
  if (Status s = engine::Engine::check_conditioning(source, request); !s.is_ok()) return fail(s);
  Expected<engine::EngineOptions> options = engine_options_from(opts->engine);
  if (!options) return fail(options.status());
  Expected<std::unique_ptr<engine::Engine>> opened = engine::Engine::open(source, *options);
  if (!opened) return fail(opened.status());
  engine::Engine& engine = **opened;
  if (!opts->quiet)
    std::fprintf(stderr, "orochi generate: %s%s\n", engine.model_name().c_str(),
                 engine.demo() || source.random_weights ? " -- the frames and sound are noise-like by design" : "");
  Expected<engine::RunPlan> plan = engine.plan(request);
  if (!plan) return fail(plan.status());

  std::optional<ProgressLine> line;
  std::string line_stage;
  auto on_progress = [&](const engine::Progress& p) {
    if (line_stage != p.stage) {
      line.emplace(p.stage, p.stage == "denoise" ? "step" : (p.stage == "video decode" ? "chunk" : "pass"), opts->quiet);
      line_stage = p.stage;
    }
    line->update(p.done, p.total, p.seconds);
  };
  Expected<engine::RunResult> ran = engine.run(*plan, on_progress);
  if (!ran) return fail(ran.status());

  Expected<WrittenVideo> written = write_video_and_report(*ran, *output, static_cast<int>(opts->crf), t_start);
  if (!written) return fail(written.status());
  if (opts->json) {
    std::printf("%s\n", written->report.dump(2).c_str());
  } else {
    std::printf("wrote %s (%lldx%lld, %lld frames at 24 fps, %.2f s, stereo AAC) and %s\n", opts->out.c_str(),
                static_cast<long long>(written->width), static_cast<long long>(written->height),
                static_cast<long long>(written->frames), written->seconds, output->report_path().c_str());
    std::printf("%s", engine::report_text(ran->report).c_str());
  }
  return 0;
}

}  // namespace orochi::apps
