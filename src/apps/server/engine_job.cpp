#include "apps/server/engine_job.h"

#include "apps/video_output.h"
#include "core/stopwatch.h"
#include "io/output_pair.h"

namespace orochi::apps::server {
namespace {

class EngineJob : public JobWork {
 public:
  EngineJob(engine::Engine& engine, engine::RunPlan plan, std::string video_path, int crf)
      : engine_(engine), plan_(std::move(plan)), video_path_(std::move(video_path)), crf_(crf) {}

  Expected<nlohmann::json> run(const std::function<void(const StageProgress&)>& progress,
                               const std::atomic<bool>& cancel) override {
    const auto started = Clock::now();
    OROCHI_ASSIGN_OR_RETURN(io::OutputPair output, io::OutputPair::reserve(video_path_));
    auto on_progress = [&](const engine::Progress& p) { progress({p.stage, p.done, p.total, p.seconds}); };
    OROCHI_ASSIGN_OR_RETURN(engine::RunResult ran, engine_.run(plan_, on_progress, &cancel));
    if (cancel.load()) return Status(ErrorCode::kCancelled, "cancelled before the MP4 encode");
    progress({"mp4 encode", 0, 1, 0});
    const auto t_encode = Clock::now();
    OROCHI_ASSIGN_OR_RETURN(const WrittenVideo written, write_video_and_report(ran, output, crf_, started));
    progress({"mp4 encode", 1, 1, seconds_since(t_encode)});
    nlohmann::json timings = written.report["stages_s"];
    timings["per_step"].erase("all");
    timings["device"] = written.report["device"];
    timings["request_index"] = written.report["request_index"];
    return timings;
  }

 private:
  engine::Engine& engine_;
  engine::RunPlan plan_;
  std::string video_path_;
  int crf_;
};

}  // namespace

std::unique_ptr<JobWork> make_engine_job(engine::Engine& engine, engine::RunPlan plan, std::string video_path,
                                         int crf) {
  return std::make_unique<EngineJob>(engine, std::move(plan), std::move(video_path), crf);
}

}  // namespace orochi::apps::server
