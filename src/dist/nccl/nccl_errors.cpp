#include "dist/nccl/nccl_errors.h"

namespace orochi::dist {
namespace {

const char* advice_for(ncclResult_t result) {
  switch (result) {
    case ncclUnhandledCudaError:
      return "a CUDA call inside NCCL failed: a GPU may be lost or out of memory (check nvidia-smi)";
    case ncclSystemError: return "a system call inside NCCL failed (shared memory, sockets, /dev/shm size)";
    case ncclRemoteError: return "a peer rank failed or a link between GPUs went down";
    case ncclInvalidArgument:
    case ncclInvalidUsage: return "Orochi passed NCCL something it rejects, which is a bug in Orochi: please report it";
    case ncclInternalError: return "NCCL hit an internal error (a bug in NCCL or memory corruption)";
    default: return "see NCCL's log";
  }
}

}  // namespace

Status nccl_status(ncclResult_t result, const std::string& what) {
  if (result == ncclSuccess) return Status::ok();
  std::string message = what + " failed: " + ncclGetErrorString(result);
  // NCCL keeps one last-error string per process; it may belong to an earlier failure.
  const char* last = ncclGetLastError(nullptr);
  if (last != nullptr && last[0] != '\0') message += " (NCCL: " + std::string(last) + ")";
  message += ". " + std::string(advice_for(result)) + "; rerun with NCCL_DEBUG=WARN for NCCL's own log";
  return io_error(std::move(message));
}

Expected<ncclDataType_t> nccl_sum_type(DType dtype) {
  // The same types CPU ranks add (dist/cpu_exchange.h summable), so parallel code behaves alike.
  switch (dtype) {
    case DType::kF32: return ncclFloat32;
    case DType::kBF16: return ncclBfloat16;
    case DType::kF16: return ncclFloat16;
    case DType::kF64: return ncclFloat64;
    case DType::kI64: return ncclInt64;
    case DType::kI32: return ncclInt32;
    default: break;
  }
  return unsupported(std::string("cannot sum ") + dtype_name(dtype) +
                     ": all_reduce_sum takes f32, f64, bf16, f16, i64 and i32 (fp8 tensors carry per-tensor "
                     "scales, so convert them first)");
}

}  // namespace orochi::dist
