#include "planner/h3_denoiser_memory.h"

#include <algorithm>

#include "models/h3/parameters.h"
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

std::vector<WeightGroup> h3_weight_groups(const h3::H3Config& c, const ParallelLayout& layout) {
  // As the GPU runner holds them (gpu_weights.cpp): TP rank 0's share, the largest when the FFN
  // width splits unevenly; the checkpoint's f32 islands in f32, the rest bf16.
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
    const auto elements =
        static_cast<uint64_t>(shape_numel(h3::tp_local_shape(spec.shape, h3::tp_slice_of(spec.name, c, share))));
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

std::vector<BufferBytes> h3_request_buffers(const h3::H3Config& c, const RequestShape& s, const ParallelLayout& layout) {
  const int64_t tpn = layout.tp(), spn = layout.sp();
  const bool tp = tpn > 1, sp = spn > 1;
  const int64_t H = c.hidden_size, T = c.time_embed_dim, L = s.text_rows, nt = s.timesteps;
  const int64_t inner = c.inner_dim() / tpn, F = c.ffn_dim / tpn;
  // Rows this GPU holds: the whole sequence, or 1/N of it under Ulysses.
  const int64_t S = ceil_div(s.rows, spn);
  const int64_t Nv = ceil_div(s.video_rows, spn);
  const int64_t Na = ceil_div(s.audio_rows, spn);
  const PoolKind state = PoolKind::kRequestState, act = PoolKind::kActivations;
  std::vector<BufferBytes> b = {
      // inputs and per-request state (gpu_request.cpp RequestBuffers, same order)
      {state, "video rows in f32 [Nv, 96]", buffer(Nv * c.video_patch_dim(), 4)},
      {state, "audio rows in f32 [Na, 32]", buffer(Na * c.audio_in_channels, 4)},
      {state, "text features bf16 [L, 5120]", buffer(L * c.text_dim, 2)},
      {state, "row indices i64", buffer(Nv, 8) + buffer(Na, 8) + buffer(L, 8) + 2 * buffer(S, 8)},
      {state, "RoPE cos/sin bf16 [S, 96]", 2 * buffer(S * c.rotary_dim(), 2)},
      {state, "AdaLN tables bf16 [layers, n_t*3, 6H]", buffer(c.num_layers * nt * h3::kModalities * 6 * H, 2)},
      {state, "final table bf16 [n_t, 2H]", buffer(nt * 2 * H, 2)},
      // the staging slot the AdaLN projections stream through, once per request
      {PoolKind::kStaging, "AdaLN slot bf16 [18H, T] + bias", buffer(6 * h3::kModalities * H * T, 2) +
                                                                   buffer(6 * h3::kModalities * H, 2)},
      {PoolKind::kStaging, "time embedding f32/bf16 [n_t, ...]",
       buffer(nt * c.freq_dim, 4) + buffer(nt * c.time_embed_hidden_dim, 4) + buffer(nt * T, 4) + buffer(nt * T, 2)},
      // one step's activations
      {act, "h, a, o2 bf16 [S, H]", 3 * buffer(S * H, 2)},
      {act, "q, k, v, o bf16 [S, inner]", 4 * buffer(S * inner, 2)},
      {act, "FFN u bf16 [S, 2F]", buffer(S * 2 * F, 2)},
      {act, "FFN g bf16 [S, F]", buffer(S * F, 2)},
      {act, "text rows bf16 [L, H]", buffer(L * H, 2)},
      {act, "patch rows f32 [max(Nv, Na), H]", buffer(std::max(Nv, Na) * H, 4)},
      {state, "outputs f32 [Nv, 96] + [Na, 32]",
       buffer(Nv * c.video_patch_dim(), 4) + buffer(Na * c.audio_in_channels, 4)},
  };
  // One buffer for both attention kernels (they run one at a time): cuDNN SDPA's softmax
  // statistics per head and row, f32 (estimate; the GPU asks cuDNN), or the flash kernel's split
  // last wave, at most one 128 x 128 f32 partial output (+ row stats) per SM of a 132-SM Hopper.
  const int64_t heads = c.num_attention_heads / (tpn * spn);
  constexpr uint64_t kFlashSplitBytes = 132 * (128 * 128 + 2 * 128) * 4;
  b.push_back({PoolKind::kScratch, "attention workspace (estimate)",
               std::max(buffer(heads * std::max(s.rows, L) * 2, 4), kFlashSplitBytes) + kArenaAlignment});
  b.push_back({PoolKind::kScratch, "cuBLASLt workspace", 32 * kMiB});  // GemmRunner::kDefaultWorkspaceBytes
  if (tp) {
    // The all-reduce of o2 and of the FFN output runs in place; a second [S, H] buffer lets the
    // chunked FFN reduce one chunk while the next chunk's GEMM writes.
    b.push_back({PoolKind::kComm, "all-reduce overlap buffer bf16 [S, H]", buffer(S * H, 2)});
  }
  if (sp) {
    // Ulysses (gpu_request.cpp): q, k, v and o of every row of this GPU's heads, [rows, inner/N]
    // each, and with the rows-gathering scheme the peers' rows of the attention input.
    b.push_back({PoolKind::kComm, "Ulysses q, k, v, o bf16 [rows, inner/N]", 4 * buffer(s.rows * (inner / spn), 2)});
    if (h3::fewer_bytes_sp_qkv(c, static_cast<int>(tpn), static_cast<int>(spn)) == h3::SpQkvScheme::kGatherRows)
      b.push_back({PoolKind::kComm, "peers' attention-input rows bf16 [(N-1) S/N, H]", buffer((spn - 1) * S * H, 2)});
  }
  if (tp || sp) b.push_back({PoolKind::kComm, "NCCL channel buffers (estimate)", 64 * kMiB});
  return b;
}

uint64_t h3_request_arena_bytes(const h3::H3Config& config, const RequestShape& shape) {
  uint64_t bytes = kArenaAlignment;  // request_arena_bytes adds one alignment
  for (const BufferBytes& b : h3_request_buffers(config, shape, ParallelLayout{}))
    if (b.name != "cuBLASLt workspace") bytes += b.bytes;  // the GEMM runner allocates its own
  return bytes;
}

}  // namespace orochi::planner
