// `orochi bench text`: the Qwen3-VL-32B text stack (MiniMax-H3's conditioner: the residual stream
// after `--layers` of 64 decoder layers, no final norm) on one GPU with counter-based random weights
// of the real shapes (GpuTextEncoder::init_random, no checkpoint). Times encode_text with a
// synchronized wall clock: it is what `generate` calls, host upload of ids/RoPE tables and download
// of the f32 output included. --dump-outputs writes the ids and the output so that
// scripts/device/compare_qwen3vl_full.py can run transformers' Qwen3VLTextModel on the same weights.
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
#include "apps/commands.h"
#include "apps/format.h"
#include "core/tensor.h"
#include "models/qwen3vl/text_config.h"
#include "models/qwen3vl/text_weights.h"
#include "weights/safetensors_writer.h"

#ifdef OROCHI_WITH_CUDA
#include <cuda_runtime_api.h>

#include "backends/cuda/cuda_check.h"
#include "models/qwen3vl/cuda/gpu_text_encoder.h"
#endif

namespace orochi::apps {
namespace {

// Deterministic ids that spread over the whole vocabulary (7919 is prime, so consecutive tokens
// land far apart in the embedding table) and need no tokenizer: i64 [L].
Tensor bench_token_ids(int64_t tokens, uint64_t seed, int64_t vocab) {
  std::vector<int64_t> ids(static_cast<size_t>(tokens));
  const int64_t offset = static_cast<int64_t>(seed % static_cast<uint64_t>(vocab));  // the same ids as before for small seeds
  for (int64_t i = 0; i < tokens; ++i) ids[static_cast<size_t>(i)] = (i * 7919 + offset) % vocab;
  return Tensor::from_ints(ids, {tokens});
}

struct TextFlops {
  double linear = 0, attention = 0;
  double total() const { return linear + attention; }
};

// Multiply-adds of one forward, counted as 2 FLOPs each: every projection (q, k, v, o, up, gate,
// down; the embedding is a gather) over L tokens, plus QK^T and PV over the L(L+1)/2 causal pairs.
TextFlops text_flops(const qwen3vl::TextConfig& c, int64_t layers, int64_t L) {
  const double H = static_cast<double>(c.hidden_size), I = static_cast<double>(c.intermediate_size);
  const double per_layer_params = H * c.q_dim() + 2.0 * H * c.kv_dim() + c.q_dim() * H + 3.0 * H * I;
  const double pairs = 0.5 * static_cast<double>(L) * static_cast<double>(L + 1);
  TextFlops f;
  f.linear = 2.0 * per_layer_params * static_cast<double>(L) * static_cast<double>(layers);
  f.attention = 2.0 * 2.0 * pairs * static_cast<double>(c.q_dim()) * static_cast<double>(layers);
  return f;
}

#ifdef OROCHI_WITH_CUDA
Status dump_text(const std::string& path, const Tensor& ids, const Tensor& hidden,
                 const std::map<std::string, std::string>& metadata) {
  Status s = weights::write_safetensors(path, {{"token_ids", ids},  // i64 [L]
                                               {"hidden", hidden}},  // f32 [L, hidden]
                                        metadata);
  if (!s.is_ok())
    return Status(s.code(), "--dump-outputs " + path + ": " + s.message() + " (is the folder there and writable?)");
  return Status::ok();
}

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}
#endif

}  // namespace

int run_bench_text(const std::vector<std::string>& argv) {
  Expected<Args> args = Args::parse(argv,
                                    {"tokens", "layers", "warmup", "iters", "device", "seed", "dump-outputs",
                                     "checkpoint", "write-checkpoint", "stream-layers", "tier", "slots"},
                                    {"json"});
  if (!args) return fail(args.status());
  if (args->positionals().size() != 1 || args->positionals()[0] != "text")
    return fail(usage_error("bench text takes no other word, got " + std::to_string(args->positionals().size() - 1)));
  const qwen3vl::TextConfig config = qwen3vl::TextConfig::qwen3vl_32b();
  // Range errors are usage errors (exit 2); the limits are those `orochi help bench text` states.
  Expected<int64_t> tokens = args->get_int("tokens", 256, 1, 65536);
  Expected<int64_t> layers = args->get_int("layers", 50, 1, config.num_hidden_layers);
  Expected<int64_t> warmup = args->get_int("warmup", 2, 0), iters = args->get_int("iters", 5, 1);
  Expected<int64_t> device = args->get_int("device", 0, 0, 1023);
  Expected<uint64_t> seed = args->get_uint64("seed", 7);
  Expected<int64_t> stream_layers = args->get_int("stream-layers", 0, 0), slots = args->get_int("slots", 2, 1, 64);
  Expected<std::string> tier = args->get_choice("tier", "host", {"host", "peer"});
  for (const Status& s : {tokens.status(), layers.status(), warmup.status(), iters.status(), device.status(),
                          seed.status(), stream_layers.status(), slots.status(), tier.status()})
    if (!s.is_ok()) return fail(s);
  if (*stream_layers > *layers)
    return fail(invalid_argument("--stream-layers must be in 0..--layers (" + std::to_string(*layers) + "), got " +
                                 std::to_string(*stream_layers)));
  if (args->has("write-checkpoint") && (*stream_layers > 0 || args->has("checkpoint")))
    return fail(invalid_argument("--write-checkpoint writes the random weights with every layer resident: drop "
                                 "--stream-layers and --checkpoint"));
  const std::string dump_path = args->get("dump-outputs", "");
  if (args->has("dump-outputs")) {
    const std::filesystem::path parent = std::filesystem::absolute(dump_path).parent_path();
    if (dump_path.empty() || !std::filesystem::is_directory(parent))
      return fail(invalid_argument("--dump-outputs needs a file path in an existing folder, got '" + dump_path + "'"));
  }
  const Tensor ids = bench_token_ids(*tokens, *seed, config.vocab_size);  // i64 [L]
  const TextFlops flops = text_flops(config, *layers, *tokens);
#ifndef OROCHI_WITH_CUDA
  (void)ids;
  (void)flops;
  return fail(unsupported("`orochi bench text` needs the CUDA backend: build on a machine with the CUDA toolkit "
                          "(-DOROCHI_CUDA=ON)"));
#else
  const int dev = static_cast<int>(*device);
  qwen3vl::gpu::TextStreaming streaming;
  if (*stream_layers > 0) {  // the last layers stream, as the planner places them
    streaming.streamed.assign(static_cast<size_t>(*layers), false);
    std::fill(streaming.streamed.end() - *stream_layers, streaming.streamed.end(), true);
    streaming.slots = static_cast<int>(*slots);
    streaming.tier = *tier == "peer" ? weights::WeightTier::kPeer : weights::WeightTier::kHost;
    streaming.peer_device = *tier == "peer" ? (dev == 0 ? 1 : 0) : -1;
  }
  size_t free_before = 0, total = 0;
  if (Status s = cuda::cuda_status(cudaSetDevice(dev), "cudaSetDevice"); !s.is_ok()) return fail(s);
  cudaMemGetInfo(&free_before, &total);
  auto encoder = qwen3vl::gpu::GpuTextEncoder::create(config, *layers, dev, *tokens, streaming);
  if (!encoder) return fail(encoder.status());
  // The weights: a checkpoint folder (timed from the page cache to the GPU), or random ones.
  std::optional<qwen3vl::TextWeights> host;  // the checkpoint's views must outlive the encoder's use
  const auto t_init = std::chrono::steady_clock::now();
  double open_s = 0;
  if (args->has("checkpoint")) {
    std::fprintf(stderr, "[orochi] Qwen3-VL text bench: loading %lld layers from %s to GPU %d...\n",
                 static_cast<long long>(*layers), args->get("checkpoint", "").c_str(), dev);
    Expected<qwen3vl::TextWeights> loaded = qwen3vl::load_text_weights(args->get("checkpoint", ""), *layers);
    if (!loaded) return fail(loaded.status());
    host = std::move(loaded).value();
    open_s = seconds_since(t_init);
    if (Status s = (*encoder)->upload(*host); !s.is_ok()) return fail(s);
  } else {
    std::fprintf(stderr, "[orochi] Qwen3-VL text bench: %lld tokens, %lld layers; generating weights on GPU %d...\n",
                 static_cast<long long>(*tokens), static_cast<long long>(*layers), dev);
    if (Status s = (*encoder)->init_random(*seed); !s.is_ok()) return fail(s);
  }
  const double init_s = seconds_since(t_init);
  if (args->has("write-checkpoint")) {
    const auto t_write = std::chrono::steady_clock::now();
    if (Status s = (*encoder)->write_checkpoint(args->get("write-checkpoint", "")); !s.is_ok()) return fail(s);
    std::fprintf(stderr, "[orochi] wrote the weights to %s in %.1f s\n", args->get("write-checkpoint", "").c_str(),
                 seconds_since(t_write));
  }

  std::vector<double> times;
  Tensor hidden;  // f32 [L, hidden], the last run's output
  for (int64_t i = 0; i < *warmup + *iters; ++i) {
    if (Status s = cuda::cuda_status(cudaDeviceSynchronize(), "encode_text"); !s.is_ok()) return fail(s);
    const auto t0 = std::chrono::steady_clock::now();
    Expected<Tensor> out = (*encoder)->encode_text(ids);
    if (!out) return fail(out.status());
    if (Status s = cuda::cuda_status(cudaDeviceSynchronize(), "encode_text"); !s.is_ok()) return fail(s);
    const double t = seconds_since(t0);
    hidden = std::move(*out);
    if (i >= *warmup) times.push_back(t);
    std::fprintf(stderr, "[orochi] encode_text %lld/%lld: %.4f s%s\n", static_cast<long long>(i + 1),
                 static_cast<long long>(*warmup + *iters), t, i < *warmup ? " (warm-up)" : "");
  }
  size_t free_after = 0;
  cudaMemGetInfo(&free_after, &total);
  bool finite = true;
  for (int64_t i = 0; i < hidden.numel(); ++i) finite &= std::isfinite(hidden.data<float>()[i]);
  if (args->has("dump-outputs")) {
    const nlohmann::json shapes{{"vocab_size", config.vocab_size},
                                {"hidden_size", config.hidden_size},
                                {"intermediate_size", config.intermediate_size},
                                {"num_attention_heads", config.num_attention_heads},
                                {"num_key_value_heads", config.num_key_value_heads},
                                {"head_dim", config.head_dim},
                                {"rms_norm_eps", config.rms_norm_eps},
                                {"rope_theta", config.rope_theta},
                                {"mrope_section", config.mrope_section}};
    const std::map<std::string, std::string> metadata{
        {"format", "orochi-qwen3vl-text-dump-v1"},   {"seed", std::to_string(*seed)},
        {"layers", std::to_string(*layers)},          {"tokens", std::to_string(*tokens)},
        {"config", shapes.dump()},                    {"dtype", "bf16"},
        {"weights", "qwen3vl::gpu::GpuTextEncoder::init_random"}};
    if (Status s = dump_text(dump_path, ids, hidden, metadata); !s.is_ok()) return fail(s);
    std::fprintf(stderr, "[orochi] wrote the token ids and the last run's hidden state to %s\n", dump_path.c_str());
  }

  std::vector<double> sorted = times;
  std::sort(sorted.begin(), sorted.end());
  const double median = sorted[sorted.size() / 2], lo = sorted.front(), hi = sorted.back();
  const double weights_gib = static_cast<double>((*encoder)->weight_bytes()) / double(1 << 30);
  const double used_gib = (static_cast<double>(free_before) - static_cast<double>(free_after)) / double(1 << 30);
  const cuda::UploadStats& up = (*encoder)->upload_stats();
  nlohmann::json j{{"engine", "orochi"},         {"model", "qwen3-vl-32b-text"},
                   {"layers", *layers},          {"tokens", *tokens},
                   {"seed", *seed},              {"encode_s_median", median},
                   {"encode_s_min", lo},         {"encode_s_max", hi},
                   {"encode_s_all", times},      {"tflops", flops.total() / median / 1e12},
                   {"linear_tflop", flops.linear / 1e12}, {"attention_tflop", flops.attention / 1e12},
                   {"weights_gib", weights_gib}, {"gpu_used_gib", used_gib},
                   {"out_finite", finite},       {"outputs_fnv1a", fnv1a_hex(hidden)},
                   {"stream_layers", *stream_layers}, {"tier_gib", (*encoder)->tier_bytes() / double(1 << 30)}};
  if (host) {
    j["weights_source"] = args->get("checkpoint", "");
    j["load_s"] = init_s;  // open + map + upload: page cache -> GPU
    j["open_s"] = open_s;
    j["uploaded_gib"] = static_cast<double>(up.bytes) / double(1 << 30);
    j["upload_gbps"] = static_cast<double>(up.bytes) / 1e9 / std::max(init_s - open_s, 1e-9);
    j["upload_host_copy_s"] = up.host_seconds;
    j["upload_wait_s"] = up.wait_seconds;
  } else {
    j["weights_source"] = "random (GpuTextEncoder::init_random)";
    j["init_weights_s"] = init_s;
  }
  if (const weights::StreamStats* st = (*encoder)->stream_stats()) {
    j["streamed_copies"] = st->copies();
    j["streamed_gib"] = static_cast<double>(st->bytes()) / double(1 << 30);
  }
  if (args->has("json")) {
    std::printf("%s\n", j.dump().c_str());
  } else {
    std::printf("Qwen3-VL-32B text stack, %lld tokens, %lld layers (%lld streamed), bf16\n",
                static_cast<long long>(*tokens), static_cast<long long>(*layers),
                static_cast<long long>(*stream_layers));
    std::printf("  median %.4f s (min %.4f, max %.4f over %zu), %.0f TFLOP/s (%.2f TFLOP per run)\n", median, lo, hi,
                times.size(), flops.total() / median / 1e12, flops.total() / 1e12);
    if (host)
      std::printf("  weights %.2f GiB loaded from %s in %.2f s (%.1f GB/s to the GPU)\n", weights_gib,
                  args->get("checkpoint", "").c_str(), init_s, j["upload_gbps"].get<double>());
    else
      std::printf("  weights %.2f GiB generated in %.2f s\n", weights_gib, init_s);
    std::printf("  GPU in use by the run %.2f GiB; output %s, fnv1a %s\n", used_gib, finite ? "finite" : "NOT FINITE",
                fnv1a_hex(hidden).c_str());
  }
  return finite ? 0 : 1;
#endif
}

}  // namespace orochi::apps
