// The memory plan of one request on a set of GPUs, before any weight is loaded: per phase (text
// encoder, denoiser, decode) and per GPU, the pools each GPU allocates once, and where every weight
// group lives (resident, on a peer GPU, in pinned host RAM, or streamed once per request).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace orochi::planner {

inline constexpr uint64_t kGiB = uint64_t{1} << 30;
inline constexpr uint64_t kMiB = uint64_t{1} << 20;
double to_gib(uint64_t bytes);
uint64_t from_gib(double gib);

// One allocation per pool and GPU (DESIGN.md "Memory: planned, not discovered").
enum class PoolKind {
  kWeights,       // resident weights
  kStaging,       // slots that streamed weights are copied into just before use
  kActivations,   // the peak of one step (every buffer the step touches)
  kRequestState,  // lives across steps: inputs, indices, RoPE, modulation tables, outputs
  kComm,          // collective send/receive buffers
  kScratch,       // GEMM and attention workspaces
  kMargin,        // CUDA context and a safety margin
};
inline constexpr PoolKind kAllPoolKinds[] = {PoolKind::kWeights,      PoolKind::kStaging, PoolKind::kActivations,
                                             PoolKind::kRequestState, PoolKind::kComm,    PoolKind::kScratch,
                                             PoolKind::kMargin};
const char* pool_name(PoolKind kind);  // "weights", "staging", "activations", "request state", ...

// Where a weight group is read from when its layer runs.
enum class Tier {
  kResident,      // on the computing GPU
  kPeer,          // on another GPU of the host, copied over NVLink/P2P just in time
  kHost,          // pinned host RAM, copied over PCIe just in time
  kStreamedOnce,  // host RAM, read once per request (H3's AdaLN projections build the tables)
};
const char* tier_name(Tier tier);  // "resident", "peer", "host", "streamed once"

struct PoolItem {
  std::string name;
  uint64_t bytes = 0;
};

struct Pool {
  PoolKind kind = PoolKind::kWeights;
  std::vector<PoolItem> items;
  uint64_t bytes() const;
};

// A unit of placement: one transformer block, the refiner, the embedders... `bytes` is what one
// computing GPU needs (its tensor-parallel shard).
struct WeightGroup {
  std::string name;
  uint64_t bytes = 0;
  bool streamable = true;  // false: must be resident (tiny groups, or decoders run tile by tile)
  Tier tier = Tier::kResident;
  int peer_gpu = -1;       // for kPeer: the GPU holding it
};

struct GpuPlan {
  int gpu = 0;
  std::string role;  // "compute", "store (weights for GPU 0)", "idle"
  std::vector<Pool> pools;  // one per PoolKind, in kAllPoolKinds order
  uint64_t total() const;
  uint64_t pool_bytes(PoolKind kind) const;
  void add(PoolKind kind, const std::string& name, uint64_t bytes);
};

struct PhasePlan {
  std::string name;   // "text encoder", "denoiser", "decode"
  std::string about;  // model and sizes, one line
  std::string layout; // the parallel layout this phase runs with ("tp2", "sp4", "one GPU")
  std::vector<std::string> notes;  // freeing, fallbacks, streaming
  std::vector<GpuPlan> gpus;
  std::vector<WeightGroup> groups;   // of one computing GPU (all computing GPUs place alike)
  uint64_t host_bytes = 0;           // pinned host RAM this phase reads weights from
  uint64_t peer_read_bytes = 0;      // per computing GPU and pass over the weights
  uint64_t host_read_bytes = 0;      // per computing GPU and pass, host tier
  uint64_t streamed_once_bytes = 0;  // per computing GPU and request
  int64_t passes = 1;                // passes over the weights per request (denoiser: steps)

  // Bytes over the cap of the fullest GPU (0 when every GPU fits) and its index.
  uint64_t shortfall(uint64_t cap) const;
  int fullest_gpu() const;
};

}  // namespace orochi::planner
