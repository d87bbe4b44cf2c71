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

}  // namespace orochi::planner
