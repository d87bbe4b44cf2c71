// Which weight groups a plan streams, in the per-index form the GPU runtime's streamers take.
#include <algorithm>
#include <charconv>

#include "planner/plan_memory.h"

namespace orochi::planner {
namespace {

const PhasePlan* find_phase(const MemoryPlan& plan, const std::string& name) {
  for (const PhasePlan& phase : plan.phases)
    if (phase.name == name) return &phase;
  return nullptr;
}

bool streamed(const WeightGroup& g) { return g.tier == Tier::kPeer || g.tier == Tier::kHost; }

Status not_at_run_time(const WeightGroup& g, const std::string& phase) {
  return unsupported("the plan streams " + g.name + " of the " + phase +
                     " phase, which does not stream at run time yet; use a GPU with more memory, more GPUs, "
                     "or a shorter request (see `orochi plan`)");
}

}  // namespace

Expected<std::vector<bool>> streamed_groups(const MemoryPlan& plan, const std::string& phase_name,
                                            const std::string& stem, int64_t count) {
  const PhasePlan* phase = find_phase(plan, phase_name);
  if (phase == nullptr) return Status(ErrorCode::kInternal, "the plan has no " + phase_name + " phase");
  std::vector<bool> out(static_cast<size_t>(std::max<int64_t>(count, 0)), false);
  for (const WeightGroup& g : phase->groups) {
    if (!streamed(g)) continue;
    if (!g.name.starts_with(stem)) return not_at_run_time(g, phase_name);
    size_t index = 0;
    const char* first = g.name.data() + stem.size();
    const char* last = g.name.data() + g.name.size();
    const auto [end, error] = std::from_chars(first, last, index);
    if (error != std::errc() || end != last || index >= out.size())
      return Status(ErrorCode::kInternal, "the plan streams " + g.name + " of the " + phase_name +
                                              " phase, which has " + std::to_string(count) + " groups named '" +
                                              stem + "N'");
    out[index] = true;
  }
  return out;
}

Expected<std::vector<bool>> streamed_denoiser_blocks(const MemoryPlan& plan, int64_t num_layers) {
  // generate refuses through this before any weight is read, so it answers for the decoders too.
  if (const PhasePlan* decode = find_phase(plan, "decode"))
    for (const WeightGroup& g : decode->groups)
      if (streamed(g)) return not_at_run_time(g, decode->name);
  return streamed_groups(plan, "denoiser", "block ", num_layers);
}

Expected<std::vector<bool>> streamed_text_encoder_layers(const MemoryPlan& plan) {
  if (const PhasePlan* phase = find_phase(plan, "text encoder"))
    for (const WeightGroup& g : phase->groups)
      if (g.tier == Tier::kPeer)
        return unsupported("the plan keeps text-encoder " + g.name + " on GPU " + std::to_string(g.peer_gpu) +
                           ", but the text encoder streams from pinned host RAM only: plan its phase with the "
                           "host tier and without peer");
  return streamed_groups(plan, "text encoder", "layer ", plan.input.models.text_layers);
}

}  // namespace orochi::planner
