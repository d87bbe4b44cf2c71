#include "backends/cuda/attention_cudnn.h"

#include <cstdint>
#include <map>
#include <tuple>
#include <vector>

#include "backends/cuda/attention_cudnn_graph.h"  // <cudnn.h> when the frontend is compiled in
#include "backends/cuda/cuda_check.h"

namespace orochi::cuda {

std::string AttentionShape::to_string() const {
  return "S_q=" + std::to_string(s_q) + " S_kv=" + std::to_string(s_kv) + " heads=" + std::to_string(heads) +
         " D=" + std::to_string(head_dim) +
         (kv_heads > 0 && kv_heads != heads ? " kv_heads=" + std::to_string(kv_heads) : std::string()) +
         (causal ? " causal" : "") + (dtype == DType::kBF16 ? std::string() : " " + std::string(dtype_name(dtype)));
}

const char* attention_implementation_name(AttentionImplementation impl) {
  switch (impl) {
    case AttentionImplementation::kAuto: return "auto";
    case AttentionImplementation::kUnified: return "unified";
    case AttentionImplementation::kComposite: return "composite";
  }
  return "?";
}

#if OROCHI_WITH_CUDNN_FRONTEND

namespace {

using attention_detail::SdpaPlanPtr;
using ShapeKey = std::tuple<int64_t, int64_t, int64_t, int64_t, DType, int64_t, bool>;

ShapeKey key_of(const AttentionShape& s) {
  return {s.s_q, s.s_kv, s.heads, s.head_dim, s.dtype, s.kv_head_count(), s.causal};
}

Status cudnn_status(cudnnStatus_t status, const char* what) {
  if (status == CUDNN_STATUS_SUCCESS) return Status::ok();
  char detail[512] = {0};
  cudnnGetLastErrorString(detail, sizeof detail);
  return Status(ErrorCode::kIo, std::string(what) + " failed: " + cudnnGetErrorString(status) +
                                    (detail[0] ? std::string(" (") + detail + ")" : std::string()));
}

Status check_shape(const AttentionShape& s) {
  if (s.s_q <= 0 || s.s_kv <= 0 || s.heads <= 0 || s.head_dim <= 0)
    return Status(ErrorCode::kInvalidArgument, "attention shape must be positive, got " + s.to_string());
  if (s.kv_heads < 0 || s.heads % s.kv_head_count() != 0)
    return Status(ErrorCode::kInvalidArgument,
                  "grouped-query attention needs kv_heads dividing heads, got " + s.to_string());
  if (s.dtype != DType::kBF16 && s.dtype != DType::kF16 && s.dtype != DType::kF8E4M3)
    return Status(ErrorCode::kUnsupported, "cuDNN attention runs in bf16, f16 or e4m3, got " + s.to_string());
  if (s.dtype == DType::kF8E4M3 && (s.head_dim % 16 != 0 || s.head_dim > 256))
    return Status(ErrorCode::kUnsupported, "cuDNN FP8 attention needs a head dim that is a multiple of 16 and at "
                                           "most 256, got " + s.to_string());
  // cuDNN's fused kernels move rows with 16-byte vectors: D must be a multiple of 8 bf16 values.
  if (s.head_dim % 8 != 0 || s.head_dim > 256)
    return Status(ErrorCode::kUnsupported, "cuDNN fused attention needs a head dim that is a multiple of 8 and at "
                                           "most 256, got " + s.to_string());
  return Status::ok();
}

Status check_pointer(const void* p, const char* name) {
  if (p == nullptr) return Status(ErrorCode::kInvalidArgument, std::string("attention ") + name + " is null");
  if (reinterpret_cast<uintptr_t>(p) % 16 != 0)
    return Status(ErrorCode::kInvalidArgument,
                  std::string("attention ") + name + " must be 16-byte aligned for cuDNN's vector loads");
  return Status::ok();
}

}  // namespace

struct CudnnAttention::Impl {
  cudaStream_t stream = nullptr;  // the stream the handle is bound to
  AttentionImplementation preference = AttentionImplementation::kAuto;
  cudnnHandle_t handle = nullptr;
  int device = -1;
  std::map<ShapeKey, SdpaPlanPtr> graphs;
  // Internal workspace; replaced buffers stay allocated until destruction (captured CUDA graphs
  // may still point at them).
  void* workspace = nullptr;
  size_t workspace_capacity = 0;
  std::vector<void*> retired_workspaces;
  bool workspace_handed_out = false;  // a run() has used the internal buffer (it may be captured)
  bool external = false;
  void* external_ptr = nullptr;
  size_t external_bytes = 0;

  ~Impl() {
    graphs.clear();  // execution plans go before the handle they were built with
    if (handle) cudnnDestroy(handle);
    free_internal_workspace();
  }

  void free_internal_workspace() {
    for (void* p : retired_workspaces) cudaFree(p);
    retired_workspaces.clear();
    if (workspace) cudaFree(workspace);
    workspace = nullptr;
    workspace_capacity = 0;
  }

  static Status refuse_if_capturing(cudaStream_t stream, const AttentionShape& s, const char* what) {
    cudaStreamCaptureStatus capture = cudaStreamCaptureStatusNone;
    OROCHI_CUDA_RETURN_IF_ERROR(cudaStreamIsCapturing(stream, &capture));
    if (capture != cudaStreamCaptureStatusNone)
      return Status(ErrorCode::kInvalidArgument, "attention " + s.to_string() + " " + what +
                                                     " while the stream is capturing a CUDA graph: call "
                                                     "CudnnAttention::prepare() for this shape before capture");
    return Status::ok();
  }

  Status ensure_handle() {
    int current = 0;
    OROCHI_CUDA_RETURN_IF_ERROR(cudaGetDevice(&current));
    if (handle) {
      if (current != device)
        return Status(ErrorCode::kInvalidArgument, "CudnnAttention was created on cuda:" + std::to_string(device) +
                                                       " but cuda:" + std::to_string(current) + " is current");
      return Status::ok();
    }
    if (cudnnGetVersion() < 90000)
      return Status(ErrorCode::kUnsupported, attention_detail::library_versions() +
                                                 ": Orochi's attention needs cuDNN 9 or newer; install libcudnn9");
    OROCHI_RETURN_IF_ERROR(cudnn_status(cudnnCreate(&handle), "cudnnCreate"));
    device = current;
    return cudnn_status(cudnnSetStream(handle, stream), "cudnnSetStream");
  }

  Status bind_stream(cudaStream_t s) {
    if (s == stream) return Status::ok();
    OROCHI_RETURN_IF_ERROR(cudnn_status(cudnnSetStream(handle, s), "cudnnSetStream"));
    stream = s;
    return Status::ok();
  }

  void* workspace_ptr() const { return external ? external_ptr : workspace; }

  // Makes the workspace fit `plan`; growing allocates, which is refused while `stream` captures.
  Status fit_workspace(const attention_detail::SdpaPlan& plan, const AttentionShape& s, cudaStream_t stream) {
    const size_t need = attention_detail::sdpa_plan_workspace_bytes(plan);
    if (external) {
      if (need > external_bytes)
        return Status(ErrorCode::kInvalidArgument, "attention " + s.to_string() + " needs a " + std::to_string(need) +
                                                       "-byte workspace, the external one has " +
                                                       std::to_string(external_bytes));
      return Status::ok();
    }
    if (need <= workspace_capacity) return Status::ok();
    OROCHI_RETURN_IF_ERROR(refuse_if_capturing(stream, s, "needs a larger workspace"));
    const size_t rounded = (need + (size_t{1} << 20) - 1) & ~((size_t{1} << 20) - 1);  // whole MiB: fewer regrowths
    void* grown = nullptr;
    OROCHI_CUDA_RETURN_IF_ERROR(cudaMalloc(&grown, rounded));
    if (workspace) retired_workspaces.push_back(workspace);
    workspace = grown;
    workspace_capacity = rounded;
    return Status::ok();
  }

  Status run(const void* q, const void* k, const void* v, void* o, const CudnnFp8Scales* fp8,
             const AttentionShape& shape, cudaStream_t s) {
    OROCHI_RETURN_IF_ERROR(check_shape(shape));
    OROCHI_RETURN_IF_ERROR(check_pointer(q, "q"));
    OROCHI_RETURN_IF_ERROR(check_pointer(k, "k"));
    OROCHI_RETURN_IF_ERROR(check_pointer(v, "v"));
    OROCHI_RETURN_IF_ERROR(check_pointer(o, "o"));
    OROCHI_RETURN_IF_ERROR(ensure_handle());
    OROCHI_ASSIGN_OR_RETURN(const attention_detail::SdpaPlan* plan, graph_for(shape, s));
    OROCHI_RETURN_IF_ERROR(fit_workspace(*plan, shape, s));
    OROCHI_RETURN_IF_ERROR(bind_stream(s));
    if (!external && workspace) workspace_handed_out = true;
    return attention_detail::execute_sdpa_plan(*plan, handle, q, k, v, o, workspace_ptr(), fp8)
        .with_context("cuDNN attention " + shape.to_string());
  }

  // The cached graph for `s`, built on a miss. Building allocates and synchronizes, so a miss
  // while `capture_stream` is capturing is refused instead of breaking the capture.
  Expected<attention_detail::SdpaPlan*> graph_for(const AttentionShape& s, cudaStream_t capture_stream) {
    auto it = graphs.find(key_of(s));
    if (it != graphs.end()) return it->second.get();
    OROCHI_RETURN_IF_ERROR(refuse_if_capturing(capture_stream, s, "has no cuDNN graph yet"));
    Expected<SdpaPlanPtr> built = attention_detail::build_sdpa_plan(handle, s, preference);
    if (!built)
      return built.status().with_context(
          "cuDNN attention " + s.to_string() + ", " + attention_detail::library_versions() +
          (s.dtype == DType::kF8E4M3 ? std::string(" (cuDNN's FP8 attention needs compute capability >= 9.0 and "
                                                   "cuDNN >= 9.1.0, not 9.10.0; its bf16 output Blackwell and "
                                                   ">= 9.13.0)")
                                     : std::string()));
    it = graphs.emplace(key_of(s), std::move(*built)).first;
    return it->second.get();
  }
};

CudnnAttention::CudnnAttention(cudaStream_t stream, AttentionImplementation impl) : impl_(std::make_unique<Impl>()) {
  impl_->stream = stream;
  impl_->preference = impl;
}

CudnnAttention::~CudnnAttention() = default;

bool CudnnAttention::compiled_with_frontend() { return true; }

Status CudnnAttention::prepare(const AttentionShape& shape) {
  OROCHI_RETURN_IF_ERROR(check_shape(shape));
  OROCHI_RETURN_IF_ERROR(impl_->ensure_handle());
  OROCHI_ASSIGN_OR_RETURN(attention_detail::SdpaPlan* plan, impl_->graph_for(shape, impl_->stream));
  OROCHI_RETURN_IF_ERROR(impl_->fit_workspace(*plan, shape, impl_->stream));
  // Lazy module loading must not happen later inside the caller's capture.
  return attention_detail::warm_up_sdpa_plan(*plan, impl_->handle).with_context("cuDNN attention " + shape.to_string());
}

Expected<size_t> CudnnAttention::workspace_bytes(int64_t S, int64_t heads, int64_t D) {
  return workspace_bytes(AttentionShape{S, S, heads, D});
}

Expected<size_t> CudnnAttention::workspace_bytes(const AttentionShape& shape) {
  OROCHI_RETURN_IF_ERROR(check_shape(shape));
  OROCHI_RETURN_IF_ERROR(impl_->ensure_handle());
  OROCHI_ASSIGN_OR_RETURN(attention_detail::SdpaPlan* plan, impl_->graph_for(shape, impl_->stream));
  return attention_detail::sdpa_plan_workspace_bytes(*plan);
}

Status CudnnAttention::set_external_workspace(void* device_ptr, size_t bytes) {
  if (device_ptr == nullptr && bytes != 0)
    return Status(ErrorCode::kInvalidArgument, "external attention workspace is null but has a size");
  for (const auto& [key, plan] : impl_->graphs)
    if (device_ptr && attention_detail::sdpa_plan_workspace_bytes(*plan) > bytes)
      return Status(ErrorCode::kInvalidArgument, "a prepared attention shape needs " +
                                                     std::to_string(attention_detail::sdpa_plan_workspace_bytes(*plan)) +
                                                     " workspace bytes, more than the " + std::to_string(bytes) +
                                                     " offered");
  // Buffers no run() has used cannot be inside a captured CUDA graph: release them now.
  if (device_ptr && !impl_->workspace_handed_out) impl_->free_internal_workspace();
  impl_->external = device_ptr != nullptr;
  impl_->external_ptr = device_ptr;
  impl_->external_bytes = bytes;
  return Status::ok();
}

Status CudnnAttention::run(const void* q, const void* k, const void* v, void* o, int64_t S, int64_t heads,
                           int64_t D, cudaStream_t stream) {
  return run(q, k, v, o, AttentionShape{S, S, heads, D}, stream);
}

Status CudnnAttention::run(const void* q, const void* k, const void* v, void* o, const AttentionShape& shape,
                           cudaStream_t stream) {
  if (shape.dtype == DType::kF8E4M3)
    return Status(ErrorCode::kInvalidArgument, "attention " + shape.to_string() + " is FP8: call run_fp8 with its scales");
  return impl_->run(q, k, v, o, nullptr, shape, stream);
}

Status CudnnAttention::run_fp8(const void* q, const void* k, const void* v, void* o, const CudnnFp8Scales& scales,
                               const AttentionShape& shape, cudaStream_t stream) {
  if (shape.dtype != DType::kF8E4M3)
    return Status(ErrorCode::kInvalidArgument, "run_fp8 needs an e4m3 shape, got " + shape.to_string());
  for (const void* p : {static_cast<const void*>(scales.descale_q), static_cast<const void*>(scales.descale_k),
                        static_cast<const void*>(scales.descale_v), static_cast<const void*>(scales.descale_s),
                        static_cast<const void*>(scales.scale_s), static_cast<const void*>(scales.scale_o),
                        static_cast<const void*>(scales.amax_s), static_cast<const void*>(scales.amax_o)})
    if (p == nullptr) return Status(ErrorCode::kInvalidArgument, "FP8 attention: every scale pointer must be set");
  return impl_->run(q, k, v, o, &scales, shape, stream);
}

Expected<DType> CudnnAttention::fp8_output_dtype(const AttentionShape& shape) {
  if (shape.dtype != DType::kF8E4M3)
    return Status(ErrorCode::kInvalidArgument, "fp8_output_dtype needs an e4m3 shape, got " + shape.to_string());
  OROCHI_RETURN_IF_ERROR(check_shape(shape));
  OROCHI_RETURN_IF_ERROR(impl_->ensure_handle());
  OROCHI_ASSIGN_OR_RETURN(attention_detail::SdpaPlan* plan, impl_->graph_for(shape, impl_->stream));
  return attention_detail::sdpa_plan_output_dtype(*plan);
}

Expected<std::vector<CudnnAttention::CandidateTiming>> CudnnAttention::time_candidate_plans(
    const AttentionShape& shape, const void* q, const void* k, const void* v, void* o, cudaStream_t stream,
    int runs) {
  OROCHI_RETURN_IF_ERROR(impl_->ensure_handle());
  OROCHI_RETURN_IF_ERROR(impl_->bind_stream(stream));
  return attention_detail::time_sdpa_candidates(impl_->handle, shape, impl_->preference, q, k, v, o, stream, runs);
}

std::string CudnnAttention::describe(const AttentionShape& shape) const {
  auto it = impl_->graphs.find(key_of(shape));
  if (it == impl_->graphs.end()) return "not built";
  return attention_detail::sdpa_plan_description(*it->second) + ", " + attention_detail::library_versions();
}

size_t CudnnAttention::cached_graph_count() const { return impl_->graphs.size(); }

#else  // !OROCHI_WITH_CUDNN_FRONTEND

namespace {
Status no_frontend() {
  return Status(ErrorCode::kUnsupported,
                "Orochi was built without the cudnn-frontend headers, so GPU attention is unavailable: run "
                "scripts/install_deps.sh and configure with -DOROCHI_CUDNN_FRONTEND_INCLUDE=<repo>/.deps/"
                "cudnn_frontend-<version>/include (scripts/build.sh does both)");
}
}  // namespace

struct CudnnAttention::Impl {};

CudnnAttention::CudnnAttention(cudaStream_t, AttentionImplementation) : impl_(std::make_unique<Impl>()) {}
CudnnAttention::~CudnnAttention() = default;
bool CudnnAttention::compiled_with_frontend() { return false; }
Status CudnnAttention::prepare(const AttentionShape&) { return no_frontend(); }
Expected<size_t> CudnnAttention::workspace_bytes(int64_t, int64_t, int64_t) { return no_frontend(); }
Expected<size_t> CudnnAttention::workspace_bytes(const AttentionShape&) { return no_frontend(); }
Status CudnnAttention::set_external_workspace(void*, size_t) { return no_frontend(); }
Status CudnnAttention::run(const void*, const void*, const void*, void*, int64_t, int64_t, int64_t, cudaStream_t) {
  return no_frontend();
}
Status CudnnAttention::run(const void*, const void*, const void*, void*, const AttentionShape&, cudaStream_t) {
  return no_frontend();
}
Status CudnnAttention::run_fp8(const void*, const void*, const void*, void*, const CudnnFp8Scales&,
                               const AttentionShape&, cudaStream_t) {
  return no_frontend();
}
Expected<DType> CudnnAttention::fp8_output_dtype(const AttentionShape&) { return no_frontend(); }
Expected<std::vector<CudnnAttention::CandidateTiming>> CudnnAttention::time_candidate_plans(
    const AttentionShape&, const void*, const void*, const void*, void*, cudaStream_t, int) {
  return no_frontend();
}
std::string CudnnAttention::describe(const AttentionShape&) const { return "cudnn-frontend not compiled in"; }
size_t CudnnAttention::cached_graph_count() const { return 0; }

#endif  // OROCHI_WITH_CUDNN_FRONTEND

}  // namespace orochi::cuda
