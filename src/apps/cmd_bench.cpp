// `orochi bench dit`: the H3 denoiser forward on one GPU (or --gpus N on the same request) with
// random weights of the real shapes (no checkpoint), over the pipeline's packed t2va layout. Times
// whole forwards (wall clock, waited for) and reports median, spread, achieved TFLOP/s against the
// measured H200 ceilings and peak memory.
// --dump-outputs writes the last forward's outputs with its inputs and layout, so that
// scripts/device/compare_h3_full.py can run diffusers on the same request and weights.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <map>
#include <optional>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "apps/args.h"
#include "apps/bench_streaming.h"
#include "apps/commands.h"
#include "apps/format.h"
#include "planner/parallel_choice.h"
#include "models/h3/flops.h"
#include "pipeline/packed_layout.h"
#include "pipeline/random_inputs.h"
#include "pipeline/video_geometry.h"
#include "weights/safetensors_writer.h"

#ifdef OROCHI_WITH_CUDA
#include <cuda_runtime_api.h>

#include "backends/cuda/cuda_check.h"
#include "models/h3/cuda/gpu_parallel.h"
#include "models/h3/cuda/gpu_runner.h"
#endif

namespace orochi::apps {
namespace {

// DEVICE.md, measured on the H200 through PyTorch: bf16 GEMM at the H3 shapes (~691-719 TFLOP/s)
// and cuDNN SDPA (~567-590 TFLOP/s). Used only to express results as a fraction of a ceiling; with
// Orochi's flash kernel (630-700 TFLOP/s, JSON "attention") a forward can pass 100% of it.
constexpr double kGemmCeilingTflops = 705.0;
constexpr double kAttentionCeilingTflops = 580.0;

struct Canvas {
  int64_t width, height;
};
Expected<Canvas> canvas_for(const std::string& res) {
  if (res == "480p") return Canvas{832, 480};
  if (res == "768p") return Canvas{1344, 768};
  return invalid_argument("--res must be 480p or 768p, got '" + res + "'");
}

#ifdef OROCHI_WITH_CUDA
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
#endif

}  // namespace

int run_bench(const std::vector<std::string>& argv) {
  // `bench text` has its own options: hand it the whole argument list before parsing dit's.
  if (!argv.empty() && argv[0] == "text") return run_bench_text(argv);
  Expected<Args> args = Args::parse(argv, {"res", "frames", "text-rows", "layers", "warmup", "iters", "device", "seed",
                                     "dump-outputs", "gpus", "parallel", "comm-timeout", "vram-per-gpu", "tier", "slots"},
                                    {"json", "profile"});
  if (!args) return fail(args.status());
  if (args->positionals().size() != 1 || args->positionals()[0] != "dit")
    return fail(invalid_argument("usage: orochi bench text [--tokens 256] [--layers 50] [--warmup 2] [--iters 5] "
                                 "[--device 0] [--seed 7] [--json] [--dump-outputs PATH]\n"
                                 "       orochi bench dit [--res 480p|768p] [--frames 124] [--text-rows 256] "
                                 "[--layers 50] [--warmup 2] [--iters 5] [--device 0] [--seed 1] [--json] [--profile] "
                                 "[--dump-outputs PATH] [--gpus 1] [--parallel auto|tp|sp|tpxsp] [--comm-timeout 60]\n"
                                 "[--vram-per-gpu GiB [--tier host|peer] [--slots 2]]\n"
                                 "  --gpus N: N GPUs from --device on on the same request, laid out by --parallel\n"
                                 "  --vram-per-gpu GiB: hold the weights the planner places for that cap; the other blocks stream\n"
                                 "    from pinned host RAM (--tier host) or the next GPU (--tier peer) through --slots slots\n  --dump-outputs PATH: after the timed forwards, write the "
                                 "last forward's video/audio outputs (f32) with its inputs, layout and timesteps to "
                                 "the safetensors file PATH (for scripts/device/compare_h3_full.py)"));
  Expected<Canvas> canvas = canvas_for(args->get("res", "480p"));
  if (!canvas) return fail(canvas.status());
  Expected<int64_t> frames = args->get_int("frames", 124), text_rows = args->get_int("text-rows", 256);
  Expected<int64_t> layers = args->get_int("layers", 50), warmup = args->get_int("warmup", 2);
  Expected<int64_t> iters = args->get_int("iters", 5), device = args->get_int("device", 0);
  Expected<int64_t> seed = args->get_int("seed", 1), gpus = args->get_int("gpus", 1);
  Expected<int64_t> comm_timeout = args->get_int("comm-timeout", 60);
  for (const Status& s : {frames.status(), text_rows.status(), layers.status(), warmup.status(), iters.status(),
                          device.status(), seed.status(), gpus.status(), comm_timeout.status()})
    if (!s.is_ok()) return fail(s);
  if (*iters < 1 || *warmup < 0 || *layers < 1 || *text_rows < 1 || *gpus < 1 || *comm_timeout < 1)
    return fail(invalid_argument("--iters, --layers, --text-rows, --gpus and --comm-timeout must be >= 1, --warmup >= 0"));
  const std::string dump_path = args->get("dump-outputs", "");
  if (args->has("dump-outputs")) {
    const std::filesystem::path parent = std::filesystem::absolute(dump_path).parent_path();
    if (dump_path.empty() || !std::filesystem::is_directory(parent))
      return fail(invalid_argument("--dump-outputs needs a file path in an existing folder, got '" + dump_path + "'"));
  }
  Expected<pipeline::VideoGeometry> geometry = pipeline::video_geometry(canvas->width, canvas->height, *frames);
  if (!geometry) return fail(geometry.status());

  h3::H3Config config;  // the released shapes
  config.num_layers = *layers;
  pipeline::LayoutRequest request{.text_rows = *text_rows, .latent_frames = geometry->latent_frames,
                                  .latent_height = geometry->latent_height, .latent_width = geometry->latent_width,
                                  .audio_latents = geometry->audio_latents, .keyframes = {}};
  Expected<pipeline::PackedLayout> layout = pipeline::build_packed_layout(request);
  if (!layout) return fail(layout.status());
  const h3::ForwardFlops flops = h3::forward_flops(config, layout->rows, *text_rows);
#ifndef OROCHI_WITH_CUDA
  (void)flops;
  return fail(unsupported("`orochi bench dit` needs the CUDA backend: build on a machine with the CUDA toolkit"));
#else
  // Random inputs: counter-based, so every run and machine times the same numbers.
  constexpr float kTimestepVideo = 0.3f, kTimestepAudio = 0.4f;
  const pipeline::RowTimesteps ts = pipeline::assign_row_timesteps(*layout, kTimestepVideo, kTimestepAudio);
  const h3::H3Inputs in = pipeline::random_h3_inputs(config, *layout, ts, static_cast<uint64_t>(*seed));
  const h3::gpu::RequestSize size{layout->rows, *text_rows, in.video.dim(0), in.audio.dim(0), ts.timesteps.numel()};

  size_t free_before = 0, total = 0;
  cudaSetDevice(static_cast<int>(*device));
  cudaMemGetInfo(&free_before, &total);
  std::fprintf(stderr, "[orochi] H3 bench: %lldx%lld, %lld frames, S=%lld rows, %lld layers; generating weights on GPU %lld...\n",
               static_cast<long long>(canvas->width), static_cast<long long>(canvas->height),
               static_cast<long long>(*frames), static_cast<long long>(layout->rows), static_cast<long long>(*layers),
               static_cast<long long>(*device));
  // One GPU, or every GPU of --gpus on the same request (--parallel tp|sp|tpxsp|auto).
  const double gib = 1 << 30;
  Expected<planner::ParallelDegrees> degrees = planner::choose_parallel(
      args->get("parallel", "auto"), config, static_cast<int>(*gpus), static_cast<double>(total) / gib,
      h3::gpu::resident_weight_bytes(config, h3::gpu::whole_model(config)) / gib,
      h3::gpu::request_arena_bytes(config, size, 0) / gib);
  if (!degrees) return fail(degrees.status());
  h3::gpu::MultiGpuLayout parallel{.tp = degrees->tp, .sp = degrees->sp,
                                   .comm_deadline = std::chrono::milliseconds(*comm_timeout * 1000), .fault = {}};
  std::optional<StreamingChoice> streaming;
  h3::gpu::WeightStreaming weight_streaming;
  if (args->has("vram-per-gpu")) {
    Expected<double> cap = args->get_double("vram-per-gpu", 0.0);
    Expected<int64_t> slots = args->get_int("slots", 2);
    if (!cap) return fail(cap.status());
    if (!slots) return fail(slots.status());
    if (*gpus != 1) return fail(unsupported("--vram-per-gpu streams one GPU's weights; use it with --gpus 1"));
    Expected<StreamingChoice> choice = plan_streaming(config, args->get("res", "480p"), *frames, *text_rows, *cap,
                                                      args->get("tier", "host"), static_cast<int>(*slots));
    if (!choice) return fail(choice.status());
    streaming = *choice;
    weight_streaming = {choice->streamed, choice->slots, choice->peer ? h3::gpu::WeightTier::kPeer : h3::gpu::WeightTier::kHost,
                        static_cast<int>(*device) + 1};
    std::fprintf(stderr, "[orochi] %d of %lld blocks stream from %s through %d slots (planned for %.1f GiB)\n",
                 choice->count(), static_cast<long long>(*layers), choice->peer ? "the next GPU" : "pinned host RAM",
                 choice->slots, *cap);
  }
  // One GPU is H3MultiGpu's 1 x 1 case, as in generate.
  std::vector<int> devices;
  for (int64_t g = 0; g < *gpus; ++g) devices.push_back(static_cast<int>(*device + g));
  auto created = h3::gpu::H3MultiGpu::create(config, devices, parallel, size, weight_streaming);
  if (!created) return fail(created.status());
  h3::gpu::H3MultiGpu& gpus_run = **created;
  if (*gpus > 1) {
    std::string weights;  // OROCHI_SP_WEIGHTS, when the rows do not split evenly
    for (double w : gpus_run.layout().sp_weights) {
      char text[32];
      std::snprintf(text, sizeof(text), "%g", w);
      weights += (weights.empty() ? "; SP rows weighted " : ",") + std::string(text);
    }
    std::fprintf(stderr, "[orochi] layout: tp %d x sp %d over GPUs %lld..%lld (%s%s)\n", parallel.tp, parallel.sp,
                 static_cast<long long>(*device), static_cast<long long>(*device + *gpus - 1), degrees->why.c_str(),
                 weights.c_str());
  }
  h3::gpu::H3GpuRunner& runner0 = gpus_run.runner(0);
  auto run_forward = [&]() -> Status { return gpus_run.forward(); };
  if (Status s = gpus_run.init_random_weights(static_cast<uint64_t>(*seed)); !s.is_ok()) return fail(s);
  if (Status s = gpus_run.set_request(ts.timesteps, in); !s.is_ok()) return fail(s);

  std::vector<double> times;
  for (int64_t i = 0; i < *warmup + *iters; ++i) {
    const auto t0 = std::chrono::steady_clock::now();
    if (Status s = run_forward(); !s.is_ok()) return fail(s);
    const double sec = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    if (i >= *warmup) times.push_back(sec);
    std::fprintf(stderr, "[orochi] forward %lld/%lld: %.3f s%s\n", static_cast<long long>(i + 1),
                 static_cast<long long>(*warmup + *iters), sec, i < *warmup ? " (warm-up)" : "");
  }
  if (args->has("profile")) {
    // One more forward with an event pair around every stage of every rank: where the time goes,
    // and (with several GPUs) which rank the others wait for.
    const int ranks = gpus_run.world_size();
    for (int r = 0; r < ranks; ++r) {
      h3::gpu::H3GpuRunner& runner = gpus_run.runner(r);
      runner.timer().enable(runner.stream());
      if (runner.comm_stream()) runner.comm_timer().enable(runner.comm_stream());
    }
    if (Status s = run_forward(); !s.is_ok()) return fail(s);
    for (int r = 0; r < ranks; ++r) {
      h3::gpu::H3GpuRunner& runner = gpus_run.runner(r);
      const std::string who = ranks > 1 ? "rank " + std::to_string(r) + " " : "";
      double sum = 0;
      const auto stages = runner.timer().collect();
      for (const auto& [name, ms] : stages) sum += ms;
      for (const auto& [name, ms] : stages)
        std::fprintf(stderr, "[orochi] profile %s%-16s %9.2f ms  %5.1f%%\n", who.c_str(), name.c_str(), ms,
                     100.0 * ms / sum);
      // The collectives on the comm stream, overlapping the stages above (busy time, not added).
      if (runner.comm_stream())
        for (const auto& [name, ms] : runner.comm_timer().collect())
          std::fprintf(stderr, "[orochi] profile %scomm %-11s %9.2f ms  (overlapped)\n", who.c_str(), name.c_str(), ms);
    }
  }
  size_t free_after = 0;
  cudaMemGetInfo(&free_after, &total);
  cudaSetDevice(static_cast<int>(*device));
  Expected<h3::H3Outputs> out = gpus_run.outputs();
  if (!out) return fail(out.status());
  bool finite = true;
  for (const Tensor* t : {&out->video, &out->audio})
    for (int64_t i = 0; i < t->numel(); ++i) finite &= std::isfinite(t->data<float>()[i]);
  const std::string hash_hex = fnv1a_hex({&out->video, &out->audio});
  if (args->has("dump-outputs")) {
    const std::map<std::string, std::string> metadata{
        {"format", "orochi-h3-forward-dump-v1"}, {"res", args->get("res", "480p")},
        {"frames", std::to_string(*frames)},     {"text_rows", std::to_string(*text_rows)},
        {"layers", std::to_string(*layers)},     {"seed", std::to_string(*seed)},
        {"weights", "h3::gpu::random_gpu_weights + random_adaln_source"}};
    if (Status s = dump_forward(dump_path, in, ts, *out, metadata); !s.is_ok()) return fail(s);
    std::fprintf(stderr, "[orochi] wrote the last forward's inputs and outputs to %s\n", dump_path.c_str());
  }

  std::vector<double> sorted = times;
  std::sort(sorted.begin(), sorted.end());
  const double median = sorted[sorted.size() / 2], lo = sorted.front(), hi = sorted.back();
  const double floor_s = flops.linear / (kGemmCeilingTflops * 1e12) + flops.attention / (kAttentionCeilingTflops * 1e12);
  const double used_gib = static_cast<double>(free_before - free_after) / (1 << 30);
  nlohmann::json j{{"engine", "orochi"}, {"model", "minimax-h3"}, {"layers", *layers}, {"res", args->get("res", "480p")},
                   {"width", canvas->width}, {"height", canvas->height}, {"frames", *frames}, {"seq", layout->rows},
                   {"text_rows", *text_rows}, {"video_rows", in.video.dim(0)}, {"audio_rows", in.audio.dim(0)},
                   {"forward_s_median", median}, {"forward_s_min", lo}, {"forward_s_max", hi}, {"forward_s_all", times},
                   {"tflops", flops.total() / median / 1e12}, {"linear_pflop", flops.linear / 1e15},
                   {"attention_pflop", flops.attention / 1e15}, {"ceiling_floor_s", floor_s},
                   {"fraction_of_ceiling", floor_s / median}, {"weights_gib", runner0.weight_bytes() / double(1 << 30)},
                   {"request_gib", runner0.request_bytes_peak() / double(1 << 30)}, {"gpu_used_gib", used_gib},
                   {"out_finite", finite}, {"outputs_fnv1a", hash_hex}, {"gpus", *gpus}, {"tp", parallel.tp}, {"sp", parallel.sp},
                   {"layout_why", degrees->why}, {"attention", runner0.attention_kernel()}};
  if (streaming) {
    const weights::StreamStats* st = runner0.stream_stats();
    j["streaming"] = {{"vram_per_gpu_gib", std::stod(args->get("vram-per-gpu", "0"))},
                      {"tier", streaming->peer ? "peer" : "host"}, {"slots", streaming->slots},
                      {"streamed_blocks", streaming->count()}, {"tier_gib", runner0.tier_bytes() / gib},
                      {"staging_gib", runner0.staging_bytes() / gib},
                      {"planned_denoiser_gib", streaming->planned_gpu_bytes / gib},
                      {"copies", st ? st->copies() : 0}, {"copied_gib", st ? st->bytes() / gib : 0.0}};
  }
  if (args->has("json")) {
    std::printf("%s\n", j.dump().c_str());
  } else {
    std::printf("H3 denoiser forward, %lldx%lld x %lld frames, S=%lld (%lld text, %lld audio, %lld video rows), %lld layers, bf16\n",
                static_cast<long long>(canvas->width), static_cast<long long>(canvas->height),
                static_cast<long long>(*frames), static_cast<long long>(layout->rows), static_cast<long long>(*text_rows),
                static_cast<long long>(in.audio.dim(0)), static_cast<long long>(in.video.dim(0)),
                static_cast<long long>(*layers));
    std::printf("  median %.3f s (min %.3f, max %.3f over %zu), %.0f TFLOP/s, %.0f%% of the GEMM/attention ceilings (floor %.3f s)\n",
                median, lo, hi, times.size(), flops.total() / median / 1e12, 100.0 * floor_s / median, floor_s);
    std::printf("  memory: weights %.2f GiB, request arena peak %.2f GiB, GPU in use by the run %.2f GiB; outputs %s\n",
                runner0.weight_bytes() / double(1 << 30), runner0.request_bytes_peak() / double(1 << 30), used_gib,
                finite ? "finite" : "NOT FINITE");
  }
  return finite ? 0 : 1;
#endif
}

}  // namespace orochi::apps
