// `orochi bench dit` on the CUDA backend: the H3 denoiser forward on one GPU (or several on the
// same request) with random weights of the real shapes (no checkpoint), over the pipeline's packed
// t2va layout. Times whole forwards (wall clock, waited for) and reports median, spread, achieved
// TFLOP/s against the measured H200 ceilings and peak memory. `dump_outputs` writes the last
// forward's outputs with its inputs and layout, so that scripts/device/compare_h3_full.py can run
// diffusers on the same request and weights.
#include <cuda_runtime_api.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "core/format.h"
#include "engine/bench_streaming.h"
#include "engine/cuda/cuda_backend.h"
#include "engine/gpu_capability.h"
#include "dist/cuda/gpu_parallel_context.h"
#include "models/h3/cuda/gpu_parallel.h"
#include "models/h3/cuda/gpu_runner.h"
#include "models/h3/flops.h"
#include "models/h3/lora.h"
#include "pipeline/packed_layout.h"
#include "pipeline/random_inputs.h"
#include "pipeline/video_geometry.h"
#include "planner/h3_denoiser_memory.h"
#include "planner/parallel_choice.h"
#include "weights/safetensors_writer.h"

namespace orochi::engine::cuda_backend {
namespace {

// DEVICE.md, measured on the H200 through PyTorch: bf16 GEMM at the H3 shapes (~691-719 TFLOP/s)
// and cuDNN SDPA (~567-590 TFLOP/s). Used only to express results as a fraction of a ceiling; with
// Orochi's flash kernel (630-700 TFLOP/s, JSON "attention") a forward can pass 100% of it.
constexpr double kGemmCeilingTflops = 705.0;
constexpr double kAttentionCeilingTflops = 580.0;
// The quantized runs' counterparts: e4m3 GEMMs 1290-1436 TFLOP/s through torch._scaled_mm at these
// shapes (DEVICE.md; cuBLASLt in our bench 1273-1447), int8 GEMMs 1103-1294 TOPS (bench/RESULTS.md,
// FP8 and INT8 GEMMs), cuDNN's FP8 SDPA 825 TFLOP/s at 106k keys (session 17).
constexpr double kFp8GemmCeilingTflops = 1365.0;
constexpr double kInt8GemmCeilingTops = 1200.0;
constexpr double kFp8AttentionCeilingTflops = 825.0;

double gemm_ceiling_tflops(Precision p) {
  return p == Precision::kFp8 ? kFp8GemmCeilingTflops : p == Precision::kInt8 ? kInt8GemmCeilingTops : kGemmCeilingTflops;
}
constexpr double kGiB = 1 << 30;

// The request (rows, layout, timesteps) and the outputs of one forward, plus what regenerates the
// weights (seed, layers: gpu_weights.cpp's counter-based init), for an outside comparison.
Status dump_forward(const std::string& path, const h3::H3Inputs& in, const pipeline::RowTimesteps& ts,
                    const h3::H3Outputs& out, const std::map<std::string, std::string>& metadata) {
  Status s = weights::write_safetensors(path,
                                        {{"video_out", out.video},                 // f32 [Nv, 96]
                                         {"audio_out", out.audio},                 // f32 [Na, 32]
                                         {"video_in", in.video},                   // f32 [Nv, 96]
                                         {"audio_in", in.audio},                   // f32 [Na, 32]
                                         {"text_in", in.text},                     // f32 [L, text_dim]
                                         {"timesteps", ts.timesteps},              // f32 [n_t]
                                         {"timestep_indices", in.timestep_indices},  // i64 [S]
                                         {"token_tags", in.token_tags},            // i64 [S]
                                         {"positions", in.positions},              // f32 [S, 3]
                                         {"video_indices", in.video_indices},      // i64 [Nv]
                                         {"audio_indices", in.audio_indices},      // i64 [Na]
                                         {"text_indices", in.text_indices}},       // i64 [L]
                                        metadata);
  if (!s.is_ok())
    return Status(s.code(), "--dump-outputs " + path + ": " + s.message() + " (is the folder there and writable?)");
  return Status::ok();
}

// The planner's own figures for one GPU holding the whole (bench-sized) denoiser: what the layout
// choice weighs, as for a generate run.
void one_gpu_figures(const h3::H3Config& config, const pipeline::PackedLayout& layout, int64_t text_rows,
                     int64_t timesteps, const RunSwitches& switches, Precision precision, double* weights_gib,
                     double* request_gib) {
  uint64_t weights = 0, request = 0;
  for (const planner::WeightGroup& g : planner::h3_weight_groups(config, planner::ParallelLayout{}, precision))
    if (g.tier != planner::Tier::kStreamedOnce) weights += g.bytes;
  planner::RequestShape shape;
  shape.rows = layout.rows;
  shape.text_rows = text_rows;
  shape.video_rows = layout.video_indices.numel();
  shape.audio_rows = layout.audio_indices.numel();
  shape.timesteps = timesteps;
  for (const planner::BufferBytes& b : planner::h3_request_buffers(config, shape, planner::ParallelLayout{}, switches.sp,
                                                                   precision, switches.kernels.fp8_attention(precision)))
    request += b.bytes;
  *weights_gib = static_cast<double>(weights) / kGiB;
  *request_gib = static_cast<double>(request) / kGiB;
}

// t2va's packed layout, or ref2va's with the references before the target (every text row tagged
// text: the tags change which modulation a row takes, not the work).
Expected<pipeline::PackedLayout> bench_layout(const BenchDitOptions& o, const pipeline::VideoGeometry& geometry) {
  if (o.references.empty()) {
    pipeline::LayoutRequest request{.text_rows = o.text_rows, .latent_frames = geometry.latent_frames,
                                    .latent_height = geometry.latent_height, .latent_width = geometry.latent_width,
                                    .audio_latents = geometry.audio_latents, .keyframes = {}};
    return pipeline::build_packed_layout(request);
  }
  pipeline::Ref2vaLayoutRequest request;
  request.text_tags.assign(static_cast<size_t>(o.text_rows), 1);
  request.latent_frames = geometry.latent_frames;
  request.latent_height = geometry.latent_height;
  request.latent_width = geometry.latent_width;
  request.audio_latents = geometry.audio_latents;
  request.references = o.references;
  OROCHI_ASSIGN_OR_RETURN(pipeline::Ref2vaLayout layout, pipeline::build_ref2va_layout(request));
  return std::move(layout.packed);
}

}  // namespace

Expected<nlohmann::json> cuda_bench_dit(const BenchDitOptions& o) {
  auto note = [&](const std::string& line) {
    if (o.on_note) o.on_note(line);
  };
  char line[512];
  OROCHI_ASSIGN_OR_RETURN(const pipeline::VideoGeometry geometry, pipeline::video_geometry(o.width, o.height, o.frames));
  h3::H3Config config;  // the released shapes
  config.num_layers = o.layers;
  OROCHI_ASSIGN_OR_RETURN(const pipeline::PackedLayout layout, bench_layout(o, geometry));
  if (o.precision != Precision::kBf16 && !o.loras.empty())
    return unsupported(std::string("bench dit --precision ") + precision_name(o.precision) +
                       " with --lora: the LoRA merges into the GPU's bf16 weights, which a quantized run no longer "
                       "holds; time LoRAs with --precision bf16");
  if (o.precision != Precision::kBf16 && o.gpus > 1)
    return unsupported(std::string("bench dit --precision ") + precision_name(o.precision) +
                       " runs on one GPU for now (issue 25): use --gpus 1");
  // The kernels these GPUs run (the generic path off compute capability 9.0), before any GPU work.
  OROCHI_ASSIGN_OR_RETURN(const RunSwitches switches, gpu_switches(o.switches, o.precision, o.device, o.gpus));
  OROCHI_RETURN_IF_ERROR(check_attention_precision(switches, o.precision, true, o.gpus));
  // The LoRA files read and mapped first: a bad file is refused before any GPU work.
  std::vector<h3::H3Lora> loras;
  for (const LoraSource& l : o.loras) {
    OROCHI_ASSIGN_OR_RETURN(h3::H3Lora lora, h3::read_lora(l.path, config));
    loras.push_back(std::move(lora));
  }
  const h3::ForwardFlops flops = h3::forward_flops(config, layout.rows, o.text_rows);
  // Random inputs: counter-based, so every run and machine times the same numbers.
  constexpr float kTimestepVideo = 0.3f, kTimestepAudio = 0.4f;
  const pipeline::RowTimesteps ts = pipeline::assign_row_timesteps(layout, kTimestepVideo, kTimestepAudio);
  const h3::H3Inputs in = pipeline::random_h3_inputs(config, layout, ts, static_cast<uint64_t>(o.seed));
  const h3::gpu::RequestSize size{layout.rows, o.text_rows, in.video.dim(0), in.audio.dim(0), ts.timesteps.numel()};

  size_t free_before = 0, total = 0;
  OROCHI_CUDA_RETURN_IF_ERROR(cudaSetDevice(o.device));
  OROCHI_CUDA_RETURN_IF_ERROR(cudaMemGetInfo(&free_before, &total));
  std::snprintf(line, sizeof line, "H3 bench: %lldx%lld, %lld frames, S=%lld rows, %lld layers, %s linears; generating weights on GPU %d...",
                static_cast<long long>(o.width), static_cast<long long>(o.height), static_cast<long long>(o.frames),
                static_cast<long long>(layout.rows), static_cast<long long>(o.layers), precision_name(o.precision), o.device);
  note(line);
  // One GPU, or every GPU of --gpus on the same request: the planner's choice.
  double weights_gib = 0, request_gib = 0;
  one_gpu_figures(config, layout, o.text_rows, size.timesteps, switches, o.precision, &weights_gib, &request_gib);
  OROCHI_ASSIGN_OR_RETURN(const planner::ParallelDegrees degrees,
                          planner::choose_parallel(o.parallel, config, o.gpus, static_cast<double>(total) / kGiB,
                                                   weights_gib, request_gib));
  dist::GpuParallelOptions parallel;
  parallel.tp = degrees.tp;
  parallel.sp = degrees.sp;
  parallel.comm_deadline = std::chrono::milliseconds(int64_t{o.comm_timeout_s} * 1000);
  parallel.pace = switches.sp.pace;
  std::optional<StreamingChoice> streaming;
  h3::gpu::WeightStreaming weight_streaming;
  if (o.vram_per_gpu_gib) {
    if (!o.references.empty())
      return unsupported("--vram-per-gpu plans its streaming for a t2va request; drop --refs or --vram-per-gpu");
    if (o.gpus != 1) return unsupported("--vram-per-gpu streams one GPU's weights; use it with --gpus 1");
    OROCHI_ASSIGN_OR_RETURN(streaming, plan_streaming(config, o.res, o.frames, o.text_rows, *o.vram_per_gpu_gib,
                                                      o.tier, o.slots, o.precision,
                                                      switches.kernels.fp8_attention(o.precision)));
    weight_streaming = {streaming->streamed, streaming->slots,
                        streaming->peer ? h3::gpu::WeightTier::kPeer : h3::gpu::WeightTier::kHost, o.device + 1};
    std::snprintf(line, sizeof line, "%d of %lld blocks stream from %s through %d slots (planned for %.1f GiB)",
                  streaming->count(), static_cast<long long>(o.layers), streaming->peer ? "the next GPU" : "pinned host RAM",
                  streaming->slots, *o.vram_per_gpu_gib);
    note(line);
  }
  std::vector<int> devices;
  for (int g = 0; g < degrees.tp * degrees.sp; ++g) devices.push_back(o.device + g);
  const h3::gpu::RunnerOptions runner_options{switches.kernels, switches.sp, o.precision};
  OROCHI_ASSIGN_OR_RETURN(auto context, dist::make_gpu_context(devices, parallel));
  OROCHI_ASSIGN_OR_RETURN(auto created, h3::gpu::H3MultiGpu::create(config, std::move(context), size, weight_streaming,
                                                                    runner_options));
  h3::gpu::H3MultiGpu& gpus_run = *created;
  if (devices.size() > 1) {
    std::string weights;  // the sp-weights switch, when the rows do not split evenly
    for (double w : gpus_run.sp_weights()) {
      char text[32];
      std::snprintf(text, sizeof(text), "%g", w);
      weights += (weights.empty() ? "; SP rows weighted " : ",") + std::string(text);
    }
    std::snprintf(line, sizeof line, "layout: tp %d x sp %d over GPUs %d..%d (%s%s)", parallel.tp, parallel.sp,
                  o.device, o.device + static_cast<int>(devices.size()) - 1, degrees.why.c_str(), weights.c_str());
    note(line);
  }
  h3::gpu::H3GpuRunner& runner0 = gpus_run.runner(0);
  OROCHI_RETURN_IF_ERROR(gpus_run.init_random_weights(static_cast<uint64_t>(o.seed)));
  nlohmann::json lora_json = nlohmann::json::array();
  for (size_t i = 0; i < loras.size(); ++i) {
    const auto t0 = std::chrono::steady_clock::now();
    OROCHI_RETURN_IF_ERROR(gpus_run.merge_lora(loras[i], o.loras[i].strength));
    const double merge_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    lora_json.push_back({{"file", o.loras[i].path}, {"strength", o.loras[i].strength},
                         {"format", h3::lora_format_name(loras[i].format)}, {"parameters", loras[i].deltas.size()},
                         {"merge_s", merge_s}});
    std::snprintf(line, sizeof line, "LoRA %s (%s, %zu parameters) merged on the GPU at strength %g in %.3f s",
                  o.loras[i].path.c_str(), h3::lora_format_name(loras[i].format), loras[i].deltas.size(),
                  o.loras[i].strength, merge_s);
    note(line);
  }
  OROCHI_RETURN_IF_ERROR(gpus_run.set_request(ts.timesteps, in));

  std::vector<double> times;
  for (int64_t i = 0; i < o.warmup + o.iters; ++i) {
    const auto t0 = std::chrono::steady_clock::now();
    OROCHI_RETURN_IF_ERROR(gpus_run.forward());
    const double sec = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    if (i >= o.warmup) times.push_back(sec);
    std::snprintf(line, sizeof line, "forward %lld/%lld: %.3f s%s", static_cast<long long>(i + 1),
                  static_cast<long long>(o.warmup + o.iters), sec, i < o.warmup ? " (warm-up)" : "");
    note(line);
  }
  nlohmann::json profile = nlohmann::json::array();
  if (o.profile) {
    // One more forward with an event pair around every stage of every rank: where the time goes,
    // and (with several GPUs) which rank the others wait for.
    const int ranks = gpus_run.world_size();
    for (int r = 0; r < ranks; ++r) {
      h3::gpu::H3GpuRunner& runner = gpus_run.runner(r);
      runner.timer().enable(runner.stream());
      if (runner.comm_stream()) runner.comm_timer().enable(runner.comm_stream());
    }
    OROCHI_RETURN_IF_ERROR(gpus_run.forward());
    for (int r = 0; r < ranks; ++r) {
      h3::gpu::H3GpuRunner& runner = gpus_run.runner(r);
      for (const auto& [name, ms] : runner.timer().collect())
        profile.push_back({{"rank", r}, {"stage", name}, {"ms", ms}, {"overlapped", false}});
      // The collectives on the comm stream, overlapping the stages above (busy time, not added).
      if (runner.comm_stream())
        for (const auto& [name, ms] : runner.comm_timer().collect())
          profile.push_back({{"rank", r}, {"stage", "comm " + name}, {"ms", ms}, {"overlapped", true}});
    }
  }
  size_t free_after = 0;
  OROCHI_CUDA_RETURN_IF_ERROR(cudaMemGetInfo(&free_after, &total));
  OROCHI_CUDA_RETURN_IF_ERROR(cudaSetDevice(o.device));
  OROCHI_ASSIGN_OR_RETURN(const h3::H3Outputs out, gpus_run.outputs());
  bool finite = true;
  for (const Tensor* t : {&out.video, &out.audio})
    for (int64_t i = 0; i < t->numel(); ++i) finite &= std::isfinite(t->data<float>()[i]);
  if (!o.dump_outputs.empty()) {
    const std::map<std::string, std::string> metadata{
        {"format", "orochi-h3-forward-dump-v1"}, {"res", o.res},
        {"frames", std::to_string(o.frames)},    {"text_rows", std::to_string(o.text_rows)},
        {"layers", std::to_string(o.layers)},    {"seed", std::to_string(o.seed)},
        {"weights", "h3::gpu::random_gpu_weights + random_adaln_source"},
        {"loras", lora_json.dump()}};
    OROCHI_RETURN_IF_ERROR(dump_forward(o.dump_outputs, in, ts, out, metadata));
    note("wrote the last forward's inputs and outputs to " + o.dump_outputs);
  }

  std::vector<double> sorted = times;
  std::sort(sorted.begin(), sorted.end());
  const double median = sorted[sorted.size() / 2], lo = sorted.front(), hi = sorted.back();
  // The floor at the ceilings of what ran: the block linears at --precision (the embedders and
  // heads, a sliver of the FLOPs, are counted there too), attention in FP8 or bf16.
  const bool fp8_attention = runner0.attention_kernel() == layers::gpu::kFp8AttentionKernel;
  const double floor_s = flops.linear / (gemm_ceiling_tflops(o.precision) * 1e12) +
                         flops.attention / ((fp8_attention ? kFp8AttentionCeilingTflops : kAttentionCeilingTflops) * 1e12);
  const double used_gib = static_cast<double>(free_before - free_after) / kGiB;
  nlohmann::json j{{"engine", "orochi"}, {"model", "minimax-h3"}, {"layers", o.layers}, {"res", o.res},
                   {"width", o.width}, {"height", o.height}, {"frames", o.frames}, {"seq", layout.rows},
                   {"text_rows", o.text_rows}, {"video_rows", in.video.dim(0)}, {"audio_rows", in.audio.dim(0)},
                   {"forward_s_median", median}, {"forward_s_min", lo}, {"forward_s_max", hi}, {"forward_s_all", times},
                   {"tflops", flops.total() / median / 1e12}, {"linear_pflop", flops.linear / 1e15},
                   {"attention_pflop", flops.attention / 1e15}, {"ceiling_floor_s", floor_s},
                   {"fraction_of_ceiling", floor_s / median}, {"weights_gib", runner0.weight_bytes() / kGiB},
                   {"request_gib", runner0.request_bytes_peak() / kGiB}, {"gpu_used_gib", used_gib},
                   {"out_finite", finite}, {"outputs_fnv1a", fnv1a_hex({&out.video, &out.audio})}, {"gpus", o.gpus},
                   {"tp", parallel.tp}, {"sp", parallel.sp}, {"layout_why", degrees.why},
                   {"refs", o.references_spec},
                   {"precision", precision_name(o.precision)}, {"attention", runner0.attention_kernel()}, {"switches", run_switches_json(switches)}};
  if (o.profile) j["profile"] = profile;
  if (!o.loras.empty()) j["loras"] = lora_json;
  if (streaming) {
    const weights::StreamStats* st = runner0.stream_stats();
    j["streaming"] = {{"vram_per_gpu_gib", *o.vram_per_gpu_gib},
                      {"tier", streaming->peer ? "peer" : "host"}, {"slots", streaming->slots},
                      {"streamed_blocks", streaming->count()}, {"tier_gib", runner0.tier_bytes() / kGiB},
                      {"staging_gib", runner0.staging_bytes() / kGiB},
                      {"planned_denoiser_gib", streaming->planned_gpu_bytes / kGiB},
                      {"copies", st ? st->copies() : 0}, {"copied_gib", st ? st->bytes() / kGiB : 0.0}};
  }
  return j;
}

}  // namespace orochi::engine::cuda_backend
