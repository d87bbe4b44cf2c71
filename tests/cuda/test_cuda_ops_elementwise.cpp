// CUDA elementwise and row ops vs the CPU ops: swiglu, gated_residual, add_inplace, cast,
// gather_rows, scatter_rows. Ops without transcendentals or reductions must equal the host
// emulation of the bf16 rounding order bit for bit.
#include <algorithm>
#include <cmath>
#include <numeric>
#include <random>
#include <vector>

#include "backends/cpu/ops.h"
#include "backends/cuda/ops.h"
#include "support/random.h"
#include "test_cuda_ops_support.h"

namespace orochi {
namespace {

using namespace cuda_test;

constexpr double kBf16Tol = 1e-2;

class CudaElementwise : public GpuTest {};

TEST_F(CudaElementwise, SwigluMatchesCpu) {
  for (const Shape& shape : {Shape{1, 16}, Shape{3, 10}, Shape{17, 48}, Shape{7, 200}, Shape{4, 28672},
                             Shape{2, 3, 64}, Shape{9000, 48} /* > 8192 rows: each block walks several */}) {
    const size_t mark = arena().mark();
    Tensor u = random_bf16_values(shape, 2.0f);
    ASSERT_OK_AND_ASSIGN(Tensor du, cuda::upload(u, arena(), DType::kBF16, stream()));
    Shape out_shape = shape;
    out_shape.back() /= 2;
    ASSERT_OK_AND_ASSIGN(Tensor dy, arena().tensor(out_shape, DType::kBF16));
    ASSERT_STATUS_OK(poison(dy, stream()));
    ASSERT_STATUS_OK(cuda::swiglu(du, dy, stream()));
    const Tensor ref = cpu::swiglu(u);
    Tensor emulated = Tensor::empty(out_shape, DType::kF32);
    const int64_t I = out_shape.back(), rows = emulated.numel() / I;
    for (int64_t r = 0; r < rows; ++r)
      for (int64_t i = 0; i < I; ++i) {
        const float value = u.data<float>()[r * 2 * I + i], gate = u.data<float>()[r * 2 * I + I + i];
        emulated.data<float>()[r * I + i] = round_to_bf16(value * round_to_bf16(gate / (1.0f + std::exp(-gate))));
      }
    check_case("swiglu", shape_to_string(shape), to_host_f32(dy, stream()), ref, kBf16Tol, &emulated, 0.99);
    arena().reset(mark);
  }
}

TEST_F(CudaElementwise, GatedResidualMatchesCpu) {
  struct Case { int64_t S, C, R; };
  for (const Case& k : {Case{1, 8, 1}, Case{5, 13, 3}, Case{17, 5376, 9}, Case{3, 7168, 2}, Case{2, 14336, 4},
                        Case{8200, 40, 3} /* > 8192 rows: each block walks several */}) {
    const size_t mark = arena().mark();
    Tensor h = random_bf16_values({k.S, k.C}, 4.0f), y = random_bf16_values({k.S, k.C});
    Tensor table = random_bf16_values({k.R, 6 * k.C}, 0.5f);
    Tensor idx = testing::random_indices(k.S, k.R, next_stream());
    ASSERT_OK_AND_ASSIGN(Tensor dh, cuda::upload(h, arena(), DType::kBF16, stream()));
    ASSERT_OK_AND_ASSIGN(Tensor dy, cuda::upload(y, arena(), DType::kBF16, stream()));
    ASSERT_OK_AND_ASSIGN(Tensor dtable, cuda::upload(table, arena(), DType::kBF16, stream()));
    ASSERT_OK_AND_ASSIGN(Tensor didx, cuda::upload(idx, arena(), DType::kI64, stream()));
    // gate_msa is chunk 2 of the [R, 6C] table.
    ASSERT_STATUS_OK(cuda::gated_residual(dh, dtable.slice(1, 2 * k.C, 3 * k.C), didx, dy, stream()));
    Tensor ref = h.clone();
    cpu::gated_residual(ref, table.slice(1, 2 * k.C, 3 * k.C), idx, y);
    Tensor emulated = h.clone();
    for (int64_t s = 0; s < k.S; ++s)
      for (int64_t c = 0; c < k.C; ++c) {
        const float g = table.data<float>()[idx.data<int64_t>()[s] * 6 * k.C + 2 * k.C + c];
        float& e = emulated.data<float>()[s * k.C + c];
        e = round_to_bf16(e + round_to_bf16(g * y.data<float>()[s * k.C + c]));
      }
    check_case("gated_residual",
               "[" + std::to_string(k.S) + ", " + std::to_string(k.C) + "] R=" + std::to_string(k.R),
               to_host_f32(dh, stream()), ref, kBf16Tol, &emulated, 1.0);
    arena().reset(mark);
  }
}

TEST_F(CudaElementwise, AddInplaceMatchesCpu) {
  for (const Shape& shape : {Shape{3, 5}, Shape{1, 8}, Shape{4, 5376}, Shape{2, 7168}, Shape{1001}}) {
    const size_t mark = arena().mark();
    Tensor h = random_bf16_values(shape, 3.0f), y = random_bf16_values(shape);
    ASSERT_OK_AND_ASSIGN(Tensor dh, cuda::upload(h, arena(), DType::kBF16, stream()));
    ASSERT_OK_AND_ASSIGN(Tensor dy, cuda::upload(y, arena(), DType::kBF16, stream()));
    ASSERT_STATUS_OK(cuda::add_inplace(dh, dy, stream()));
    Tensor ref = h.clone();
    cpu::add_inplace(ref, y);
    Tensor emulated = ref.clone();
    for (int64_t i = 0; i < emulated.numel(); ++i) emulated.data<float>()[i] = round_to_bf16(emulated.data<float>()[i]);
    check_case("add_inplace", shape_to_string(shape), to_host_f32(dh, stream()), ref, kBf16Tol, &emulated, 1.0);
    arena().reset(mark);
  }
}

TEST_F(CudaElementwise, CastsRoundToNearestEvenBothWays) {
  for (const Shape& shape : {Shape{7}, Shape{3, 5}, Shape{4, 5376}, Shape{2, 14336}}) {
    const size_t mark = arena().mark();
    Tensor x = random_f32_values(shape, 10.0f);
    ASSERT_OK_AND_ASSIGN(Tensor dx, cuda::upload(x, arena(), DType::kF32, stream()));
    ASSERT_OK_AND_ASSIGN(Tensor db, arena().tensor(shape, DType::kBF16));
    ASSERT_OK_AND_ASSIGN(Tensor df, arena().tensor(shape, DType::kF32));
    ASSERT_STATUS_OK(poison(db, stream()));
    ASSERT_STATUS_OK(poison(df, stream()));
    ASSERT_STATUS_OK(cuda::cast(dx, db, stream()));
    ASSERT_STATUS_OK(cuda::cast(db, df, stream()));
    const Tensor host_rounded = x.to(DType::kBF16).to(DType::kF32);  // core's RNE conversion
    check_case("cast f32->bf16", shape_to_string(shape), to_host_f32(db, stream()), x, kBf16Tol, &host_rounded, 1.0);
    check_case("cast bf16->f32", shape_to_string(shape), to_host_f32(df, stream()), x, kBf16Tol, &host_rounded, 1.0);
    arena().reset(mark);
  }
}

// Distinct row indices: scatter with repeats has no single right answer.
Tensor distinct_indices(int64_t n, int64_t limit) {
  std::vector<int64_t> all(limit);
  std::iota(all.begin(), all.end(), 0);
  std::shuffle(all.begin(), all.end(), std::mt19937_64(next_stream()));
  all.resize(n);
  return Tensor::from_ints(all, {n});
}

TEST_F(CudaElementwise, GatherAndScatterRowsAreExact) {
  struct Case { int64_t S, C, n; DType dtype; };
  for (const Case& k : {Case{10, 5, 4, DType::kBF16}, Case{10, 5, 10, DType::kF32}, Case{100, 5376, 37, DType::kBF16},
                        Case{64, 14336, 3, DType::kF32}, Case{9, 7, 9, DType::kBF16}, Case{50, 7168, 50, DType::kBF16}}) {
    const size_t mark = arena().mark();
    const std::string shape = "[" + std::to_string(k.S) + ", " + std::to_string(k.C) + "] n=" + std::to_string(k.n) +
                              " " + dtype_name(k.dtype);
    Tensor x = random_bf16_values({k.S, k.C}), src = random_bf16_values({k.n, k.C});
    Tensor idx = distinct_indices(k.n, k.S);
    ASSERT_OK_AND_ASSIGN(Tensor dx, cuda::upload(x, arena(), k.dtype, stream()));
    ASSERT_OK_AND_ASSIGN(Tensor dsrc, cuda::upload(src, arena(), k.dtype, stream()));
    ASSERT_OK_AND_ASSIGN(Tensor didx, cuda::upload(idx, arena(), DType::kI64, stream()));

    ASSERT_OK_AND_ASSIGN(Tensor dg, arena().tensor({k.n, k.C}, k.dtype));
    ASSERT_STATUS_OK(poison(dg, stream()));
    ASSERT_STATUS_OK(cuda::gather_rows(dx, didx, dg, stream()));
    const Tensor gathered = cpu::gather_rows(x, idx);
    check_case("gather_rows", shape, to_host_f32(dg, stream()), gathered, 0.0, &gathered, 1.0);

    // Scatter into x's copy: untouched rows must keep their values, the others take src's.
    ASSERT_STATUS_OK(cuda::scatter_rows(dx, didx, dsrc, stream()));
    Tensor scattered = x.clone();
    cpu::scatter_rows(scattered, idx, src);
    check_case("scatter_rows", shape, to_host_f32(dx, stream()), scattered, 0.0, &scattered, 1.0);
    arena().reset(mark);
  }
}

// A full permutation writes every row, so a poisoned destination must come back NaN-free.
TEST_F(CudaElementwise, ScatterPermutationWritesEveryRow) {
  const int64_t S = 333, C = 96;
  Tensor src = random_bf16_values({S, C}), idx = distinct_indices(S, S);
  ASSERT_OK_AND_ASSIGN(Tensor dsrc, cuda::upload(src, arena(), DType::kBF16, stream()));
  ASSERT_OK_AND_ASSIGN(Tensor didx, cuda::upload(idx, arena(), DType::kI64, stream()));
  ASSERT_OK_AND_ASSIGN(Tensor ddst, arena().tensor({S, C}, DType::kBF16));
  ASSERT_STATUS_OK(poison(ddst, stream()));
  ASSERT_STATUS_OK(cuda::scatter_rows(ddst, didx, dsrc, stream()));
  Tensor ref = Tensor::empty({S, C}, DType::kF32);
  cpu::scatter_rows(ref, idx, src);
  check_case("scatter_rows(perm)", shape_to_string({S, C}), to_host_f32(ddst, stream()), ref, 0.0, &ref, 1.0);
}

TEST_F(CudaElementwise, RejectsMismatchedShapes) {
  ASSERT_OK_AND_ASSIGN(Tensor u, arena().tensor({4, 10}, DType::kBF16));
  ASSERT_OK_AND_ASSIGN(Tensor wrong, arena().tensor({4, 4}, DType::kBF16));
  EXPECT_THROW((void)cuda::swiglu(u, wrong, stream()), InternalError);
  ASSERT_OK_AND_ASSIGN(Tensor h, arena().tensor({4, 8}, DType::kBF16));
  ASSERT_OK_AND_ASSIGN(Tensor idx3, arena().tensor({3}, DType::kI64));
  ASSERT_OK_AND_ASSIGN(Tensor gate, arena().tensor({2, 8}, DType::kBF16));
  EXPECT_THROW((void)cuda::gated_residual(h, gate, idx3, h, stream()), InternalError);  // 3 indices for 4 rows
  ASSERT_OK_AND_ASSIGN(Tensor f32, arena().tensor({4, 8}, DType::kF32));
  EXPECT_THROW((void)cuda::scatter_rows(h, idx3, f32, stream()), InternalError);  // dtype and rows
  EXPECT_THROW((void)cuda::cast(h, wrong, stream()), InternalError);
}

}  // namespace
}  // namespace orochi
