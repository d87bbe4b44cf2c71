#include "models/h3/request_buffers.h"

#include <algorithm>
#include <utility>

#include "core/check.h"

namespace orochi::h3::gpu {
namespace {

// Which rows of one modality's index list fall in `rows`.
void pick_rows(const Tensor& indices, const dist::Range& rows, std::vector<int64_t>& pos, std::vector<int64_t>& dst) {
  const Tensor dense = indices.contiguous();
  const int64_t* p = dense.data<int64_t>();
  for (int64_t i = 0; i < dense.numel(); ++i)
    if (p[i] >= rows.begin && p[i] < rows.end) {
      pos.push_back(i);
      dst.push_back(p[i] - rows.begin);
    }
}

}  // namespace

RankRows rank_rows(const H3Inputs& in, const ParallelRank& rank) {
  RankRows r;
  r.shares = sp_row_shares(in.rows(), rank);
  r.rows = r.shares[rank.sp_rank];
  pick_rows(in.video_indices, r.rows, r.video_pos, r.video_dst);
  pick_rows(in.audio_indices, r.rows, r.audio_pos, r.audio_dst);
  pick_rows(in.text_indices, r.rows, r.text_pos, r.text_dst);
  return r;
}

RankDims rank_dims(const H3Config& c, const RequestSize& s, const ParallelRank& rank) {
  const TpShare share = tp_share(c, rank.tp_rank, rank.tp_size);
  RankDims d;
  for (const dist::Range& share : sp_row_shares(s.rows, rank)) d.R = std::max(d.R, share.size());
  d.heads = share.heads.size();
  d.attn_heads = d.heads / rank.sp_size;
  d.head_dim = c.attention_head_dim;
  d.ffn = share.ffn.size();
  return d;
}

uint64_t ArenaBuffer::bytes() const {
  return (static_cast<uint64_t>(shape_numel(shape)) * dtype_size(dtype) + 255) / 256 * 256;
}

std::vector<ArenaBuffer> arena_buffers(const H3Config& c, const RequestSize& s, const ParallelRank& rank,
                                       bool sp_gathers_rows, Precision precision) {
  const RankDims d = rank_dims(c, s, rank);
  const int64_t H = c.hidden_size, T = c.time_embed_dim, S = s.rows, L = s.text_rows, nt = s.timesteps;
  const int64_t rows = std::max(d.R, L);  // the refiner runs over all L text rows on every rank
  const int64_t nv = std::min(s.video_rows, d.R), na = std::min(s.audio_rows, d.R), lt = std::min(L, d.R);
  constexpr ArenaUse state = ArenaUse::kRequestState, staging = ArenaUse::kStaging, act = ArenaUse::kActivations;
  std::vector<ArenaBuffer> out = {
      {"video_in", state, {nv, c.video_patch_dim()}, DType::kF32},
      {"audio_in", state, {na, c.audio_in_channels}, DType::kF32},
      {"text_in", state, {L, c.text_dim}, DType::kBF16},
      {"video_dst", state, {nv}, DType::kI64}, {"audio_dst", state, {na}, DType::kI64},
      {"text_pos", state, {lt}, DType::kI64}, {"text_dst", state, {lt}, DType::kI64},
      {"ts_idx", state, {d.R}, DType::kI64}, {"adaln_idx", state, {d.R}, DType::kI64},
      {"rope_cos", state, {S, c.rotary_dim()}, DType::kBF16}, {"rope_sin", state, {S, c.rotary_dim()}, DType::kBF16},
      {"tables", state, {c.num_layers, nt * kModalities, 6 * H}, DType::kBF16},
      {"final_table", state, {nt, 2 * H}, DType::kBF16},
      // the AdaLN projections stream through these once per request to build the tables
      {"adaln_w", staging, {6 * kModalities * H, T}, DType::kBF16}, {"adaln_b", staging, {6 * kModalities * H}, DType::kBF16},
      {"temb_in", staging, {nt, c.freq_dim}, DType::kF32}, {"temb_hidden", staging, {nt, c.time_embed_hidden_dim}, DType::kF32},
      {"temb", staging, {nt, T}, DType::kF32}, {"temb_act", staging, {nt, T}, DType::kBF16},
      {"h", act, {d.R, H}, DType::kBF16}, {"a", act, {rows, H}, DType::kBF16}, {"o2", act, {rows, H}, DType::kBF16},
      {"q", act, {rows, d.inner()}, DType::kBF16}, {"k", act, {rows, d.inner()}, DType::kBF16},
      {"v", act, {rows, d.inner()}, DType::kBF16}, {"o", act, {rows, d.inner()}, DType::kBF16},
      {"u", act, {rows, 2 * d.ffn}, DType::kBF16}, {"g", act, {rows, d.ffn}, DType::kBF16},
      {"text", act, {L, H}, DType::kBF16},
      {"rows_f32", act, {std::max(nv, na), H}, DType::kF32},
      {"video_out", state, {nv, c.video_patch_dim()}, DType::kF32},
      {"audio_out", state, {na, c.audio_in_channels}, DType::kF32},
  };
  if (rank.sp_size > 1) {
    for (const char* name : {"qa", "ka", "va", "oa"}) out.push_back({name, ArenaUse::kExchange, {S, d.attn_inner()}, DType::kBF16});
    if (sp_gathers_rows) out.push_back({"xa", ArenaUse::kExchange, {(rank.sp_size - 1) * d.R, H}, DType::kBF16});
  }
  if (precision != Precision::kBf16) {
    // The quantized linears (is_quantized_linear) run on the blocks' R rows: inputs H (q/k/v, FFN
    // in), inner (out) and the SwiGLU width (FFN out); outputs inner, H and 2F.
    const int64_t widest_in = std::max({H, d.inner(), d.ffn}), widest_out = std::max({H, d.inner(), 2 * d.ffn});
    out.push_back({"xq_codes", act, {d.R * widest_in}, precision_weight_dtype(precision)});
    out.push_back({"xq_scales", act, {d.R}, DType::kF32});
    out.push_back({"xq_acc", act, {quantized_accumulator_rows(precision, d.R) * widest_out}, DType::kF32});
  }
  return out;
}

std::vector<BufferSpec> RequestBuffers::specs(const H3Config& c, const RequestSize& s, const ParallelRank& rank,
                                              bool sp_gathers_rows, Precision precision) {
  const std::pair<const char*, Tensor*> members[] = {
      {"video_in", &video_in}, {"audio_in", &audio_in}, {"text_in", &text_in}, {"video_dst", &video_dst},
      {"audio_dst", &audio_dst}, {"text_pos", &text_pos}, {"text_dst", &text_dst}, {"ts_idx", &ts_idx},
      {"adaln_idx", &adaln_idx}, {"rope_cos", &rope_cos}, {"rope_sin", &rope_sin}, {"tables", &tables},
      {"final_table", &final_table}, {"adaln_w", &adaln_w}, {"adaln_b", &adaln_b}, {"temb_in", &temb_in},
      {"temb_hidden", &temb_hidden}, {"temb", &temb}, {"temb_act", &temb_act}, {"h", &h}, {"a", &a}, {"o2", &o2},
      {"q", &q}, {"k", &k}, {"v", &v}, {"o", &o}, {"qa", &qa}, {"ka", &ka}, {"va", &va}, {"oa", &oa}, {"xa", &xa},
      {"u", &u}, {"g", &g}, {"text", &text}, {"rows_f32", &rows_f32}, {"video_out", &video_out},
      {"audio_out", &audio_out}, {"xq_codes", &xq_codes}, {"xq_scales", &xq_scales}, {"xq_acc", &xq_acc}};
  std::vector<BufferSpec> out;
  for (const ArenaBuffer& b : arena_buffers(c, s, rank, sp_gathers_rows, precision)) {
    Tensor* target = nullptr;
    for (const auto& [name, member] : members)
      if (b.name == name) target = member;
    OROCHI_CHECK(target != nullptr, "request arena buffer '", b.name, "' has no RequestBuffers member");
    out.push_back({target, b.shape, b.dtype});
  }
  return out;
}

size_t request_arena_bytes(const H3Config& config, const RequestSize& size, size_t attention_workspace,
                           const ParallelRank& rank, bool sp_gathers_rows, Precision precision) {
  size_t bytes = attention_workspace + 256;
  for (const ArenaBuffer& b : arena_buffers(config, size, rank, sp_gathers_rows, precision)) bytes += b.bytes();
  return bytes;
}

}  // namespace orochi::h3::gpu
