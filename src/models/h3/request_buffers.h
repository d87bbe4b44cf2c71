// One request's device buffers for one rank of a (TP x SP) layout, and the host bookkeeping of
// which packed rows that rank owns. With one GPU the rank owns every row and every head.
// arena_buffers() is the ONE list of the request arena: the GPU runner allocates it
// (RequestBuffers::specs binds each entry to its tensor) and the planner adds it up
// (planner/h3_denoiser_memory.cpp); a CPU test holds the two together.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/precision.h"
#include "core/tensor.h"
#include "dist/comm.h"
#include "models/h3/tensor_parallel.h"
#include "models/h3/transformer.h"

namespace orochi::h3::gpu {

struct RequestSize {
  int64_t rows = 0;       // S, the packed sequence
  int64_t text_rows = 0;  // L
  int64_t video_rows = 0, audio_rows = 0;
  int64_t timesteps = 0;  // distinct t values tabled for the request
};

// The packed rows a sequence-parallel rank owns, and per modality which input rows land there.
struct RankRows {
  dist::Range rows;                          // [begin, end) of the packed sequence
  std::vector<dist::Range> shares;           // every SP rank's rows (for the all_to_all counts)
  std::vector<int64_t> video_pos, audio_pos, text_pos;  // rows of the modality's inputs
  std::vector<int64_t> video_dst, audio_dst, text_dst;  // where they land: local row (packed - begin)
};
RankRows rank_rows(const H3Inputs& in, const ParallelRank& rank);

// The widths one rank works with.
struct RankDims {
  int64_t R = 0;           // the largest SP rank's rows (ceil(S / sp) when split evenly)
  int64_t heads = 0;       // heads of its TP share
  int64_t attn_heads = 0;  // heads it attends over after the all_to_all (heads / sp)
  int64_t head_dim = 0;
  int64_t ffn = 0;         // its SwiGLU width
  int64_t inner() const { return heads * head_dim; }
  int64_t attn_inner() const { return attn_heads * head_dim; }
};
RankDims rank_dims(const H3Config& c, const RequestSize& s, const ParallelRank& rank);

// What a request arena buffer is for, which the plan's pools follow: state kept across steps,
// the AdaLN projections' staging (once per request), one step's activations, the SP exchange.
enum class ArenaUse { kRequestState, kStaging, kActivations, kExchange };

struct ArenaBuffer {
  std::string name;  // the RequestBuffers member it becomes: "video_in", "q", ...
  ArenaUse use;
  Shape shape;
  DType dtype;
  uint64_t bytes() const;  // rounded up to the arena's 256-byte alignment
};

// Rank `rank`'s request arena for a request of `s`, in allocation order (without the attention
// workspace, which the attention kernels size on the GPU). A `precision` other than bf16 adds the
// quantized linears' activation codes, scales and GEMM accumulator (layers/cuda/linear.h).
std::vector<ArenaBuffer> arena_buffers(const H3Config& c, const RequestSize& s, const ParallelRank& rank,
                                       bool sp_gathers_rows, Precision precision = Precision::kBf16);

struct BufferSpec {
  Tensor* target;
  Shape shape;
  DType dtype;
};

// Everything a request needs on one GPU, allocated once from the request arena.
struct RequestBuffers {
  // inputs (this rank's rows of each modality)
  Tensor video_in, audio_in, text_in;        // f32 [nv, 96], f32 [na, 32], bf16 [L, text_dim]
  Tensor video_dst, audio_dst, text_pos, text_dst, ts_idx, adaln_idx;  // i64
  Tensor rope_cos, rope_sin;                 // bf16 [S, R]: every row (attention sees them all)
  // per-request AdaLN tables and the staging slot their weights stream through
  Tensor tables;        // bf16 [layers, n_t * 3, 6H]
  Tensor final_table;   // bf16 [n_t, 2H]
  Tensor adaln_w, adaln_b;  // bf16 [18H, T], [18H]
  Tensor temb_in, temb_hidden, temb, temb_act;  // f32 [n_t, freq], f32 [n_t, hidden], f32, bf16 [n_t, T]
  // activations; rows are this rank's (or the L text rows in the refiner)
  Tensor h, a, o2;      // bf16 [rows, H]
  Tensor q, k, v, o;    // bf16 [rows, inner]: with SP, q/k/v/o hold [sp, R, inner / sp] chunks
  Tensor qa, ka, va, oa;  // bf16 [S, inner / sp]: all rows of the heads this rank attends (SP only)
  Tensor xa;            // bf16 [(sp - 1) * R, H]: the peers' rows of the attention input, in row order (SP
                        // gathering rows only)
  Tensor u, g;          // bf16 [rows, 2F], [rows, F]
  Tensor text;          // bf16 [L, H]
  Tensor rows_f32;      // f32 [rows, H]: patch embeddings in, head inputs out
  Tensor video_out, audio_out;  // f32 [nv, 96], [na, 32]
  // --precision fp8 / int8 only: a block linear's input as codes (f8e4m3 / i8 [R * widest input])
  // and per-token scales (f32 [R]), and the GEMM accumulator (f32, quantized_accumulator_rows).
  Tensor xq_codes, xq_scales, xq_acc;
  int64_t n_t = 0;
  RequestSize size;  // the whole request
  RankRows layout;   // this rank's rows

  // sp_gathers_rows: SP brings q/k/v together by gathering the attention input's rows (xa).
  std::vector<BufferSpec> specs(const H3Config& c, const RequestSize& s, const ParallelRank& rank, bool sp_gathers_rows,
                                Precision precision = Precision::kBf16);
};

// Bytes of the request arena for a request of this size (tables, inputs, activations, workspaces).
size_t request_arena_bytes(const H3Config& config, const RequestSize& size, size_t attention_workspace,
                           const ParallelRank& rank = {}, bool sp_gathers_rows = false,
                           Precision precision = Precision::kBf16);

}  // namespace orochi::h3::gpu
