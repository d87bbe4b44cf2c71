#include "planner/parallel_choice.h"

#include <cstdio>

#include "models/h3/tensor_parallel.h"

namespace orochi::planner {
namespace {

std::string gib(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f GiB", v);
  return buf;
}

}  // namespace

Expected<ParallelDegrees> choose_parallel(const std::string& mode, const h3::H3Config& config, int gpus,
                                          double vram_gib, double weights_gib, double request_gib) {
  if (gpus < 1) return invalid_argument("--gpus must be >= 1");
  auto per_gpu = [&](int tp, int sp) { return weights_gib / tp + request_gib / (tp * sp); };
  auto checked = [&](int tp, int sp, std::string why) -> Expected<ParallelDegrees> {
    OROCHI_RETURN_IF_ERROR(h3::check_parallel_layout(config, tp, sp));
    return ParallelDegrees{tp, sp, std::move(why)};
  };
  if (gpus == 1) return ParallelDegrees{1, 1, "one GPU"};
  if (mode == "tp") return checked(gpus, 1, "forced (--parallel tp)");
  if (mode == "sp") return checked(1, gpus, "forced (--parallel sp)");
  if (mode == "tpxsp") {
    if (gpus % 2 != 0) return invalid_argument("--parallel tpxsp needs an even number of GPUs (tp 2 x sp N/2)");
    return checked(2, gpus / 2, "forced (--parallel tpxsp)");
  }
  if (mode != "auto") return invalid_argument("--parallel must be auto, tp, sp or tpxsp, got '" + mode + "'");
  // Smallest TP that fits; SP takes the remaining GPUs.
  for (int tp = 1; tp <= gpus; ++tp) {
    if (gpus % tp != 0 || !h3::check_parallel_layout(config, tp, gpus / tp).is_ok()) continue;
    const double need = per_gpu(tp, gpus / tp);
    if (need <= vram_gib)
      return ParallelDegrees{tp, gpus / tp,
                             "auto: about " + gib(need) + " per GPU of " + gib(vram_gib) +
                                 (tp == 1 ? "; the whole model fits, so sequence parallel (least traffic)"
                                          : "; tensor parallel " + std::to_string(tp) + " to fit the weights")};
  }
  return invalid_argument("no layout of " + std::to_string(gpus) + " GPUs fits this request in " + gib(vram_gib) +
                          " per GPU (tensor parallel over all of them needs about " + gib(per_gpu(gpus, 1)) +
                          "); use more GPUs, a smaller canvas or fewer frames, or check `orochi plan`");
}

ParallelLayout layout_for(const ParallelDegrees& d) {
  using Kind = ParallelLayout::Kind;
  if (d.tp > 1 && d.sp > 1) return {Kind::kTensorSequence, d.tp * d.sp, d.sp};
  if (d.tp > 1) return {Kind::kTensor, d.tp, 1};
  if (d.sp > 1) return {Kind::kSequence, d.sp, 1};
  return {};
}

Expected<LayoutPlan> plan_for_gpus(PlanInput in, const std::string& mode) {
  constexpr double kGiB = 1 << 30;
  const int gpus = in.gpus.count;
  in.layout = {};
  in.gpus.count = 1;
  double weights = 0, request = 0;
  if (gpus > 1) {
    // Every weight counted as resident: what one GPU would need to hold the whole model.
    PlanInput whole = in;
    whole.tiers.peer = whole.tiers.host = false;
    OROCHI_ASSIGN_OR_RETURN(const MemoryPlan one, plan_memory(whole));
    for (const PhasePlan& phase : one.phases)
      if (phase.name == "denoiser" && !phase.gpus.empty()) {
        weights = phase.gpus[0].pool_bytes(PoolKind::kWeights) / kGiB;
        request = phase.gpus[0].total() / kGiB - weights;
      }
  }
  LayoutPlan out;
  OROCHI_ASSIGN_OR_RETURN(out.degrees, choose_parallel(mode, in.models.transformer, gpus,
                                                       static_cast<double>(in.gpus.vram_bytes) / kGiB, weights, request));
  in.gpus.count = gpus;
  in.layout = layout_for(out.degrees);
  OROCHI_ASSIGN_OR_RETURN(out.plan, plan_memory(in));
  return out;
}

}  // namespace orochi::planner
