// `orochi bench text`: the Qwen3-VL-32B text stack (MiniMax-H3's conditioner: the residual stream
// after `--layers` of 64 decoder layers, no final norm) on one GPU, timed by the engine's GPU backend
// (engine/cuda/bench_text.cpp) with random weights of the real shapes or a checkpoint folder's; this
// parses the options and prints the result (or its JSON).
#include <cstdio>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "apps/args.h"
#include "apps/commands.h"
#include "engine/gpu_backend.h"

namespace orochi::apps {
namespace {

void print_text(const nlohmann::json& j) {
  std::printf("Qwen3-VL-32B text stack, %lld tokens, %lld layers (%lld streamed), %s\n",
              j["tokens"].get<long long>(), j["layers"].get<long long>(), j["stream_layers"].get<long long>(),
              j["precision"].get<std::string>().c_str());
  const double median = j["encode_s_median"];
  std::printf("  median %.4f s (min %.4f, max %.4f over %zu), %.0f TFLOP/s (%.2f TFLOP per run)\n", median,
              j["encode_s_min"].get<double>(), j["encode_s_max"].get<double>(), j["encode_s_all"].size(),
              j["tflops"].get<double>(), j["linear_tflop"].get<double>() + j["attention_tflop"].get<double>());
  if (j.contains("load_s"))
    std::printf("  weights %.2f GiB loaded from %s in %.2f s (%.1f GB/s to the GPU)\n", j["weights_gib"].get<double>(),
                j["weights_source"].get<std::string>().c_str(), j["load_s"].get<double>(), j["upload_gbps"].get<double>());
  else
    std::printf("  weights %.2f GiB generated in %.2f s\n", j["weights_gib"].get<double>(),
                j["init_weights_s"].get<double>());
  std::printf("  GPU in use by the run %.2f GiB; output %s, fnv1a %s\n", j["gpu_used_gib"].get<double>(),
              j["out_finite"].get<bool>() ? "finite" : "NOT FINITE", j["outputs_fnv1a"].get<std::string>().c_str());
}

}  // namespace

int run_bench_text(const std::vector<std::string>& argv) {
  Expected<Args> args = Args::parse(argv,
                                    {"tokens", "layers", "warmup", "iters", "device", "seed", "dump-outputs",
                                     "checkpoint", "write-checkpoint", "stream-layers", "tier", "slots", "precision"},
                                    {"json"});
  if (!args) return fail(args.status());
  if (args->positionals().size() != 1 || args->positionals()[0] != "text")
    return fail(usage_error("bench text takes no other word, got " + std::to_string(args->positionals().size() - 1)));
  engine::BenchTextOptions o;
  // Range errors are usage errors (exit 2); the limits are those `orochi help bench text` states.
  Expected<int64_t> tokens = args->get_int("tokens", 256, 1, 65536);
  Expected<int64_t> layers = args->get_int("layers", 50, 1, 64);
  Expected<int64_t> warmup = args->get_int("warmup", 2, 0), iters = args->get_int("iters", 5, 1);
  Expected<int64_t> device = args->get_int("device", 0, 0, 1023);
  Expected<uint64_t> seed = args->get_uint64("seed", 7);
  Expected<int64_t> stream_layers = args->get_int("stream-layers", 0, 0), slots = args->get_int("slots", 2, 1, 64);
  Expected<std::string> tier = args->get_choice("tier", "host", {"host", "peer"});
  for (const Status& s : {tokens.status(), layers.status(), warmup.status(), iters.status(), device.status(),
                          seed.status(), stream_layers.status(), slots.status(), tier.status()})
    if (!s.is_ok()) return fail(s);
  o.tokens = *tokens;
  o.layers = *layers;
  o.warmup = *warmup;
  o.iters = *iters;
  o.device = static_cast<int>(*device);
  o.seed = *seed;
  o.stream_layers = *stream_layers;
  o.slots = *slots;
  o.tier = *tier;
  o.checkpoint = args->get("checkpoint", "");
  o.write_checkpoint = args->get("write-checkpoint", "");
  o.dump_outputs = args->get("dump-outputs", "");
  Expected<Precision> precision = parse_precision(args->get("precision", "bf16"));
  if (!precision) return fail(usage_error(precision.status().message()));
  o.precision = *precision;
  if (Status s = engine::check_bench_text_options(o); !s.is_ok()) return fail(s);
  if (args->has("dump-outputs") &&
      (o.dump_outputs.empty() || !std::filesystem::is_directory(std::filesystem::absolute(o.dump_outputs).parent_path())))
    return fail(invalid_argument("--dump-outputs needs a file path in an existing folder, got '" + o.dump_outputs + "'"));
  o.on_note = [](const std::string& line) { std::fprintf(stderr, "[orochi] %s\n", line.c_str()); };
  engine::GpuBackend& gpus = engine::gpu_backend();
  if (gpus.device_count() == 0)
    return fail(unsupported(gpus.name() == "none"
                                ? "`orochi bench text` needs the CUDA backend: build on a machine with the CUDA toolkit"
                                : "no CUDA GPU visible; `orochi bench text` runs on a GPU"));
  Expected<nlohmann::json> j = gpus.bench_text(o);
  if (!j) return fail(j.status());
  if (args->has("json")) std::printf("%s\n", j->dump().c_str());
  else print_text(*j);
  return (*j)["out_finite"].get<bool>() ? 0 : 1;
}

}  // namespace orochi::apps
