// plan_json: the same data as plan_text, for scripts and the server.
#include "planner/phase_builder.h"
#include "planner/plan_report.h"

namespace orochi::planner {
namespace {

nlohmann::json gpu_json(const GpuPlan& g) {
  nlohmann::json pools = nlohmann::json::array();
  for (const Pool& p : g.pools) {
    nlohmann::json items = nlohmann::json::array();
    for (const PoolItem& i : p.items) items.push_back({{"name", i.name}, {"bytes", i.bytes}});
    pools.push_back({{"pool", pool_name(p.kind)}, {"bytes", p.bytes()}, {"items", items}});
  }
  return {{"gpu", g.gpu}, {"role", g.role}, {"total_bytes", g.total()}, {"pools", pools}};
}

nlohmann::json phase_json(const PhasePlan& phase) {
  nlohmann::json gpus = nlohmann::json::array(), groups = nlohmann::json::array();
  for (const GpuPlan& g : phase.gpus) gpus.push_back(gpu_json(g));
  for (const WeightGroup& w : phase.groups) {
    nlohmann::json j{{"name", w.name}, {"bytes", w.bytes}, {"tier", tier_name(w.tier)}};
    if (w.tier == Tier::kPeer) j["peer_gpu"] = w.peer_gpu;
    groups.push_back(j);
  }
  return {{"name", phase.name},
          {"about", phase.about},
          {"layout", phase.layout},
          {"notes", phase.notes},
          {"gpus", gpus},
          {"weight_groups", groups},
          {"host_bytes", phase.host_bytes},
          {"peer_read_bytes_per_pass", phase.peer_read_bytes},
          {"host_read_bytes_per_pass", phase.host_read_bytes},
          {"streamed_once_bytes", phase.streamed_once_bytes},
          {"passes", phase.passes}};
}

nlohmann::json tiers_json(const TierPolicy& t) {
  return {{"peer", t.peer}, {"host", t.host}, {"staging_slots", t.staging_slots}};
}

}  // namespace

nlohmann::json plan_json(const MemoryPlan& plan) {
  const PlanInput& in = plan.input;
  const RequestShape& s = plan.shape;
  nlohmann::json phases = nlohmann::json::array(), capacity = nlohmann::json::array();
  for (const PhasePlan& p : plan.phases) phases.push_back(phase_json(p));
  for (const CapacityRow& r : plan.capacity)
    capacity.push_back({{"gpus", r.gpus},
                        {"layout", r.layout},
                        {"per_gpu_bytes", r.per_gpu},
                        {"overhead_bytes", r.overhead},
                        {"equivalent_bytes", r.equivalent},
                        {"fits", r.per_gpu <= in.gpus.vram_bytes}});
  const pipeline::RowCounts& n = s.row_counts;
  const nlohmann::json rows = {{"text", n.text},
                               {"target_video", n.target_video},
                               {"target_audio", n.target_audio},
                               {"keyframes", n.keyframes},
                               {"images", n.images},
                               {"image_rows", n.image_rows},
                               {"videos", n.videos},
                               {"video_rows", n.video_rows},
                               {"soundtrack_rows", n.soundtrack_rows},
                               {"audio_clips", n.audio_clips},
                               {"audio_clip_rows", n.audio_clip_rows}};
  return {{"model", in.models.source},
          {"precision", precision_name(in.precision)},
          {"attention_precision", in.fp8_attention ? "fp8" : "bf16"},
          {"conditioner_precision", precision_name(in.conditioner_precision)},
          {"request",
           {{"workflow", s.workflow},
            {"width", s.geometry.width},
            {"height", s.geometry.height},
            {"frames", s.geometry.frames},
            {"latent_frames", s.geometry.latent_frames},
            {"steps", s.steps},
            {"text_rows", s.text_rows},
            {"packed_rows", s.rows},
            {"rows", rows},
            {"vision_patches", in.request.vision_patches},
            {"video_rows", s.video_rows},
            {"audio_rows", s.audio_rows},
            {"table_timesteps", s.timesteps},
            {"vae_chunks", s.vae_chunks},
            {"vae_tiles_per_chunk", s.vae_tiles_per_chunk},
            {"vae_tile_tokens", s.vae_tile_tokens}}},
          {"gpus",
           {{"count", in.gpus.count},
            {"vram_bytes_per_gpu", in.gpus.vram_bytes},
            {"peer_gbps", in.gpus.peer_gbps},
            {"host_gbps", in.gpus.host_gbps},
            {"tflops", in.gpus.tflops}}},
          {"layout", in.layout.name()},
          {"tiers", tiers_json(in.tiers)},
          {"text_encoder_tiers", tiers_json(in.text_encoder_tiers.value_or(in.tiers))},
          {"phases", phases},
          {"pre_overlap", plan.pre_overlap},
          {"fits", plan.fits},
          {"spare_bytes", plan.spare},
          {"shortfall_bytes", plan.shortfall},
          {"tightest", plan.tightest},
          {"summary", plan_summary_line(plan)},
          {"suggestions", plan.suggestions},
          {"host_weight_bytes", plan.host_weight_bytes},
          {"host_transformer_bytes", plan.input.models.transformer_host_bytes},
          {"host_output_bytes", plan.host_output_bytes},
          {"host_reference_media_bytes", plan.host_reference_media_bytes},
          {"host_reference_latent_bytes", plan.host_reference_latent_bytes},
          {"step_compute_s", plan.step_compute_s},
          {"step_stream_s", plan.step_stream_s},
          {"capacity", capacity}};
}

}  // namespace orochi::planner
