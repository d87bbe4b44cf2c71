// `orochi bench dit`: the H3 denoiser forward on one GPU (or --gpus N on the same request) with
// random weights of the real shapes (no checkpoint), timed by the engine's GPU backend
// (its bench_dit); this prints its median, spread, TFLOP/s and memory, or its JSON.
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>
#include <tuple>
#include <vector>

#include "apps/args.h"
#include "apps/commands.h"
#include "apps/engine_options_cli.h"
#include "apps/model_source_options.h"
#include "engine/gpu_backend.h"
#include "planner/parallel_choice.h"
#include "planner/plan_request.h"

namespace orochi::apps {
namespace {

void print_text(const nlohmann::json& j) {
  std::printf("H3 denoiser forward, %lldx%lld x %lld frames, S=%lld (%lld text, %lld audio, %lld video rows), %lld layers, "
              "%s linears, attention on %s\n",
              j["width"].get<long long>(), j["height"].get<long long>(), j["frames"].get<long long>(),
              j["seq"].get<long long>(), j["text_rows"].get<long long>(), j["audio_rows"].get<long long>(),
              j["video_rows"].get<long long>(), j["layers"].get<long long>(), j["precision"].get<std::string>().c_str(),
              j["attention"].get<std::string>().c_str());
  const double median = j["forward_s_median"];
  std::printf("  median %.3f s (min %.3f, max %.3f over %zu), %.0f TFLOP/s, %.0f%% of the GEMM/attention ceilings at that precision (floor %.3f s)\n",
              median, j["forward_s_min"].get<double>(), j["forward_s_max"].get<double>(), j["forward_s_all"].size(),
              j["tflops"].get<double>(), 100.0 * j["fraction_of_ceiling"].get<double>(), j["ceiling_floor_s"].get<double>());
  std::printf("  memory: weights %.2f GiB, request arena peak %.2f GiB, GPU in use by the run %.2f GiB; outputs %s\n",
              j["weights_gib"].get<double>(), j["request_gib"].get<double>(), j["gpu_used_gib"].get<double>(),
              j["out_finite"].get<bool>() ? "finite" : "NOT FINITE");
  if (j.contains("profile")) {
    for (const auto& p : j["profile"])
      std::printf("  profile rank %d %-20s %9.2f ms%s\n", p["rank"].get<int>(), p["stage"].get<std::string>().c_str(),
                  p["ms"].get<double>(), p["overlapped"].get<bool>() ? "  (overlapped)" : "");
  }
}

}  // namespace

int run_bench(const std::vector<std::string>& argv) {
  // `bench text` has its own options: hand it the whole argument list before parsing dit's.
  if (!argv.empty() && argv[0] == "text") return run_bench_text(argv);
  Expected<Args> args = Args::parse(argv, {"res", "frames", "text-rows", "layers", "warmup", "iters", "device", "seed",
                                           "dump-outputs", "gpus", "parallel", "comm-timeout", "vram-per-gpu", "tier",
                                           "slots", "set", "lora", "precision", "refs"},
                                    {"json", "profile"}, {"lora"});
  if (!args) return fail(args.status());
  if (args->positionals().size() != 1 || args->positionals()[0] != "dit")
    return fail(usage_error("bench takes dit or text (orochi help bench)"));
  engine::BenchDitOptions o;
  o.res = args->get("res", "480p");
  Expected<planner::PlanRequest> canvas = planner::request_for_resolution(o.res);
  if (!canvas) return fail(usage_error(canvas.status().message()));
  o.width = canvas->width;
  o.height = canvas->height;
  for (auto [name, target, fallback, lo, hi] :
       {std::tuple<const char*, int64_t*, int64_t, int64_t, int64_t>{"frames", &o.frames, 124, 5, 17005},
        {"text-rows", &o.text_rows, 256, 1, 65536}, {"layers", &o.layers, 50, 1, 1000},
        {"warmup", &o.warmup, 2, 0, 1000}, {"iters", &o.iters, 5, 1, 100000}, {"seed", &o.seed, 1, 0, INT64_MAX}}) {
    Expected<int64_t> v = args->get_int(name, fallback, lo, hi);
    if (!v) return fail(v.status());
    *target = *v;
  }
  Expected<int64_t> device = args->get_int("device", 0, 0, 63), gpus = args->get_int("gpus", 1, 1, 64);
  Expected<int64_t> timeout = args->get_int("comm-timeout", 60, 1, 86400), slots = args->get_int("slots", 2, 1, 8);
  for (const Status& s : {device.status(), gpus.status(), timeout.status(), slots.status()})
    if (!s.is_ok()) return fail(s);
  o.device = static_cast<int>(*device);
  o.gpus = static_cast<int>(*gpus);
  o.comm_timeout_s = static_cast<int>(*timeout);
  o.slots = static_cast<int>(*slots);
  o.parallel = args->get("parallel", planner::kDefaultParallel);
  if (Status s = planner::parse_parallel_choice(o.parallel).status(); !s.is_ok()) return fail(usage_error(s.message()));
  if (args->has("vram-per-gpu")) {
    Expected<double> cap = args->get_double("vram-per-gpu", 0.0, 0.25, 1e6);
    if (!cap) return fail(cap.status());
    o.vram_per_gpu_gib = *cap;
  }
  o.tier = args->get("tier", "host");
  for (const std::string& v : args->get_all("lora")) {
    Expected<engine::LoraSource> lora = parse_lora_option(v);
    if (!lora) return fail(lora.status());
    o.loras.push_back(std::move(*lora));
  }
  if (args->has("refs")) {
    o.references_spec = args->get("refs", "");
    Expected<std::vector<pipeline::ReferenceGeometry>> refs = engine::parse_bench_references(o.references_spec);
    if (!refs) return fail(refs.status());
    o.references = std::move(*refs);
  }
  o.profile = args->has("profile");
  o.dump_outputs = args->get("dump-outputs", "");
  if (args->has("dump-outputs") &&
      (o.dump_outputs.empty() || !std::filesystem::is_directory(std::filesystem::absolute(o.dump_outputs).parent_path())))
    return fail(invalid_argument("--dump-outputs needs a file path in an existing folder, got '" + o.dump_outputs + "'"));
  const EngineCli cli{"", o.gpus, o.parallel, o.comm_timeout_s, args->get("set", ""), false, "[orochi]",
                      args->get("precision", "bf16")};
  Expected<engine::EngineOptions> options = engine_options_from(cli);
  if (!options) return fail(options.status());
  o.precision = options->precision;
  o.switches = options->switches;
  o.on_note = options->on_note;
  engine::GpuBackend& gpus_backend = engine::gpu_backend();
  if (gpus_backend.device_count() == 0)
    return fail(unsupported(gpus_backend.name() == "none"
                                ? "`orochi bench dit` needs the CUDA backend: build on a machine with the CUDA toolkit"
                                : "no CUDA GPU visible; `orochi bench dit` runs on a GPU"));
  if (o.device + o.gpus > gpus_backend.device_count())
    return fail(invalid_argument("--device " + std::to_string(o.device) + " --gpus " + std::to_string(o.gpus) +
                                 " needs " + std::to_string(o.device + o.gpus) + " GPUs; " +
                                 std::to_string(gpus_backend.device_count()) + " are visible"));
  Expected<nlohmann::json> j = gpus_backend.bench_dit(o);
  if (!j) return fail(j.status());
  if (args->has("json")) std::printf("%s\n", j->dump().c_str());
  else print_text(*j);
  return (*j)["out_finite"].get<bool>() ? 0 : 1;
}

}  // namespace orochi::apps
