#include "planner/capacity.h"

#include <algorithm>
#include <cstdio>

#include "planner/h3_denoiser_memory.h"

namespace orochi::planner {
namespace {

// The fullest GPU of the phases a layout shares out. The text encoder is left out: it runs on GPU 0
// alone under every layout and streams from host RAM what does not fit there, so counting it whole
// would make every layout look like one GPU.
uint64_t fullest(const MemoryPlan& plan) {
  uint64_t most = 0;
  for (const PhasePlan& phase : plan.phases) {
    if (phase.name == "text encoder") continue;
    for (const GpuPlan& g : phase.gpus) most = std::max(most, g.total());
  }
  return most;
}

std::string spare_text(const MemoryPlan& plan) {
  char buf[64];
  std::snprintf(buf, sizeof buf, " (%.2f GiB to spare)", to_gib(plan.spare));
  return buf;
}

}  // namespace

Expected<std::vector<CapacityRow>> capacity_table(const PlanInput& input, const RequestShape& shape) {
  std::vector<CapacityRow> rows;
  PlanInput resident = input;
  resident.tiers.peer = resident.tiers.host = false;
  resident.text_encoder_tiers.reset();  // every phase resident
  uint64_t single = 0;
  for (int n = 1; n <= input.gpus.count; ++n) {
    for (ParallelLayout::Kind kind : {ParallelLayout::Kind::kTensor, ParallelLayout::Kind::kSequence}) {
      ParallelLayout layout{n == 1 ? ParallelLayout::Kind::kNone : kind, n};
      if (!check_h3_layout(input.models.transformer, layout).is_ok()) continue;
      resident.layout = layout;
      resident.gpus.count = n;
      OROCHI_ASSIGN_OR_RETURN(const MemoryPlan plan, plan_memory_impl(resident, &shape, false));
      CapacityRow row;
      row.gpus = n;
      row.layout = layout.name();
      row.per_gpu = fullest(plan);
      if (n == 1) single = row.per_gpu;
      row.overhead = static_cast<uint64_t>(n) * row.per_gpu > single ? static_cast<uint64_t>(n) * row.per_gpu - single : 0;
      row.equivalent = static_cast<int64_t>(static_cast<uint64_t>(n) * input.gpus.vram_bytes) -
                       static_cast<int64_t>(row.overhead);
      rows.push_back(row);
      if (n == 1) break;
    }
  }
  return rows;
}

std::vector<std::string> suggest_fixes(const PlanInput& input, const RequestShape& shape) {
  std::vector<std::string> out;
  // The same request keeps its shape; a changed canvas or frame count is planned anew.
  auto fits = [&](const PlanInput& in) -> Expected<MemoryPlan> {
    const bool same = in.request.width == input.request.width && in.request.height == input.request.height &&
                      in.request.frames == input.request.frames;
    OROCHI_ASSIGN_OR_RETURN(MemoryPlan plan, plan_memory_impl(in, same ? &shape : nullptr, false));
    if (!plan.fits) return invalid_argument("no");
    return plan;
  };
  if (!input.tiers.host || !input.tiers.peer) {
    PlanInput t = input;
    t.tiers.host = t.tiers.peer = true;
    if (auto plan = fits(t))
      out.push_back("stream the weights that do not fit from peer GPUs and pinned host RAM (--tiers "
                    "resident,peer,host)" + spare_text(*plan));
  }
  for (ParallelLayout::Kind kind : {ParallelLayout::Kind::kSequence, ParallelLayout::Kind::kTensor}) {
    for (int n = std::max(2, input.layout.degree + 1); n <= 8; ++n) {
      PlanInput t = input;
      t.layout = {kind, n};
      t.gpus.count = std::max(input.gpus.count, n);
      if (!check_h3_layout(t.models.transformer, t.layout).is_ok()) continue;
      if (auto plan = fits(t)) {
        char buf[160];
        std::snprintf(buf, sizeof buf, "%d GPUs of %.0f GiB with --gpus %d --parallel %s", t.gpus.count,
                      to_gib(t.gpus.vram_bytes), t.gpus.count, t.layout.name().c_str());
        out.push_back(buf + spare_text(*plan));
        break;
      }
    }
  }
  const PlanRequest& r = input.request;
  if (r.width * r.height > 832 * 480) {
    PlanInput t = input;
    t.request.width = r.width >= r.height ? 832 : 480;
    t.request.height = r.width >= r.height ? 480 : 832;
    if (auto plan = fits(t))
      out.push_back("a smaller canvas: --res " + std::to_string(t.request.width) + "x" +
                    std::to_string(t.request.height) + spare_text(*plan));
  }
  if (r.frames > 124) {
    PlanInput t = input;
    t.request.frames = 124;
    if (auto plan = fits(t)) out.push_back("fewer frames: --frames 124" + spare_text(*plan));
  }
  return out;
}

}  // namespace orochi::planner
