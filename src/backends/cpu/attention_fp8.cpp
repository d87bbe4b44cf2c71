#include "backends/cpu/attention_fp8.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>

#include "backends/cpu/op_checks.h"
#include "core/check.h"
#include "core/fp8.h"
#include "core/quantize.h"

namespace orochi::cpu {
namespace {

using fp8_attention::kChunk;
using fp8_attention::kHeadDim;
using fp8_attention::kTile;

float* floats_at(std::vector<uint8_t>& bytes, int64_t offset) { return reinterpret_cast<float*>(bytes.data() + offset); }

// The column of V^T (inside a 32-key chunk) that holds key `key` of the chunk.
std::array<int, kChunk> columns_of_keys() {
  std::array<int, kChunk> column{};
  for (int kappa = 0; kappa < kChunk; ++kappa) column[fp8_attention::key_of_column(kappa)] = kappa;
  return column;
}

std::array<float, 256> e4m3_values() {
  std::array<float, 256> v{};
  for (int c = 0; c < 256; ++c) v[c] = fp8_to_f32(static_cast<uint8_t>(c), Fp8Format::kE4M3);
  return v;
}

}  // namespace

uint8_t Fp8AttentionOperands::v_code(int64_t h, int64_t d, int64_t key) const {
  static const std::array<int, kChunk> column = columns_of_keys();
  const int64_t keys = layout.k_tiles * kTile;
  const int64_t col = key / kChunk * kChunk + column[key % kChunk];
  return bytes[static_cast<size_t>(layout.vt_codes + (h * kHeadDim + d) * keys + col)];
}

Fp8AttentionOperands quantize_attention_fp8(const Tensor& q, const Tensor& k, const Tensor& v) {
  detail::require_f32_contiguous(q, "attention_fp8 q");
  detail::require_f32_contiguous(k, "attention_fp8 k");
  detail::require_f32_contiguous(v, "attention_fp8 v");
  OROCHI_CHECK(q.ndim() == 3 && k.ndim() == 3 && k.shape() == v.shape() && q.dim(1) == k.dim(1) &&
                   q.dim(2) == kHeadDim && k.dim(2) == kHeadDim,
               "attention_fp8 wants q [S_q, H, 128], k and v [S_kv, H, 128], got ", q.describe(), ", ", k.describe(),
               ", ", v.describe());
  const int64_t Sq = q.dim(0), Skv = k.dim(0), H = q.dim(1);
  Fp8AttentionOperands out;
  out.layout = fp8_attention::fp8_attention_layout(H, Sq, Skv);
  const fp8_attention::Fp8AttentionLayout& L = out.layout;
  out.bytes.assign(static_cast<size_t>(L.bytes), 0);
  std::vector<uint8_t>& b = out.bytes;
  const float* pq = q.data<float>();
  const float* pk = k.data<float>();
  const float* pv = v.data<float>();
  auto at = [H](const float* x, int64_t row, int64_t h) { return x + (row * H + h) * kHeadDim; };  // [S, H, 128]
  const DType e4m3 = DType::kF8E4M3;
  const int64_t q_rows = L.q_tiles * kTile, keys = L.k_tiles * kTile;

#pragma omp parallel for schedule(static)
  for (int64_t h = 0; h < H; ++h) {
    // Per key tile: per-channel f32 sums of k (row order) and amax of |v|; then over the tiles.
    float* sum_part = floats_at(b, L.k_sum_partial) + h * L.k_tiles * kHeadDim;
    float* amax_part = floats_at(b, L.v_amax_partial) + h * L.k_tiles * kHeadDim;
    for (int64_t t = 0; t < L.k_tiles; ++t) {
      for (int64_t c = 0; c < kHeadDim; ++c) {
        float sum = 0.f, amax = 0.f;
        for (int64_t r = t * kTile; r < std::min(Skv, (t + 1) * kTile); ++r) {
          sum += at(pk, r, h)[c];
          amax = std::fmax(amax, std::fabs(at(pv, r, h)[c]));
        }
        sum_part[t * kHeadDim + c] = sum;
        amax_part[t * kHeadDim + c] = amax;
      }
    }
    float* mean = floats_at(b, L.k_mean) + h * kHeadDim;
    float* v_scale = floats_at(b, L.v_scale) + h * kHeadDim;
    float* v_inverse = floats_at(b, L.v_inverse) + h * kHeadDim;
    for (int64_t c = 0; c < kHeadDim; ++c) {
      float sum = 0.f, amax = 0.f;
      for (int64_t t = 0; t < L.k_tiles; ++t) {
        sum += sum_part[t * kHeadDim + c];
        amax = std::fmax(amax, amax_part[t * kHeadDim + c]);
      }
      mean[c] = sum / static_cast<float>(Skv);
      const RowScale s = row_scale(amax, e4m3);
      v_scale[c] = s.scale;
      v_inverse[c] = s.inverse;
    }
    // Q per query tile.
    uint8_t* q_codes = b.data() + L.q_codes + h * q_rows * kHeadDim;
    for (int64_t t = 0; t < L.q_tiles; ++t) {
      const int64_t end = std::min(Sq, (t + 1) * kTile);
      float amax = 0.f;
      for (int64_t r = t * kTile; r < end; ++r)
        for (int64_t c = 0; c < kHeadDim; ++c) amax = std::fmax(amax, std::fabs(at(pq, r, h)[c]));
      const RowScale s = row_scale(amax, e4m3);
      floats_at(b, L.q_scale)[h * L.q_tiles + t] = s.scale;
      for (int64_t r = t * kTile; r < end; ++r)
        for (int64_t c = 0; c < kHeadDim; ++c) q_codes[r * kHeadDim + c] = quantize_value(at(pq, r, h)[c], s.inverse, e4m3);
    }
    // K - mean per key tile.
    uint8_t* k_codes = b.data() + L.k_codes + h * keys * kHeadDim;
    for (int64_t t = 0; t < L.k_tiles; ++t) {
      const int64_t end = std::min(Skv, (t + 1) * kTile);
      float amax = 0.f;
      for (int64_t r = t * kTile; r < end; ++r)
        for (int64_t c = 0; c < kHeadDim; ++c) amax = std::fmax(amax, std::fabs(at(pk, r, h)[c] - mean[c]));
      const RowScale s = row_scale(amax, e4m3);
      floats_at(b, L.k_scale)[h * L.k_tiles + t] = s.scale;
      for (int64_t r = t * kTile; r < end; ++r)
        for (int64_t c = 0; c < kHeadDim; ++c)
          k_codes[r * kHeadDim + c] = quantize_value(at(pk, r, h)[c] - mean[c], s.inverse, e4m3);
    }
    // V^T per channel, keys permuted inside each 32-key chunk; padding keys stay 0.
    uint8_t* vt = b.data() + L.vt_codes + h * kHeadDim * keys;
    for (int64_t c = 0; c < kHeadDim; ++c)
      for (int64_t col = 0; col < keys; ++col) {
        const int64_t key = col / kChunk * kChunk + fp8_attention::key_of_column(static_cast<int>(col % kChunk));
        if (key < Skv) vt[c * keys + col] = quantize_value(at(pv, key, h)[c], v_inverse[c], e4m3);
      }
  }
  return out;
}

Tensor attention_fp8_emulated(const Fp8AttentionOperands& ops, const std::vector<int64_t>& heads,
                              const std::vector<int64_t>& rows_in, Fp8RowSums sums) {
  const fp8_attention::Fp8AttentionLayout& L = ops.layout;
  std::vector<int64_t> rows = rows_in;
  if (rows.empty())
    for (int64_t i = 0; i < L.s_q; ++i) rows.push_back(i);
  for (int64_t h : heads) OROCHI_CHECK(h >= 0 && h < L.heads, "attention_fp8_emulated: head ", h, " of ", L.heads);
  for (int64_t i : rows) OROCHI_CHECK(i >= 0 && i < L.s_q, "attention_fp8_emulated: row ", i, " of ", L.s_q);
  static const std::array<float, 256> value = e4m3_values();
  const int64_t n_rows = static_cast<int64_t>(rows.size()), n_heads = static_cast<int64_t>(heads.size());
  const int64_t Skv = L.s_kv, keys = L.k_tiles * kTile, q_rows = L.q_tiles * kTile;
  const float scale_log2 = static_cast<float>(fp8_attention::kScoreScaleLog2);
  Tensor out = Tensor::empty({n_rows, n_heads, kHeadDim}, DType::kF32);
  float* po = out.data<float>();
  std::vector<float> k_values(static_cast<size_t>(Skv * kHeadDim)), v_values(k_values.size());  // [S_kv, 128]
  for (int64_t hi = 0; hi < n_heads; ++hi) {
    const int64_t h = heads[hi];
    const uint8_t* k_codes = ops.at(L.k_codes) + h * keys * kHeadDim;
    for (int64_t j = 0; j < Skv; ++j)
      for (int64_t c = 0; c < kHeadDim; ++c) {
        k_values[j * kHeadDim + c] = value[k_codes[j * kHeadDim + c]];
        v_values[j * kHeadDim + c] = value[ops.v_code(h, c, j)];
      }
    const float* k_scale = ops.floats(L.k_scale) + h * L.k_tiles;
    const float* v_scale = ops.floats(L.v_scale) + h * kHeadDim;
#pragma omp parallel
    {
      std::vector<float> x(static_cast<size_t>(Skv));
      std::vector<double> acc(kHeadDim);
      float q_values[kHeadDim];
#pragma omp for schedule(dynamic, 4)
      for (int64_t ri = 0; ri < n_rows; ++ri) {
        const int64_t i = rows[ri];
        const uint8_t* qc = ops.at(L.q_codes) + (h * q_rows + i) * kHeadDim;
        for (int64_t c = 0; c < kHeadDim; ++c) q_values[c] = value[qc[c]];
        const float row_scale_log2 = scale_log2 * ops.floats(L.q_scale)[h * L.q_tiles + i / kTile];
        float m = -INFINITY;
        for (int64_t j = 0; j < Skv; ++j) {
          const float* kj = &k_values[j * kHeadDim];
          double dot = 0;  // products of e4m3 values are exact in f32, their sum in double
          for (int64_t c = 0; c < kHeadDim; ++c) dot += q_values[c] * kj[c];
          x[j] = static_cast<float>(dot) * (row_scale_log2 * k_scale[j / kTile]);
          m = std::max(m, x[j]);
        }
        double sum = 0;
        std::fill(acc.begin(), acc.end(), 0.0);
        for (int64_t j = 0; j < Skv; ++j) {
          const float p = std::exp2(x[j] - m + fp8_attention::kPOffset);
          const float p_code = value[f32_to_fp8(p, Fp8Format::kE4M3)];
          sum += sums == Fp8RowSums::kCodes ? p_code : p;
          if (p_code == 0.f) continue;
          const float* vj = &v_values[j * kHeadDim];
          for (int64_t c = 0; c < kHeadDim; ++c) acc[c] += p_code * vj[c];  // exact product
        }
        float* o = po + (ri * n_heads + hi) * kHeadDim;
        for (int64_t c = 0; c < kHeadDim; ++c) o[c] = static_cast<float>(acc[c] * v_scale[c] / sum);
      }
    }
  }
  return out;
}

}  // namespace orochi::cpu
