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
#include "engine/engine.h"
#include "io/mp4.h"
#include "io/output_pair.h"
#include "io/video_frames.h"

namespace orochi::apps {
namespace {


}  // namespace

int run_generate(const std::vector<std::string>& argv) {
  const auto t_start = Clock::now();
  Expected<GenerateOptions> opts = parse_generate_options(argv);
  if (!opts) return fail(opts.status());
  if (Status s = check_generate_request(*opts); !s.is_ok()) return fail(s);
  // The output pair is checked and reserved before any work: an unwritable folder shows now.
  Expected<io::OutputPair> output = io::OutputPair::reserve(opts->out);
  if (!output) return fail(output.status());

  engine::ModelSource source;
  source.dir = opts->model_dir;
  source.random_weights = opts->random_weights;
  source.transformer_file = opts->transformer_file;
  source.transformer_config = opts->transformer_config;
  source.qkv_order = opts->qkv_order;
  source.loras = opts->loras;
  const engine::GenerateRequest request = request_of(*opts);
  // The conditioning is checked before the model is read (the engine checks it again in plan()).
  if (Status s = engine::Engine::check_conditioning(source, request); !s.is_ok()) return fail(s);
  const EngineCli cli{opts->device, opts->gpus, opts->parallel, opts->comm_timeout_s, opts->set, opts->quiet,
                      "orochi generate"};
  Expected<engine::EngineOptions> options = engine_options_from(cli);
  if (!options) return fail(options.status());
  Expected<std::unique_ptr<engine::Engine>> opened = engine::Engine::open(source, *options);
  if (!opened) return fail(opened.status());
  engine::Engine& engine = **opened;
  if (!opts->quiet)
    std::fprintf(stderr, "orochi generate: %s%s\n", engine.model_name().c_str(),
                 engine.demo() || opts->random_weights ? " -- the frames and sound are noise-like by design" : "");
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
  engine::RunReport& report = ran->report;

  // MP4 (H.264 + AAC) under its temporary name, then the report, then both into place.
  const auto t_encode = Clock::now();
  Expected<io::VideoFrames> video = io::video_from_planar_floats(ran->result.frames);
  if (!video) return fail(video.status());
  Expected<io::AudioTrack> audio = io::audio_from_planar_floats(ran->result.waveform, ran->result.sample_rate);
  if (!audio) return fail(audio.status());
  io::Mp4Options mp4;
  mp4.crf = static_cast<int>(opts->crf);
  if (Status s = io::write_mp4(output->video_temp(), *video, &*audio, mp4); !s.is_ok()) return fail(s);
  report.encode_s = seconds_since(t_encode);
  report.output = opts->out;
  report.result = std::move(ran->result);
  report.result.frames = Tensor();
  report.result.waveform = Tensor();
  report.e2e_s = seconds_since(t_start);
  const nlohmann::json j = engine::report_json(report);
  // A report that cannot be written does not cost the video: the pair commits without it (the old
  // report is removed either way), then the run fails with the report's reason.
  const Status report_written = output->write_report(j.dump(2) + "\n");
  if (Status s = output->commit(); !s.is_ok()) return fail(s);
  if (!report_written.is_ok()) return fail(report_written);
  if (opts->json) {
    std::printf("%s\n", j.dump(2).c_str());
  } else {
    std::printf("wrote %s (%lldx%lld, %lld frames at 24 fps, %.2f s, stereo AAC) and %s\n", opts->out.c_str(),
                static_cast<long long>(video->width), static_cast<long long>(video->height),
                static_cast<long long>(video->frames), video->duration_seconds(), output->report_path().c_str());
    std::printf("%s", engine::report_text(report).c_str());
  }
  return 0;
}

}  // namespace orochi::apps
