#include "models/h3/transformer.h"

#include <cmath>

#include "backends/cpu/ops.h"
#include "models/h3/adaln_curve.h"
#include "models/h3/block_forward.h"

namespace orochi::h3 {
namespace {

void notify(const H3Observer& observer, const std::string& name, const Tensor& t) {
  if (observer) observer(name, t);
}

Status check_indices(const Tensor& idx, int64_t n, int64_t S, const char* what, std::vector<int>& owner) {
  if (!idx.defined() || idx.dtype() != DType::kI64 || idx.ndim() != 1 || idx.numel() != n)
    return shape_mismatch(std::string(what) + " must be i64 [" + std::to_string(n) + "], got " +
                          (idx.defined() ? idx.describe() : "nothing"));
  const Tensor dense = idx.contiguous();
  const int64_t* p = dense.data<int64_t>();
  for (int64_t i = 0; i < n; ++i) {
    if (p[i] < 0 || p[i] >= S)
      return invalid_argument(std::string(what) + "[" + std::to_string(i) + "] = " + std::to_string(p[i]) +
                              " is outside the packed sequence of " + std::to_string(S) + " rows");
    if (owner[p[i]]++)
      return invalid_argument("packed row " + std::to_string(p[i]) + " is claimed twice (" + what + ")");
  }
  return Status::ok();
}

Status check_rows(const Tensor& t, int64_t cols, const char* what, int64_t& rows) {
  if (!t.defined() || t.dtype() != DType::kF32 || t.ndim() != 2 || t.dim(1) != cols)
    return shape_mismatch(std::string(what) + " must be f32 [rows, " + std::to_string(cols) + "], got " +
                          (t.defined() ? t.describe() : "nothing"));
  rows = t.dim(0);
  return Status::ok();
}

}  // namespace

Status validate_inputs(const H3Config& c, const H3Inputs& in, int64_t num_timesteps) {
  if (!in.positions.defined() || in.positions.dtype() != DType::kF32 || in.positions.ndim() != 2 ||
      in.positions.dim(1) != 3)
    return shape_mismatch("positions must be f32 [S, 3]");
  const int64_t S = in.positions.dim(0);
  if (S == 0) return invalid_argument("the packed sequence is empty");
  int64_t nv = 0, na = 0, nt = 0;
  OROCHI_RETURN_IF_ERROR(check_rows(in.video, c.video_patch_dim(), "video rows", nv));
  OROCHI_RETURN_IF_ERROR(check_rows(in.audio, c.audio_in_channels, "audio rows", na));
  OROCHI_RETURN_IF_ERROR(check_rows(in.text, c.text_dim, "text rows", nt));
  if (nt == 0) return invalid_argument("H3 needs at least one text row");
  if (nv + na + nt != S)
    return invalid_argument(std::to_string(nv) + " video + " + std::to_string(na) + " audio + " +
                            std::to_string(nt) + " text rows do not fill the " + std::to_string(S) +
                            " packed rows");
  std::vector<int> owner(S, 0);
  OROCHI_RETURN_IF_ERROR(check_indices(in.video_indices, nv, S, "video_indices", owner));
  OROCHI_RETURN_IF_ERROR(check_indices(in.audio_indices, na, S, "audio_indices", owner));
  OROCHI_RETURN_IF_ERROR(check_indices(in.text_indices, nt, S, "text_indices", owner));
  for (const auto* t : {&in.timestep_indices, &in.token_tags})
    if (!t->defined() || t->dtype() != DType::kI64 || t->ndim() != 1 || t->numel() != S)
      return shape_mismatch("timestep_indices and token_tags must be i64 [" + std::to_string(S) + "]");
  const Tensor ti_dense = in.timestep_indices.contiguous(), tg_dense = in.token_tags.contiguous();
  const int64_t* ti = ti_dense.data<int64_t>();
  const int64_t* tg = tg_dense.data<int64_t>();
  for (int64_t s = 0; s < S; ++s) {
    if (ti[s] < 0 || ti[s] >= num_timesteps)
      return invalid_argument("row " + std::to_string(s) + " has timestep index " + std::to_string(ti[s]) +
                              " but only " + std::to_string(num_timesteps) + " timesteps were tabled");
    if (tg[s] < 0 || tg[s] >= kModalities)
      return invalid_argument("row " + std::to_string(s) + " has token tag " + std::to_string(tg[s]) +
                              " (valid: 0 video, 1 text, 2 audio)");
  }
  const Tensor pos_dense = in.positions.contiguous();
  const float* pos = pos_dense.data<float>();
  for (int64_t i = 0; i < 3 * S; ++i)
    if (!std::isfinite(pos[i])) return invalid_argument("position " + std::to_string(i / 3) + " is not finite");
  return Status::ok();
}

ModulationTables compute_modulation_tables(const H3Weights& w, const Tensor& timesteps,
                                           const H3Observer& observer) {
  const H3Config& c = w.config;
  ModulationTables m;
  m.timesteps = timesteps.contiguous();
  const int64_t n_t = m.timesteps.numel();
  Tensor act;  // [n_t, time_embed_dim]: what every AdaLN projection reads
  if (w.adaln_t_table.defined()) {
    m.temb = adaln_curve_input(w.adaln_t_table, m.timesteps);  // the curve form has no SiLU
    act = m.temb;
  } else {
    Tensor sinusoid = cpu::timestep_embedding(m.timesteps, static_cast<int>(c.freq_dim));  // [n_t, freq]
    m.temb = apply_linear(cpu::silu(apply_linear(sinusoid, w.time_linear_1)), w.time_linear_2);
    act = cpu::silu(m.temb);  // SiLU(temb)
  }
  notify(observer, "temb", m.temb);
  for (size_t i = 0; i < w.blocks.size(); ++i) {
    // [n_t, 18H] viewed as [n_t * 3 modalities, 6H]
    m.blocks.push_back(apply_linear(act, w.blocks[i].adaln).view({n_t * kModalities, 6 * c.hidden_size}));
    notify(observer, "block." + std::to_string(i) + ".modulation", m.blocks.back());
  }
  m.final = apply_linear(act, w.norm_out_linear);  // [n_t, 2H]
  return m;
}

Expected<H3Outputs> forward(const H3Weights& w, const H3Inputs& in, const ModulationTables& tables,
                            const H3Observer& observer) {
  const H3Config& c = w.config;
  OROCHI_RETURN_IF_ERROR(validate_inputs(c, in, tables.timesteps.numel()));
  OROCHI_CHECK(tables.blocks.size() == w.blocks.size(), "modulation tables for ", tables.blocks.size(),
               " blocks, model has ", w.blocks.size());
  const BlockInputs block_in = block_inputs(c, in, observer);
  Tensor h = embed_sequence(w, in, observer);  // [S, H]
  for (size_t i = 0; i < w.blocks.size(); ++i) {
    transformer_block(h, w.blocks[i], tables.blocks[i], block_in, c);
    notify(observer, "block." + std::to_string(i), h);
  }
  return output_heads(w, h, in, tables, observer);
}

}  // namespace orochi::h3
