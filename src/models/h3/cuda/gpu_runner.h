// The MiniMax-H3 denoiser forward on one GPU, bf16 with the checkpoint's f32 islands, rounding
// where diffusers' bf16 PyTorch ops round. Memory is planned: one arena for the resident weights,
// one for the request (tables, inputs, activations), both sized before anything runs; a step
// allocates nothing.
//
//   runner = H3GpuRunner::create(config, device, max_rows, max_text_rows)
//   runner->init_random_weights(seed)  or  runner->upload_weights(host_weights)
//   runner->set_request(timesteps, inputs)   // AdaLN tables for every timestep, RoPE, rows
//   runner->forward()                        // enqueued on runner->stream()
//   runner->update_rows(inputs)              // the next denoising step of the same request
//   runner->outputs()
#pragma once

#include <cuda_runtime_api.h>

#include <memory>

#include "backends/cuda/attention_cudnn.h"
#include "backends/cuda/device_memory.h"
#include "backends/cuda/gemm.h"
#include "models/h3/cuda/gpu_weights.h"
#include "models/h3/cuda/stage_timer.h"
#include "models/h3/transformer.h"

namespace orochi::h3::gpu {

struct RequestSize {
  int64_t rows = 0;       // S, the packed sequence
  int64_t text_rows = 0;  // L
  int64_t video_rows = 0, audio_rows = 0;
  int64_t timesteps = 0;  // distinct t values tabled for the request
};

// Bytes of the request arena for a request of this size (tables, inputs, activations, workspaces).
size_t request_arena_bytes(const H3Config& config, const RequestSize& size, size_t attention_workspace);

struct RequestBuffers;  // gpu_runner.cpp

class H3GpuRunner {
 public:
  static Expected<std::unique_ptr<H3GpuRunner>> create(const H3Config& config, int device, const RequestSize& max);
  ~H3GpuRunner();

  Status init_random_weights(uint64_t seed);
  Status upload_weights(const H3Weights& host);

  // Tables for `timesteps` (f32 [n_t], host) and the request's rows (host tensors as for the CPU
  // forward; text may be f32 or bf16).
  Status set_request(const Tensor& timesteps, const H3Inputs& inputs);
  // The next step of the same request: new video/audio rows and timestep indices (into the tables
  // set_request built); the text, layout and sizes stay.
  Status update_rows(const H3Inputs& inputs);
  Status forward();
  Status synchronize();
  Expected<H3Outputs> outputs();  // host f32 copies

  cudaStream_t stream() const { return stream_; }
  // Per-stage timing of the following forwards (costs an event pair per stage).
  StageTimer& timer() { return timer_; }
  size_t weight_bytes() const;
  size_t request_bytes_peak() const;

 private:
  H3GpuRunner() = default;
  Status build_tables(const Tensor& timesteps);
  Status upload_adaln_rows(const H3Inputs& inputs);
  Status linear(const GpuLinear& l, const Tensor& x, const Tensor& y);
  Status attention_block(const GpuBlock& b, const Tensor& x, int64_t rows, bool rope, const Tensor& out);
  Status refiner_block(const GpuBlock& b, const Tensor& t);
  Status transformer_block(size_t index);

  H3Config config_;
  RequestSize max_;
  int device_ = 0;
  cudaStream_t stream_ = nullptr;
  std::shared_ptr<cuda::DeviceArena> weight_arena_, request_arena_;
  std::unique_ptr<cuda::GemmRunner> gemm_;
  std::unique_ptr<cuda::CudnnAttention> attention_;
  GpuWeights weights_;
  AdalnSource adaln_;
  std::unique_ptr<RequestBuffers> buf_;
  size_t request_mark_ = 0;
  StageTimer timer_;
};

}  // namespace orochi::h3::gpu
