#include "planner/plan_memory.h"

#include <algorithm>
#include <cstdio>

#include "core/format.h"
#include "models/h3/flops.h"
#include "planner/capacity.h"
#include "planner/decode_memory.h"
#include "planner/encode_memory.h"
#include "planner/h3_denoiser_memory.h"
#include "planner/phase_builder.h"
#include "planner/text_encoder_memory.h"

namespace orochi::planner {
namespace {

constexpr uint64_t kContextBytes = 256 * kMiB;     // CUDA context + cuBLASLt/cuDNN handles (lazy loading)
constexpr uint64_t kMinSafetyBytes = 512 * kMiB;   // fragmentation, other processes

std::string count(int64_t v) { return format_grouped(v); }

// One GPU whatever the request's layout: the runtime has no parallel text encoder. The other GPUs
// may still hold its streamed layers (peer tier) when its policy allows.
PhaseSpec text_encoder_phase(const PlanInput& in, const RequestShape& shape, bool beside_encode) {
  PhaseSpec p;
  p.name = "text encoder";
  const qwen3vl::TextConfig& t = in.models.text_encoder;
  p.about = "Qwen3-VL text decoder, " + std::to_string(in.models.text_layers) + " of " +
            std::to_string(t.num_hidden_layers) + " layers, " + precision_name(in.conditioner_precision) +
            ", L = " + count(shape.text_rows) + " prompt tokens";
  p.layout = ParallelLayout{};
  p.tiers = in.text_encoder_tiers.value_or(in.tiers);
  p.groups = text_encoder_weight_groups(in.models, in.request.vision_patches > 0, in.conditioner_precision);
  p.buffers = text_encoder_buffers(in.models, shape.text_rows, in.request.vision_patches, in.conditioner_precision);
  if (in.request.vision_patches > 0)
    p.about += ", vision tower over " + count(in.request.vision_patches) + " patches";
  if (beside_encode) {
    p.first_gpu = in.gpus.count - 1;
    p.notes.push_back("runs on GPU " + std::to_string(p.first_gpu) + " alone, at the same time as the reference "
                      "encode on the other GPUs (no parallel text encoder)");
  } else if (in.gpus.count > 1) {
    p.notes.push_back("runs on GPU 0 alone (no parallel text encoder); the other GPUs wait in this phase");
  }
  p.notes.push_back("freed before the denoiser phase; only the features [L, " + std::to_string(t.hidden_size) +
                    "] stay");
  return p;
}

// The encoders on every computing GPU of the request's layout, as the decode: each holds them whole
// (the references and clips can then be shared among the GPUs; one GPU needs the same).
// Beside the text encoder (`beside_text`) they take every GPU but the last.
Expected<PhaseSpec> encode_phase(const PlanInput& in, const EncodeWork& work, bool beside_text) {
  PhaseSpec p;
  p.name = "reference encode";
  int64_t pictures = 0, videos = 0, clips = 0, tiles = 0, latents = 0;
  for (const VisualEncode& e : work.visuals) {
    (e.latent_frames == 1 ? pictures : videos) += 1;
    clips += e.clips;
    tiles += e.clips * e.tiles;
  }
  for (const AudioEncode& a : work.audio) latents += a.latents;
  auto some = [](int64_t n, const char* one, const char* many) {
    return n == 0 ? std::string() : std::to_string(n) + " " + (n == 1 ? one : many);
  };
  std::vector<std::string> parts;
  if (!work.visuals.empty()) {
    const std::string inputs = some(pictures, "picture", "pictures") +
                               (pictures > 0 && videos > 0 ? " and " : "") + some(videos, "video", "videos");
    parts.push_back("video VAE encoder (fp32) over " + inputs + ": " + some(clips, "clip", "clips") + ", " +
                    some(tiles, "tile", "tiles") + " in all");
  }
  if (!work.audio.empty())
    parts.push_back("audio VAE encoder (fp32) over " +
                    some(static_cast<int64_t>(work.audio.size()), "soundtrack or clip", "soundtracks and clips") +
                    ", 2 x " + count(latents) + " latents");
  for (const std::string& part : parts) p.about += (p.about.empty() ? "" : "; ") + part;
  p.layout = in.layout;
  if (beside_text) p.layout = ParallelLayout{ParallelLayout::Kind::kSequence, in.gpus.count - 1};  // whole encoders
  if (p.layout.degree > 1) p.layout_text = "each of " + std::to_string(p.layout.degree) + " GPUs";
  if (beside_text && p.layout.degree == 1) p.layout_text = "GPU 0";
  p.tiers = in.tiers;
  p.groups = encode_weight_groups(in.models, work);
  OROCHI_ASSIGN_OR_RETURN(p.buffers, encode_buffers(in.models, work));
  if (p.layout.degree > 1)
    p.notes.push_back("each of the " + std::to_string(p.layout.degree) + " GPUs holds the encoders whole (they share "
                      "out references and clips, not weights)");
  if (beside_text)
    p.notes.push_back("runs at the same time as the text encoder on GPU " + std::to_string(in.gpus.count - 1));
  if (work.visuals.size() > 1)
    p.notes.push_back("the video encoder's activations are sized for one input at a time, the largest shown");
  p.notes.push_back("each tile's moments come back to the host, where they are stitched and sampled (seed 42): the "
                    "latents stay in host RAM; the encoders are freed before the text encoder");
  return p;
}

PhaseSpec denoiser_phase(const PlanInput& in, const RequestShape& shape) {
  PhaseSpec p;
  p.name = "denoiser";
  p.about = "MiniMax-H3 denoiser, S = " + count(shape.rows) + " rows (video " + count(shape.video_rows) +
            ", audio " + count(shape.audio_rows) + ", text " + count(shape.text_rows) + "), " +
            std::to_string(shape.steps) + " steps, AdaLN tables for " + std::to_string(shape.timesteps) +
            " timesteps";
  p.layout = in.layout;
  p.tiers = in.tiers;
  p.groups = h3_weight_groups(in.models.transformer, in.layout, in.precision);
  p.buffers = h3_request_buffers(in.models.transformer, shape, in.layout, in.sp, in.precision, in.fp8_attention);
  p.passes = shape.steps;
  p.notes.push_back("AdaLN projections stay in host RAM: streamed once per request to build the tables");
  p.notes.push_back("freed before decode; the latents go to the host");
  return p;
}

PhaseSpec decode_phase(const PlanInput& in, const RequestShape& shape) {
  PhaseSpec p;
  p.name = "decode";
  p.about = "video VAE " + std::to_string(shape.vae_chunks) + " chunks x " + std::to_string(shape.vae_tiles_per_chunk) +
            " tiles of " + count(shape.vae_tile_tokens) + " voxels; audio VAE 2 x " +
            std::to_string(shape.geometry.audio_latents) + " latents";
  p.layout = in.layout;
  p.tiers = in.tiers;
  p.groups = decode_weight_groups(in.models);
  p.buffers = decode_buffers(in.models, shape);
  if (in.layout.degree > 1)
    p.notes.push_back("temporal chunks split over the " + std::to_string(in.layout.degree) +
                      " GPUs (bit-exact); each holds both decoders");
  p.notes.push_back("tiles and the waveform come back to the host, where chunks are stitched");
  return p;
}

}  // namespace

uint64_t margin_bytes(uint64_t cap) { return kContextBytes + std::max(kMinSafetyBytes, cap / 100); }

Expected<MemoryPlan> plan_memory_impl(const PlanInput& in, const RequestShape* known, bool with_extras,
                                      bool at_once_allowed) {
  if (in.gpus.count < 1 || in.gpus.count > 64)
    return invalid_argument("--gpus must be in [1, 64], got " + std::to_string(in.gpus.count));
  if (in.gpus.vram_bytes < kGiB / 4)
    return invalid_argument("--vram-per-gpu must be a positive size in GiB (at least 0.25), got " +
                            std::to_string(to_gib(in.gpus.vram_bytes)));
  if (in.layout.degree > in.gpus.count)
    return invalid_argument("--parallel " + in.layout.name() + " needs " + std::to_string(in.layout.degree) +
                            " GPUs; pass --gpus " + std::to_string(in.layout.degree) + " or more");
  OROCHI_RETURN_IF_ERROR(check_h3_layout(in.models.transformer, in.layout));
  MemoryPlan plan;
  plan.input = in;
  if (known) {
    plan.shape = *known;
  } else {
    OROCHI_ASSIGN_OR_RETURN(plan.shape, request_shape(in.models, in.request));
  }
  // The references' encode first (fl2va keyframes, ref2va references), then the t2va phases.
  OROCHI_ASSIGN_OR_RETURN(const EncodeWork work, encode_work(in.models, in.request, plan.shape.geometry));
  // The conditioner (a prompt through the text encoder) waits for no encoder: with a GPU to spare it
  // runs beside them.
  plan.pre_overlap = at_once_allowed && !work.empty() && in.models.text_layers > 0 && in.gpus.count >= 2;
  if (!work.empty()) {
    OROCHI_ASSIGN_OR_RETURN(const PhaseSpec encode, encode_phase(in, work, plan.pre_overlap));
    plan.phases.push_back(build_phase(encode, in.gpus));
    plan.host_reference_media_bytes = reference_media_bytes(in.models, work);
    plan.host_reference_latent_bytes = reference_latent_bytes(in.models, work);
  }
  for (const PhaseSpec& spec :
       {text_encoder_phase(in, plan.shape, plan.pre_overlap), denoiser_phase(in, plan.shape), decode_phase(in, plan.shape)})
    plan.phases.push_back(build_phase(spec, in.gpus));

  const uint64_t cap = in.gpus.vram_bytes;
  plan.fits = true;
  plan.spare = cap;
  for (const PhasePlan& phase : plan.phases) {
    for (const GpuPlan& g : phase.gpus) {
      const uint64_t used = g.total();
      const std::string where = "GPU " + std::to_string(g.gpu) + ", " + phase.name + " phase";
      if (used > cap && used - cap > plan.shortfall) plan.shortfall = used - cap, plan.tightest = where;
      if (used <= cap && cap - used < plan.spare && plan.shortfall == 0) plan.spare = cap - used, plan.tightest = where;
    }
    plan.host_weight_bytes += phase.host_bytes;
  }
  if (plan.pre_overlap) {  // the two phases at once: each GPU holds both phases' pools
    const PhasePlan &encode = *plan.phase("reference encode"), &text = *plan.phase("text encoder");
    for (int gpu = 0; gpu < in.gpus.count; ++gpu) {
      uint64_t used = 0;
      for (const PhasePlan* phase : {&encode, &text})
        for (const GpuPlan& g : phase->gpus) used += g.gpu == gpu ? g.total() : 0;
      const std::string where = "GPU " + std::to_string(gpu) + ", reference encode + text encoder phases at once";
      if (used > cap && used - cap > plan.shortfall) plan.shortfall = used - cap, plan.tightest = where;
      if (used <= cap && cap - used < plan.spare && plan.shortfall == 0) plan.spare = cap - used, plan.tightest = where;
    }
  }
  plan.fits = plan.shortfall == 0;
  if (!plan.fits) plan.spare = 0;
  if (plan.pre_overlap && !plan.fits) {  // at once only where both fit: else one after the other, as on one GPU
    OROCHI_ASSIGN_OR_RETURN(MemoryPlan in_turn, plan_memory_impl(in, known, with_extras, false));
    for (PhasePlan& phase : in_turn.phases)
      if (phase.name == "text encoder")
        phase.notes.push_back("not beside the reference encode: the two phases do not fit at once on these GPUs");
    return in_turn;
  }
  const pipeline::VideoGeometry& g = plan.shape.geometry;
  plan.host_output_bytes = static_cast<uint64_t>(3 * g.frames * g.width * g.height) * 4 +
                           static_cast<uint64_t>(2 * g.audio_latents * in.models.audio_vae.hop_length()) * 4;
  const PhasePlan& denoiser = *plan.phase("denoiser");
  const double flops = h3::forward_flops(in.models.transformer, plan.shape.rows, plan.shape.text_rows).total();
  plan.step_compute_s = flops / (in.layout.degree * in.gpus.tflops * 1e12);
  plan.step_stream_s = static_cast<double>(denoiser.peer_read_bytes) / (in.gpus.peer_gbps * 1e9) +
                       static_cast<double>(denoiser.host_read_bytes) / (in.gpus.host_gbps * 1e9);
  if (with_extras) {
    OROCHI_ASSIGN_OR_RETURN(plan.capacity, capacity_table(in, plan.shape));
    if (!plan.fits) plan.suggestions = suggest_fixes(in, plan.shape);
  }
  return plan;
}

const PhasePlan* MemoryPlan::phase(const std::string& name) const {
  for (const PhasePlan& p : phases)
    if (p.name == name) return &p;
  return nullptr;
}

Expected<MemoryPlan> plan_memory(const PlanInput& input) { return plan_memory_impl(input, nullptr, true); }
Expected<MemoryPlan> plan_memory(const PlanInput& input, const RequestShape& shape) {
  return plan_memory_impl(input, &shape, true);
}

Status check_fits(const MemoryPlan& plan) {
  if (plan.fits) return Status::ok();
  const uint64_t cap = plan.input.gpus.vram_bytes;
  std::string detail;
  for (const PhasePlan& phase : plan.phases)
    for (const GpuPlan& g : phase.gpus) {
      if (g.total() <= cap || "GPU " + std::to_string(g.gpu) + ", " + phase.name + " phase" != plan.tightest) continue;
      char head[160];
      std::snprintf(head, sizeof head, "GPU %d needs %.2f GiB in the %s phase (", g.gpu, to_gib(g.total()),
                    phase.name.c_str());
      detail = head;
      bool first = true;
      for (const Pool& p : g.pools) {
        if (p.bytes() == 0) continue;
        char part[64];
        std::snprintf(part, sizeof part, "%s%s %.2f", first ? "" : ", ", pool_name(p.kind), to_gib(p.bytes()));
        detail += part;
        first = false;
      }
      detail += ")";
    }
  if (detail.empty()) detail = plan.tightest + " needs more";  // two phases at once (MemoryPlan::pre_overlap)
  char tail[160];
  std::snprintf(tail, sizeof tail, " but has %.2f GiB: %.2f GiB short", to_gib(cap), to_gib(plan.shortfall));
  std::string message = "the request does not fit: " + detail + tail;
  if (!plan.suggestions.empty()) {
    message += "; to fit:";
    for (const std::string& s : plan.suggestions) message += "\n  - " + s;
  } else {
    message += "; no layout of up to 8 such GPUs fits it: use larger GPUs or a smaller request";
  }
  return invalid_argument(message);
}

}  // namespace orochi::planner
