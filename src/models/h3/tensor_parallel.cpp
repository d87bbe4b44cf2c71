#include "models/h3/tensor_parallel.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>

namespace orochi::h3 {
namespace {

std::string divisors_of(int64_t n) {
  std::string out;
  for (int64_t d = 1; d <= n; ++d)
    if (n % d == 0) out += (out.empty() ? "" : ", ") + std::to_string(d);
  return out;
}

}  // namespace

std::vector<dist::Range> sp_row_shares(int64_t rows, const ParallelRank& rank) {
  std::vector<dist::Range> shares;
  for (int j = 0; j < rank.sp_size; ++j)
    shares.push_back(rank.sp_weights.empty() ? dist::even_share(rows, rank.sp_size, j)
                                             : dist::weighted_share(rows, rank.sp_weights, j));
  return shares;
}

std::string sp_weights_problem(const std::vector<double>& weights, int sp_size) {
  if (static_cast<int>(weights.size()) != sp_size) return std::to_string(weights.size()) + " weights";
  double mean = 0;
  for (double w : weights) {
    if (!std::isfinite(w) || w <= 0) return "a weight that is not a positive number";
    mean += w / sp_size;
  }
  for (double w : weights)
    if (w < 0.5 * mean || w > 2 * mean) return "a weight outside [0.5, 2] times their mean";
  return "";
}

SpQkvScheme fewer_bytes_sp_qkv(const H3Config& c, int tp_size, int sp_size) {
  return static_cast<int64_t>(tp_size) * sp_size * c.hidden_size < 3 * c.inner_dim() ? SpQkvScheme::kGatherRows
                                                                                      : SpQkvScheme::kHeadChunks;
}

bool sp_gathers_rows(const H3Config& c, int tp_size, int sp_size, dist::SpQkv choice) {
  if (sp_size < 2) return false;
  if (choice == dist::SpQkv::kAuto) return fewer_bytes_sp_qkv(c, tp_size, sp_size) == SpQkvScheme::kGatherRows;
  return choice == dist::SpQkv::kGather;
}

Status check_parallel_layout(const H3Config& c, int tp_size, int sp_size) {
  const int64_t heads = c.num_attention_heads;
  if (tp_size < 1 || sp_size < 1) return invalid_argument("tensor- and sequence-parallel sizes must be >= 1");
  if (heads % tp_size != 0)
    return invalid_argument("tensor parallel over " + std::to_string(tp_size) + " ranks needs the " +
                            std::to_string(heads) + " attention heads to split evenly; use one of: " +
                            divisors_of(heads));
  if ((heads / tp_size) % sp_size != 0)
    return invalid_argument("sequence parallel over " + std::to_string(sp_size) + " ranks needs the " +
                            std::to_string(heads / tp_size) + " heads of each tensor-parallel rank to split evenly; use one of: " +
                            divisors_of(heads / tp_size));
  if (c.ffn_dim < tp_size) return invalid_argument("the FFN is narrower than the tensor-parallel size");
  return Status::ok();
}

TpShare tp_share(const H3Config& c, int tp_rank, int tp_size) {
  return {dist::even_share(c.num_attention_heads, tp_size, tp_rank), dist::even_share(c.ffn_dim, tp_size, tp_rank)};
}

TpSlice tp_slice_of(const std::string& name, const H3Config& c, const TpShare& share) {
  const int64_t hd = c.attention_head_dim;
  const dist::Range head_elems{share.heads.begin * hd, share.heads.end * hd};
  if (!name.ends_with(".weight")) return {};  // H3's split linears have no biases
  if (name.ends_with("attn.to_q.weight") || name.ends_with("attn.to_k.weight") || name.ends_with("attn.to_v.weight"))
    return {TpSlice::Kind::kOutRows, head_elems, 0};
  if (name.ends_with("attn.to_out.0.weight")) return {TpSlice::Kind::kInColumns, head_elems, 0};
  if (name.ends_with("ff.net.0.proj.weight")) return {TpSlice::Kind::kOutRowsBothHalves, share.ffn, c.ffn_dim};
  if (name.ends_with("ff.net.2.weight")) return {TpSlice::Kind::kInColumns, share.ffn, 0};
  return {};
}

Shape tp_local_shape(const Shape& full, const TpSlice& s) {
  Shape out = full;
  switch (s.kind) {
    case TpSlice::Kind::kReplicated: break;
    case TpSlice::Kind::kOutRows: out[0] = s.range.size(); break;
    case TpSlice::Kind::kOutRowsBothHalves: out[0] = 2 * s.range.size(); break;
    case TpSlice::Kind::kInColumns: out[1] = s.range.size(); break;
  }
  return out;
}

Tensor tp_slice_host(const Tensor& full, const TpSlice& s) {
  switch (s.kind) {
    case TpSlice::Kind::kReplicated: return full;
    case TpSlice::Kind::kOutRows: return full.slice(0, s.range.begin, s.range.end).contiguous();
    case TpSlice::Kind::kInColumns: return full.slice(1, s.range.begin, s.range.end).contiguous();
    case TpSlice::Kind::kOutRowsBothHalves: {
      const Tensor value = full.slice(0, s.range.begin, s.range.end).contiguous();  // [n, in]
      const Tensor gate = full.slice(0, s.half + s.range.begin, s.half + s.range.end).contiguous();
      Tensor out = Tensor::empty(tp_local_shape(full.shape(), s), full.dtype());   // [2n, in]
      std::memcpy(out.raw_data(), value.raw_data(), value.nbytes());
      std::memcpy(static_cast<char*>(out.raw_data()) + value.nbytes(), gate.raw_data(), gate.nbytes());
      return out;
    }
  }
  return full;
}

}  // namespace orochi::h3
