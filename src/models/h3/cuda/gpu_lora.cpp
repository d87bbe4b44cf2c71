#include "models/h3/cuda/gpu_lora.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "backends/cuda/cuda_check.h"
#include "backends/cuda/device_memory.h"
#include "backends/cuda/ops_lora.h"

namespace orochi::h3::gpu {
namespace {

// Every resident linear weight by its diffusers name (the names of h3::linear_weights; the AdaLN
// projections are not resident: see adaln_block below).
std::map<std::string, Tensor*> resident_linears(GpuWeights& w) {
  std::map<std::string, Tensor*> out;
  auto add = [&](const std::string& name, GpuLinear& l) {
    if (l.weight.defined()) out[name + ".weight"] = &l.weight;
  };
  add("proj_in", w.proj_in);
  add("audio_proj_in", w.audio_proj_in);
  add("context_embedder", w.context_embedder);
  add("time_embedder.linear_1", w.time_linear_1);
  add("time_embedder.linear_2", w.time_linear_2);
  auto block = [&](const std::string& p, GpuBlock& b) {
    add(p + "attn.to_q", b.to_q);
    add(p + "attn.to_k", b.to_k);
    add(p + "attn.to_v", b.to_v);
    add(p + "attn.to_out.0", b.to_out);
    add(p + "ff.net.0.proj", b.ff_in);
    add(p + "ff.net.2", b.ff_out);
  };
  for (size_t i = 0; i < w.refiner.size(); ++i) block("token_refiner.refiner_blocks." + std::to_string(i) + ".", w.refiner[i]);
  for (size_t i = 0; i < w.blocks.size(); ++i) block("transformer_blocks." + std::to_string(i) + ".", w.blocks[i]);
  add("proj_out", w.proj_out);
  add("audio_proj_out", w.audio_proj_out);
  return out;
}

// The AdalnSource block index of an AdaLN projection's name (-1: norm_out.linear), or -2 for none.
int64_t adaln_block(const std::string& param, int64_t blocks) {
  if (param == "norm_out.linear.weight") return -1;
  const std::string head = "transformer_blocks.", tail = ".adaln_proj.linear.weight";
  if (param.size() <= head.size() + tail.size() || param.compare(0, head.size(), head) != 0 ||
      param.compare(param.size() - tail.size(), tail.size(), tail) != 0)
    return -2;
  const std::string index = param.substr(head.size(), param.size() - head.size() - tail.size());
  if (index.empty() || index.find_first_not_of("0123456789") != std::string::npos) return -2;
  const int64_t b = std::stoll(index);
  return b < blocks ? b : -2;
}

size_t factor_bytes(const LoraDelta& d) {
  return static_cast<size_t>(d.up.numel() + d.down.numel()) * 4 + 2 * cuda::DeviceArena::kAlignment;
}

// up and down uploaded into `arena`, merged into `weight`, the arena reset: stream-ordered, so the
// next delta's upload waits for this merge.
Status merge_one(cuda::DeviceArena& arena, const Tensor& weight, const LoraDelta& d, float s, cudaStream_t stream) {
  const size_t mark = arena.mark();
  OROCHI_ASSIGN_OR_RETURN(Tensor up, cuda::upload(d.up.contiguous(), arena, DType::kF32, stream));
  OROCHI_ASSIGN_OR_RETURN(Tensor down, cuda::upload(d.down.contiguous(), arena, DType::kF32, stream));
  OROCHI_RETURN_IF_ERROR(cuda::lora_merge(weight, up, down, s, stream));
  // The uploads are stream-ordered; wait before the bytes are handed out again.
  OROCHI_RETURN_IF_ERROR(cuda::cuda_status(cudaStreamSynchronize(stream), "LoRA merge"));
  arena.reset(mark);
  return Status::ok();
}

}  // namespace

Status merge_lora_on_gpu(GpuWeights& weights, AdalnSource& adaln, const H3Lora& lora, float strength,
                         cudaStream_t stream) {
  if (!std::isfinite(strength))
    return invalid_argument("LoRA '" + lora.path + "': strength " + std::to_string(strength) + " is not finite");
  if (strength == 0.0f) return Status::ok();
  if (!lora.full.empty())
    return invalid_argument("LoRA '" + lora.path + "': '" + lora.full[0].source +
                            "' is a full-rank delta (.diff / .diff_b), which the GPU merge does not apply: "
                            "use it where the LoRA merges into host weights (orochi generate / serve)");
  if (lora.deltas.empty()) return Status::ok();
  const std::map<std::string, Tensor*> resident = resident_linears(weights);
  const int64_t blocks = static_cast<int64_t>(weights.blocks.size());
  size_t scratch = 0;
  int device = -1;
  std::map<int64_t, std::vector<LoraDelta>> adaln_deltas;
  for (const LoraDelta& d : lora.deltas) {
    scratch = std::max(scratch, factor_bytes(d));
    auto it = resident.find(d.param);
    if (it != resident.end()) {
      device = it->second->device().index;
      continue;
    }
    const int64_t b = adaln_block(d.param, blocks);
    if (b == -2)
      return invalid_argument("LoRA '" + lora.path + "': '" + d.source + "' targets " + d.param +
                              ", which these GPU weights do not hold");
    adaln_deltas[b].push_back(d);
  }
  if (device < 0) device = weights.proj_in.weight.device().index;
  OROCHI_ASSIGN_OR_RETURN(std::shared_ptr<cuda::DeviceArena> arena,
                          cuda::DeviceArena::create(device, scratch, "LoRA factors"));
  for (const LoraDelta& d : lora.deltas) {
    auto it = resident.find(d.param);
    if (it == resident.end()) continue;
    const Tensor& w = *it->second;
    OROCHI_CHECK(w.dim(0) == d.up.dim(0) && w.dim(1) == d.down.dim(1), "LoRA delta shape for ", d.param, ": ",
                 w.describe(), " (a tensor-parallel share?)");
    OROCHI_RETURN_IF_ERROR(merge_one(*arena, w, d, strength * d.scale, stream));
  }
  if (adaln_deltas.empty()) return Status::ok();
  // The AdaLN projections are written per request by `adaln`: their deltas follow each write.
  adaln = [base = adaln, arena, deltas = std::move(adaln_deltas), strength, stream](
              int64_t block, const Tensor& weight, const Tensor& bias) -> Status {
    OROCHI_RETURN_IF_ERROR(base(block, weight, bias));
    auto it = deltas.find(block);
    if (it == deltas.end()) return Status::ok();
    for (const LoraDelta& d : it->second) OROCHI_RETURN_IF_ERROR(merge_one(*arena, weight, d, strength * d.scale, stream));
    return Status::ok();
  };
  return Status::ok();
}

}  // namespace orochi::h3::gpu
