#include "backends/cuda/attention_cudnn_graph.h"

#if OROCHI_WITH_CUDNN_FRONTEND

// Third-party headers: their unused static helpers must not turn into warnings of ours.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wunused-function"
#include <cudnn_frontend.h>
#pragma GCC diagnostic pop

#include <algorithm>
#include <cmath>
#include <exception>
#include <unordered_map>
#include <vector>

namespace orochi::cuda::attention_detail {

namespace fe = cudnn_frontend;

// Tensor uids of the variant pack; 5-12 are an FP8 plan's scalars.
constexpr int64_t kUidQ = 1, kUidK = 2, kUidV = 3, kUidO = 4;
constexpr int64_t kUidDescaleQ = 5, kUidDescaleK = 6, kUidDescaleV = 7, kUidDescaleS = 8, kUidScaleS = 9,
                  kUidScaleO = 10, kUidAmaxS = 11, kUidAmaxO = 12;

struct SdpaPlan {
  std::shared_ptr<fe::graph::Graph> graph;
  AttentionImplementation implementation = AttentionImplementation::kAuto;  // the one that built
  DType output_dtype = DType::kBF16;
  bool fp8 = false;  // e4m3 operands: the variant pack carries the scalars
  int64_t workspace_bytes = 0;
  std::string engine;  // cuDNN's name for the chosen execution plan
  mutable bool kernels_loaded = false;  // by a warm-up or an eager execute
};

void SdpaPlanDeleter::operator()(SdpaPlan* plan) const { delete plan; }

namespace {

const char* frontend_code_name(fe::error_code_t code) {
  switch (code) {
    case fe::error_code_t::OK: return "OK";
    case fe::error_code_t::ATTRIBUTE_NOT_SET: return "ATTRIBUTE_NOT_SET";
    case fe::error_code_t::SHAPE_DEDUCTION_FAILED: return "SHAPE_DEDUCTION_FAILED";
    case fe::error_code_t::INVALID_TENSOR_NAME: return "INVALID_TENSOR_NAME";
    case fe::error_code_t::INVALID_VARIANT_PACK: return "INVALID_VARIANT_PACK";
    case fe::error_code_t::GRAPH_NOT_SUPPORTED: return "GRAPH_NOT_SUPPORTED";
    case fe::error_code_t::GRAPH_EXECUTION_PLAN_CREATION_FAILED: return "GRAPH_EXECUTION_PLAN_CREATION_FAILED";
    case fe::error_code_t::GRAPH_EXECUTION_FAILED: return "GRAPH_EXECUTION_FAILED";
    case fe::error_code_t::HEURISTIC_QUERY_FAILED: return "HEURISTIC_QUERY_FAILED";
    case fe::error_code_t::UNSUPPORTED_GRAPH_FORMAT: return "UNSUPPORTED_GRAPH_FORMAT";
    case fe::error_code_t::CUDA_API_FAILED: return "CUDA_API_FAILED";
    case fe::error_code_t::CUDNN_BACKEND_API_FAILED: return "CUDNN_BACKEND_API_FAILED";
    case fe::error_code_t::INVALID_CUDA_DEVICE: return "INVALID_CUDA_DEVICE";
    case fe::error_code_t::HANDLE_ERROR: return "HANDLE_ERROR";
    case fe::error_code_t::INVALID_VALUE: return "INVALID_VALUE";
    case fe::error_code_t::NVRTC_COMPILATION_FAILED: return "NVRTC_COMPILATION_FAILED";
  }
  return "UNKNOWN";
}

std::string version_string(size_t v) {  // cuDNN 9 encodes major*10000 + minor*100 + patch
  return std::to_string(v / 10000) + "." + std::to_string(v / 100 % 100) + "." + std::to_string(v % 100);
}

fe::AttentionImplementation_t to_frontend(AttentionImplementation impl) {
  return impl == AttentionImplementation::kUnified ? fe::AttentionImplementation_t::UNIFIED
                                                   : fe::AttentionImplementation_t::COMPOSITE;
}

Status frontend_status(fe::error_t err, const std::string& what) {
  if (err.is_good()) return Status::ok();
  const fe::error_code_t code = err.get_code();
  const bool unsupported = code == fe::error_code_t::GRAPH_NOT_SUPPORTED ||
                           code == fe::error_code_t::HEURISTIC_QUERY_FAILED ||
                           code == fe::error_code_t::GRAPH_EXECUTION_PLAN_CREATION_FAILED ||
                           code == fe::error_code_t::UNSUPPORTED_GRAPH_FORMAT;
  return Status(unsupported ? ErrorCode::kUnsupported : ErrorCode::kIo,
                what + ": " + frontend_code_name(code) + ": " + err.get_message());
}

fe::DataType_t frontend_type(DType t) {
  switch (t) {
    case DType::kF16: return fe::DataType_t::HALF;
    case DType::kF8E4M3: return fe::DataType_t::FP8_E4M3;
    default: return fe::DataType_t::BFLOAT16;
  }
}

std::unordered_map<int64_t, void*> variant_pack(const void* q, const void* k, const void* v, void* o,
                                                const CudnnFp8Scales* fp8) {
  std::unordered_map<int64_t, void*> pack = {{kUidQ, const_cast<void*>(q)},
                                             {kUidK, const_cast<void*>(k)},
                                             {kUidV, const_cast<void*>(v)},
                                             {kUidO, o}};
  if (fp8) {
    pack[kUidDescaleQ] = const_cast<float*>(fp8->descale_q);
    pack[kUidDescaleK] = const_cast<float*>(fp8->descale_k);
    pack[kUidDescaleV] = const_cast<float*>(fp8->descale_v);
    pack[kUidDescaleS] = const_cast<float*>(fp8->descale_s);
    pack[kUidScaleS] = const_cast<float*>(fp8->scale_s);
    pack[kUidScaleO] = const_cast<float*>(fp8->scale_o);
    pack[kUidAmaxS] = fp8->amax_s;
    pack[kUidAmaxO] = fp8->amax_o;
  }
  return pack;
}

// One lowering, no fallback. `impl` is kUnified or kComposite; `output` is O's dtype (the shape's
// own, or for FP8 kBF16 / kF8E4M3). The default modes and policy build the heuristic's first
// choice only; the candidate survey asks for every plan.
Expected<SdpaPlanPtr> build_with(cudnnHandle_t handle, const AttentionShape& s, AttentionImplementation impl,
                                 DType output,
                                 const std::vector<fe::HeurMode_t>& modes = {fe::HeurMode_t::A,
                                                                            fe::HeurMode_t::FALLBACK},
                                 fe::BuildPlanPolicy_t policy = fe::BuildPlanPolicy_t::HEURISTICS_CHOICE) {
  const fe::DataType_t io_type = frontend_type(s.dtype);
  const bool fp8 = s.dtype == DType::kF8E4M3;
  auto graph = std::make_shared<fe::graph::Graph>();
  graph->set_io_data_type(io_type)
      .set_intermediate_data_type(fe::DataType_t::FLOAT)
      .set_compute_data_type(fe::DataType_t::FLOAT);

  const int64_t H = s.heads, Hkv = s.kv_head_count(), D = s.head_dim;
  // Row-major [rows, heads, D] seen as cuDNN's (B=1, heads, rows, D): a head is D apart, a row
  // heads*D apart.
  auto strides = [&](int64_t rows, int64_t heads) { return std::vector<int64_t>{rows * heads * D, D, heads * D, 1}; };
  auto input = [&](const char* name, int64_t uid, int64_t rows, int64_t heads) {
    return graph->tensor(fe::graph::Tensor_attributes()
                             .set_name(name)
                             .set_uid(uid)
                             .set_data_type(io_type)
                             .set_dim({1, heads, rows, D})
                             .set_stride(strides(rows, heads)));
  };
  auto q = input("Q", kUidQ, s.s_q, H);     // [1, H, S_q, D]
  auto k = input("K", kUidK, s.s_kv, Hkv);  // [1, Hkv, S_kv, D]: grouped-query when Hkv < H
  auto v = input("V", kUidV, s.s_kv, Hkv);

  // Inference: no softmax statistics, no dropout; the scale is a pass-by-value scalar.
  auto attributes = fe::graph::SDPA_attributes()
                        .set_name("sdpa")
                        .set_generate_stats(false)
                        .set_attn_scale(1.0f / std::sqrt(static_cast<float>(D)))
                        .set_implementation(to_frontend(impl));
  if (s.causal) attributes.set_causal_mask(true);  // top-left aligned: row i sees keys 0..i
  std::shared_ptr<fe::graph::Tensor_attributes> o;
  if (fp8) {
    auto scalar = [&](const char* name, int64_t uid) {  // [1, 1, 1, 1] f32 in device memory
      return graph->tensor(fe::graph::Tensor_attributes()
                               .set_name(name)
                               .set_uid(uid)
                               .set_data_type(fe::DataType_t::FLOAT)
                               .set_dim({1, 1, 1, 1})
                               .set_stride({1, 1, 1, 1}));
    };
    auto outputs = graph->sdpa_fp8(q, k, v, scalar("Descale_Q", kUidDescaleQ), scalar("Descale_K", kUidDescaleK),
                                   scalar("Descale_V", kUidDescaleV), scalar("Descale_S", kUidDescaleS),
                                   scalar("Scale_S", kUidScaleS), scalar("Scale_O", kUidScaleO),
                                   std::move(attributes));
    o = outputs[0];
    for (auto [amax, uid] : {std::pair{outputs[2], kUidAmaxS}, std::pair{outputs[3], kUidAmaxO}})
      amax->set_output(true).set_uid(uid).set_data_type(fe::DataType_t::FLOAT).set_dim({1, 1, 1, 1}).set_stride(
          {1, 1, 1, 1});
  } else {
    o = graph->sdpa(q, k, v, std::move(attributes))[0];
  }
  o->set_output(true)  // O: [1, H, S_q, D] in the same row-major layout as q
      .set_uid(kUidO)
      .set_data_type(frontend_type(output))
      .set_dim({1, H, s.s_q, D})
      .set_stride(strides(s.s_q, H));

  OROCHI_RETURN_IF_ERROR(frontend_status(graph->build(handle, modes, policy), "building the graph"));

  SdpaPlanPtr built(new SdpaPlan);
  built->implementation = impl;
  built->output_dtype = output;
  built->fp8 = fp8;
  OROCHI_RETURN_IF_ERROR(frontend_status(graph->get_workspace_size(built->workspace_bytes), "workspace size"));
  if (!graph->get_plan_name(built->engine).is_good()) built->engine = "unknown engine";
  built->graph = std::move(graph);
  return built;
}

Expected<SdpaPlanPtr> build_guarded(cudnnHandle_t handle, const AttentionShape& s, AttentionImplementation impl,
                                    DType output) {
  // The frontend throws for a few conditions (no implementation fits, a missing symbol); nothing
  // may leave the backend as an exception.
  try {
    return build_with(handle, s, impl, output);
  } catch (const std::exception& e) {
    return Status(ErrorCode::kUnsupported, std::string("cudnn-frontend threw: ") + e.what());
  }
}

}  // namespace

Expected<std::vector<CudnnAttention::CandidateTiming>> time_sdpa_candidates(cudnnHandle_t handle,
                                                                            const AttentionShape& shape,
                                                                            AttentionImplementation impl,
                                                                            const void* q, const void* k,
                                                                            const void* v, void* o,
                                                                            cudaStream_t stream, int runs) {
  if (shape.dtype == DType::kF8E4M3)
    return Status(ErrorCode::kUnsupported, "the candidate plan survey times bf16 / f16 shapes, got " + shape.to_string());
  if (impl == AttentionImplementation::kAuto) {
    Expected<SdpaPlanPtr> unified = build_guarded(handle, shape, AttentionImplementation::kUnified, shape.dtype);
    impl = unified ? AttentionImplementation::kUnified : AttentionImplementation::kComposite;
  }
  std::vector<CudnnAttention::CandidateTiming> out;
  try {
    Expected<SdpaPlanPtr> all = build_with(handle, shape, impl, shape.dtype, {fe::HeurMode_t::A, fe::HeurMode_t::B},
                                           fe::BuildPlanPolicy_t::ALL);
    if (!all) return all.status();
    fe::graph::Graph& g = *(*all)->graph;
    const int64_t count = g.get_execution_plan_count();
    int64_t most = 0;
    for (int64_t i = 0; i < count; ++i) {
      int64_t ws = 0;
      if (g.get_workspace_size_plan_at_index(i, ws).is_good()) most = std::max(most, ws);
    }
    void* workspace = nullptr;
    if (most > 0 && cudaMalloc(&workspace, static_cast<size_t>(most)) != cudaSuccess) {
      cudaGetLastError();
      return Status(ErrorCode::kIo, "no room for a " + std::to_string(most) + "-byte attention workspace");
    }
    std::unordered_map<int64_t, void*> pack = variant_pack(q, k, v, o, nullptr);
    cudaEvent_t start = nullptr, stop = nullptr;
    cudaEventCreate(&start);
    cudaEventCreate(&stop);
    for (int64_t i = 0; i < count; ++i) {
      CudnnAttention::CandidateTiming t;
      (void)g.get_plan_name_at_index(i, t.engine);
      int64_t ws = 0;
      (void)g.get_workspace_size_plan_at_index(i, ws);
      t.workspace_bytes = static_cast<size_t>(ws);
      std::vector<float> ms;
      bool ok = g.execute_plan_at_index(handle, pack, workspace, i).is_good();  // warm-up
      for (int r = 0; r < runs && ok; ++r) {
        ok = cudaEventRecord(start, stream) == cudaSuccess &&
             g.execute_plan_at_index(handle, pack, workspace, i).is_good() &&
             cudaEventRecord(stop, stream) == cudaSuccess && cudaEventSynchronize(stop) == cudaSuccess;
        float e = 0;
        if (ok && cudaEventElapsedTime(&e, start, stop) == cudaSuccess) ms.push_back(e);
      }
      std::sort(ms.begin(), ms.end());
      t.ms = ok && !ms.empty() ? ms[ms.size() / 2] : -1.0;
      out.push_back(std::move(t));
    }
    cudaEventDestroy(start);
    cudaEventDestroy(stop);
    cudaStreamSynchronize(stream);
    if (workspace) cudaFree(workspace);
    cudaGetLastError();
  } catch (const std::exception& e) {
    return Status(ErrorCode::kUnsupported, std::string("cudnn-frontend threw: ") + e.what());
  }
  return out;
}

std::string library_versions() {
  return "cuDNN runtime " + version_string(cudnnGetVersion()) + " (headers " + version_string(CUDNN_VERSION) +
         "), cudnn-frontend " + std::to_string(CUDNN_FRONTEND_MAJOR_VERSION) + "." +
         std::to_string(CUDNN_FRONTEND_MINOR_VERSION) + "." + std::to_string(CUDNN_FRONTEND_PATCH_VERSION);
}

Expected<SdpaPlanPtr> build_sdpa_plan(cudnnHandle_t handle, const AttentionShape& shape,
                                      AttentionImplementation impl) {
  // The unified operation is one backend op with the newest kernels; older cuDNN (< 9.13.1; FP8
  // < 9.25) or an architecture without unified engines leaves the composite graph, which cuDNN 9
  // always fuses. FP8 prefers a bf16 output (no second rounding of O); Hopper offers only e4m3.
  std::vector<AttentionImplementation> impls = {impl};
  if (impl == AttentionImplementation::kAuto) impls = {AttentionImplementation::kUnified, AttentionImplementation::kComposite};
  std::vector<DType> outputs = {shape.dtype};
  if (shape.dtype == DType::kF8E4M3) outputs = {DType::kBF16, DType::kF8E4M3};
  std::string errors;
  ErrorCode code = ErrorCode::kUnsupported;
  for (DType output : outputs) {
    for (AttentionImplementation each : impls) {
      Expected<SdpaPlanPtr> built = build_guarded(handle, shape, each, output);
      if (built) return built;
      code = built.status().code();
      errors += std::string(errors.empty() ? "" : "; ") + attention_implementation_name(each) + " SDPA" +
                (outputs.size() > 1 ? std::string(", ") + dtype_name(output) + " output" : std::string()) + ": " +
                built.status().message();
    }
  }
  return Status(code, errors);
}

size_t sdpa_plan_workspace_bytes(const SdpaPlan& plan) { return static_cast<size_t>(plan.workspace_bytes); }

DType sdpa_plan_output_dtype(const SdpaPlan& plan) { return plan.output_dtype; }

std::string sdpa_plan_description(const SdpaPlan& plan) {
  return std::string(attention_implementation_name(plan.implementation)) + " SDPA" +
         (plan.fp8 ? std::string(" fp8, ") + dtype_name(plan.output_dtype) + " output" : std::string()) +
         ", engine " + plan.engine +
         ", workspace " + std::to_string(plan.workspace_bytes) + " B";
}

Status execute_sdpa_plan(const SdpaPlan& plan, cudnnHandle_t handle, const void* q, const void* k, const void* v,
                         void* o, void* workspace, const CudnnFp8Scales* fp8) {
  if (plan.fp8 != (fp8 != nullptr))
    return Status(ErrorCode::kInvalidArgument, plan.fp8 ? "an FP8 attention plan needs its scales (run_fp8)"
                                                        : "scales given to a bf16 / f16 attention plan");
  std::unordered_map<int64_t, void*> pack = variant_pack(q, k, v, o, fp8);
  try {
    Status status = frontend_status(plan.graph->execute(handle, pack, workspace), "executing");
    if (status.is_ok()) plan.kernels_loaded = true;
    return status;
  } catch (const std::exception& e) {
    return Status(ErrorCode::kIo, std::string("cudnn-frontend threw while executing: ") + e.what());
  }
}

Status warm_up_sdpa_plan(SdpaPlan& plan, cudnnHandle_t handle) {
  if (plan.kernels_loaded) return Status::ok();
  try {
    Status status = frontend_status(plan.graph->warmup(handle), "warm-up");
    if (status.is_ok()) plan.kernels_loaded = true;
    return status;
  } catch (const std::exception& e) {
    return Status(ErrorCode::kIo, std::string("cudnn-frontend threw during warm-up: ") + e.what());
  }
}

}  // namespace orochi::cuda::attention_detail

#endif  // OROCHI_WITH_CUDNN_FRONTEND
