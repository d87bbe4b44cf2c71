// Engine::pre_conditions: a run's reference encode (fl2va keyframes, ref2va references through the
// VAE encoders) and its text features (the conditioner), one after the other, or at once when the
// plan says so (RunPlan::pre_overlap: two GPUs or more, the conditioner alone on the last one, the
// encoders on the others), as two ranks of a dist::ParallelContext. Neither reads what the other
// makes, so the order changes no bit; the pair's wall time goes to the report beside each part's.
#include <memory>
#include <optional>

#include "core/format.h"
#include "core/stopwatch.h"
#include "dist/cpu_parallel_context.h"
#include "engine/engine.h"

namespace orochi::engine {

Expected<Engine::PreConditions> Engine::pre_conditions(const RunPlan& plan, RunReport& report,
                                                       const ProgressCallback& progress,
                                                       const std::atomic<bool>* cancel) {
  PreConditions out;
  if (!plan.pre_overlap) {
    OROCHI_ASSIGN_OR_RETURN(out.encoded, encode_conditions(plan, progress, cancel));
    OROCHI_ASSIGN_OR_RETURN(out.text_features, text_features(plan, report));
    return out;
  }
  // Two workers of a parallel context (CPU ranks: each GPU model makes its own device current):
  // rank 0 the encoders, rank 1 the conditioner. Each keeps its own outcome; an exception on either
  // comes back as the context's status.
  OROCHI_ASSIGN_OR_RETURN(std::shared_ptr<dist::ParallelContext> pair, dist::make_cpu_context(2, dist::RankGrid{}));
  const auto t0 = Clock::now();
  RunReport text_report;  // rank 1's own: text_s comes back after the pair
  std::optional<Expected<EncodedConditions>> encoded;
  std::optional<Expected<Tensor>> text;
  double done_s[2] = {0, 0};
  OROCHI_RETURN_IF_ERROR(pair->run([&](int rank) -> Status {
    if (rank == 0) encoded = encode_conditions(plan, progress, cancel);
    else text = text_features(plan, text_report);
    done_s[rank] = seconds_since(t0);
    return Status::ok();
  }));
  report.text_s = text_report.text_s;
  report.pre_pair_s = seconds_since(t0);
  note(format_printf("reference encode and conditioner at once: %.3f s (VAE encoders done at %.3f s, conditioner "
                     "at %.3f s)", report.pre_pair_s, done_s[0], done_s[1]));
  if (!*encoded) return encoded->status();
  if (!*text) return text->status();
  out.encoded = std::move(*encoded).value();
  out.text_features = std::move(*text).value();
  return out;
}

}  // namespace orochi::engine
