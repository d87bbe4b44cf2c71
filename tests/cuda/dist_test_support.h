// What the two-GPU collective tests share: device buffers ordered on a stream, one stream per
// GPU, and one worker thread per GPU (that GPU current) as in a run.
#pragma once

#include <cuda_runtime_api.h>
#include <gtest/gtest.h>

#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "dist/comm.h"
#include "dist/workers.h"

namespace orochi::testing {

using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

constexpr int kRanks = 2;

bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

milliseconds since(Clock::time_point start) { return std::chrono::duration_cast<milliseconds>(Clock::now() - start); }

// Device memory of the calling thread's GPU; copies go through `stream` so they are ordered with
// the collectives (a synchronous cudaMemcpy may return before its DMA has landed).
class DeviceBytes {
 public:
  DeviceBytes(size_t bytes, cudaStream_t stream) : bytes_(bytes), stream_(stream) {
    EXPECT_EQ(cudaMalloc(&data_, bytes), cudaSuccess);
  }
  ~DeviceBytes() { cudaFree(data_); }
  DeviceBytes(const DeviceBytes&) = delete;
  DeviceBytes& operator=(const DeviceBytes&) = delete;

  void* get() const { return data_; }
  template <typename T>
  void upload(const std::vector<T>& host) {
    ASSERT_EQ(host.size() * sizeof(T), bytes_);
    ASSERT_EQ(cudaMemcpyAsync(data_, host.data(), bytes_, cudaMemcpyHostToDevice, stream_), cudaSuccess);
    ASSERT_EQ(cudaStreamSynchronize(stream_), cudaSuccess);
  }
  template <typename T>
  std::vector<T> download() const {
    std::vector<T> host(bytes_ / sizeof(T));
    EXPECT_EQ(cudaMemcpyAsync(host.data(), data_, bytes_, cudaMemcpyDeviceToHost, stream_), cudaSuccess);
    EXPECT_EQ(cudaStreamSynchronize(stream_), cudaSuccess);
    return host;
  }

 private:
  void* data_ = nullptr;
  size_t bytes_;
  cudaStream_t stream_;
};

// Skips without two GPUs; one non-blocking stream per GPU.
class TwoGpuTest : public ::testing::Test {
 protected:
  void SetUp() override {
    int count = 0;
    if (cudaGetDeviceCount(&count) != cudaSuccess || count < kRanks)
      GTEST_SKIP() << "needs " << kRanks << " GPUs, found " << count;
    for (int device = 0; device < kRanks; ++device) {
      ASSERT_EQ(cudaSetDevice(device), cudaSuccess);
      cudaStream_t stream = nullptr;
      ASSERT_EQ(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), cudaSuccess);
      streams_.push_back(stream);
    }
  }
  void TearDown() override {
    for (int device = 0; device < static_cast<int>(streams_.size()); ++device) {
      cudaSetDevice(device);
      EXPECT_EQ(cudaStreamSynchronize(streams_[device]), cudaSuccess);
      cudaStreamDestroy(streams_[device]);
    }
  }

  // body(comm, stream) on one thread per GPU, that GPU current, as the workers of a run do.
  void run_ranks(const std::vector<std::unique_ptr<dist::Comm>>& comms,
                 const std::function<void(dist::Comm&, cudaStream_t)>& body) {
    const std::vector<Status> ran = dist::Workers(kRanks).run([&](int r) -> Status {
      if (cudaSetDevice(r) != cudaSuccess) return Status(ErrorCode::kInternal, "cudaSetDevice");
      body(*comms[r], streams_[r]);
      return Status::ok();
    });
    for (const Status& s : ran) ASSERT_TRUE(s.is_ok()) << s.to_string();
  }

  std::vector<cudaStream_t> streams_;
};

}  // namespace orochi::testing
