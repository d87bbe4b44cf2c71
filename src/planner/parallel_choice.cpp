#include "planner/parallel_choice.h"

#include <algorithm>
#include <cstdio>

#include "models/h3/flops.h"
#include "models/h3/tensor_parallel.h"

namespace orochi::planner {
namespace {

// One number in a printf format: "%.1f GiB", "%.2f s".
std::string number(const char* format, double v) {
  char buf[48];
  std::snprintf(buf, sizeof buf, format, v);
  return buf;
}
std::string gib(double v) { return number("%.1f GiB", v); }
std::string seconds(double s) { return number("%.2f s", s); }

}  // namespace

Expected<ParallelDegrees> choose_parallel(const std::string& mode, const h3::H3Config& config, int gpus,
                                          double vram_gib, double weights_gib, double request_gib) {
  if (gpus < 1) return invalid_argument("--gpus must be >= 1");
  auto per_gpu = [&](int tp, int sp) { return weights_gib / tp + request_gib / (tp * sp); };
  auto checked = [&](int tp, int sp, std::string why) -> Expected<ParallelDegrees> {
    OROCHI_RETURN_IF_ERROR(h3::check_parallel_layout(config, tp, sp));
    return ParallelDegrees{tp, sp, std::move(why)};
  };
  OROCHI_ASSIGN_OR_RETURN(const std::optional<ParallelLayout> forced, parse_parallel_choice(mode));
  if (forced) {
    if (forced->degree > gpus)
      return invalid_argument("--parallel " + forced->name() + " needs " + std::to_string(forced->degree) +
                              " GPUs; pass --gpus " + std::to_string(forced->degree) + " or more");
    if (forced->degree == 1) return ParallelDegrees{1, 1, gpus == 1 ? "one GPU" : "forced (--parallel none): one GPU"};
    return checked(forced->tp(), forced->sp(), "forced (--parallel " + forced->name() + ")");
  }
  if (gpus == 1) return ParallelDegrees{1, 1, "one GPU"};
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

double StepEstimate::total() const { return std::max(compute_s + exposed_comm_s, stream_s); }

StepEstimate estimate_step(const MemoryPlan& plan, const ParallelDegrees& d) {
  const h3::H3Config& c = plan.input.models.transformer;
  const GpuSet& g = plan.input.gpus;
  const double S = static_cast<double>(plan.shape.rows), H = static_cast<double>(c.hidden_size);
  const double inner = static_cast<double>(c.inner_dim());
  const double layers = static_cast<double>(c.num_layers), tp = d.tp, sp = d.sp;
  StepEstimate e;
  e.compute_s = h3::forward_flops(c, plan.shape.rows, plan.shape.text_rows).total() / (tp * sp * g.tflops * 1e12);
  const double link = g.peer_gbps * 1e9;
  // Per GPU per forward, bf16: TP's 2 ring all_reduces of its [S/sp, H] rows per block; SP's o
  // back and q, k, v out as [S/sp, inner/tp] slices ((n - 1)/n of each leaving), or instead of
  // q, k, v its [S/sp, H] rows to every peer (h3::fewer_bytes_sp_qkv picks the smaller).
  const double tp_bytes = layers * 2 * 2 * (tp - 1) / tp * (S / sp) * H * 2;
  const double slice_bytes = (sp - 1) / sp * (S / sp) * (inner / tp) * 2;
  const bool gather = d.sp > 1 && h3::fewer_bytes_sp_qkv(c, d.tp, d.sp) == h3::SpQkvScheme::kGatherRows;
  const double sp_bytes = layers * (slice_bytes + (gather ? (sp - 1) * (S / sp) * H * 2 : 3 * slice_bytes));
  if (link > 0) e.exposed_comm_s = 0.5 * tp_bytes / link + std::max(0.0, sp_bytes / link - e.compute_s);
  for (const PhasePlan& phase : plan.phases)
    if (phase.name == "denoiser") e.stream_s = static_cast<double>(phase.host_read_bytes) / (g.host_gbps * 1e9) +
                                               static_cast<double>(phase.peer_read_bytes) / (link > 0 ? link : 1e12);
  return e;
}

Expected<LayoutPlan> plan_for_gpus(PlanInput in, const std::string& mode) {
  OROCHI_ASSIGN_OR_RETURN(const RequestShape shape, request_shape(in.models, in.request));
  return plan_for_gpus(std::move(in), mode, shape);
}

Expected<LayoutPlan> plan_for_gpus(PlanInput in, const std::string& mode, const RequestShape& shape) {
  Expected<LayoutPlan> laid_out = plan_layout(in, mode, shape);
  if (mode != "auto" || in.gpus.count == 1) return laid_out;
  // The alternative: everything on GPU 0, streaming from host RAM what does not fit there.
  PlanInput single = in;
  single.gpus.count = 1;
  single.layout = {};
  single.tiers.host = true;
  single.tiers.peer = false;
  Expected<MemoryPlan> one = plan_memory(single, shape);
  if (!one || !one->fits) return laid_out;
  const StepEstimate one_step = estimate_step(*one, ParallelDegrees{});
  const double one_s = one_step.total();
  const bool streams = one_step.stream_s > 0;
  std::string one_why = "one GPU (" + std::to_string(in.gpus.count - 1) + " idle), about " + seconds(one_s) +
                        " per step" + (streams ? " streaming from host RAM" : "");
  if (!laid_out) {  // no layout of the GPUs holds it, one GPU streaming does
    LayoutPlan out{std::move(one).value(), ParallelDegrees{1, 1, "auto: " + one_why + "; " +
                                                                     laid_out.status().message()}};
    return out;
  }
  const double multi_s = estimate_step(laid_out->plan, laid_out->degrees).total();
  const std::string link = number(" over a %.0f GB/s link", in.gpus.peer_gbps);
  if (one_s < multi_s) {
    LayoutPlan out{std::move(one).value(),
                   ParallelDegrees{1, 1, "auto: " + one_why + " beats tp " + std::to_string(laid_out->degrees.tp) +
                                             " x sp " + std::to_string(laid_out->degrees.sp) + "'s " + seconds(multi_s) +
                                             link}};
    return out;
  }
  laid_out->degrees.why += "; about " + seconds(multi_s) + " per step" + link + " vs " + seconds(one_s) + " on one GPU";
  return laid_out;
}

Expected<LayoutPlan> plan_layout(PlanInput in, const std::string& mode, const RequestShape& shape) {
  constexpr double kGiB = 1 << 30;
  const int gpus = in.gpus.count;
  in.layout = {};
  in.gpus.count = 1;
  double weights = 0, request = 0;
  if (gpus > 1) {
    // Every weight counted as resident: what one GPU would need to hold the whole model.
    PlanInput whole = in;
    whole.tiers.peer = whole.tiers.host = false;
    OROCHI_ASSIGN_OR_RETURN(const MemoryPlan one, plan_memory(whole, shape));
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
  OROCHI_ASSIGN_OR_RETURN(out.plan, plan_memory(in, shape));
  return out;
}

}  // namespace orochi::planner
