#include "engine/bench_streaming.h"

#include "planner/plan_memory.h"

namespace orochi::engine {

int StreamingChoice::count() const {
  int n = 0;
  for (bool s : streamed) n += s ? 1 : 0;
  return n;
}

Expected<StreamingChoice> plan_streaming(const h3::H3Config& config, const std::string& canvas, int64_t frames,
                                         int64_t text_rows, double vram_gib, const std::string& tier, int slots,
                                         Precision precision, bool fp8_attention) {
  if (tier != "host" && tier != "peer") return invalid_argument("--tier must be host or peer, got '" + tier + "'");
  if (slots < 1 || slots > 8) return invalid_argument("--slots must be in [1, 8]");
  if (vram_gib <= 0) return invalid_argument("--vram-per-gpu must be a positive number of GiB");
  planner::PlanInput in;
  OROCHI_ASSIGN_OR_RETURN(in.models, planner::load_model_configs("h3"));
  in.models.transformer = config;
  in.models.text_layers = 0;  // the bench runs the denoiser alone
  in.precision = precision;
  in.fp8_attention = fp8_attention;  // its codes' workspace is part of what must fit
  planner::PlanRequest base;
  base.frames = frames;
  base.text_rows = text_rows;
  base.steps = 1;
  OROCHI_ASSIGN_OR_RETURN(in.request, planner::request_for_resolution(canvas, base));
  // The cap is the computing GPU's: which blocks do not fit it is the same question for both
  // tiers (the peer GPU holding them is a whole GPU, not capped).
  in.gpus.count = 1;
  in.gpus.vram_bytes = static_cast<uint64_t>(vram_gib * (1ull << 30));
  in.tiers.peer = false;
  in.tiers.host = true;
  in.tiers.staging_slots = slots;
  OROCHI_ASSIGN_OR_RETURN(const planner::MemoryPlan plan, planner::plan_memory(in));
  StreamingChoice c;
  c.peer = tier == "peer";
  c.slots = slots;
  for (const planner::PhasePlan& phase : plan.phases)
    if (phase.name == "denoiser" && !phase.gpus.empty()) c.planned_gpu_bytes = phase.gpus[0].total();
  OROCHI_RETURN_IF_ERROR(planner::check_fits(plan));
  OROCHI_ASSIGN_OR_RETURN(c.streamed, planner::streamed_denoiser_blocks(plan, config.num_layers));
  return c;
}

}  // namespace orochi::engine
