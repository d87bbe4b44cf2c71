#include "backends/cuda/tensor_maps.h"

#include <cudaTypedefs.h>
#include <cuda_runtime_api.h>

#include <array>
#include <atomic>
#include <mutex>
#include <string>

#include "backends/cuda/cuda_check.h"

namespace orochi::cuda {
namespace {

// cuTensorMapEncodeTiled from the driver, found once through the runtime (no link to libcuda).
Expected<PFN_cuTensorMapEncodeTiled_v12000> tensor_map_encoder() {
  static PFN_cuTensorMapEncodeTiled_v12000 fn = nullptr;
  static cudaError_t error = cudaSuccess;
  static std::once_flag once;
  std::call_once(once, [] {
    void* p = nullptr;
    cudaDriverEntryPointQueryResult found{};
    error = cudaGetDriverEntryPointByVersion("cuTensorMapEncodeTiled", &p, 12000, cudaEnableDefault, &found);
    if (error == cudaSuccess && found == cudaDriverEntryPointSuccess) fn = reinterpret_cast<PFN_cuTensorMapEncodeTiled_v12000>(p);
  });
  if (fn == nullptr)
    return Status(ErrorCode::kUnsupported, std::string("the CUDA driver offers no cuTensorMapEncodeTiled (") +
                                               cudaGetErrorString(error) + "); update the NVIDIA driver to CUDA 12+");
  return fn;
}

template <int kRank>
Status encode(CUtensorMap& map, const void* base, const cuuint64_t (&dims)[kRank],
              const cuuint64_t (&strides)[kRank - 1], const cuuint32_t (&box)[kRank], const std::string& what,
              CUtensorMapDataType type = CU_TENSOR_MAP_DATA_TYPE_BFLOAT16) {
  OROCHI_ASSIGN_OR_RETURN(PFN_cuTensorMapEncodeTiled_v12000 fn, tensor_map_encoder());
  map = CUtensorMap{};
  cuuint32_t element_strides[kRank];
  for (int i = 0; i < kRank; ++i) element_strides[i] = 1;
  const CUresult r = fn(&map, type, kRank, const_cast<void*>(base), dims, strides, box,
                        element_strides, CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_128B,
                        CU_TENSOR_MAP_L2_PROMOTION_L2_256B, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
  if (r != CUDA_SUCCESS)
    return Status(ErrorCode::kInvalidArgument,
                  "cuTensorMapEncodeTiled failed (CUresult " + std::to_string(static_cast<int>(r)) + ") for " + what);
  return Status::ok();
}

// A device attribute of the current device, read once per device (the sm_90a launchers ask on
// every call).
Expected<int> cached_attribute(cudaDeviceAttr attribute, std::array<std::atomic<int>, 64>& cache) {
  int device = 0;
  OROCHI_CUDA_RETURN_IF_ERROR(cudaGetDevice(&device));
  std::atomic<int>& slot = cache[static_cast<size_t>(device) & 63];
  const int stored = slot.load();  // the value + 1, so that 0 means "not read yet"
  if (stored != 0) return stored - 1;
  int value = 0;
  OROCHI_CUDA_RETURN_IF_ERROR(cudaDeviceGetAttribute(&value, attribute, device));
  slot.store(value + 1);
  return value;
}

}  // namespace

Status bf16_rows_map(CUtensorMap& map, const void* base, int64_t rows, int64_t cols, int box_rows) {
  const cuuint64_t dims[2] = {static_cast<cuuint64_t>(cols), static_cast<cuuint64_t>(rows)};
  const cuuint64_t strides[1] = {static_cast<cuuint64_t>(cols * 2)};
  const cuuint32_t box[2] = {64, static_cast<cuuint32_t>(box_rows)};
  return encode<2>(map, base, dims, strides, box, std::to_string(rows) + " x " + std::to_string(cols) + " bf16");
}

Status bf16_rows_heads_map(CUtensorMap& map, const void* base, int64_t rows, int64_t heads, int box_rows) {
  const cuuint64_t dims[3] = {128, static_cast<cuuint64_t>(heads), static_cast<cuuint64_t>(rows)};
  const cuuint64_t strides[2] = {128 * 2, static_cast<cuuint64_t>(heads * 128 * 2)};
  const cuuint32_t box[3] = {64, 1, static_cast<cuuint32_t>(box_rows)};
  return encode<3>(map, base, dims, strides, box,
                   std::to_string(rows) + " rows x " + std::to_string(heads) + " heads x 128 bf16");
}

Status u8_rows_map(CUtensorMap& map, const void* base, int64_t rows, int64_t cols, int box_rows) {
  const cuuint64_t dims[2] = {static_cast<cuuint64_t>(cols), static_cast<cuuint64_t>(rows)};
  const cuuint64_t strides[1] = {static_cast<cuuint64_t>(cols)};
  const cuuint32_t box[2] = {128, static_cast<cuuint32_t>(box_rows)};
  return encode<2>(map, base, dims, strides, box, std::to_string(rows) + " x " + std::to_string(cols) + " u8",
                   CU_TENSOR_MAP_DATA_TYPE_UINT8);
}

bool device_is_hopper() {
  static std::array<std::atomic<int>, 64> major_cache{}, minor_cache{};
  const Expected<int> major = cached_attribute(cudaDevAttrComputeCapabilityMajor, major_cache);
  const Expected<int> minor = cached_attribute(cudaDevAttrComputeCapabilityMinor, minor_cache);
  return major.has_value() && minor.has_value() && *major == 9 && *minor == 0;
}

Expected<int> multiprocessor_count() {
  static std::array<std::atomic<int>, 64> cache{};
  return cached_attribute(cudaDevAttrMultiProcessorCount, cache);
}

}  // namespace orochi::cuda
