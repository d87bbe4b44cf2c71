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
//
// Many GPUs: one runner per GPU, created with its ParallelRank (TP x SP) and given its groups'
// Comm members (dist/comm.h, enqueueing on runner->stream()) before the weights. Each holds its TP
// share of the weights and computes its SP share of the rows; rank_outputs() then holds only its
// rows and says where they go, and merge_rank_outputs() assembles the request's outputs.
#pragma once

#include <cuda_runtime_api.h>

#include <memory>
#include <optional>
#include <vector>

#include "backends/cuda/device_memory.h"
#include "backends/cuda/gemm.h"
#include "backends/cuda/gemm_quantized.h"
#include "backends/cuda/kernels/kernels.h"
#include "backends/kernel_options.h"
#include "core/precision.h"
#include "dist/comm.h"
#include "dist/parallel_options.h"
#include "layers/cuda/attention.h"
#include "layers/cuda/comm_overlap.h"
#include "layers/cuda/layer_context.h"
#include "layers/cuda/stage_timer.h"
#include "layers/cuda/streamed_blocks.h"
#include "layers/cuda/ulysses.h"
#include "models/h3/request_buffers.h"
#include "models/h3/cuda/gpu_weights.h"
#include "models/h3/lora.h"
#include "models/h3/transformer.h"
#include "weights/block_streamer.h"

namespace orochi::h3::gpu {

// The tiers are the weights layer's, the streaming, the attention and the stage timing the shared
// DiT layers' (layers/cuda/); the denoiser names them as its own.
using weights::GpuBlockTier;
using weights::WeightTier;
using layers::gpu::StageTimer;

// What one rank of a layout computed: its rows of each head's output and where they go in the
// whole request's outputs (positions into video / audio rows).
struct RankOutputs {
  H3Outputs rows;
  std::vector<int64_t> video_pos, audio_pos;
};

// The request's outputs from every SP rank's rows (only the SP ranks of one TP index are needed).
Expected<H3Outputs> merge_rank_outputs(const std::vector<RankOutputs>& ranks, const H3Config& config,
                                       const RequestSize& size);

// Transformer blocks whose weights are not resident: they live in a tier (pinned host RAM or a peer
// GPU) and come through `slots` staging slots just in time (layers/cuda/streamed_blocks.h).
using WeightStreaming = layers::gpu::BlockStreamingPlan;

// The run's switches (engine/run_switches.h), fixed for a runner's life.
struct RunnerOptions {
  backends::KernelOptions kernels;
  dist::SequenceParallelOptions sp;
  // The blocks' linears (--precision): bf16, or fp8 / int8 weights quantized per output channel at
  // load (gpu_weights.h) and activations per token before each such GEMM. One GPU only for now.
  Precision precision = Precision::kBf16;
};

class H3GpuRunner {
 public:
  static Expected<std::unique_ptr<H3GpuRunner>> create(const H3Config& config, int device, const RequestSize& max,
                                                       const ParallelRank& rank = {}, const WeightStreaming& streaming = {},
                                                       const RunnerOptions& options = {});
  // This rank's members of its TP and SP groups (null for a size-1 group) and the stream they
  // enqueue on (dist::ParallelContext's comm stream of this rank; null on one GPU); before the
  // weights.
  Status set_groups(dist::Comm* tp, dist::Comm* sp, cudaStream_t comm_stream);
  ~H3GpuRunner();

  Status init_random_weights(uint64_t seed);
  // `host` must outlive the runner: the AdaLN projections stay in host RAM and are read from it
  // whenever a request's tables are built (a temporary is refused at compile time).
  Status upload_weights(const H3Weights& host);
  Status upload_weights(const H3Weights&& host) = delete;
  // A LoRA merged into the weights already here (gpu_lora.h): random weights, which have no host
  // copy. The whole model only (no TP share, nothing streamed), in bf16 (quantized linears have no
  // bf16 weight left to merge into); host weights merge before upload.
  Status merge_lora(const H3Lora& lora, float strength);

  // The request arena for requests up to `max` (create() reserves one): the weights stay, the
  // previous request's buffers go. free_request() gives the arena back between requests;
  // request_fits() says whether a request of that size can be set without a new reservation.
  Status reserve_request(const RequestSize& max);
  void free_request();
  bool request_fits(const RequestSize& size) const;

  // Tables for `timesteps` (f32 [n_t], host) and the request's rows (host tensors as for the CPU
  // forward; text may be f32 or bf16).
  Status set_request(const Tensor& timesteps, const H3Inputs& inputs);
  // The next step of the same request: new video/audio rows and timestep indices (into the tables
  // set_request built); the text, layout and sizes stay.
  Status update_rows(const H3Inputs& inputs);
  Status forward();
  Status synchronize();
  Expected<H3Outputs> outputs();  // host f32 copies of the whole request (no SP: every row is here)
  Expected<RankOutputs> rank_outputs();  // this rank's rows and where they go

  cudaStream_t stream() const { return stream_; }
  // Where this rank's collectives run (the parallel context's stream its groups enqueue on), beside
  // the compute stream so that they overlap the GEMMs and attention that do not need them. Null on
  // one GPU.
  cudaStream_t comm_stream() const { return overlap_ ? overlap_->stream() : nullptr; }
  const H3Config& config() const { return config_; }
  const ParallelRank& rank() const { return rank_; }
  // Per-stage timing of the following forwards (costs an event pair per stage).
  StageTimer& timer() { return timer_; }
  StageTimer& comm_timer() { return comm_timer_; }  // the collectives, on comm_stream()
  size_t weight_bytes() const;
  size_t request_bytes_peak() const;
  size_t staging_bytes() const;    // the staging slots (0 when nothing streams)
  size_t tier_bytes() const;       // streamed weights held in the tier (host RAM or the peer GPU)
  const weights::StreamStats* stream_stats() const { return blocks_ ? blocks_->stats() : nullptr; }
  // Which kernel the transformer blocks' attention runs on: "flash-sm90a" or "cudnn".
  std::string attention_kernel() const;
  Precision precision() const { return precision_; }

 private:
  H3GpuRunner() = default;
  // What the shared layers run on: this runner's streams, kernels and timers.
  layers::gpu::LayerContext layer_context();
  Status build_tables(const Tensor& timesteps);
  Status upload_rows(const H3Inputs& inputs);
  Status linear(const GpuLinear& l, const Tensor& x, const Tensor& y);
  // y = {q, k, v} [rows, heads * head_dim], y[i] = x [rows, H] · w[i]^T: one batched cuBLASLt call
  // when the three weights and the three outputs are equally spaced views of one size
  // (GemmRunner::linear_shared_input), else a linear each (biases, the sm90a GEMM). Then q and k
  // in place: the block's per-head RMSNorms and, with `rope`, RoPE at the angles of packed rows
  // [first_row, first_row + rows).
  // `xq` (here and below): x's per-token quantization, already written by the kernel that produced
  // x (fused_input_format), which then did not write x itself; null: the quantized linears
  // quantize x themselves.
  Status project_qkv(const GpuBlock& b, const GpuLinear (&w)[3], const Tensor& x, const Tensor (&y)[3], int64_t heads,
                     bool rope, int64_t first_row, const RowQuantized* xq = nullptr);
  Status attention_block(const GpuBlock& b, const Tensor& x, int64_t rows, bool main, const Tensor& out,
                         const RowQuantized* xq = nullptr);
  // Ulysses SP (layers/cuda/ulysses.h): q/k/v of all rows of this rank's heads by one of the two
  // schemes (gather_sp_rows_), attention over them, and the out-projection of this rank's rows.
  Status ulysses_attention_block(const GpuBlock& b, const Tensor& x, const Tensor& out);
  // SwiGLU writes the per-token codes of the second linear's input itself where that linear takes
  // them (fused_input_format).
  Status feed_forward(const GpuBlock& b, const Tensor& x, int64_t rows, const Tensor& out,
                      const RowQuantized* xq = nullptr);
  // The format in which the kernel that produces l's input quantizes it per token in place of its
  // bf16 output (fused-quant=on, l quantized, one GPU), or none: the input goes through bf16.
  std::optional<DType> fused_input_format(const GpuLinear& l) const;
  Status refiner_block(const GpuBlock& b, const Tensor& t);
  // The norm after a block (the next block's pre-attention norm, or the output norm) for the
  // block's last kernel to write into the buffer a.
  struct NextNorm {
    const cuda::kernels::bf16* weight = nullptr;
    cuda::kernels::ModulationRows mod;
    float eps = 0;
    // The next block's fused_input_format(to_q): the norm writes those codes instead of a.
    std::optional<DType> quantize;
  };
  cuda::kernels::ModulationRows block_modulation(size_t index, int first) const;
  Status transformer_block(size_t index, const GpuBlock& b, bool normed, const NextNorm* next);
  // After the weights: the slots' views, and the streamer over them.
  Status start_streaming();
  StreamedBlocks streamed_blocks();

  H3Config config_;
  RequestSize max_;
  ParallelRank rank_;
  dist::Comm* tp_ = nullptr;
  // sp-attention=split: attention one SP share of query rows at a time, each share's
  // output sent while the next computes (the earlier scheme, kept for side-by-side timing).
  bool split_sp_attention_ = false;
  // sp-qkv=gather: SP ranks exchange their rows of the attention input x (H values per
  // row) and each projects its own heads over all rows; heads: each rank projects every rank's
  // heads of its own rows and sends the q/k/v chunks; auto (the default): whichever moves fewer
  // bytes (fewer_bytes_sp_qkv: gather at SP2). Same arithmetic. On NVLink the two ran alike
  // (bench/RESULTS.md, session 10); on slower links the bytes are the exchange's time. The
  // planner counts memory for auto.
  bool gather_sp_rows_ = true;
  // gemm=sm90a (experimental): Orochi's own GEMM for the linears and the FFN's first linear
  // fused with SwiGLU, where it takes the operands (13% slower than cuBLASLt in the 480p forward on
  // an H200, 2026-11-30); cublas (the default): cuBLASLt everywhere.
  bool gemm_sm90a_ = false;
  bool qk_norm_items_ = false;  // qk-norm=items: one warp per head
  // fused-quant=on (the default): with --precision fp8 / int8, the norms and SwiGLU write the
  // per-token codes of the quantized linear after them (bit for bit the separate pass's); off: a
  // separate quantize_rows pass over each bf16 activation (for side-by-side timing).
  bool fused_quantization_ = true;
  bool fp8_fast_accum_ = false;  // fp8-gemm-accum=fast
  dist::Comm* sp_ = nullptr;
  int device_ = 0;
  cudaStream_t stream_ = nullptr;
  std::unique_ptr<layers::gpu::CommOverlap> overlap_;  // the comm stream; null on one GPU
  std::shared_ptr<cuda::DeviceArena> weight_arena_, request_arena_;
  std::unique_ptr<cuda::GemmRunner> gemm_;
  // --precision fp8 / int8: the quantized GEMMs and their activation buffers (views of the request's
  // xq_* buffers, set with the request); bf16: null and empty.
  Precision precision_ = Precision::kBf16;
  std::unique_ptr<cuda::QuantizedGemmRunner> quantized_gemm_;
  layers::gpu::QuantizedScratch quantized_scratch_;
  // attention=flash (the default): Orochi's own sm_90a kernel for the shapes and GPUs it
  // supports, cuDNN for the rest; cudnn: cuDNN's fused SDPA everywhere.
  layers::gpu::AttentionRunner attention_;
  GpuWeights weights_;
  AdalnSource adaln_;
  WeightStreaming streaming_;
  std::unique_ptr<layers::gpu::GpuStreamedBlocks> blocks_;  // null when every block is resident
  std::vector<GpuBlock> slot_blocks_;
  std::unique_ptr<RequestBuffers> buf_;
  size_t request_mark_ = 0;
  StageTimer timer_, comm_timer_;
};

}  // namespace orochi::h3::gpu
