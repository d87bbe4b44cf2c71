#include "backends/cuda/gemm.h"

#include <cublasLt.h>

#include <algorithm>
#include <array>
#include <span>
#include <string>

#include "backends/cuda/cublaslt_util.h"
#include "backends/cuda/cuda_check.h"
#include "backends/cuda/op_checks.h"

namespace orochi::cuda {

// cuBLAS is column-major, and a row-major [R, C] buffer is the column-major matrix [C, R]. So we ask
// for y^T = w · x^T: A = w's buffer (column-major [K, N], ld = w's row stride, K when contiguous)
// with op(A) = A^T = w [N, K];
// B = x's buffer (column-major [K, M], ld K) with op(B) = B = x^T; D = op(A)·op(B) is column-major
// [N, M] with ld N, which is row-major y [M, N]. The bias epilogue adds bias[N] to each of D's
// columns, i.e. to every row of y.
struct GemmRunner::Plan {
  cublasLtMatmulDesc_t desc = nullptr;
  cublasLtMatrixLayout_t a = nullptr, b = nullptr, d = nullptr;
  cublasLtMatmulAlgo_t algo{};
  size_t workspace = 0;
  ~Plan() {
    if (d) cublasLtMatrixLayoutDestroy(d);
    if (b) cublasLtMatrixLayoutDestroy(b);
    if (a) cublasLtMatrixLayoutDestroy(a);
    if (desc) cublasLtMatmulDescDestroy(desc);
  }
};

Expected<std::unique_ptr<GemmRunner>> GemmRunner::create(int device_index, size_t workspace_bytes) {
  std::unique_ptr<GemmRunner> runner(new GemmRunner());
  runner->device_index_ = device_index;
  OROCHI_RETURN_IF_ERROR(create_handle_and_workspace(device_index, workspace_bytes, "GEMM workspace",
                                                     "free GPU memory or plan a smaller workspace", &runner->handle_,
                                                     &runner->workspace_));
  runner->workspace_bytes_ = workspace_bytes;
  return runner;
}

GemmRunner::~GemmRunner() {
  plans_.clear();
  if (handle_) cublasLtDestroy(handle_);
  if (workspace_) {
    int previous = 0;
    if (cudaGetDevice(&previous) != cudaSuccess) return;
    cudaSetDevice(device_index_);
    cudaFree(workspace_);
    cudaSetDevice(previous);
  }
}

Expected<int> GemmRunner::fastest_candidate(const Plan& plan, const void* candidates, int count, const Operands& op) {
  // Timing must not add into y over and over: candidates are timed with beta 0, which computes
  // the same product, so an accumulating plan is tuned as the plain one would be.
  const float alpha = 1.0f, beta = 0.0f;
  return cuda::fastest_candidate(static_cast<const cublasLtMatmulHeuristicResult_t*>(candidates), count,
                                 workspace_bytes_, op.stream, [&](const cublasLtMatmulHeuristicResult_t& r) {
                                   return cublasLtMatmul(handle_, plan.desc, &alpha, op.w, plan.a, op.x, plan.b, &beta,
                                                         op.y, plan.d, op.y, plan.d, &r.algo, workspace_,
                                                         r.workspaceSize, op.stream) == CUBLAS_STATUS_SUCCESS;
                                 });
}

Expected<GemmRunner::Plan*> GemmRunner::plan_for(const Key& key, const void* bias, const Operands& operands) {
  if (auto it = plans_.find(key); it != plans_.end()) return it->second.get();
  auto plan = std::make_unique<Plan>();
  const cudaDataType_t type =
      key.dtype == DType::kBF16 ? CUDA_R_16BF : (key.dtype == DType::kF16 ? CUDA_R_16F : CUDA_R_32F);
  OROCHI_CUBLAS_RETURN_IF_ERROR(cublasLtMatmulDescCreate(&plan->desc, CUBLAS_COMPUTE_32F, CUDA_R_32F));
  OROCHI_CUBLAS_RETURN_IF_ERROR(set_desc(plan->desc, CUBLASLT_MATMUL_DESC_TRANSA, CUBLAS_OP_T));
  OROCHI_CUBLAS_RETURN_IF_ERROR(set_desc(plan->desc, CUBLASLT_MATMUL_DESC_TRANSB, CUBLAS_OP_N));
  if (key.bias) {
    OROCHI_CUBLAS_RETURN_IF_ERROR(set_desc(plan->desc, CUBLASLT_MATMUL_DESC_EPILOGUE, CUBLASLT_EPILOGUE_BIAS));
    OROCHI_CUBLAS_RETURN_IF_ERROR(set_desc(plan->desc, CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE,
                                           static_cast<int32_t>(type)));
    // The heuristic reads the bias pointer's alignment from here.
    OROCHI_CUBLAS_RETURN_IF_ERROR(set_desc(plan->desc, CUBLASLT_MATMUL_DESC_BIAS_POINTER, bias));
  }
  const auto M = static_cast<uint64_t>(key.M), N = static_cast<uint64_t>(key.N), K = static_cast<uint64_t>(key.K);
  OROCHI_CUBLAS_RETURN_IF_ERROR(cublasLtMatrixLayoutCreate(&plan->a, type, K, N, key.ld_w));  // w
  OROCHI_CUBLAS_RETURN_IF_ERROR(cublasLtMatrixLayoutCreate(&plan->b, type, K, M, key.K));  // x
  OROCHI_CUBLAS_RETURN_IF_ERROR(cublasLtMatrixLayoutCreate(&plan->d, type, N, M, key.N));  // y
  if (key.batch > 1) {  // w and y step by their strides, every product reads the same x
    const int32_t count = key.batch;
    const int64_t strides[3] = {key.stride_w, 0, key.stride_y};
    const cublasLtMatrixLayout_t layouts[3] = {plan->a, plan->b, plan->d};
    for (int i = 0; i < 3; ++i) {
      OROCHI_CUBLAS_RETURN_IF_ERROR(set_layout(layouts[i], CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, count));
      OROCHI_CUBLAS_RETURN_IF_ERROR(set_layout(layouts[i], CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET, strides[i]));
    }
  }

  cublasLtMatmulPreference_t pref = nullptr;
  OROCHI_CUBLAS_RETURN_IF_ERROR(cublasLtMatmulPreferenceCreate(&pref));
  std::array<cublasLtMatmulHeuristicResult_t, kMaxCandidates> results{};
  int found = 0;
  const bool tune = autotune_ && operands.x != nullptr && !key.accumulate &&
                    static_cast<double>(key.M) * static_cast<double>(key.N) * static_cast<double>(key.K) >= kTuneMinMacs;
  cublasStatus_t s = set_pref(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, static_cast<uint64_t>(workspace_bytes_));
  if (s == CUBLAS_STATUS_SUCCESS) s = set_pref(pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, key.align_w);
  if (s == CUBLAS_STATUS_SUCCESS) s = set_pref(pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES, key.align_x);
  if (s == CUBLAS_STATUS_SUCCESS) s = set_pref(pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES, key.align_y);
  if (s == CUBLAS_STATUS_SUCCESS) s = set_pref(pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES, key.align_y);
  if (s == CUBLAS_STATUS_SUCCESS)
    s = cublasLtMatmulAlgoGetHeuristic(handle_, plan->desc, plan->a, plan->b, plan->d, plan->d, pref,
                                       tune ? kMaxCandidates : 1, results.data(), &found);
  cublasLtMatmulPreferenceDestroy(pref);
  const std::string shape = "[" + std::to_string(key.M) + ", " + std::to_string(key.K) + "] x [" +
                            std::to_string(key.N) + ", " + std::to_string(key.K) + "]^T " + dtype_name(key.dtype) +
                            (key.bias ? " + bias" : "") + (key.batch > 1 ? " x " + std::to_string(key.batch) : "");
  if (s != CUBLAS_STATUS_SUCCESS && s != CUBLAS_STATUS_NOT_SUPPORTED)
    return cublas_status(s, ("cuBLASLt heuristic for " + shape).c_str());
  if (found == 0 || s == CUBLAS_STATUS_NOT_SUPPORTED)
    return unsupported("cuBLASLt has no algorithm for the GEMM " + shape + " (pointer alignments x " +
                       std::to_string(key.align_x) + ", w " + std::to_string(key.align_w) + ", y " +
                       std::to_string(key.align_y) + " bytes)");
  int best = 0;
  if (tune && found > 1) {
    // The heuristic's first pick is not always the fastest for odd M (packed sequences are):
    // time each candidate on the real operands once, when the shape is first seen.
    OROCHI_ASSIGN_OR_RETURN(best, fastest_candidate(*plan, results.data(), found, operands));
  }
  const cublasLtMatmulHeuristicResult_t& result = results[best];
  plan->algo = result.algo;
  plan->workspace = result.workspaceSize;
  Plan* raw = plan.get();
  plans_.emplace(key, std::move(plan));
  return raw;
}

Status GemmRunner::linear(const Tensor& x, const Tensor& w, const Tensor* bias, const Tensor& y,
                          cudaStream_t stream) {
  detail::require_cuda(w, w.dtype(), "linear weight");
  return linear_strided(x, w, bias, y, /*accumulate=*/false, stream);
}

void GemmRunner::check_linear(const Tensor& x, const Tensor& w, const Tensor* bias, const Tensor& y) const {
  const DType dt = x.dtype();
  OROCHI_CHECK(dt == DType::kBF16 || dt == DType::kF16 || dt == DType::kF32, "linear: only bf16, f16 or f32, got ",
               x.describe());
  detail::require_cuda(x, dt, "linear input");
  OROCHI_CHECK(w.ndim() == 2, "linear: weight ", w.describe(), " must be 2-D");
  detail::require_row_strided(w, w.dim(1), dt, "linear weight");
  detail::require_cuda(y, dt, "linear output");
  OROCHI_CHECK(x.dim(-1) == w.dim(1) && w.dim(1) > 0, "linear: input ", x.describe(), " does not match weight ",
               w.describe());
  Shape expected = x.shape();
  expected.back() = w.dim(0);
  OROCHI_CHECK(y.shape() == expected, "linear: output ", y.describe(), ", expected ", shape_to_string(expected));
  if (bias) {
    detail::require_cuda(*bias, dt, "linear bias");
    OROCHI_CHECK(bias->numel() == w.dim(0), "linear bias ", bias->describe(), " for ", w.dim(0), " outputs");
  }
  detail::require_same_device(x, w, "linear");
  detail::require_same_device(x, y, "linear");
  OROCHI_CHECK(x.device().index == device_index_, "linear: tensors on ", device_name(x.device()),
               ", runner on cuda:", device_index_);
}

GemmRunner::Key GemmRunner::key_of(const Tensor& x, const Tensor& w, const Tensor* bias, const Tensor& y,
                                   bool accumulate) const {
  const int64_t K = w.dim(1);
  return Key{x.numel() / K, w.dim(0), K, w.strides()[0], x.dtype(), bias != nullptr, accumulate,
             alignment_of(x.raw_data()), alignment_of(w.raw_data()), alignment_of(y.raw_data()),
             bias ? alignment_of(bias->raw_data()) : 0};
}

Status GemmRunner::enqueue(const Key& key, const Tensor& x, const Tensor& w, const Tensor* bias, const Tensor& y,
                           cudaStream_t stream) {
  if (key.M == 0 || key.N == 0) return Status::ok();
  const void* bias_ptr = bias ? bias->raw_data() : nullptr;
  OROCHI_ASSIGN_OR_RETURN(Plan * plan, plan_for(key, bias_ptr, Operands{x.raw_data(), w.raw_data(), y.raw_data(), stream}));
  if (bias) OROCHI_CUBLAS_RETURN_IF_ERROR(set_desc(plan->desc, CUBLASLT_MATMUL_DESC_BIAS_POINTER, bias_ptr));
  const float alpha = 1.0f, beta = key.accumulate ? 1.0f : 0.0f;
  OROCHI_CUBLAS_RETURN_IF_ERROR(cublasLtMatmul(handle_, plan->desc, &alpha, w.raw_data(), plan->a, x.raw_data(),
                                               plan->b, &beta, y.raw_data(), plan->d, y.raw_data(), plan->d,
                                               &plan->algo, workspace_, plan->workspace, stream));
  return Status::ok();
}

Status GemmRunner::linear_strided(const Tensor& x, const Tensor& w, const Tensor* bias, const Tensor& y,
                                  bool accumulate, cudaStream_t stream) {
  check_linear(x, w, bias, y);
  return enqueue(key_of(x, w, bias, y, accumulate), x, w, bias, y, stream);
}

namespace {

// The common distance in elements between consecutive tensors' data (> 0), or 0 when they are not
// equally spaced in ascending order.
int64_t equal_spacing(std::span<const Tensor> t) {
  const auto address = [&](size_t i) { return reinterpret_cast<intptr_t>(t[i].raw_data()); };
  const intptr_t step = address(1) - address(0);
  const auto elt = static_cast<intptr_t>(dtype_size(t[0].dtype()));
  if (step <= 0 || step % elt != 0) return 0;
  for (size_t i = 2; i < t.size(); ++i)
    if (address(i) - address(i - 1) != step) return 0;
  return static_cast<int64_t>(step / elt);
}

}  // namespace

Status GemmRunner::linear_shared_input(const Tensor& x, std::span<const Tensor> ws, std::span<const Tensor> ys,
                                       cudaStream_t stream) {
  OROCHI_CHECK(!ws.empty() && ws.size() == ys.size(), "linear_shared_input: ", ws.size(), " weights for ", ys.size(),
               " outputs");
  for (size_t i = 0; i < ws.size(); ++i) {
    check_linear(x, ws[i], nullptr, ys[i]);
    OROCHI_CHECK(ws[i].shape() == ws[0].shape(), "linear_shared_input: weight ", ws[i].describe(), " differs from ",
                 ws[0].describe());
  }
  const bool contiguous = std::all_of(ws.begin(), ws.end(), [](const Tensor& w) { return w.is_contiguous(); }) &&
                          std::all_of(ys.begin(), ys.end(), [](const Tensor& y) { return y.is_contiguous(); });
  const int64_t stride_w = ws.size() > 1 && contiguous ? equal_spacing(ws) : 0;
  const int64_t stride_y = stride_w ? equal_spacing(ys) : 0;
  if (stride_w < ws[0].numel() || stride_y < ys[0].numel()) {  // overlapping or unevenly spaced: a call each
    for (size_t i = 0; i < ws.size(); ++i)
      OROCHI_RETURN_IF_ERROR(enqueue(key_of(x, ws[i], nullptr, ys[i], false), x, ws[i], nullptr, ys[i], stream));
    return Status::ok();
  }
  Key key = key_of(x, ws[0], nullptr, ys[0], false);
  key.batch = static_cast<int32_t>(ws.size());
  key.stride_w = stride_w;
  key.stride_y = stride_y;
  return enqueue(key, x, ws[0], nullptr, ys[0], stream);
}

Expected<Tensor> GemmRunner::linear(const Tensor& x, const Tensor& w, const Tensor* bias, DeviceArena& arena,
                                    cudaStream_t stream) {
  OROCHI_CHECK(w.defined() && w.ndim() == 2 && x.defined() && x.ndim() >= 1, "linear: input ",
               detail::describe_on_device(x), ", weight ", detail::describe_on_device(w));
  Shape shape = x.shape();
  shape.back() = w.dim(0);
  OROCHI_ASSIGN_OR_RETURN(Tensor y, arena.tensor(shape, x.dtype()));
  OROCHI_RETURN_IF_ERROR(linear(x, w, bias, y, stream));
  return y;
}

}  // namespace orochi::cuda
