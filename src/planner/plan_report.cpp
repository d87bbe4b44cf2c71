#include "planner/plan_report.h"

#include <cstdarg>
#include <cstdio>

#include "core/format.h"
#include "planner/phase_builder.h"

namespace orochi::planner {
namespace {

// What a pool holds: its one item's name, or every item with its GiB.
std::string pool_contents(const Pool& pool) {
  std::string out;
  for (const PoolItem& item : pool.items) {
    if (!out.empty()) out += "; ";
    if (pool.items.size() == 1) {
      out += item.name;
    } else {
      const double mib = static_cast<double>(item.bytes) / static_cast<double>(kMiB);
      out += item.name + (mib >= 1024 ? format_printf(" %.2f GiB", mib / 1024)
                                      : format_printf(mib >= 10 ? " %.0f MiB" : " %.1f MiB", mib));
    }
  }
  return out;
}

// Two GPUs with the same pools (the computing GPUs of a layout) print once.
bool same_pools(const GpuPlan& a, const GpuPlan& b) {
  if (a.role != b.role || a.pools.size() != b.pools.size()) return false;
  for (size_t i = 0; i < a.pools.size(); ++i)
    if (a.pools[i].bytes() != b.pools[i].bytes() || pool_contents(a.pools[i]) != pool_contents(b.pools[i]))
      return false;
  return true;
}

std::string gpu_table(const GpuPlan& g, int last_same, uint64_t cap) {
  const std::string who =
      last_same > g.gpu ? format_printf("GPU %d-%d", g.gpu, last_same) : format_printf("GPU %d", g.gpu);
  const uint64_t total = g.total();
  std::string out = format_printf("  %s (%s%s): %.2f of %.2f GiB, ", who.c_str(), g.role.c_str(),
                                  last_same > g.gpu ? ", each" : "", to_gib(total), to_gib(cap));
  out += total <= cap ? format_printf("%.2f free\n", to_gib(cap - total))
                      : format_printf("%.2f OVER\n", to_gib(total - cap));
  if (total == 0) return out;
  out += "    pool            GiB  what is in it\n";
  for (const Pool& p : g.pools)
    if (p.bytes() > 0)
      out += format_printf("    %-13s %6.2f  %s\n", pool_name(p.kind), to_gib(p.bytes()), pool_contents(p).c_str());
  return out;
}

std::string tiers_line(const PhasePlan& phase) {
  std::string out = "  weight tiers (per computing GPU):";
  bool any = false;
  for (Tier t : {Tier::kResident, Tier::kPeer, Tier::kHost, Tier::kStreamedOnce}) {
    uint64_t bytes = 0;
    for (const WeightGroup& g : phase.groups)
      if (g.tier == t) bytes += g.bytes;
    if (bytes == 0) continue;
    out += format_printf("%s %s %.2f GiB (", any ? ";" : "", tier_name(t), to_gib(bytes)) +
           describe_groups(phase.groups, t) + ")";
    any = true;
  }
  return out + "\n";
}

// "resident, host, 2 staging slots"
std::string tiers_text(const TierPolicy& t) {
  return format_printf("resident%s%s, %d staging slots", t.peer ? ", peer" : "", t.host ? ", host" : "",
                       t.staging_slots);
}

// "S = 59,018 rows: text 13,548, target video 37,296 + audio 414; images 2 (7,296), videos 1 (32,256 +
// soundtrack 414), audio clips 1 (414)".
std::string rows_line(const RequestShape& shape) {
  const pipeline::RowCounts& n = shape.row_counts;
  std::string out = "S = " + format_grouped(shape.rows) + " rows: text " + format_grouped(n.text) + ", target video " +
                    format_grouped(n.target_video) + " + audio " + format_grouped(n.target_audio);
  if (n.keyframes > 0) out += "; keyframes " + format_grouped(n.keyframes);
  if (n.images > 0) out += "; images " + std::to_string(n.images) + " (" + format_grouped(n.image_rows) + ")";
  if (n.videos > 0)
    out += "; videos " + std::to_string(n.videos) + " (" + format_grouped(n.video_rows) +
           (n.soundtrack_rows > 0 ? " + soundtracks " + format_grouped(n.soundtrack_rows) : std::string()) + ")";
  if (n.audio_clips > 0) out += "; audio clips " + std::to_string(n.audio_clips) + " (" + format_grouped(n.audio_clip_rows) + ")";
  return out;
}

}  // namespace

std::string plan_summary_line(const MemoryPlan& plan) {
  if (plan.fits)
    return format_printf("fits with %.2f GiB to spare (tightest: %s)", to_gib(plan.spare), plan.tightest.c_str());
  return format_printf("does not fit by %.2f GiB (%s)", to_gib(plan.shortfall), plan.tightest.c_str());
}

// "precision: fp8 (...)": what --precision holds in lower precision, and the attention's.
static std::string precision_line(Precision precision, bool fp8_attention) {
  const char* attention = fp8_attention ? "; attention in FP8 (e4m3 Q, K, V and P with per-tile scales)" : "";
  if (precision == Precision::kBf16) return format_printf("precision: bf16 (as released)%s\n", attention);
  return format_printf("precision: %s (the transformer blocks' linears as %s codes + per-channel f32 scales, the rest "
                       "as released)%s\n",
                       precision_name(precision), dtype_name(precision_weight_dtype(precision)),
                       fp8_attention ? attention : "; attention in bf16");
}

std::string plan_text(const MemoryPlan& plan) {
  const PlanInput& in = plan.input;
  const pipeline::VideoGeometry& geo = plan.shape.geometry;
  std::string out =
      format_printf("orochi plan: %s, %s %lldx%lld, %lld frames (%lld latent), %lld steps, %lld text rows\n",
                    in.models.source == "h3" ? "MiniMax-H3 (released configs)" : in.models.source.c_str(),
                    plan.shape.workflow.c_str(),
                    static_cast<long long>(geo.width), static_cast<long long>(geo.height),
                    static_cast<long long>(geo.frames), static_cast<long long>(geo.latent_frames),
                    static_cast<long long>(plan.shape.steps), static_cast<long long>(plan.shape.text_rows));
  out += format_printf("GPUs: %d x %.2f GiB, layout %s; links: peer %.0f GB/s, host %.0f GB/s; tiers: %s",
                       in.gpus.count, to_gib(in.gpus.vram_bytes), in.layout.name().c_str(), in.gpus.peer_gbps,
                       in.gpus.host_gbps, tiers_text(in.tiers).c_str());
  if (in.text_encoder_tiers) out += "; text encoder: " + tiers_text(*in.text_encoder_tiers);
  out += "\npacked sequence: " + rows_line(plan.shape) + "\n";
  out += "no weights were loaded: sizes come from the configs\n";
  out += precision_line(in.precision, in.fp8_attention);
  if (plan.pre_overlap)
    out += format_printf("pre: the reference encode (GPU%s) and the text encoder (GPU %d) run at the same time; the "
                         "media decode before them is CPU work\n",
                         in.gpus.count > 2 ? format_printf("s 0-%d", in.gpus.count - 2).c_str() : " 0",
                         in.gpus.count - 1);
  for (size_t i = 0; i < plan.phases.size(); ++i) {
    const PhasePlan& phase = plan.phases[i];
    out += format_printf("\nphase %zu/%zu  %s (%s): %s\n", i + 1, plan.phases.size(), phase.name.c_str(),
                         phase.layout.c_str(), phase.about.c_str());
    for (size_t g = 0; g < phase.gpus.size(); ++g) {
      size_t last = g;
      while (last + 1 < phase.gpus.size() && same_pools(phase.gpus[g], phase.gpus[last + 1])) ++last;
      out += gpu_table(phase.gpus[g], phase.gpus[last].gpu, in.gpus.vram_bytes);
      g = last;
    }
    out += tiers_line(phase);
    for (const std::string& note : phase.notes) out += "  note: " + note + "\n";
    if (phase.peer_read_bytes + phase.host_read_bytes > 0)
      out += format_printf("  streams %s: %.2f GiB from peers, %.2f GiB from host RAM\n",
                           phase.passes == 1 ? "once per request" : "per step", to_gib(phase.peer_read_bytes),
                           to_gib(phase.host_read_bytes));
  }
  out += "\nsummary: " + plan_summary_line(plan) + "\n";
  for (const std::string& s : plan.suggestions) out += "  to fit: " + s + "\n";
  if (!plan.fits && plan.suggestions.empty())
    out += "  no layout of up to 8 such GPUs fits: use larger GPUs or a smaller request\n";
  out += format_printf("per step: ~%.2f s compute at %.0f TFLOP/s per GPU, %.2f s of weight copies%s\n",
                       plan.step_compute_s, in.gpus.tflops, plan.step_stream_s,
                       plan.step_stream_s == 0                     ? ""
                       : plan.step_stream_s <= plan.step_compute_s ? " (hidden behind compute)"
                                                                   : " (copies bound the step)");
  out += format_printf("host RAM: %.2f GiB of weights read from the host, %.2f GiB of decoded frames and audio",
                       to_gib(plan.host_weight_bytes), to_gib(plan.host_output_bytes));
  if (plan.host_reference_media_bytes + plan.host_reference_latent_bytes > 0)
    out += format_printf(", %.2f GiB of decoded references and %.2f GiB of their latents",
                         to_gib(plan.host_reference_media_bytes), to_gib(plan.host_reference_latent_bytes));
  if (in.models.transformer_host_bytes > 0)
    out += format_printf("; the transformer's weights take %.2f GiB as loaded (stored bytes, FP8 as bf16)",
                         to_gib(in.models.transformer_host_bytes));
  out += "\n";
  if (!plan.capacity.empty()) {
    out += format_printf(
        "\nequivalent single-GPU capacity (GPUs of %.2f GiB, this request, denoiser and decode weights "
        "resident; the text encoder runs on one GPU alone):\n",
        to_gib(in.gpus.vram_bytes));
    out += "  GPUs  layout  per-GPU need  held twice/comm  behaves like one GPU of\n";
    for (const CapacityRow& r : plan.capacity)
      out += format_printf("  %4d  %-6s  %9.2f GiB  %11.2f GiB  %10.2f GiB%s\n", r.gpus, r.layout.c_str(),
                           to_gib(r.per_gpu), to_gib(r.overhead),
                           static_cast<double>(r.equivalent) / static_cast<double>(kGiB),
                           r.per_gpu <= in.gpus.vram_bytes ? "  (fits)" : "");
    if (in.gpus.count == 1) out += "  (--gpus N adds rows for 2..N GPUs of this size)\n";
  }
  return out;
}

}  // namespace orochi::planner
