#include "models/h3/cuda/gpu_runner.h"

#include "models/h3/cuda/gpu_lora.h"

#include <algorithm>
#include <cstdlib>
#include <string>
#include <vector>

#include "backends/cpu/ops.h"
#include "backends/cuda/cuda_check.h"
#include "core/env.h"
#include "models/h3/adaln_curve.h"

namespace orochi::h3::gpu {
namespace {

// The rows of `t` at `pos` (host), as f32.
Tensor host_rows(const Tensor& t, const std::vector<int64_t>& pos) {
  if (static_cast<int64_t>(pos.size()) == t.dim(0)) return t;  // all of them, in order (pos is ascending)
  return cpu::gather_rows(t.to(DType::kF32).contiguous(), Tensor::from_ints(pos, {static_cast<int64_t>(pos.size())}));
}

// An index list into a device buffer of its length; an empty list uploads nothing.
Status upload_ints(const std::vector<int64_t>& values, const Tensor& device, cudaStream_t stream) {
  if (values.empty()) return Status::ok();
  return cuda::upload_into(Tensor::from_ints(values, {static_cast<int64_t>(values.size())}), device, stream);
}

// Elements [range) of an i64 host vector, as a tensor.
Tensor host_range(const Tensor& t, const dist::Range& r) { return t.contiguous().slice(0, r.begin, r.end).contiguous(); }

}  // namespace

Expected<std::unique_ptr<H3GpuRunner>> H3GpuRunner::create(const H3Config& config, int device, const RequestSize& max,
                                                           const ParallelRank& rank, const WeightStreaming& streaming,
                                                           const RunnerOptions& options) {
  OROCHI_RETURN_IF_ERROR(check_parallel_layout(config, rank.tp_size, rank.sp_size));
  if (!streaming.streamed.empty() && static_cast<int64_t>(streaming.streamed.size()) != config.num_layers)
    return invalid_argument("the streaming plan covers " + std::to_string(streaming.streamed.size()) + " blocks, the model has " +
                            std::to_string(config.num_layers));
  if (streaming.any() && streaming.slots < 1) return invalid_argument("weight streaming needs at least one staging slot");
  // The quantized linears go through layers::gpu::linear; the Ulysses exchange slices weights by
  // columns and TP's are untested in fp8 / int8, so one GPU for now.
  if (options.precision != Precision::kBf16 && rank.world_size() > 1)
    return unsupported(std::string("--precision ") + precision_name(options.precision) +
                       " runs the denoiser on one GPU for now (issue 25); use --gpus 1, or --precision bf16 on " +
                       std::to_string(rank.world_size()) + " GPUs");
  const bool fp8_attention = options.kernels.fp8_attention(options.precision);
  if (fp8_attention && rank.world_size() > 1)
    return unsupported("FP8 attention runs the denoiser on one GPU for now (issue 25); use --gpus 1, or "
                       "--set attention-precision=bf16 on " + std::to_string(rank.world_size()) + " GPUs");
  std::unique_ptr<H3GpuRunner> r(new H3GpuRunner());
  r->streaming_ = streaming;
  r->config_ = config;
  r->max_ = max;
  r->rank_ = rank;
  r->device_ = device;
  r->split_sp_attention_ = options.sp.split_attention;
  r->gather_sp_rows_ = sp_gathers_rows(config, rank.tp_size, rank.sp_size, options.sp.qkv);
  r->attention_ = layers::gpu::AttentionRunner(options.kernels.flash_attention, cuda::flash_attention_options(options.kernels),
                                               fp8_attention, cuda::flash_attention_fp8_options(options.kernels));
  r->gemm_sm90a_ = options.kernels.gemm_sm90a;
  r->qk_norm_items_ = options.kernels.qk_norm_items;
  r->fused_quantization_ = options.kernels.fused_quantization;
  r->fp8_fast_accum_ = options.kernels.fp8_gemm_fast_accum;
  r->precision_ = options.precision;
  OROCHI_CUDA_RETURN_IF_ERROR(cudaSetDevice(device));
  OROCHI_CUDA_RETURN_IF_ERROR(cudaStreamCreateWithFlags(&r->stream_, cudaStreamNonBlocking));
  const TpShare share = tp_share(config, rank.tp_rank, rank.tp_size);
  OROCHI_ASSIGN_OR_RETURN(r->weight_arena_, cuda::DeviceArena::create(device, resident_weight_bytes(config, share, streaming.streamed, options.precision) + (1 << 20),
                                                                      "H3 weights"));
  if (streaming.any()) {
    OROCHI_ASSIGN_OR_RETURN(r->blocks_, layers::gpu::GpuStreamedBlocks::create(device, streaming, block_image_bytes(config, share, options.precision),
                                                                               r->stream_, "H3 weight staging"));
  }
  OROCHI_RETURN_IF_ERROR(r->reserve_request(max));
  OROCHI_ASSIGN_OR_RETURN(r->gemm_, cuda::GemmRunner::create(device));
  // gemm-pick=timed (the default): each large shape runs the fastest of cuBLASLt's top
  // candidates timed one call at a time; heuristic: cuBLASLt's first pick. For side-by-side
  // timing: a burst winner need not win inside a power-capped forward (bench/RESULTS.md, session 7).
  r->gemm_->set_autotune(options.kernels.gemm_timed_pick);
  if (options.precision != Precision::kBf16) {
    OROCHI_ASSIGN_OR_RETURN(r->quantized_gemm_, cuda::QuantizedGemmRunner::create(device));
    r->quantized_gemm_->set_autotune(options.kernels.gemm_timed_pick);
  }
  return r;
}

Status H3GpuRunner::reserve_request(const RequestSize& max) {
  free_request();
  OROCHI_CUDA_RETURN_IF_ERROR(cudaSetDevice(device_));
  // A fresh cuDNN attention: plans prepared for an earlier request's shapes may want more workspace
  // than this reservation offers.
  attention_.reset(stream_);
  // Attention runs over all S rows with this rank's heads / sp (with SP, one block of query rows
  // at a time against every key row), and over the L text rows (refiner) with all its TP heads.
  const RankDims d = rank_dims(config_, max, rank_);
  std::vector<cuda::AttentionShape> shapes{{.s_q = max.rows, .s_kv = max.rows, .heads = d.attn_heads, .head_dim = d.head_dim}};
  if (rank_.sp_size > 1) shapes.push_back({.s_q = d.R, .s_kv = max.rows, .heads = d.attn_heads, .head_dim = d.head_dim});
  shapes.push_back({.s_q = max.text_rows, .s_kv = max.text_rows, .heads = d.heads, .head_dim = d.head_dim});
  OROCHI_ASSIGN_OR_RETURN(const size_t attn_ws, attention_.workspace_bytes(shapes));
  const size_t request_bytes = request_arena_bytes(config_, max, attn_ws, rank_, gather_sp_rows_, precision_);
  OROCHI_ASSIGN_OR_RETURN(request_arena_, cuda::DeviceArena::create(device_, request_bytes, "H3 request"));
  OROCHI_ASSIGN_OR_RETURN(void* ws, request_arena_->allocate(attn_ws));
  OROCHI_RETURN_IF_ERROR(attention_.set_workspace(ws, attn_ws));
  request_mark_ = request_arena_->mark();
  max_ = max;
  return Status::ok();
}

void H3GpuRunner::free_request() {
  if (!request_arena_) return;
  if (stream_) (void)cudaStreamSynchronize(stream_);  // no kernel may still read the buffers
  buf_.reset();
  quantized_scratch_ = {};
  attention_.release_workspace();
  request_arena_.reset();
}

bool H3GpuRunner::request_fits(const RequestSize& size) const {
  return request_arena_ && size.rows <= max_.rows && size.text_rows <= max_.text_rows &&
         size.video_rows <= max_.video_rows && size.audio_rows <= max_.audio_rows && size.timesteps <= max_.timesteps;
}

Status H3GpuRunner::set_groups(dist::Comm* tp, dist::Comm* sp, cudaStream_t comm_stream) {
  auto matches = [](dist::Comm* c, int rank, int size) {
    return c == nullptr ? size == 1 : c->size() == size && c->rank() == rank;
  };
  if (!matches(tp, rank_.tp_rank, rank_.tp_size) || !matches(sp, rank_.sp_rank, rank_.sp_size))
    return Status(ErrorCode::kInternal, "the communicators do not match the runner's layout (tp " +
                                            std::to_string(rank_.tp_rank) + "/" + std::to_string(rank_.tp_size) + ", sp " +
                                            std::to_string(rank_.sp_rank) + "/" + std::to_string(rank_.sp_size) + ")");
  if ((comm_stream == nullptr) != (rank_.world_size() == 1))
    return Status(ErrorCode::kInternal, "a runner of several ranks needs its comm stream, one of one rank none");
  tp_ = tp;
  sp_ = sp;
  if (comm_stream) {
    OROCHI_CUDA_RETURN_IF_ERROR(cudaSetDevice(device_));
    OROCHI_ASSIGN_OR_RETURN(overlap_, layers::gpu::CommOverlap::create(stream_, comm_stream));
  }
  return Status::ok();
}

H3GpuRunner::~H3GpuRunner() {
  blocks_.reset();  // waits for the copies in flight
  buf_.reset();
  attention_.destroy();
  gemm_.reset();
  if (stream_) cudaStreamDestroy(stream_);
  overlap_.reset();
}

layers::gpu::LayerContext H3GpuRunner::layer_context() {
  return {.stream = stream_, .gemm = gemm_.get(), .gemm_sm90a = gemm_sm90a_,
          .quantized_gemm = quantized_gemm_.get(), .quantized = quantized_gemm_ ? &quantized_scratch_ : nullptr,
          .fp8_fast_accum = fp8_fast_accum_, .attention = &attention_, .overlap = overlap_.get(), .timer = &timer_, .comm_timer = &comm_timer_};
}

size_t H3GpuRunner::weight_bytes() const { return weight_arena_->used(); }
size_t H3GpuRunner::staging_bytes() const { return blocks_ ? blocks_->staging_bytes() : 0; }
size_t H3GpuRunner::tier_bytes() const { return blocks_ ? blocks_->tier_bytes() : 0; }

StreamedBlocks H3GpuRunner::streamed_blocks() {
  if (!streaming_.any()) return {};
  return {streaming_.streamed, &blocks_->staging(), [this](int64_t block, const void* image, size_t bytes) {
            return blocks_->store(block, image, bytes);
          }};
}

Status H3GpuRunner::start_streaming() {
  if (!streaming_.any()) return Status::ok();
  cuda::DeviceArena& slots = blocks_->empty_slots();
  slot_blocks_.clear();
  const TpShare share = tp_share(config_, rank_.tp_rank, rank_.tp_size);
  for (int k = 0; k < streaming_.slots; ++k) {
    OROCHI_ASSIGN_OR_RETURN(GpuBlock b, allocate_block(config_, share, slots, precision_));
    slot_blocks_.push_back(std::move(b));
  }
  return blocks_->start();
}
size_t H3GpuRunner::request_bytes_peak() const { return request_arena_ ? request_arena_->peak() : 0; }

Status H3GpuRunner::init_random_weights(uint64_t seed) {
  const StreamedBlocks streamed = streamed_blocks();
  OROCHI_ASSIGN_OR_RETURN(weights_, random_gpu_weights(config_, *weight_arena_, seed, stream_,
                                                       tp_share(config_, rank_.tp_rank, rank_.tp_size),
                                                       streaming_.any() ? &streamed : nullptr, precision_));
  adaln_ = random_adaln_source(config_, seed, stream_);
  OROCHI_RETURN_IF_ERROR(synchronize());
  return start_streaming();
}

Status H3GpuRunner::merge_lora(const H3Lora& lora, float strength) {
  if (rank_.tp_size > 1 || streaming_.any())
    return unsupported("a LoRA on GPU-generated weights needs the whole model resident on each GPU (no tensor "
                       "parallel, no streamed blocks): use --parallel none or spN and no --vram-per-gpu");
  if (precision_ != Precision::kBf16)
    return unsupported(std::string("a LoRA on GPU-generated weights merges into bf16 weights, and --precision ") +
                       precision_name(precision_) + " keeps the blocks' linears quantized: use --precision bf16 "
                       "with --lora here (a checkpoint's LoRA merges on the host before quantizing)");
  OROCHI_RETURN_IF_ERROR(merge_lora_on_gpu(weights_, adaln_, lora, strength, stream_));
  return synchronize();
}

Status H3GpuRunner::upload_weights(const H3Weights& host) {
  const StreamedBlocks streamed = streamed_blocks();
  OROCHI_ASSIGN_OR_RETURN(weights_, upload_gpu_weights(host, *weight_arena_, stream_,
                                                       tp_share(config_, rank_.tp_rank, rank_.tp_size),
                                                       streaming_.any() ? &streamed : nullptr, precision_));
  adaln_ = host_adaln_source(host, stream_);
  OROCHI_RETURN_IF_ERROR(synchronize());
  return start_streaming();
}

Status H3GpuRunner::synchronize() {
  // The communicators first: they wait for their operations with the deadline (a stalled peer
  // would otherwise block cudaStreamSynchronize forever); then whatever compute follows them.
  for (dist::Comm* c : {tp_, sp_})
    if (c) OROCHI_RETURN_IF_ERROR(c->synchronize());
  return cuda::cuda_status(cudaStreamSynchronize(stream_), "cudaStreamSynchronize");
}

Status H3GpuRunner::linear(const GpuLinear& l, const Tensor& x, const Tensor& y) {
  return layers::gpu::linear(layer_context(), l, x, y);
}

Status H3GpuRunner::set_request(const Tensor& timesteps, const H3Inputs& in) {
  OROCHI_RETURN_IF_ERROR(validate_inputs(config_, in, timesteps.numel()));
  RequestSize size{in.rows(), in.text.dim(0), in.video.dim(0), in.audio.dim(0), timesteps.numel()};
  if (!request_fits(size))
    return invalid_argument("the request (" + std::to_string(size.rows) + " rows, " + std::to_string(size.timesteps) +
                            " timesteps) is larger than the GPU runner was planned for (" +
                            std::to_string(max_.rows) + " rows, " + std::to_string(max_.timesteps) + ")");
  request_arena_->reset(request_mark_);
  buf_ = std::make_unique<RequestBuffers>();
  RequestBuffers& B = *buf_;
  B.n_t = size.timesteps;
  B.size = size;
  for (const BufferSpec& b : B.specs(config_, size, rank_, gather_sp_rows_, precision_)) {
    OROCHI_ASSIGN_OR_RETURN(*b.target, request_arena_->tensor(b.shape, b.dtype));
  }
  quantized_scratch_ = {B.xq_codes, B.xq_scales, B.xq_acc};
  // The buffers are sized for the largest share; view them at this rank's actual counts.
  B.layout = rank_rows(in, rank_);
  const RankRows& my = B.layout;
  const auto nv = static_cast<int64_t>(my.video_pos.size()), na = static_cast<int64_t>(my.audio_pos.size());
  const auto lt = static_cast<int64_t>(my.text_pos.size()), R = my.rows.size();
  B.video_in = B.video_in.slice(0, 0, nv);
  B.video_dst = B.video_dst.slice(0, 0, nv);
  B.video_out = B.video_out.slice(0, 0, nv);
  B.audio_in = B.audio_in.slice(0, 0, na);
  B.audio_dst = B.audio_dst.slice(0, 0, na);
  B.audio_out = B.audio_out.slice(0, 0, na);
  B.text_pos = B.text_pos.slice(0, 0, lt);
  B.text_dst = B.text_dst.slice(0, 0, lt);
  B.h = B.h.slice(0, 0, R);
  B.ts_idx = B.ts_idx.slice(0, 0, R);
  B.adaln_idx = B.adaln_idx.slice(0, 0, R);
  OROCHI_RETURN_IF_ERROR(cuda::upload_into(in.text.to(DType::kF32), B.text_in, stream_));
  OROCHI_RETURN_IF_ERROR(upload_ints(my.video_dst, B.video_dst, stream_));
  OROCHI_RETURN_IF_ERROR(upload_ints(my.audio_dst, B.audio_dst, stream_));
  OROCHI_RETURN_IF_ERROR(upload_ints(my.text_pos, B.text_pos, stream_));
  OROCHI_RETURN_IF_ERROR(upload_ints(my.text_dst, B.text_dst, stream_));
  OROCHI_RETURN_IF_ERROR(upload_rows(in));
  // RoPE angles in f32 on the host, then bf16, as the reference casts cos/sin to the activations'
  // dtype; every row's, since attention sees them all.
  const cpu::RopeTable rope = cpu::rope_table(
      in.positions.contiguous(),
      cpu::rope_inv_freq(static_cast<int>(config_.rope_freq_dim), static_cast<float>(config_.rope_theta)));
  OROCHI_RETURN_IF_ERROR(cuda::upload_into(rope.cos, B.rope_cos, stream_));
  OROCHI_RETURN_IF_ERROR(cuda::upload_into(rope.sin, B.rope_sin, stream_));
  return build_tables(timesteps);
}

Status H3GpuRunner::update_rows(const H3Inputs& in) {
  if (!buf_) return Status(ErrorCode::kInternal, "update_rows() before set_request()");
  RequestBuffers& B = *buf_;
  OROCHI_RETURN_IF_ERROR(validate_inputs(config_, in, B.n_t));
  if (in.rows() != B.size.rows || in.video.dim(0) != B.size.video_rows || in.audio.dim(0) != B.size.audio_rows)
    return invalid_argument("update_rows: the rows must keep the request's sizes (" + std::to_string(B.size.rows) +
                            " packed rows); call set_request for a new request");
  return upload_rows(in);
}

// This rank's video/audio rows, timestep indices and AdaLN rows (timestep index * 3 + modality).
Status H3GpuRunner::upload_rows(const H3Inputs& in) {
  RequestBuffers& B = *buf_;
  const RankRows& my = B.layout;
  if (!my.video_pos.empty()) OROCHI_RETURN_IF_ERROR(cuda::upload_into(host_rows(in.video, my.video_pos), B.video_in, stream_));
  if (!my.audio_pos.empty()) OROCHI_RETURN_IF_ERROR(cuda::upload_into(host_rows(in.audio, my.audio_pos), B.audio_in, stream_));
  const Tensor ti = host_range(in.timestep_indices, my.rows), tg = host_range(in.token_tags, my.rows);
  std::vector<int64_t> adaln(static_cast<size_t>(my.rows.size()));
  for (size_t s = 0; s < adaln.size(); ++s) adaln[s] = ti.data<int64_t>()[s] * kModalities + tg.data<int64_t>()[s];
  OROCHI_RETURN_IF_ERROR(cuda::upload_into(ti, B.ts_idx, stream_));
  return upload_ints(adaln, B.adaln_idx, stream_);
}

Status H3GpuRunner::build_tables(const Tensor& timesteps) {
  RequestBuffers& B = *buf_;
  if (weights_.adaln_t_table.defined()) {
    // The curve form: the AdaLN input is the table's lerp (no SiLU), [n_t, r], made on the host
    // from the small table as the CPU forward makes it.
    OROCHI_ASSIGN_OR_RETURN(const Tensor table, cuda::download(weights_.adaln_t_table, stream_));
    OROCHI_RETURN_IF_ERROR(cuda::upload_into(adaln_curve_input(table, timesteps), B.temb_act, stream_));
  } else {
    // temb = linear_2(silu(linear_1(sinusoid(t)))) in f32; the SiLUs of this tiny [n_t, ...] tensor
    // run on the host.
    OROCHI_RETURN_IF_ERROR(cuda::upload_into(cpu::timestep_embedding(timesteps.contiguous(), static_cast<int>(config_.freq_dim)),
                                             B.temb_in, stream_));
    OROCHI_RETURN_IF_ERROR(linear(weights_.time_linear_1, B.temb_in, B.temb_hidden));
    OROCHI_ASSIGN_OR_RETURN(Tensor hidden, cuda::download(B.temb_hidden, stream_));
    OROCHI_RETURN_IF_ERROR(cuda::upload_into(cpu::silu(hidden), B.temb_hidden, stream_));
    OROCHI_RETURN_IF_ERROR(linear(weights_.time_linear_2, B.temb_hidden, B.temb));
    OROCHI_ASSIGN_OR_RETURN(Tensor temb, cuda::download(B.temb, stream_));
    // Every AdaLN projection reads bf16(SiLU_f32(temb)).
    OROCHI_RETURN_IF_ERROR(cuda::upload_into(cpu::silu(temb), B.temb_act, stream_));
  }
  const int64_t rows = B.n_t * kModalities, width = 6 * config_.hidden_size;
  for (int64_t i = 0; i < config_.num_layers; ++i) {
    OROCHI_RETURN_IF_ERROR(adaln_(i, B.adaln_w, B.adaln_b));
    const Tensor table = B.tables.slice(0, i, i + 1).view({B.n_t, rows / B.n_t * width});  // [n_t, 18H]
    OROCHI_RETURN_IF_ERROR(gemm_->linear(B.temb_act, B.adaln_w, &B.adaln_b, table, stream_));
    // The staging slot is rewritten by the next block's weights: wait for this GEMM first.
    OROCHI_RETURN_IF_ERROR(synchronize());
  }
  const int64_t H2 = 2 * config_.hidden_size;
  const Tensor w_final = B.adaln_w.view({-1}).slice(0, 0, H2 * config_.time_embed_dim).view({H2, config_.time_embed_dim});
  const Tensor b_final = B.adaln_b.slice(0, 0, H2);
  OROCHI_RETURN_IF_ERROR(adaln_(-1, w_final, b_final));
  OROCHI_RETURN_IF_ERROR(gemm_->linear(B.temb_act, w_final, &b_final, B.final_table, stream_));
  return synchronize();
}

Expected<RankOutputs> H3GpuRunner::rank_outputs() {
  OROCHI_CHECK(buf_ != nullptr, "outputs() before set_request()");
  RankOutputs out;
  OROCHI_ASSIGN_OR_RETURN(out.rows.video, cuda::download(buf_->video_out, stream_));
  OROCHI_ASSIGN_OR_RETURN(out.rows.audio, cuda::download(buf_->audio_out, stream_));
  out.video_pos = buf_->layout.video_pos;
  out.audio_pos = buf_->layout.audio_pos;
  return out;
}

Expected<H3Outputs> H3GpuRunner::outputs() {
  if (rank_.sp_size > 1)
    return Status(ErrorCode::kInternal, "one sequence-parallel rank holds only its rows: take the request's outputs "
                                        "from H3MultiGpu::outputs()");
  OROCHI_ASSIGN_OR_RETURN(RankOutputs mine, rank_outputs());
  return std::move(mine.rows);  // every row, in order
}

Expected<H3Outputs> merge_rank_outputs(const std::vector<RankOutputs>& ranks, const H3Config& c, const RequestSize& size) {
  H3Outputs out;
  out.video = Tensor::zeros({size.video_rows, c.video_patch_dim()}, DType::kF32);
  out.audio = Tensor::zeros({size.audio_rows, c.audio_in_channels}, DType::kF32);
  std::vector<char> seen_video(size.video_rows, 0), seen_audio(size.audio_rows, 0);
  auto place = [](const Tensor& rows, const std::vector<int64_t>& pos, Tensor& dst, std::vector<char>& seen) {
    const int64_t w = dst.dim(1);
    for (size_t i = 0; i < pos.size(); ++i) {
      std::copy_n(rows.data<float>() + i * w, w, dst.data<float>() + pos[i] * w);
      seen[pos[i]] = 1;
    }
  };
  for (const RankOutputs& r : ranks) {
    place(r.rows.video, r.video_pos, out.video, seen_video);
    place(r.rows.audio, r.audio_pos, out.audio, seen_audio);
  }
  for (char s : seen_video) if (!s) return Status(ErrorCode::kInternal, "no rank computed some video rows");
  for (char s : seen_audio) if (!s) return Status(ErrorCode::kInternal, "no rank computed some audio rows");
  return out;
}

}  // namespace orochi::h3::gpu
