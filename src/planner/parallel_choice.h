// `--gpus N --parallel auto|none|tpN|spN|tpNxspM`: how N GPUs share one request of the H3 denoiser.
// The planner is the one decider; every command takes this vocabulary (parse_parallel_choice).
#pragma once

#include <string>

#include "core/status.h"
#include "models/h3/config.h"
#include "planner/plan_memory.h"

namespace orochi::planner {

// Every command's --parallel default: the planner decides.
inline constexpr const char* kDefaultParallel = "auto";

struct ParallelDegrees {
  int tp = 1, sp = 1;
  std::string why;  // for the log: what auto chose and why
};

// auto: Ulysses SP over every GPU when the whole model and SP's request buffers fit on each GPU
// (per block it moves 4 all_to_alls of S x inner / N per GPU against TP's 2 all_reduces of S x H,
// and keeps every GEMM at full width); otherwise the smallest TP that fits, SP over the rest.
// Memory per GPU is estimated as weights / tp + request / (tp * sp) from the one-GPU figures.
// `mode`: auto, or a layout (parse_parallel_choice) that must fit in `gpus`.
Expected<ParallelDegrees> choose_parallel(const std::string& mode, const h3::H3Config& config, int gpus,
                                          double vram_gib, double weights_gib, double request_gib);

// A step's time as the planner estimates it (seconds): compute at in.gpus.tflops per GPU, the
// exchanges at in.gpus.peer_gbps (TP's all_reduces half hidden under the chunked GEMMs, as
// measured on NVLink; SP's all_to_alls hidden up to the compute, as the copy engines do), and
// for one GPU the streamed blocks at in.gpus.host_gbps under the compute.
struct StepEstimate {
  double compute_s = 0, exposed_comm_s = 0, stream_s = 0;
  double total() const;
};
StepEstimate estimate_step(const MemoryPlan& plan, const ParallelDegrees& degrees);

// Plans `in` on in.gpus.count GPUs laid out by `mode` (auto or a layout): the one-GPU plan's
// denoiser figures (weights, the rest) choose the degrees, then that layout is planned. in.layout
// is ignored. With auto, the layout is then weighed against the whole request on GPU 0 streaming
// what does not fit from pinned host RAM (in.tiers.host or not): over a slow link (in.gpus.peer_gbps,
// measured by `generate`) tensor parallel can lose to it, and then one GPU is used. For
// `orochi plan --parallel auto` and `orochi generate --gpus N`.
struct LayoutPlan {
  MemoryPlan plan;
  ParallelDegrees degrees;
};
Expected<LayoutPlan> plan_for_gpus(PlanInput in, const std::string& mode);
// The same for a request whose shape is already made (it is not computed again).
Expected<LayoutPlan> plan_for_gpus(PlanInput in, const std::string& mode, const RequestShape& shape);
// The same without the one-GPU alternative: the layout memory chooses, planned.
Expected<LayoutPlan> plan_layout(PlanInput in, const std::string& mode, const RequestShape& shape);

// The planner's layout for chosen degrees.
ParallelLayout layout_for(const ParallelDegrees& degrees);

}  // namespace orochi::planner
