// The video VAE encoder's CUDA ops (backends/cuda/ops_conv3d.h) vs the CPU ops of the same role
// (backends/cpu/ops_conv3d.h) on random inputs: the padded copy (bit-exact), the per-frame GroupNorm
// with and without SiLU, the residual add, and cuDNN's conv3d in fp32 (FMA math, tight) and in TF32
// (the reference's default, loose). Skips without a GPU.
#include <algorithm>
#include <cstring>
#include <vector>

#include "backends/cpu/ops_conv3d.h"
#include "backends/cuda/kernels/vae_encoder.h"
#include "backends/cuda/ops_conv3d.h"
#include "test_cuda_ops_support.h"

namespace orochi {
namespace {

using namespace cuda_test;

class EncoderGpuOps : public GpuTest {};

// The CPU equivalent of encoder_pad: reflect H/W, then `front` zero frames.
Tensor cpu_pad(const Tensor& x, int64_t front, int64_t top, int64_t bottom, int64_t left, int64_t right) {
  Tensor r = cpu::reflect_pad_hw(x, top, bottom, left, right);
  const int64_t C = r.dim(0), T = r.dim(1), plane = r.dim(2) * r.dim(3);
  Tensor y = Tensor::empty({C, T + front, r.dim(2), r.dim(3)}, DType::kF32);
  for (int64_t c = 0; c < C; ++c)
    for (int64_t t = 0; t < T; ++t)
      std::copy_n(r.data<float>() + (c * T + t) * plane, plane, y.data<float>() + (c * (T + front) + front + t) * plane);
  return y;
}

TEST_F(EncoderGpuOps, PadIsBitExact) {
  struct Case {
    Shape shape;
    int64_t front, top, bottom, left, right;
  };
  for (const Case& c : {Case{{3, 1, 8, 6}, 2, 1, 1, 1, 1}, Case{{5, 17, 9, 12}, 2, 0, 1, 0, 1},
                        Case{{2, 4, 2, 3}, 0, 1, 1, 1, 1}, Case{{4, 3, 5, 5}, 2, 0, 0, 0, 0}}) {
    const size_t mark = arena().mark();
    Tensor x = random_f32_values(c.shape);
    const Tensor want = cpu_pad(x, c.front, c.top, c.bottom, c.left, c.right);
    ASSERT_OK_AND_ASSIGN(Tensor dx, cuda::upload(x, arena(), DType::kF32, stream()));
    ASSERT_OK_AND_ASSIGN(Tensor dy, arena().tensor(want.shape(), DType::kF32));
    ASSERT_STATUS_OK(poison(dy, stream()));
    ASSERT_STATUS_OK(cuda::encoder_pad(dx, c.front, c.top, c.bottom, c.left, c.right, dy, stream()));
    const Tensor got = to_host_f32(dy, stream());
    check_case("encoder_pad", shape_to_string(c.shape), got, want, 0.0);
    EXPECT_EQ(std::memcmp(got.data<float>(), want.data<float>(), want.nbytes()), 0);
    arena().reset(mark);
  }
}

TEST_F(EncoderGpuOps, GroupNormPerFrameWithAndWithoutSilu) {
  for (const auto& [shape, groups] : std::vector<std::pair<Shape, int64_t>>{
           {{8, 1, 6, 5}, 4}, {{16, 17, 9, 7}, 8}, {{128, 3, 64, 64}, 32}, {{32, 2, 1, 1}, 32}}) {
    const size_t mark = arena().mark();
    Tensor x = random_f32_values(shape, 3.0f);
    for (int64_t i = 0; i < x.numel(); ++i) x.data<float>()[i] += 1.5f;  // a mean far from 0
    Tensor w = random_f32_values({shape[0]}, 0.3f), b = random_f32_values({shape[0]}, 0.5f);
    ASSERT_OK_AND_ASSIGN(Tensor dx, cuda::upload(x, arena(), DType::kF32, stream()));
    ASSERT_OK_AND_ASSIGN(Tensor dw, cuda::upload(w, arena(), DType::kF32, stream()));
    ASSERT_OK_AND_ASSIGN(Tensor db, cuda::upload(b, arena(), DType::kF32, stream()));
    ASSERT_OK_AND_ASSIGN(Tensor dy, arena().tensor(shape, DType::kF32));
    for (bool silu : {false, true}) {
      ASSERT_STATUS_OK(poison(dy, stream()));
      ASSERT_STATUS_OK(cuda::group_norm_frames(dx, dw, db, groups, 1e-6f, silu, dy, stream()));
      const Tensor want = silu ? cpu::group_norm_silu_per_frame(x, w, b, groups, 1e-6f)
                               : cpu::group_norm_per_frame(x, w, b, groups, 1e-6f);
      // One value per group ([32, 2, 1, 1] with 32 groups): the variance is 0, rstd = 1/sqrt(eps) = 1000,
      // and both sides fold y = x·scale + (b − mean·scale) as torch does, so y = b comes back through
      // terms near |mean·scale| ~ 1e3 whose float ulp is 6e-5: the cases agree only to that rounding.
      const bool one_value_per_group = shape[0] == groups && shape[2] * shape[3] == 1;
      check_case(silu ? "group_norm_silu" : "group_norm", shape_to_string(shape), to_host_f32(dy, stream()), want,
                 one_value_per_group ? 1e-3 : 1e-5);
    }
    arena().reset(mark);
  }
}

TEST_F(EncoderGpuOps, AddInto) {
  Tensor a = random_f32_values({4, 3, 5, 7}), b = random_f32_values({4, 3, 5, 7});
  ASSERT_OK_AND_ASSIGN(Tensor da, cuda::upload(a, arena(), DType::kF32, stream()));
  ASSERT_OK_AND_ASSIGN(Tensor db, cuda::upload(b, arena(), DType::kF32, stream()));
  ASSERT_STATUS_OK(cuda::add_into(da, db, stream()));
  Tensor want = a.clone();
  for (int64_t i = 0; i < want.numel(); ++i) want.data<float>()[i] += b.data<float>()[i];
  check_case("add_into", "[4, 3, 5, 7]", to_host_f32(da, stream()), want, 0.0);
}

TEST_F(EncoderGpuOps, Conv3dMatchesTheCpuInFp32AndTf32) {
  struct Case {
    int64_t Cin, Cout, T, H, W, k, st, ss;
  };
  const std::vector<Case> cases = {{3, 8, 3, 10, 9, 3, 1, 1},    {8, 16, 19, 18, 14, 3, 1, 1},
                                   {16, 16, 19, 17, 17, 3, 2, 2}, {8, 8, 3, 17, 9, 3, 1, 2},
                                   {16, 8, 5, 4, 6, 1, 1, 1},     {64, 64, 7, 34, 34, 3, 1, 1}};
  for (cuda::ConvMath math : {cuda::ConvMath::kF32, cuda::ConvMath::kTf32}) {
    ASSERT_OK_AND_ASSIGN(auto runner, cuda::Conv3dRunner::create(stream(), math));
    for (const Case& c : cases) {
      const size_t mark = arena().mark();
      Tensor x = random_f32_values({c.Cin, c.T, c.H, c.W});
      Tensor w = random_f32_values({c.Cout, c.Cin, c.k, c.k, c.k}, 0.2f), b = random_f32_values({c.Cout});
      cpu::Conv3dParams p;
      p.stride_t = c.st, p.stride_h = c.ss, p.stride_w = c.ss;
      const Tensor want = cpu::conv3d(x, w, &b, p);
      ASSERT_OK_AND_ASSIGN(Tensor dx, cuda::upload(x, arena(), DType::kF32, stream()));
      ASSERT_OK_AND_ASSIGN(Tensor dw, cuda::upload(w, arena(), DType::kF32, stream()));
      ASSERT_OK_AND_ASSIGN(Tensor dbias, cuda::upload(b, arena(), DType::kF32, stream()));
      ASSERT_OK_AND_ASSIGN(Tensor dy, arena().tensor(want.shape(), DType::kF32));
      ASSERT_STATUS_OK(poison(dy, stream()));
      ASSERT_STATUS_OK(runner->forward(dx, dw, dbias, c.st, c.ss, dy, arena()));
      // fp32 FMAs: summation order only. TF32 rounds both operands to 10 mantissa bits (~5e-4 each).
      check_case(math == cuda::ConvMath::kF32 ? "conv3d_fp32" : "conv3d_tf32", shape_to_string(x.shape()) + " k" +
                     std::to_string(c.k) + " s" + std::to_string(c.st) + std::to_string(c.ss),
                 to_host_f32(dy, stream()), want, math == cuda::ConvMath::kF32 ? 1e-5 : 3e-3);
      arena().reset(mark);
    }
  }
}

TEST_F(EncoderGpuOps, Conv3dAutotunedKeepsItsChoiceAndMatches) {
  ASSERT_OK_AND_ASSIGN(auto runner, cuda::Conv3dRunner::create(stream(), cuda::ConvMath::kF32));
  runner->set_autotune(true);
  Tensor x = random_f32_values({16, 19, 18, 18}), w = random_f32_values({16, 16, 3, 3, 3}, 0.2f);
  Tensor b = random_f32_values({16});
  const Tensor want = cpu::conv3d(x, w, &b, {});
  ASSERT_OK_AND_ASSIGN(Tensor dx, cuda::upload(x, arena(), DType::kF32, stream()));
  ASSERT_OK_AND_ASSIGN(Tensor dw, cuda::upload(w, arena(), DType::kF32, stream()));
  ASSERT_OK_AND_ASSIGN(Tensor dbias, cuda::upload(b, arena(), DType::kF32, stream()));
  ASSERT_OK_AND_ASSIGN(Tensor dy, arena().tensor(want.shape(), DType::kF32));
  ASSERT_STATUS_OK(runner->forward(dx, dw, dbias, 1, 1, dy, arena()));  // times the algorithms, then runs one
  const Tensor first = to_host_f32(dy, stream());
  check_case("conv3d_fp32_autotuned", "[16, 19, 18, 18]", first, want, 1e-5);
  ASSERT_STATUS_OK(poison(dy, stream()));
  ASSERT_STATUS_OK(runner->forward(dx, dw, dbias, 1, 1, dy, arena()));  // the kept choice: the same bits
  const Tensor second = to_host_f32(dy, stream());
  EXPECT_EQ(std::memcmp(first.data<float>(), second.data<float>(), first.nbytes()), 0);
}

// ---- The fused path's layout-aware ops (ops_conv3d.h, VideoLayout) vs the same CPU ops.

using cuda::VideoLayout;

// Host [C, T, H, W] <-> channels last [T, H, W, C], and the layout a device op sees.
Tensor to_channels_last(const Tensor& x) {
  const int64_t C = x.dim(0), THW = x.dim(1) * x.dim(2) * x.dim(3);
  Tensor y = Tensor::uninitialized({x.dim(1), x.dim(2), x.dim(3), C}, DType::kF32);
  for (int64_t c = 0; c < C; ++c)
    for (int64_t k = 0; k < THW; ++k) y.data<float>()[k * C + c] = x.data<float>()[c * THW + k];
  return y;
}
Tensor from_channels_last(const Tensor& y) {
  const int64_t C = y.dim(3), THW = y.dim(0) * y.dim(1) * y.dim(2);
  Tensor x = Tensor::uninitialized({C, y.dim(0), y.dim(1), y.dim(2)}, DType::kF32);
  for (int64_t c = 0; c < C; ++c)
    for (int64_t k = 0; k < THW; ++k) x.data<float>()[c * THW + k] = y.data<float>()[k * C + c];
  return x;
}
Tensor in_layout(const Tensor& x, VideoLayout l) { return l == VideoLayout::kNdhwc ? to_channels_last(x) : x; }
Tensor from_layout(const Tensor& y, VideoLayout l) { return l == VideoLayout::kNdhwc ? from_channels_last(y) : y; }
// x + bias[c] on the host, [C, T, H, W].
Tensor plus_bias(const Tensor& x, const Tensor& bias) {
  Tensor y = x.clone();
  const int64_t C = x.dim(0), n = x.numel() / C;
  for (int64_t c = 0; c < C; ++c)
    for (int64_t k = 0; k < n; ++k) y.data<float>()[c * n + k] += bias.data<float>()[c];
  return y;
}
// [C, ...] with zero channels appended up to Co.
Tensor with_zero_channels(const Tensor& x, int64_t Co) {
  Shape shape = x.shape();
  shape[0] = Co;
  Tensor y = Tensor::empty(shape, DType::kF32);
  std::copy_n(x.data<float>(), x.numel(), y.data<float>());
  return y;
}

constexpr VideoLayout kLayouts[] = {VideoLayout::kNcdhw, VideoLayout::kNdhwc};

TEST_F(EncoderGpuOps, PadToEveryLayoutWithBiasAndZeroChannelsIsBitExact) {
  struct Case {
    Shape shape;
    int64_t extra_channels, front, top, bottom, left, right;
    bool bias;
  };
  for (const Case& c : {Case{{3, 2, 8, 6}, 1, 2, 1, 1, 1, 1, false}, Case{{5, 17, 9, 12}, 0, 2, 0, 1, 0, 1, false},
                        Case{{6, 4, 2, 3}, 0, 0, 1, 1, 1, 1, true}, Case{{4, 3, 5, 5}, 0, 0, 0, 0, 0, 0, true},
                        Case{{3, 1, 16, 16}, 1, 0, 1, 1, 1, 1, false}})
    for (VideoLayout in : kLayouts)
      for (VideoLayout out : kLayouts) {
        const size_t mark = arena().mark();
        const Tensor x = random_f32_values(c.shape), b = random_f32_values({c.shape[0]});
        const int64_t C = c.shape[0], Co = C + c.extra_channels;
        const Tensor want = with_zero_channels(
            cpu_pad(c.bias ? plus_bias(x, b) : x, c.front, c.top, c.bottom, c.left, c.right), Co);
        ASSERT_OK_AND_ASSIGN(Tensor dx, cuda::upload(in_layout(x, in), arena(), DType::kF32, stream()));
        ASSERT_OK_AND_ASSIGN(Tensor db, cuda::upload(b, arena(), DType::kF32, stream()));
        ASSERT_OK_AND_ASSIGN(Tensor dy, arena().tensor(cuda::video_shape(out, Co, want.dim(1), want.dim(2), want.dim(3)),
                                                       DType::kF32));
        ASSERT_STATUS_OK(poison(dy, stream()));
        ASSERT_STATUS_OK(cuda::encoder_pad_to(dx, in, c.bias ? db : Tensor(), c.front, c.top, c.bottom, c.left, c.right,
                                              dy, out, stream()));
        const Tensor got = from_layout(to_host_f32(dy, stream()), out);
        const std::string name = shape_to_string(c.shape) + " " + cuda::layout_name(in) + "->" + cuda::layout_name(out);
        check_case("encoder_pad_to", name, got, want, 0.0);
        EXPECT_EQ(std::memcmp(got.data<float>(), want.data<float>(), want.nbytes()), 0) << name;
        arena().reset(mark);
      }
}

TEST_F(EncoderGpuOps, TilePadCutsAndPadsTheHostsTileBitForBit) {
  struct Case {
    Shape clip;
    int64_t y0, x0, h, w, front, pad, extra_channels;
  };
  for (const Case& c : {Case{{3, 3, 20, 28}, 4, 8, 16, 16, 2, 1, 1}, Case{{3, 1, 12, 10}, 0, 0, 12, 10, 0, 1, 1},
                        Case{{2, 2, 9, 11}, 5, 2, 4, 9, 2, 1, 0}, Case{{3, 2, 8, 8}, 3, 3, 5, 5, 0, 0, 0}})
    for (VideoLayout out : kLayouts) {
      const size_t mark = arena().mark();
      const Tensor clip = random_f32_values(c.clip);
      const Tensor tile = clip.slice(2, c.y0, c.y0 + c.h).slice(3, c.x0, c.x0 + c.w).contiguous();
      const Tensor want = with_zero_channels(cpu_pad(tile, c.front, c.pad, c.pad, c.pad, c.pad), c.clip[0] + c.extra_channels);
      ASSERT_OK_AND_ASSIGN(Tensor dclip, cuda::upload(clip, arena(), DType::kF32, stream()));
      ASSERT_OK_AND_ASSIGN(Tensor dy, arena().tensor(cuda::video_shape(out, want.dim(0), want.dim(1), want.dim(2),
                                                                       want.dim(3)),
                                                     DType::kF32));
      ASSERT_STATUS_OK(poison(dy, stream()));
      ASSERT_STATUS_OK(cuda::encoder_tile_pad(dclip, c.y0, c.x0, c.h, c.w, c.front, c.pad, dy, out, stream()));
      const Tensor got = from_layout(to_host_f32(dy, stream()), out);
      const std::string name = shape_to_string(c.clip) + " tile " + std::to_string(c.y0) + "," + std::to_string(c.x0) +
                               " " + cuda::layout_name(out);
      check_case("encoder_tile_pad", name, got, want, 0.0);
      EXPECT_EQ(std::memcmp(got.data<float>(), want.data<float>(), want.nbytes()), 0) << name;
      arena().reset(mark);
    }
}

TEST_F(EncoderGpuOps, GroupNormPadMatchesGroupNormThenPadInBothLayouts) {
  struct Case {
    Shape shape;
    int64_t groups, front, pad;
    bool in_bias, silu;
  };
  for (const Case& c : {Case{{8, 1, 6, 5}, 4, 0, 1, false, true}, Case{{16, 17, 9, 7}, 8, 2, 1, true, true},
                        Case{{128, 3, 64, 64}, 32, 2, 1, true, true}, Case{{32, 2, 4, 4}, 32, 2, 0, false, false},
                        Case{{64, 2, 2, 3}, 32, 2, 1, true, false}, Case{{12, 2, 3, 2}, 4, 1, 1, false, true},
                        // channels last, these take the coalesced path (C divides 1024, 4k channels per
                        // group): several chunks per frame, cg 8 and 16, no pad, no front frames
                        Case{{128, 2, 96, 80}, 32, 2, 1, true, true}, Case{{256, 2, 33, 17}, 32, 2, 1, false, true},
                        Case{{512, 1, 8, 9}, 32, 0, 0, true, false}, Case{{128, 3, 2, 2}, 32, 1, 1, false, true}})
    for (VideoLayout l : kLayouts) {
      const size_t mark = arena().mark();
      const int64_t C = c.shape[0];
      Tensor x = random_f32_values(c.shape, 3.0f);
      for (int64_t i = 0; i < x.numel(); ++i) x.data<float>()[i] += 1.5f;  // a mean far from 0
      const Tensor w = random_f32_values({C}, 0.3f), b = random_f32_values({C}, 0.5f), ib = random_f32_values({C});
      const Tensor xin = c.in_bias ? plus_bias(x, ib) : x;  // the conv output with its bias, as the reference adds it
      const Tensor normed = c.silu ? cpu::group_norm_silu_per_frame(xin, w, b, c.groups, 1e-6f)
                                   : cpu::group_norm_per_frame(xin, w, b, c.groups, 1e-6f);
      const Tensor want = cpu_pad(normed, c.front, c.pad, c.pad, c.pad, c.pad);
      ASSERT_OK_AND_ASSIGN(Tensor dx, cuda::upload(in_layout(x, l), arena(), DType::kF32, stream()));
      ASSERT_OK_AND_ASSIGN(Tensor dw, cuda::upload(w, arena(), DType::kF32, stream()));
      ASSERT_OK_AND_ASSIGN(Tensor db, cuda::upload(b, arena(), DType::kF32, stream()));
      ASSERT_OK_AND_ASSIGN(Tensor dib, cuda::upload(ib, arena(), DType::kF32, stream()));
      ASSERT_OK_AND_ASSIGN(Tensor dy, arena().tensor(cuda::video_shape(l, C, want.dim(1), want.dim(2), want.dim(3)),
                                                     DType::kF32));
      ASSERT_STATUS_OK(poison(dy, stream()));  // every position, zero frames included, must be written
      // The arena has room for the coalesced path's statistics (else it would fall back untested).
      ASSERT_LE(cuda::kernels::group_norm_pad_scratch_bytes(l == VideoLayout::kNdhwc, C, c.shape[1], c.shape[2],
                                                            c.shape[3], c.groups),
                arena().available());
      ASSERT_STATUS_OK(cuda::group_norm_pad(dx, c.in_bias ? dib : Tensor(), dw, db, c.groups, 1e-6f, c.silu, l, c.front,
                                            c.pad, dy, arena(), stream()));
      check_case("group_norm_pad", shape_to_string(c.shape) + " " + cuda::layout_name(l),
                 from_layout(to_host_f32(dy, stream()), l), want, 1e-5);
      arena().reset(mark);
    }
}

TEST_F(EncoderGpuOps, BiasResidualIsTheReferenceSumBitForBit) {
  const Shape shape = {6, 3, 5, 7};
  const Tensor a = random_f32_values(shape), y = random_f32_values(shape);
  const Tensor ab = random_f32_values({6}), yb = random_f32_values({6});
  for (VideoLayout l : kLayouts)
    for (int form = 0; form < 3; ++form) {  // (a + ab) + (y + yb); a + (y + yb); a + ab
      const size_t mark = arena().mark();
      Tensor want = a.clone();
      const int64_t n = a.numel() / 6;
      for (int64_t c = 0; c < 6; ++c)
        for (int64_t k = 0; k < n; ++k) {
          float& v = want.data<float>()[c * n + k];
          const float yv = y.data<float>()[c * n + k] + yb.data<float>()[c];
          v = form == 0 ? (v + ab.data<float>()[c]) + yv : (form == 1 ? v + yv : v + ab.data<float>()[c]);
        }
      ASSERT_OK_AND_ASSIGN(Tensor da, cuda::upload(in_layout(a, l), arena(), DType::kF32, stream()));
      ASSERT_OK_AND_ASSIGN(Tensor dy, cuda::upload(in_layout(y, l), arena(), DType::kF32, stream()));
      ASSERT_OK_AND_ASSIGN(Tensor dab, cuda::upload(ab, arena(), DType::kF32, stream()));
      ASSERT_OK_AND_ASSIGN(Tensor dyb, cuda::upload(yb, arena(), DType::kF32, stream()));
      ASSERT_STATUS_OK(cuda::bias_residual(da, form == 1 ? Tensor() : dab, form == 2 ? Tensor() : dy,
                                           form == 2 ? Tensor() : dyb, l, da, stream()));  // in place
      const Tensor got = from_layout(to_host_f32(da, stream()), l);
      check_case("bias_residual", std::string(cuda::layout_name(l)) + " form " + std::to_string(form), got, want, 0.0);
      EXPECT_EQ(std::memcmp(got.data<float>(), want.data<float>(), want.nbytes()), 0);
      arena().reset(mark);
    }
}

// [Cout, Cin, kt, kh, kw] -> [Cout, kt, kh, kw, Cin] (the channels-last filter cuDNN reads).
Tensor channels_last_filter(const Tensor& w) {
  const int64_t Co = w.dim(0), Ci = w.dim(1), taps = w.dim(2) * w.dim(3) * w.dim(4);
  Tensor t = Tensor::uninitialized({Co, w.dim(2), w.dim(3), w.dim(4), Ci}, DType::kF32);
  for (int64_t o = 0; o < Co; ++o)
    for (int64_t i = 0; i < Ci; ++i)
      for (int64_t k = 0; k < taps; ++k) t.data<float>()[(o * taps + k) * Ci + i] = w.data<float>()[(o * Ci + i) * taps + k];
  return t;
}

TEST_F(EncoderGpuOps, Conv3dChannelsLastMatchesTheCpuInFp32AndTf32) {
  struct Case {
    int64_t Cin, Cout, T, H, W, k, st, ss;
    bool bias;
  };
  const std::vector<Case> cases = {{4, 8, 3, 10, 9, 3, 1, 1, true},    {8, 16, 19, 18, 14, 3, 1, 1, false},
                                   {16, 16, 19, 17, 17, 3, 2, 2, true}, {8, 8, 3, 17, 9, 3, 1, 2, false},
                                   {16, 8, 5, 4, 6, 1, 1, 1, true},     {64, 64, 7, 34, 34, 3, 1, 1, false},
                                   {32, 48, 1, 18, 18, 1, 1, 1, false}, {64, 32, 1, 10, 10, 3, 1, 1, true}};
  for (cuda::ConvMath math : {cuda::ConvMath::kF32, cuda::ConvMath::kTf32}) {
    ASSERT_OK_AND_ASSIGN(auto runner, cuda::Conv3dRunner::create(stream(), math));
    for (const Case& c : cases) {
      const int64_t k = c.T == 1 ? 1 : c.k;  // a single frame: the 1 x k x k last tap, as the encoder runs it
      const size_t mark = arena().mark();
      Tensor x = random_f32_values({c.Cin, c.T, c.H, c.W});
      Tensor w = random_f32_values({c.Cout, c.Cin, k, c.k, c.k}, 0.2f), b = random_f32_values({c.Cout});
      cpu::Conv3dParams p;
      p.stride_t = c.st, p.stride_h = c.ss, p.stride_w = c.ss;
      const Tensor want = cpu::conv3d(x, w, c.bias ? &b : nullptr, p);
      ASSERT_OK_AND_ASSIGN(Tensor dx, cuda::upload(to_channels_last(x), arena(), DType::kF32, stream()));
      ASSERT_OK_AND_ASSIGN(Tensor dw, cuda::upload(channels_last_filter(w), arena(), DType::kF32, stream()));
      ASSERT_OK_AND_ASSIGN(Tensor dbias, cuda::upload(b, arena(), DType::kF32, stream()));
      ASSERT_OK_AND_ASSIGN(Tensor dy, arena().tensor(cuda::video_shape(VideoLayout::kNdhwc, want.dim(0), want.dim(1),
                                                                       want.dim(2), want.dim(3)),
                                                     DType::kF32));
      ASSERT_STATUS_OK(poison(dy, stream()));
      ASSERT_STATUS_OK(runner->forward(dx, dw, c.bias ? dbias : Tensor(), c.st, c.ss, dy, arena(), VideoLayout::kNdhwc));
      check_case(math == cuda::ConvMath::kF32 ? "conv3d_ndhwc_fp32" : "conv3d_ndhwc_tf32",
                 shape_to_string(x.shape()) + " k" + std::to_string(c.k) + " s" + std::to_string(c.st) +
                     std::to_string(c.ss),
                 from_channels_last(to_host_f32(dy, stream())), want, math == cuda::ConvMath::kF32 ? 1e-5 : 3e-3);
      arena().reset(mark);
    }
  }
}

}  // namespace
}  // namespace orochi
