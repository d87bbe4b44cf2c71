// A run's video and stage report written as a pair (io::OutputPair: temporary names, then renamed
// into place, report after video): what `orochi generate` writes beside --out and `orochi serve`
// into each job's folder.
#pragma once

#include <nlohmann/json.hpp>

#include "core/status.h"
#include "core/stopwatch.h"
#include "engine/engine.h"
#include "io/output_pair.h"

namespace orochi::apps {

struct WrittenVideo {
  nlohmann::json report;  // the stage report as written
  int64_t width = 0, height = 0, frames = 0;
  double seconds = 0;
};

// Encodes `ran` (H.264 + AAC at `crf`) into the pair's video, completes its report (encode, e2e
// since `started`, the output path; the tensors are dropped from it) and commits both. A report that
// cannot be written does not cost the video: the pair commits without it, then its error returns.
Expected<WrittenVideo> write_video_and_report(engine::RunResult& ran, io::OutputPair& output, int crf,
                                              Clock::time_point started);

}  // namespace orochi::apps
