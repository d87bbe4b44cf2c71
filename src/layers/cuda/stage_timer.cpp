#include "layers/cuda/stage_timer.h"

namespace orochi::layers::gpu {

StageTimer::~StageTimer() {
  for (Record& r : records_) {
    cudaEventDestroy(r.start);
    cudaEventDestroy(r.stop);
  }
  for (cudaEvent_t e : pool_) cudaEventDestroy(e);
}

cudaEvent_t StageTimer::take() {
  if (!pool_.empty()) {
    cudaEvent_t e = pool_.back();
    pool_.pop_back();
    return e;
  }
  cudaEvent_t e = nullptr;
  cudaEventCreate(&e);
  return e;
}

void StageTimer::begin(const char* name) {
  if (!enabled_) return;
  Record r{name, take(), take()};
  cudaEventRecord(r.start, stream_);
  records_.push_back(r);
}

void StageTimer::end() {
  if (!enabled_ || records_.empty()) return;
  cudaEventRecord(records_.back().stop, stream_);
}

std::map<std::string, double> StageTimer::collect() {
  std::map<std::string, double> ms;
  cudaStreamSynchronize(stream_);
  for (Record& r : records_) {
    float t = 0;
    cudaEventElapsedTime(&t, r.start, r.stop);
    ms[r.name] += t;
    pool_.push_back(r.start);
    pool_.push_back(r.stop);
  }
  records_.clear();
  return ms;
}

}  // namespace orochi::layers::gpu
