#include "pipeline/latent_packing.h"

#include <string>

namespace orochi::pipeline {
namespace {

struct Grid {
  int64_t C, T, H, W, pt, ph, pw;
  int64_t nt() const { return T / pt; }
  int64_t nh() const { return H / ph; }
  int64_t nw() const { return W / pw; }
  int64_t rows() const { return nt() * nh() * nw(); }
  int64_t row_width() const { return C * pt * ph * pw; }
};

Status check_grid(const Grid& g) {
  if (g.pt <= 0 || g.ph <= 0 || g.pw <= 0 || g.T % g.pt || g.H % g.ph || g.W % g.pw)
    return shape_mismatch("latents of " + std::to_string(g.T) + " frames x " + std::to_string(g.H) + " x " +
                          std::to_string(g.W) + " are not divisible by the patch (" + std::to_string(g.pt) + ", " +
                          std::to_string(g.ph) + ", " + std::to_string(g.pw) + ")");
  return Status::ok();
}

// Calls f(latent_offset, row_offset) for every element: the one index map both directions share.
template <typename F>
void for_each_patch_element(const Grid& g, F&& f) {
  const int64_t row_width = g.row_width();
  for (int64_t ft = 0; ft < g.nt(); ++ft)
    for (int64_t fh = 0; fh < g.nh(); ++fh)
      for (int64_t fw = 0; fw < g.nw(); ++fw) {
        const int64_t row = (ft * g.nh() + fh) * g.nw() + fw;
        int64_t col = 0;
        for (int64_t c = 0; c < g.C; ++c)
          for (int64_t kt = 0; kt < g.pt; ++kt)
            for (int64_t kh = 0; kh < g.ph; ++kh)
              for (int64_t kw = 0; kw < g.pw; ++kw, ++col) {
                const int64_t t = ft * g.pt + kt, h = fh * g.ph + kh, w = fw * g.pw + kw;
                f(((c * g.T + t) * g.H + h) * g.W + w, row * row_width + col);
              }
      }
}

}  // namespace

Expected<Tensor> patchify_video_latents(const Tensor& latents, const PatchSize& patch) {
  if (!latents.defined() || latents.dtype() != DType::kF32 || latents.ndim() != 4)
    return shape_mismatch("video latents must be f32 [C, T, H, W], got " +
                          (latents.defined() ? latents.describe() : std::string("nothing")));
  const Grid g{latents.dim(0), latents.dim(1), latents.dim(2), latents.dim(3), patch[0], patch[1], patch[2]};
  OROCHI_RETURN_IF_ERROR(check_grid(g));
  const Tensor z = latents.contiguous();
  Tensor rows = Tensor::empty({g.rows(), g.row_width()}, DType::kF32);  // [N, C·pt·ph·pw]
  const float* src = z.data<float>();
  float* dst = rows.data<float>();
  for_each_patch_element(g, [&](int64_t latent, int64_t row) { dst[row] = src[latent]; });
  return rows;
}

Expected<Tensor> unpatchify_video_rows(const Tensor& rows, int64_t channels, int64_t frames, int64_t height,
                                       int64_t width, const PatchSize& patch) {
  const Grid g{channels, frames, height, width, patch[0], patch[1], patch[2]};
  OROCHI_RETURN_IF_ERROR(check_grid(g));
  if (!rows.defined() || rows.dtype() != DType::kF32 || rows.ndim() != 2 || rows.dim(0) != g.rows() ||
      rows.dim(1) != g.row_width())
    return shape_mismatch("video rows must be f32 [" + std::to_string(g.rows()) + ", " +
                          std::to_string(g.row_width()) + "], got " +
                          (rows.defined() ? rows.describe() : std::string("nothing")));
  const Tensor r = rows.contiguous();
  Tensor latents = Tensor::empty({channels, frames, height, width}, DType::kF32);  // [C, T, H, W]
  const float* src = r.data<float>();
  float* dst = latents.data<float>();
  for_each_patch_element(g, [&](int64_t latent, int64_t row) { dst[latent] = src[row]; });
  return latents;
}

Expected<Tensor> audio_rows_to_batch(const Tensor& rows, int64_t channels) {
  if (!rows.defined() || rows.ndim() != 2 || channels <= 0 || rows.dim(0) % channels != 0)
    return shape_mismatch("audio rows must be [" + std::to_string(channels) + " x A, C], got " +
                          (rows.defined() ? rows.describe() : std::string("nothing")));
  return rows.contiguous().view({channels, rows.dim(0) / channels, rows.dim(1)});
}

}  // namespace orochi::pipeline
