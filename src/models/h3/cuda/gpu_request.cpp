#include "models/h3/cuda/gpu_request.h"

#include <algorithm>
#include <string>

#include "dist/row_balance.h"

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

std::vector<dist::Range> even_shares(int64_t rows, int sp_size) {
  std::vector<dist::Range> shares;
  for (int j = 0; j < sp_size; ++j) shares.push_back(dist::even_share(rows, sp_size, j));
  return shares;
}

Status check_shares(const std::vector<dist::Range>& shares, int64_t rows, int sp_size) {
  if (static_cast<int>(shares.size()) != sp_size)
    return invalid_argument(std::to_string(shares.size()) + " row shares for " + std::to_string(sp_size) + " SP ranks");
  const int64_t capacity = dist::share_capacity(rows, sp_size);
  int64_t begin = 0;
  for (size_t j = 0; j < shares.size(); ++j) {
    const dist::Range& s = shares[j];
    if (s.begin != begin || s.size() <= 0 || s.size() > capacity)
      return invalid_argument("SP rank " + std::to_string(j) + "'s rows [" + std::to_string(s.begin) + ", " +
                              std::to_string(s.end) + ") do not continue at row " + std::to_string(begin) +
                              " with 1 to " + std::to_string(capacity) + " rows");
    begin = s.end;
  }
  if (begin != rows)
    return invalid_argument("the SP row shares end at row " + std::to_string(begin) + " of " + std::to_string(rows));
  return Status::ok();
}

RankRows rank_rows(const H3Inputs& in, const std::vector<dist::Range>& shares, int sp_rank) {
  RankRows r;
  r.shares = shares;
  r.rows = r.shares[sp_rank];
  pick_rows(in.video_indices, r.rows, r.video_pos, r.video_dst);
  pick_rows(in.audio_indices, r.rows, r.audio_pos, r.audio_dst);
  pick_rows(in.text_indices, r.rows, r.text_pos, r.text_dst);
  return r;
}

RankDims rank_dims(const H3Config& c, const RequestSize& s, const ParallelRank& rank) {
  const TpShare share = tp_share(c, rank.tp_rank, rank.tp_size);
  RankDims d;
  d.R = dist::share_capacity(s.rows, rank.sp_size);
  d.heads = share.heads.size();
  d.attn_heads = d.heads / rank.sp_size;
  d.head_dim = c.attention_head_dim;
  d.ffn = share.ffn.size();
  return d;
}

std::vector<BufferSpec> RequestBuffers::specs(const H3Config& c, const RequestSize& s, const ParallelRank& rank) {
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
  if (rank.sp_size > 1)
    for (Tensor* t : {&qa, &ka, &va, &oa}) out.push_back({t, {S, d.attn_inner()}, DType::kBF16});
  return out;
}

void RequestBuffers::view_rows() {
  const auto nv = static_cast<int64_t>(layout.video_pos.size()), na = static_cast<int64_t>(layout.audio_pos.size());
  const auto lt = static_cast<int64_t>(layout.text_pos.size()), R = layout.rows.size();
  const Capacity& c = capacity;
  video_in = c.video_in.slice(0, 0, nv);
  video_dst = c.video_dst.slice(0, 0, nv);
  video_out = c.video_out.slice(0, 0, nv);
  audio_in = c.audio_in.slice(0, 0, na);
  audio_dst = c.audio_dst.slice(0, 0, na);
  audio_out = c.audio_out.slice(0, 0, na);
  text_pos = c.text_pos.slice(0, 0, lt);
  text_dst = c.text_dst.slice(0, 0, lt);
  h = c.h.slice(0, 0, R);
  ts_idx = c.ts_idx.slice(0, 0, R);
  adaln_idx = c.adaln_idx.slice(0, 0, R);
}

size_t request_arena_bytes(const H3Config& config, const RequestSize& size, size_t attention_workspace,
                           const ParallelRank& rank) {
  RequestBuffers sizing;
  size_t bytes = attention_workspace + 256;
  for (const BufferSpec& b : sizing.specs(config, size, rank))
    bytes += (static_cast<size_t>(shape_numel(b.shape)) * dtype_size(b.dtype) + 255) / 256 * 256;
  return bytes;
}

}  // namespace orochi::h3::gpu
