// Optional per-stage GPU timing for `orochi bench dit --profile`: CUDA events around each named
// stage of a forward, summed by name. Off (no events, no syncs) unless enabled.
#pragma once

#include <cuda_runtime_api.h>

#include <map>
#include <string>
#include <vector>

namespace orochi::layers::gpu {

class StageTimer {
 public:
  ~StageTimer();
  void enable(cudaStream_t stream) { stream_ = stream; enabled_ = true; }
  bool enabled() const { return enabled_; }
  void begin(const char* name);
  void end();
  // Waits for the stream and returns total milliseconds per stage name; clears the records.
  std::map<std::string, double> collect();

 private:
  struct Record {
    std::string name;
    cudaEvent_t start, stop;
  };
  bool enabled_ = false;
  cudaStream_t stream_ = nullptr;
  std::vector<Record> records_;
  std::vector<cudaEvent_t> pool_;
  cudaEvent_t take();
};

}  // namespace orochi::layers::gpu
