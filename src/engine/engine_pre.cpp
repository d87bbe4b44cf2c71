// Engine::pre_conditions: a run's reference encode (fl2va keyframes, ref2va references through the
// VAE encoders) and its text features (the conditioner), one after the other, or at once when the
// plan says so (RunPlan::pre_overlap: two GPUs or more, the conditioner alone on the last one, the
// encoders on the others). Neither reads what the other makes, so the order changes no bit; the
// pair's wall time goes to the report beside each part's own.
#include <exception>
#include <optional>
#include <thread>

#include "core/format.h"
#include "core/stopwatch.h"
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
  const auto t0 = Clock::now();
  RunReport text_report;  // the thread's own: text_s comes back after the join
  std::optional<Expected<Tensor>> text;
  std::exception_ptr text_error;  // an invariant broken on the thread is rethrown here
  double text_done_s = 0;
  std::thread conditioner([&] {
    try {
      text = text_features(plan, text_report);
    } catch (...) {
      text_error = std::current_exception();
    }
    text_done_s = seconds_since(t0);
  });
  std::optional<Expected<EncodedConditions>> encoded;
  try {
    encoded = encode_conditions(plan, progress, cancel);
  } catch (...) {
    conditioner.join();  // never leave the thread running past an exception
    throw;
  }
  const double encode_done_s = seconds_since(t0);
  conditioner.join();
  if (text_error) std::rethrow_exception(text_error);
  report.text_s = text_report.text_s;
  report.pre_pair_s = seconds_since(t0);
  note(format_printf("reference encode and conditioner at once: %.3f s (VAE encoders done at %.3f s, conditioner "
                     "at %.3f s)", report.pre_pair_s, encode_done_s, text_done_s));
  if (!*encoded) return encoded->status();
  if (!*text) return text->status();
  out.encoded = std::move(*encoded).value();
  out.text_features = std::move(*text).value();
  return out;
}

}  // namespace orochi::engine
