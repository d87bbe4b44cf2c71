// `orochi bench text` on the CUDA backend: the Qwen3-VL-32B text stack (MiniMax-H3's conditioner:
// the residual stream after `layers` of 64 decoder layers, no final norm) on one GPU with
// counter-based random weights of the real shapes (GpuTextEncoder::init_random) or a checkpoint
// folder's. Times encode_text with a synchronized wall clock: it is what `generate` calls, host
// upload of ids/RoPE tables and download of the f32 output included. `dump_outputs` writes the ids
// and the output so that scripts/device/compare_qwen3vl_full.py can run transformers'
// Qwen3VLTextModel on the same weights.
#include <cuda_runtime_api.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdarg>
#include <cstdio>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "core/format.h"
#include "core/stopwatch.h"
#include "engine/cuda/cuda_backend.h"
#include "models/qwen3vl/cuda/gpu_text_encoder.h"
#include "models/qwen3vl/text_config.h"
#include "models/qwen3vl/text_weights.h"
#include "weights/safetensors_writer.h"

namespace orochi::engine::cuda_backend {
namespace {

// Deterministic ids that spread over the whole vocabulary (7919 is prime, so consecutive tokens
// land far apart in the embedding table) and need no tokenizer: i64 [L].
Tensor bench_token_ids(int64_t tokens, uint64_t seed, int64_t vocab) {
  std::vector<int64_t> ids(static_cast<size_t>(tokens));
  const int64_t offset =
      static_cast<int64_t>(seed % static_cast<uint64_t>(vocab));  // the same ids as before for small seeds
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

Status dump_text(const std::string& path, const Tensor& ids, const Tensor& hidden,
                 const std::map<std::string, std::string>& metadata) {
  Status s = weights::write_safetensors(path, {{"token_ids", ids},  // i64 [L]
                                               {"hidden", hidden}},  // f32 [L, hidden]
                                        metadata);
  if (!s.is_ok())
    return Status(s.code(), "--dump-outputs " + path + ": " + s.message() + " (is the folder there and writable?)");
  return Status::ok();
}

}  // namespace

Expected<nlohmann::json> cuda_bench_text(const BenchTextOptions& o) {
  auto note = [&](const std::string& line) {
    if (o.on_note) o.on_note(line);
  };
  OROCHI_RETURN_IF_ERROR(check_bench_text_options(o));
  const qwen3vl::TextConfig config = qwen3vl::TextConfig::qwen3vl_32b();
  const Tensor ids = bench_token_ids(o.tokens, o.seed, config.vocab_size);  // i64 [L]
  const TextFlops flops = text_flops(config, o.layers, o.tokens);
  const int dev = static_cast<int>(o.device);
  qwen3vl::gpu::TextStreaming streaming;
  if (o.stream_layers > 0) {  // the last layers stream, as the planner places them
    streaming.streamed.assign(static_cast<size_t>(o.layers), false);
    std::fill(streaming.streamed.end() - o.stream_layers, streaming.streamed.end(), true);
    streaming.slots = static_cast<int>(o.slots);
    streaming.tier = o.tier == "peer" ? weights::WeightTier::kPeer : weights::WeightTier::kHost;
    streaming.peer_device = o.tier == "peer" ? (dev == 0 ? 1 : 0) : -1;
  }
  size_t free_before = 0, total = 0;
  OROCHI_RETURN_IF_ERROR(cuda::cuda_status(cudaSetDevice(dev), "cudaSetDevice"));
  cudaMemGetInfo(&free_before, &total);
  OROCHI_ASSIGN_OR_RETURN(auto encoder,
                          qwen3vl::gpu::GpuTextEncoder::create(config, o.layers, dev, o.tokens, streaming, o.precision));
  // The weights: a checkpoint folder (timed from the page cache to the GPU), or random ones.
  std::optional<qwen3vl::TextWeights> host;  // the checkpoint's views must outlive the encoder's use
  const auto t_init = Clock::now();
  double open_s = 0;
  if (!o.checkpoint.empty()) {
    note(format_printf("Qwen3-VL text bench: loading %lld layers from %s to GPU %d...",
                       static_cast<long long>(o.layers), o.checkpoint.c_str(), dev));
    OROCHI_ASSIGN_OR_RETURN(host, qwen3vl::load_text_weights(o.checkpoint, o.layers));
    open_s = seconds_since(t_init);
    OROCHI_RETURN_IF_ERROR(encoder->upload(*host));
  } else {
    note(format_printf("Qwen3-VL text bench: %lld tokens, %lld layers; generating weights on GPU %d...",
                       static_cast<long long>(o.tokens), static_cast<long long>(o.layers), dev));
    OROCHI_RETURN_IF_ERROR(encoder->init_random(o.seed));
  }
  const double init_s = seconds_since(t_init);
  if (!o.write_checkpoint.empty()) {
    const auto t_write = Clock::now();
    OROCHI_RETURN_IF_ERROR(encoder->write_checkpoint(o.write_checkpoint));
    note(format_printf("wrote the weights to %s in %.1f s", o.write_checkpoint.c_str(), seconds_since(t_write)));
  }

  std::vector<double> times;
  Tensor hidden;  // f32 [L, hidden], the last run's output
  for (int64_t i = 0; i < o.warmup + o.iters; ++i) {
    OROCHI_RETURN_IF_ERROR(cuda::cuda_status(cudaDeviceSynchronize(), "encode_text"));
    const auto t0 = Clock::now();
    OROCHI_ASSIGN_OR_RETURN(Tensor out, encoder->encode_text(ids));
    OROCHI_RETURN_IF_ERROR(cuda::cuda_status(cudaDeviceSynchronize(), "encode_text"));
    const double t = seconds_since(t0);
    hidden = std::move(out);
    if (i >= o.warmup) times.push_back(t);
    note(format_printf("encode_text %lld/%lld: %.4f s%s", static_cast<long long>(i + 1),
                       static_cast<long long>(o.warmup + o.iters), t, i < o.warmup ? " (warm-up)" : ""));
  }
  size_t free_after = 0;
  cudaMemGetInfo(&free_after, &total);
  bool finite = true;
  for (int64_t i = 0; i < hidden.numel(); ++i) finite &= std::isfinite(hidden.data<float>()[i]);
  if (!o.dump_outputs.empty()) {
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
        {"format", "orochi-qwen3vl-text-dump-v1"},   {"seed", std::to_string(o.seed)},
        {"layers", std::to_string(o.layers)},          {"tokens", std::to_string(o.tokens)},
        {"config", shapes.dump()},                    {"dtype", "bf16"},
        {"precision", precision_name(o.precision)},
        {"weights", "qwen3vl::gpu::GpuTextEncoder::init_random"}};
    OROCHI_RETURN_IF_ERROR(dump_text(o.dump_outputs, ids, hidden, metadata));
    note(format_printf("wrote the token ids and the last run's hidden state to %s", o.dump_outputs.c_str()));
  }

  std::vector<double> sorted = times;
  std::sort(sorted.begin(), sorted.end());
  const double median = sorted[sorted.size() / 2], lo = sorted.front(), hi = sorted.back();
  const double weights_gib = static_cast<double>(encoder->weight_bytes()) / double(1 << 30);
  const double used_gib = (static_cast<double>(free_before) - static_cast<double>(free_after)) / double(1 << 30);
  const cuda::UploadStats& up = encoder->upload_stats();
  nlohmann::json j{{"engine", "orochi"},         {"model", "qwen3-vl-32b-text"},
                   {"layers", o.layers},          {"tokens", o.tokens},
                   {"seed", o.seed},              {"precision", precision_name(o.precision)},
                   {"encode_s_median", median},
                   {"encode_s_min", lo},         {"encode_s_max", hi},
                   {"encode_s_all", times},      {"tflops", flops.total() / median / 1e12},
                   {"linear_tflop", flops.linear / 1e12}, {"attention_tflop", flops.attention / 1e12},
                   {"weights_gib", weights_gib}, {"gpu_used_gib", used_gib},
                   {"out_finite", finite},       {"outputs_fnv1a", fnv1a_hex(hidden)},
                   {"stream_layers", o.stream_layers}, {"tier_gib", encoder->tier_bytes() / double(1 << 30)}};
  if (host) {
    j["weights_source"] = o.checkpoint;
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
  if (const weights::StreamStats* st = encoder->stream_stats()) {
    j["streamed_copies"] = st->copies();
    j["streamed_gib"] = static_cast<double>(st->bytes()) / double(1 << 30);
  }
  return j;
}

}  // namespace orochi::engine::cuda_backend
