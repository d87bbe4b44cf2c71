#include "planner/h3_denoiser_memory.h"

#include <algorithm>

#include "core/attention_fp8_layout.h"
#include "models/h3/parameters.h"
#include "models/h3/request_buffers.h"
#include "models/h3/tensor_parallel.h"

namespace orochi::planner {
namespace {

constexpr uint64_t kArenaAlignment = 256;  // cuda::DeviceArena::kAlignment
uint64_t aligned(uint64_t bytes) { return (bytes + kArenaAlignment - 1) / kArenaAlignment * kArenaAlignment; }
uint64_t buffer(int64_t elements, uint64_t element_bytes) {
  return aligned(static_cast<uint64_t>(std::max<int64_t>(elements, 0)) * element_bytes);
}
int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

std::string group_of(const std::string& name) {
  if (h3::param_group_of(name) == h3::ParamGroup::kAdaln) return "adaln";
  if (name.starts_with("token_refiner.")) return "refiner";
  if (name.starts_with("transformer_blocks.")) {
    const size_t end = name.find('.', 19);
    return "block " + name.substr(19, end - 19);
  }
  if (name.starts_with("norm_out.") || name.starts_with("proj_out.") || name.starts_with("audio_proj_out."))
    return "heads";
  return "embedders";
}

}  // namespace

Status check_h3_layout(const h3::H3Config& c, const ParallelLayout& layout) {
  if (layout.kind == ParallelLayout::Kind::kNone) return Status::ok();
  if (layout.kind == ParallelLayout::Kind::kTensorSequence) {
    OROCHI_RETURN_IF_ERROR(h3::check_parallel_layout(c, layout.tp(), layout.sp()).with_context("--parallel " + layout.name()));
    return Status::ok();
  }
  const int64_t n = layout.degree;
  if (c.num_attention_heads % n != 0 || c.ffn_dim % n != 0) {
    std::string ok;
    for (int64_t d = 2; d <= std::min<int64_t>(c.num_attention_heads, 16); ++d)
      if (c.num_attention_heads % d == 0 && c.ffn_dim % d == 0) ok += (ok.empty() ? "" : ", ") + std::to_string(d);
    return invalid_argument("--parallel " + layout.name() + ": " + std::to_string(n) + " does not divide the " +
                            std::to_string(c.num_attention_heads) + " attention heads (and FFN width " +
                            std::to_string(c.ffn_dim) + ") of the denoiser; use a degree of " + ok);
  }
  return Status::ok();
}

std::vector<WeightGroup> h3_weight_groups(const h3::H3Config& c, const ParallelLayout& layout, Precision precision) {
  // As the GPU runner holds them (gpu_weights.cpp): TP rank 0's share, the largest when the FFN
  // width splits unevenly; the checkpoint's f32 islands in f32, the rest bf16, or quantized.
  const h3::TpShare share = h3::tp_share(c, 0, layout.tp());
  std::vector<WeightGroup> groups;
  auto group = [&](const std::string& name) -> WeightGroup& {
    for (WeightGroup& g : groups)
      if (g.name == name) return g;
    groups.push_back({name, 0, true, Tier::kResident, -1});
    return groups.back();
  };
  for (const char* first : {"embedders", "refiner"}) group(first);
  for (int64_t i = 0; i < c.num_layers; ++i) group("block " + std::to_string(i));
  group("heads");
  group("adaln");
  for (const h3::ParamSpec& spec : h3::h3_parameters(c)) {
    const std::string g = group_of(spec.name);
    if (g == "adaln") {
      group(g).bytes += static_cast<uint64_t>(shape_numel(spec.shape)) * 2;  // bf16 in host RAM, not an arena
      continue;
    }
    const Shape local = h3::tp_local_shape(spec.shape, h3::tp_slice_of(spec.name, c, share));
    const auto elements = static_cast<uint64_t>(shape_numel(local));
    if (precision != Precision::kBf16 && h3::is_quantized_linear(spec.name)) {
      // codes [N, K], 1 byte each, + scales [N] f32
      group(g).bytes += aligned(elements * dtype_size(precision_weight_dtype(precision))) +
                        aligned(static_cast<uint64_t>(local[0]) * 4);
      continue;
    }
    group(g).bytes += aligned(elements * (h3::is_f32_island(spec.name) ? 4 : 2));
  }
  for (WeightGroup& g : groups) {
    if (g.name == "adaln") g.tier = Tier::kStreamedOnce;
    // The embedders and heads are small and run outside the block loop: keep them resident.
    // The runtime streams transformer blocks only (one block image per staging slot); the
    // refiner, the embedders and the heads stay resident.
    if (g.name == "embedders" || g.name == "heads" || g.name == "refiner") g.streamable = false;
  }
  return groups;
}

std::vector<BufferBytes> h3_request_buffers(const h3::H3Config& c, const RequestShape& s, const ParallelLayout& layout,
                                            const dist::SequenceParallelOptions& sp, Precision precision,
                                            bool fp8_attention) {
  const int tpn = layout.tp(), spn = layout.sp();
  // The GPU runner's own list (h3::gpu::arena_buffers) for TP rank 0, whose share is the largest
  // when the FFN width splits unevenly; its rows are the largest SP share (even, or by the
  // sp-weights switch when they are given for this layout).
  std::vector<double> weights;
  if (static_cast<int>(sp.row_weights.size()) == spn && spn > 1) weights = sp.row_weights;
  const h3::ParallelRank rank{0, tpn, 0, spn, weights};
  const h3::gpu::RequestSize size{s.rows, s.text_rows, s.video_rows, s.audio_rows, s.timesteps};
  std::vector<BufferBytes> b;
  for (const h3::gpu::ArenaBuffer& a : h3::gpu::arena_buffers(c, size, rank, h3::sp_gathers_rows(c, tpn, spn, sp.qkv), precision)) {
    const PoolKind pool = a.use == h3::gpu::ArenaUse::kRequestState ? PoolKind::kRequestState
                          : a.use == h3::gpu::ArenaUse::kStaging    ? PoolKind::kStaging
                          : a.use == h3::gpu::ArenaUse::kExchange   ? PoolKind::kComm
                                                                    : PoolKind::kActivations;
    b.push_back({pool, a.name + " " + std::string(dtype_name(a.dtype)) + " " + shape_to_string(a.shape), a.bytes()});
  }
  // Outside the list (each sized on the GPU by its library): one buffer for both attention kernels
  // (they run one at a time): cuDNN SDPA's softmax statistics per head and row, f32 (an estimate;
  // the GPU asks cuDNN), or the flash kernel's split last wave, at most one 128 x 128 f32 partial
  // output (+ row stats) per SM of a 132-SM Hopper, or the FP8 kernel's codes and scales (exact,
  // core/attention_fp8_layout.h); the GEMM workspace; NCCL's channels.
  const int64_t heads = c.num_attention_heads / (tpn * spn);
  constexpr uint64_t kFlashSplitBytes = 132 * (128 * 128 + 2 * 128) * 4;
  uint64_t attention = std::max(buffer(heads * std::max(s.rows, s.text_rows) * 2, 4), kFlashSplitBytes);
  if (fp8_attention)  // the main attention over all rows; the refiner's over the text rows is smaller
    attention = std::max<uint64_t>(attention, fp8_attention::fp8_attention_layout(heads, s.rows, s.rows).bytes);
  b.push_back({PoolKind::kScratch, fp8_attention ? "attention workspace (FP8 codes and scales)" : "attention workspace (estimate)",
               attention + kArenaAlignment});
  b.push_back({PoolKind::kScratch, "cuBLASLt workspace", 32 * kMiB});  // GemmRunner::kDefaultWorkspaceBytes
  if (precision != Precision::kBf16)  // QuantizedGemmRunner::kDefaultWorkspaceBytes
    b.push_back({PoolKind::kScratch, "cuBLASLt workspace (quantized GEMMs)", 32 * kMiB});
  if (tpn > 1 || spn > 1) b.push_back({PoolKind::kComm, "NCCL channel buffers (estimate)", 64 * kMiB});
  return b;
}

uint64_t h3_request_arena_bytes(const h3::H3Config& config, const RequestShape& shape) {
  uint64_t bytes = kArenaAlignment;  // request_arena_bytes adds one alignment
  for (const BufferBytes& b :
       h3_request_buffers(config, shape, ParallelLayout{}, {}, Precision::kBf16, /*fp8_attention=*/false))
    if (b.name != "cuBLASLt workspace") bytes += b.bytes;  // the GEMM runner allocates its own
  return bytes;
}

}  // namespace orochi::planner
