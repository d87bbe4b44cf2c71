#include "models/h3/cuda/gpu_request.h"

#include <algorithm>

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

std::vector<BufferSpec> RequestBuffers::specs(const H3Config& c, const RequestSize& s, const ParallelRank& rank,
                                              bool sp_gathers_rows) {
  const RankDims d = rank_dims(c, s, rank);
  const int64_t H = c.hidden_size, T = c.time_embed_dim, S = s.rows, L = s.text_rows, nt = s.timesteps;
  const int64_t rows = std::max(d.R, L);  // the refiner runs over all L text rows on every rank
  const int64_t nv = std::min(s.video_rows, d.R), na = std::min(s.audio_rows, d.R), lt = std::min(L, d.R);
  std::vector<BufferSpec> out = {
      {&video_in, {nv, c.video_patch_dim()}, DType::kF32},
      {&audio_in, {na, c.audio_in_channels}, DType::kF32},
      {&text_in, {L, c.text_dim}, DType::kBF16},
      {&video_dst, {nv}, DType::kI64}, {&audio_dst, {na}, DType::kI64},
      {&text_pos, {lt}, DType::kI64}, {&text_dst, {lt}, DType::kI64},
      {&ts_idx, {d.R}, DType::kI64}, {&adaln_idx, {d.R}, DType::kI64},
      {&rope_cos, {S, c.rotary_dim()}, DType::kBF16}, {&rope_sin, {S, c.rotary_dim()}, DType::kBF16},
      {&tables, {c.num_layers, nt * kModalities, 6 * H}, DType::kBF16},
      {&final_table, {nt, 2 * H}, DType::kBF16},
      {&adaln_w, {6 * kModalities * H, T}, DType::kBF16}, {&adaln_b, {6 * kModalities * H}, DType::kBF16},
      {&temb_in, {nt, c.freq_dim}, DType::kF32}, {&temb_hidden, {nt, c.time_embed_hidden_dim}, DType::kF32},
      {&temb, {nt, T}, DType::kF32}, {&temb_act, {nt, T}, DType::kBF16},
      {&h, {d.R, H}, DType::kBF16}, {&a, {rows, H}, DType::kBF16}, {&o2, {rows, H}, DType::kBF16},
      {&q, {rows, d.inner()}, DType::kBF16}, {&k, {rows, d.inner()}, DType::kBF16},
      {&v, {rows, d.inner()}, DType::kBF16}, {&o, {rows, d.inner()}, DType::kBF16},
      {&u, {rows, 2 * d.ffn}, DType::kBF16}, {&g, {rows, d.ffn}, DType::kBF16},
      {&text, {L, H}, DType::kBF16},
      {&rows_f32, {std::max(nv, na), H}, DType::kF32},
      {&video_out, {nv, c.video_patch_dim()}, DType::kF32},
      {&audio_out, {na, c.audio_in_channels}, DType::kF32},
  };
  if (rank.sp_size > 1) {
    for (Tensor* t : {&qa, &ka, &va, &oa}) out.push_back({t, {S, d.attn_inner()}, DType::kBF16});
    if (sp_gathers_rows) out.push_back({&xa, {(rank.sp_size - 1) * d.R, H}, DType::kBF16});
  }
  return out;
}

size_t request_arena_bytes(const H3Config& config, const RequestSize& size, size_t attention_workspace,
                           const ParallelRank& rank, bool sp_gathers_rows) {
  RequestBuffers sizing;
  size_t bytes = attention_workspace + 256;
  for (const BufferSpec& b : sizing.specs(config, size, rank, sp_gathers_rows))
    bytes += (static_cast<size_t>(shape_numel(b.shape)) * dtype_size(b.dtype) + 255) / 256 * 256;
  return bytes;
}

}  // namespace orochi::h3::gpu
