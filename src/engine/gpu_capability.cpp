#include "engine/gpu_capability.h"

#include <algorithm>

namespace orochi::engine {

std::string ComputeCapability::to_string() const { return std::to_string(major) + "." + std::to_string(minor); }

bool runs_sm90a(ComputeCapability cc) { return cc.major == 9 && cc.minor == 0; }

bool has_fp8(ComputeCapability cc) { return cc.major > 8 || (cc.major == 8 && cc.minor >= 9); }

namespace {

// The switches that only mean something for the sm_90a kernels, and the value that asks for one.
struct HopperSwitch {
  const char* name;
  bool (*asks)(const RunSwitches&);
};
const HopperSwitch kHopperSwitches[] = {
    {"attention", [](const RunSwitches& r) { return r.kernels.flash_attention; }},
    {"gemm", [](const RunSwitches& r) { return r.kernels.gemm_sm90a; }},
    {"flash-kv-block", [](const RunSwitches&) { return true; }},
    {"flash-pingpong", [](const RunSwitches&) { return true; }},
    {"flash-split-tail", [](const RunSwitches&) { return true; }},
    {"flash-rescale", [](const RunSwitches&) { return true; }},
    {"fp8-attention-promote", [](const RunSwitches&) { return true; }},
    {"fp8-attention-sums", [](const RunSwitches&) { return true; }},
    {"attention-precision",
     [](const RunSwitches& r) { return r.kernels.attention_precision == backends::AttentionPrecision::kFp8; }},
};

bool given(const RunSwitches& r, const char* name) { return std::find(r.given.begin(), r.given.end(), name) != r.given.end(); }

}  // namespace

Expected<RunSwitches> switches_for_gpu(const RunSwitches& switches, Precision precision, ComputeCapability cc,
                                       const std::string& gpu) {
  const std::string where = gpu + " (compute capability " + cc.to_string() + ")";
  if (precision == Precision::kFp8 && !has_fp8(cc))
    return unsupported("--precision fp8 needs FP8 tensor cores (compute capability 8.9 or later: RTX 4090, L40, "
                       "H100/H200); " + where + " has none: use --precision int8");
  if (switches.conditioner_precision == Precision::kFp8 && !has_fp8(cc))
    return unsupported("--set conditioner-precision=fp8 needs FP8 tensor cores (compute capability 8.9 or later); " +
                       where + " has none: use conditioner-precision=int8 or bf16");
  if (switches.kernels.attention_precision == backends::AttentionPrecision::kFp8 && !switches.kernels.flash_attention)
    return invalid_argument("--set attention-precision=fp8 runs Orochi's FP8 kernel and attention=cudnn asks for cuDNN's "
                            "bf16 attention: drop one of the two");
  RunSwitches out = switches;
  // The FP8 attention's defaults (mma sums, P V promoted every 4 tiles) are built for the ping-pong
  // schedule: flash-pingpong=0 alone falls back to f32 sums and promotion per tile; asked for
  // beside it, they are refused.
  if (!switches.kernels.flash_pingpong) {
    backends::KernelOptions& k = out.kernels;
    if (k.fp8_attention_mma_sums && given(switches, "fp8-attention-sums"))
      return invalid_argument("--set fp8-attention-sums=mma is built for the ping-pong schedule: drop flash-pingpong=0 or "
                              "use fp8-attention-sums=f32");
    if (k.fp8_attention_promote_every > 1 && given(switches, "fp8-attention-promote"))
      return invalid_argument("--set fp8-attention-promote=" + std::to_string(k.fp8_attention_promote_every) +
                              " is built for the ping-pong schedule: drop flash-pingpong=0 or use fp8-attention-promote=1 or 0");
    k.fp8_attention_mma_sums = false;
    if (k.fp8_attention_promote_every > 1) k.fp8_attention_promote_every = 1;
  }
  if (runs_sm90a(cc) && !switches.generic_kernels) return out;
  const std::string why = switches.generic_kernels && runs_sm90a(cc)
                              ? "kernels=generic keeps the run off Orochi's sm_90a kernels"
                              : "Orochi's sm_90a kernels run on compute capability 9.0 only, and " + where + " is not";
  for (const HopperSwitch& h : kHopperSwitches)
    if (given(switches, h.name) && h.asks(switches))
      return unsupported("--set " + std::string(h.name) + "=" + run_switches_json(switches)[h.name].get<std::string>() +
                         " asks for a Hopper kernel: " + why +
                         "; drop it (the generic path runs cuDNN attention and cuBLASLt GEMMs)");
  out.kernels.flash_attention = false;
  out.kernels.gemm_sm90a = false;
  // The FP8 attention kernel is sm_90a's; with --precision fp8 elsewhere, attention stays bf16.
  out.kernels.attention_precision = backends::AttentionPrecision::kBf16;
  return out;
}

Status check_attention_precision(const RunSwitches& switches, Precision precision, bool on_gpu, int gpus) {
  if (!switches.kernels.fp8_attention(precision)) return Status::ok();
  if (!on_gpu)
    return unsupported("--set attention-precision=fp8 runs Orochi's FP8 attention kernel on a Hopper GPU; the CPU path "
                       "computes in f32: add --device cuda, or drop the switch");
  if (gpus > 1)
    return unsupported("FP8 attention runs on one GPU for now (issue 25): use --gpus 1, or --set attention-precision=bf16 "
                       "on " + std::to_string(gpus) + " GPUs");
  return Status::ok();
}

}  // namespace orochi::engine
