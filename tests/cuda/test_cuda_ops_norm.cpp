// CUDA norm ops vs the CPU ops (fp32 on the same bf16-rounded inputs) and vs a host emulation of
// diffusers' bf16 rounding order: rms_norm, rms_norm_modulate, qk_norm_rope.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <utility>
#include <vector>

#include "backends/cpu/ops.h"
#include "backends/cuda/ops.h"
#include "support/random.h"
#include "test_cuda_ops_support.h"

namespace orochi {
namespace {

using namespace cuda_test;

constexpr float kEps = 1e-5f;
constexpr double kBf16Tol = 1e-2;
constexpr double kMinEqual = 0.99;  // transcendental / reduction-order differences flip a few roundings

Tensor rounded(const Tensor& f32) {
  Tensor t = f32.clone();
  for (int64_t i = 0; i < t.numel(); ++i) t.data<float>()[i] = round_to_bf16(t.data<float>()[i]);
  return t;
}

class CudaNorm : public GpuTest {};

TEST_F(CudaNorm, RmsNormMatchesCpu) {
  for (const Shape& shape : {Shape{1, 8}, Shape{3, 5}, Shape{17, 24}, Shape{31, 2, 16}, Shape{13, 5376},
                             Shape{5, 7168}, Shape{3, 14336}, Shape{1000, 128}}) {
    const size_t mark = arena().mark();
    const int64_t C = shape.back();
    Tensor x = random_bf16_values(shape, 3.0f), w = random_bf16_values({C}, 0.3f, 1.0f);
    ASSERT_OK_AND_ASSIGN(Tensor dx, cuda::upload(x, arena(), DType::kBF16, stream()));
    ASSERT_OK_AND_ASSIGN(Tensor dw, cuda::upload(w, arena(), DType::kBF16, stream()));
    ASSERT_OK_AND_ASSIGN(Tensor dy, arena().tensor(shape, DType::kBF16));
    ASSERT_STATUS_OK(poison(dy, stream()));
    ASSERT_STATUS_OK(cuda::rms_norm(dx, dw, kEps, dy, stream()));
    const Tensor ref = cpu::rms_norm(x, w, kEps);
    const Tensor emulated = rounded(ref);  // one rounding at the end
    check_case("rms_norm", shape_to_string(shape), to_host_f32(dy, stream()), ref, kBf16Tol, &emulated, kMinEqual);
    arena().reset(mark);
  }
}

// A pointer 2 bytes off 16-byte alignment forces the scalar path on a width the vector path takes.
TEST_F(CudaNorm, RmsNormUnalignedViewsTakeTheScalarPath) {
  const int64_t S = 7, C = 64;
  Tensor x = random_bf16_values({S, C}, 2.0f), w = random_bf16_values({C}, 0.3f, 1.0f);
  ASSERT_OK_AND_ASSIGN(Tensor flat_x, arena().tensor({S * C + 1}, DType::kBF16));
  ASSERT_OK_AND_ASSIGN(Tensor flat_y, arena().tensor({S * C + 1}, DType::kBF16));
  Tensor dx = flat_x.slice(0, 1, S * C + 1).view({S, C}), dy = flat_y.slice(0, 1, S * C + 1).view({S, C});
  ASSERT_STATUS_OK(cuda::upload_into(x, dx, stream()));
  ASSERT_OK_AND_ASSIGN(Tensor dw, cuda::upload(w, arena(), DType::kBF16, stream()));
  ASSERT_STATUS_OK(poison(flat_y, stream()));
  ASSERT_STATUS_OK(cuda::rms_norm(dx, dw, kEps, dy, stream()));
  const Tensor ref = cpu::rms_norm(x, w, kEps);
  const Tensor emulated = rounded(ref);
  check_case("rms_norm(unaligned)", shape_to_string({S, C}), to_host_f32(dy, stream()), ref, kBf16Tol, &emulated,
             kMinEqual);
}

// Modulation tables are column blocks of [R, 6C], as the block's AdaLN table is laid out.
TEST_F(CudaNorm, RmsNormModulateMatchesCpu) {
  struct Case { int64_t S, C, R; };
  for (const Case& k : {Case{1, 8, 1}, Case{5, 13, 3}, Case{17, 24, 6}, Case{37, 5376, 9}, Case{3, 7168, 2}}) {
    const size_t mark = arena().mark();
    Tensor x = random_bf16_values({k.S, k.C}, 2.0f), w = random_bf16_values({k.C}, 0.3f, 1.0f);
    Tensor table = random_bf16_values({k.R, 6 * k.C}, 0.5f);
    Tensor idx = testing::random_indices(k.S, k.R, next_stream());
    ASSERT_OK_AND_ASSIGN(Tensor dx, cuda::upload(x, arena(), DType::kBF16, stream()));
    ASSERT_OK_AND_ASSIGN(Tensor dw, cuda::upload(w, arena(), DType::kBF16, stream()));
    ASSERT_OK_AND_ASSIGN(Tensor dtable, cuda::upload(table, arena(), DType::kBF16, stream()));
    ASSERT_OK_AND_ASSIGN(Tensor didx, cuda::upload(idx, arena(), DType::kI64, stream()));
    ASSERT_OK_AND_ASSIGN(Tensor dy, arena().tensor({k.S, k.C}, DType::kBF16));
    ASSERT_STATUS_OK(poison(dy, stream()));
    // shift_msa = chunk 0, scale_msa = chunk 1 (MODELS_H3.md §1.3).
    Tensor shift = table.slice(1, 0, k.C), scale = table.slice(1, k.C, 2 * k.C);
    ASSERT_STATUS_OK(cuda::rms_norm_modulate(dx, dw, kEps, dtable.slice(1, 0, k.C), dtable.slice(1, k.C, 2 * k.C), didx,
                                      dy, stream()));
    const Tensor normed = cpu::rms_norm(x, w, kEps);
    const Tensor ref = cpu::modulate(normed, shift, scale, idx);
    // diffusers: bf16(norm), bf16(1 + scale), bf16(n · that), bf16(+ shift).
    Tensor emulated = Tensor::empty({k.S, k.C}, DType::kF32);
    for (int64_t s = 0; s < k.S; ++s) {
      const int64_t r = idx.data<int64_t>()[s];
      for (int64_t c = 0; c < k.C; ++c) {
        const float n = round_to_bf16(normed.data<float>()[s * k.C + c]);
        const float one_plus = round_to_bf16(1.0f + table.data<float>()[r * 6 * k.C + k.C + c]);
        const float m = round_to_bf16(n * one_plus);
        emulated.data<float>()[s * k.C + c] = round_to_bf16(m + table.data<float>()[r * 6 * k.C + c]);
      }
    }
    check_case("rms_norm_modulate", "[" + std::to_string(k.S) + ", " + std::to_string(k.C) + "] R=" +
                                        std::to_string(k.R),
               to_host_f32(dy, stream()), ref, kBf16Tol, &emulated, kMinEqual);
    arena().reset(mark);
  }
}

// The fused residual + pre-norm against its two ops (gated_residual, then rms_norm_modulate): the
// same bits for the updated state and the norm output, on the vector path (rows within and beyond
// the register-cached width) and the scalar path; and both against the CPU ops.
TEST_F(CudaNorm, GatedResidualRmsNormModulateGivesTheTwoOpsBits) {
  struct Case { int64_t S, C, R; };
  for (const Case& k : {Case{1, 8, 1}, Case{5, 13, 3}, Case{37, 5376, 9}, Case{300, 5376, 3}, Case{3, 7168, 2},
                        Case{2, 14336, 4}}) {
    const size_t mark = arena().mark();
    Tensor h = random_bf16_values({k.S, k.C}, 4.0f), y = random_bf16_values({k.S, k.C}),
           w = random_bf16_values({k.C}, 0.3f, 1.0f), table = random_bf16_values({k.R, 6 * k.C}, 0.5f);
    Tensor idx = testing::random_indices(k.S, k.R, next_stream());
    ASSERT_OK_AND_ASSIGN(Tensor fused_h, cuda::upload(h, arena(), DType::kBF16, stream()));
    ASSERT_OK_AND_ASSIGN(Tensor two_ops_h, cuda::upload(h, arena(), DType::kBF16, stream()));
    ASSERT_OK_AND_ASSIGN(Tensor dy, cuda::upload(y, arena(), DType::kBF16, stream()));
    ASSERT_OK_AND_ASSIGN(Tensor dw, cuda::upload(w, arena(), DType::kBF16, stream()));
    ASSERT_OK_AND_ASSIGN(Tensor dtable, cuda::upload(table, arena(), DType::kBF16, stream()));
    ASSERT_OK_AND_ASSIGN(Tensor didx, cuda::upload(idx, arena(), DType::kI64, stream()));
    ASSERT_OK_AND_ASSIGN(Tensor fused_out, arena().tensor({k.S, k.C}, DType::kBF16));
    ASSERT_OK_AND_ASSIGN(Tensor two_ops_out, arena().tensor({k.S, k.C}, DType::kBF16));
    ASSERT_STATUS_OK(poison(fused_out, stream()));
    // The block's second half: gate_msa (chunk 2), then shift_mlp / scale_mlp (chunks 3, 4).
    const auto chunk = [&](const Tensor& t, int i) { return t.slice(1, i * k.C, (i + 1) * k.C); };
    ASSERT_STATUS_OK(cuda::gated_residual_rms_norm_modulate(fused_h, chunk(dtable, 2), dy, dw, kEps, chunk(dtable, 3),
                                                            chunk(dtable, 4), didx, fused_out, stream()));
    ASSERT_STATUS_OK(cuda::gated_residual(two_ops_h, chunk(dtable, 2), didx, dy, stream()));
    ASSERT_STATUS_OK(cuda::rms_norm_modulate(two_ops_h, dw, kEps, chunk(dtable, 3), chunk(dtable, 4), didx,
                                             two_ops_out, stream()));
    const std::string name = "[" + std::to_string(k.S) + ", " + std::to_string(k.C) + "] R=" + std::to_string(k.R);
    for (const auto& [a, b] : {std::pair{fused_h, two_ops_h}, std::pair{fused_out, two_ops_out}}) {
      const Tensor ha = to_host_f32(a, stream()), hb = to_host_f32(b, stream());
      EXPECT_TRUE(std::equal(ha.data<float>(), ha.data<float>() + ha.numel(), hb.data<float>())) << name;
    }
    Tensor ref_h = h.clone();
    cpu::gated_residual(ref_h, chunk(table, 2), idx, y);
    const Tensor ref_out = cpu::modulate(cpu::rms_norm(rounded(ref_h), w, kEps), chunk(table, 3), chunk(table, 4), idx);
    check_case("gated_residual_rms_norm_modulate h", name, to_host_f32(fused_h, stream()), ref_h, kBf16Tol);
    check_case("gated_residual_rms_norm_modulate out", name, to_host_f32(fused_out, stream()), ref_out, kBf16Tol);
    arena().reset(mark);
  }
}

// bf16 cos/sin [S, R]: the real H3 table (R = 96 from 3 x 16 frequencies) or random angles.
cpu::RopeTable bf16_rope_table(int64_t S, int64_t R) {
  cpu::RopeTable t;
  if (R == 96) {
    Tensor pos = random_f32_values({S, 3}, 1.0f);
    for (int64_t i = 0; i < S * 3; ++i) pos.data<float>()[i] = 10.0f + 40.0f * pos.data<float>()[i];
    t = cpu::rope_table(pos, cpu::rope_inv_freq(16, 10000.0f));
  } else {
    Tensor angle = random_f32_values({S, R}, 30.0f);
    t.cos = Tensor::empty({S, R}, DType::kF32);
    t.sin = Tensor::empty({S, R}, DType::kF32);
    for (int64_t i = 0; i < S * R; ++i) {
      t.cos.data<float>()[i] = std::cos(angle.data<float>()[i]);
      t.sin.data<float>()[i] = std::sin(angle.data<float>()[i]);
    }
  }
  return {rounded(t.cos), rounded(t.sin)};  // diffusers casts the fp32 table to bf16 before use
}

TEST_F(CudaNorm, QkNormRopeMatchesCpu) {
  struct Case { int64_t S, heads, D, R; };
  // D = 128 with R % 8 == 0 takes the shuffle kernel; the others the general one.
  for (const Case& k : {Case{7, 3, 128, 96}, Case{33, 56, 128, 96}, Case{5, 2, 128, 0}, Case{6, 2, 128, 128},
                        Case{3, 2, 128, 36}, Case{9, 4, 64, 32}, Case{4, 3, 40, 24}, Case{2, 1, 16, 16}}) {
    const size_t mark = arena().mark();
    const Shape shape{k.S, k.heads, k.D};
    Tensor x = random_bf16_values(shape, 2.0f), w = random_bf16_values({k.D}, 0.3f, 1.0f);
    const cpu::RopeTable table = k.R ? bf16_rope_table(k.S, k.R) : cpu::RopeTable{};
    ASSERT_OK_AND_ASSIGN(Tensor dx, cuda::upload(x, arena(), DType::kBF16, stream()));
    ASSERT_OK_AND_ASSIGN(Tensor dw, cuda::upload(w, arena(), DType::kBF16, stream()));
    Tensor dcos, dsin;
    if (k.R) {
      ASSERT_OK_AND_ASSIGN(dcos, cuda::upload(table.cos, arena(), DType::kBF16, stream()));
      ASSERT_OK_AND_ASSIGN(dsin, cuda::upload(table.sin, arena(), DType::kBF16, stream()));
    }
    ASSERT_STATUS_OK(cuda::qk_norm_rope(dx, dw, kEps, dcos, dsin, stream()));  // in place: dx is the output

    Tensor ref = cpu::rms_norm(x, w, kEps);
    const Tensor normed = rounded(ref);
    if (k.R) cpu::apply_rope(ref, table);
    Tensor emulated = normed.clone();
    const int64_t half = k.R / 2;
    for (int64_t row = 0; row < k.S * k.heads; ++row) {
      const int64_t s = row / k.heads;
      const float* n = normed.data<float>() + row * k.D;
      float* e = emulated.data<float>() + row * k.D;
      for (int64_t i = 0; i < half; ++i) {
        const float* c = table.cos.data<float>() + s * k.R;
        const float* sn = table.sin.data<float>() + s * k.R;
        e[i] = round_to_bf16(round_to_bf16(n[i] * c[i]) - round_to_bf16(n[i + half] * sn[i]));
        e[i + half] = round_to_bf16(round_to_bf16(n[i + half] * c[i + half]) + round_to_bf16(n[i] * sn[i + half]));
      }
    }
    check_case("qk_norm_rope", shape_to_string(shape) + " R=" + std::to_string(k.R), to_host_f32(dx, stream()), ref,
               kBf16Tol, &emulated, kMinEqual);
    arena().reset(mark);
  }
}

// The one-block-per-row kernel (the default) against the one-warp-per-item one
// (--set qk-norm=items): the same bits; and, informative, their times at H3's
// 832x480 q (15,100 rows x 56 heads).
TEST_F(CudaNorm, QkNormRopeRowsKernelGivesTheSameBits) {
  struct Case { int64_t S, heads, R; };
  // 72 heads: the block's 8 warps take 9 each.
  for (const Case& k : {Case{7, 3, 96}, Case{33, 56, 96}, Case{5, 2, 0}, Case{6, 2, 128}, Case{301, 28, 128},
                        Case{4, 72, 96}, Case{15100, 56, 128}}) {
    const size_t mark = arena().mark();
    const Shape shape{k.S, k.heads, 128};
    const Tensor x = random_bf16_values(shape, 2.0f), w = random_bf16_values({128}, 0.3f, 1.0f);
    const cpu::RopeTable table = k.R ? bf16_rope_table(k.S, k.R) : cpu::RopeTable{};
    ASSERT_OK_AND_ASSIGN(Tensor dw, cuda::upload(w, arena(), DType::kBF16, stream()));
    Tensor dcos, dsin;
    if (k.R) {
      ASSERT_OK_AND_ASSIGN(dcos, cuda::upload(table.cos, arena(), DType::kBF16, stream()));
      ASSERT_OK_AND_ASSIGN(dsin, cuda::upload(table.sin, arena(), DType::kBF16, stream()));
    }
    std::vector<Tensor> results;
    for (const char* kernel : {"items", "rows"}) {
      const bool items = std::string(kernel) == "items";
      ASSERT_OK_AND_ASSIGN(Tensor dx, cuda::upload(x, arena(), DType::kBF16, stream()));
      ASSERT_STATUS_OK(cuda::qk_norm_rope(dx, dw, kEps, dcos, dsin, stream(), items));
      results.push_back(to_host_f32(dx, stream()));
      if (k.S >= 10000) {  // timing: 2 warm-up, then 10 calls between events
        cudaEvent_t start = nullptr, stop = nullptr;
        ASSERT_EQ(cudaEventCreate(&start), cudaSuccess);
        ASSERT_EQ(cudaEventCreate(&stop), cudaSuccess);
        for (int i = 0; i < 2; ++i) ASSERT_STATUS_OK(cuda::qk_norm_rope(dx, dw, kEps, dcos, dsin, stream(), items));
        ASSERT_EQ(cudaEventRecord(start, stream()), cudaSuccess);
        for (int i = 0; i < 10; ++i) ASSERT_STATUS_OK(cuda::qk_norm_rope(dx, dw, kEps, dcos, dsin, stream(), items));
        ASSERT_EQ(cudaEventRecord(stop, stream()), cudaSuccess);
        ASSERT_EQ(cudaEventSynchronize(stop), cudaSuccess);
        float ms = 0;
        ASSERT_EQ(cudaEventElapsedTime(&ms, start, stop), cudaSuccess);
        const double bytes = 2.0 * static_cast<double>(x.numel()) * 2;  // read and write x once
        std::printf("[qk-norm-timing] %s kernel, %s R=%ld: %.3f ms per call = %.0f GB/s of x\n", kernel,
                    shape_to_string(shape).c_str(), static_cast<long>(k.R), ms / 10, bytes / (ms / 10 * 1e-3) / 1e9);
        cudaEventDestroy(start);
        cudaEventDestroy(stop);
      }
    }
    const float* a = results[0].data<float>();
    for (size_t i = 1; i < results.size(); ++i)
      EXPECT_TRUE(std::equal(a, a + results[0].numel(), results[i].data<float>()))
          << shape_to_string(shape) << " R=" << k.R << ": kernel " << i << " vs items";
    arena().reset(mark);
  }
}

TEST_F(CudaNorm, RejectsHostTensorsAndWrongShapes) {
  ASSERT_OK_AND_ASSIGN(Tensor dx, arena().tensor({4, 16}, DType::kBF16));
  ASSERT_OK_AND_ASSIGN(Tensor dw, arena().tensor({8}, DType::kBF16));
  ASSERT_OK_AND_ASSIGN(Tensor dy, arena().tensor({4, 16}, DType::kBF16));
  EXPECT_THROW((void)cuda::rms_norm(dx, dw, kEps, dy, stream()), InternalError);  // weight width
  Tensor host = Tensor::empty({4, 16}, DType::kBF16);
  ASSERT_OK_AND_ASSIGN(Tensor dw16, arena().tensor({16}, DType::kBF16));
  EXPECT_THROW((void)cuda::rms_norm(host, dw16, kEps, dy, stream()), InternalError);  // host input
  ASSERT_OK_AND_ASSIGN(Tensor f32, arena().tensor({4, 16}, DType::kF32));
  EXPECT_THROW((void)cuda::rms_norm(f32, dw16, kEps, dy, stream()), InternalError);  // dtype
  ASSERT_OK_AND_ASSIGN(Tensor q, arena().tensor({4, 2, 16}, DType::kBF16));
  ASSERT_OK_AND_ASSIGN(Tensor cos, arena().tensor({4, 18}, DType::kBF16));
  EXPECT_THROW((void)cuda::qk_norm_rope(q, dw16, kEps, cos, cos, stream()), InternalError);  // R > D
  // The fused residual + norm: an update of another shape, a gate table of other rows than shift's.
  ASSERT_OK_AND_ASSIGN(Tensor table, arena().tensor({3, 6 * 16}, DType::kBF16));
  ASSERT_OK_AND_ASSIGN(Tensor idx, cuda::upload(Tensor::from_ints({0, 1, 2, 0}, {4}), arena(), DType::kI64, stream()));
  const auto chunk = [&](int i) { return table.slice(1, i * 16, (i + 1) * 16); };
  ASSERT_OK_AND_ASSIGN(Tensor short_y, arena().tensor({3, 16}, DType::kBF16));
  EXPECT_THROW((void)cuda::gated_residual_rms_norm_modulate(dx, chunk(2), short_y, dw16, kEps, chunk(3), chunk(4), idx,
                                                            dy, stream()),
               InternalError);
  EXPECT_THROW((void)cuda::gated_residual_rms_norm_modulate(dx, chunk(2).slice(0, 0, 2), dy, dw16, kEps, chunk(3),
                                                            chunk(4), idx, dy, stream()),
               InternalError);
}

}  // namespace
}  // namespace orochi
