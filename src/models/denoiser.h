// What a denoising loop needs from a diffusion transformer, whatever the family (H3's joint
// video+audio sequence; Wan's video tokens with a cross-attended context) and wherever it runs (CPU
// reference, one GPU, many): timestep tables once per request, then one forward per step over a
// packed token sequence of latent streams.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/status.h"
#include "core/tensor.h"

namespace orochi::models {

// One forward's inputs. The sequence's S rows hold every stream's rows and (for a family with
// joint attention) the context's; which row is which is in the index lists.
struct PackedSequence {
  std::vector<Tensor> streams;         // per stream f32 [N_k, width_k]: the latent rows denoised
                                       //   (H3: stream 0 video patches, stream 1 audio frames)
  std::vector<Tensor> stream_indices;  // per stream i64 [N_k]: their rows of the sequence
  Tensor context;                      // f32 [L, context_width]: the conditioner's features
  Tensor context_indices;              // i64 [L]: their rows (a cross-attending family leaves it empty)
  Tensor token_tags;                   // i64 [S]: the family's row kinds
  Tensor positions;                    // f32 [S, 3]: rotary (t, h, w)
  Tensor timestep_indices;             // i64 [S]: row -> index into the timesteps given to prepare()
  int64_t rows() const { return positions.defined() ? positions.dim(0) : 0; }
};

// A request's size, for the memory a denoiser reserves before it.
struct SequenceSize {
  int64_t rows = 0, context_rows = 0, timesteps = 0;
  std::vector<int64_t> stream_rows;  // per stream
};

// The widths a denoiser reads: the loop checks a request's tensors against them before any work.
struct SequenceWidths {
  std::vector<int64_t> streams;  // per stream
  int64_t context = 0;
};

class Denoiser {
 public:
  virtual ~Denoiser() = default;
  // Where it runs, for reports ("CPU", "cuda:0 NVIDIA H200").
  virtual std::string device_name() const = 0;
  virtual SequenceWidths widths() const = 0;
  // Before a request: memory for one of this size (a GPU denoiser reserves a larger request arena
  // when the last one is too small or was given back; its weights stay).
  virtual Status fit_request(const SequenceSize& size) { return Status::ok(); }
  // Timestep tables (H3: AdaLN modulation) for every distinct timestep of the request (f32 [n_t],
  // sorted ascending).
  virtual Status prepare(const Tensor& timesteps) = 0;
  // One forward: per stream, the velocity f32 [N_k, width_k] in the stream's row order.
  virtual Expected<std::vector<Tensor>> forward(const PackedSequence& sequence) = 0;
  // The loop is done: give back the request's device memory, keeping the weights for the next
  // request (an engine keeps its model loaded when the plan says the decode fits beside them).
  virtual void release_request() {}
  // The loop is done and the weights go too, so the decoders can have all the memory (the plan's
  // phases run one after the other). A later prepare() is an error for a released denoiser.
  virtual void release() {}
};

}  // namespace orochi::models
