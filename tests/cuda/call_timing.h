// Timing of GPU calls in the informative tests: each call between events, synchronized after.
#pragma once

#include <cuda_runtime_api.h>

#include <algorithm>
#include <functional>
#include <string>
#include <vector>

#include "core/status.h"

namespace orochi::cuda_timing {

// Times run() (which enqueues on `stream`): two untimed calls, then ten, each between events and
// synchronized after. The median is the mean of the middle two.
struct CallTimes {
  double median_ms = 0, min_ms = 0, max_ms = 0;
};
inline Expected<CallTimes> time_calls(const std::function<Status()>& run, cudaStream_t stream) {
  constexpr int kWarmup = 2, kRuns = 10;
  cudaEvent_t start = nullptr, stop = nullptr;
  if (cudaEventCreate(&start) != cudaSuccess || cudaEventCreate(&stop) != cudaSuccess)
    return Status(ErrorCode::kIo, "cudaEventCreate failed");
  std::vector<float> ms;
  Status status;
  for (int i = 0; i < kWarmup + kRuns && status.is_ok(); ++i) {
    cudaEventRecord(start, stream);
    status = run();
    cudaEventRecord(stop, stream);
    float t = 0;
    if (status.is_ok() && (cudaEventSynchronize(stop) != cudaSuccess || cudaEventElapsedTime(&t, start, stop) != cudaSuccess))
      status = Status(ErrorCode::kIo, std::string("timing events failed: ") + cudaGetErrorString(cudaGetLastError()));
    if (i >= kWarmup) ms.push_back(t);
  }
  cudaEventDestroy(start);
  cudaEventDestroy(stop);
  if (!status.is_ok()) return status;
  std::sort(ms.begin(), ms.end());
  return CallTimes{0.5 * (ms[kRuns / 2 - 1] + ms[kRuns / 2]), ms.front(), ms.back()};
}

}  // namespace orochi::cuda_timing
