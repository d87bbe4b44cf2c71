// The data of one collective call among CPU ranks: what each rank brought (staged in a private
// copy, so peers can read it after the rendezvous while the owner already writes its output in
// place) and the checks every rank runs on the complete set, so all ranks reach the same verdict.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "core/dtype.h"
#include "core/status.h"

namespace orochi::dist {

struct Arrival {
  bool arrived = false;
  std::string op;  // "all_reduce", "all_gather", "all_to_all", "all_reduce_min"
  DType dtype = DType::kF32;
  int64_t count = 0;                 // elements per rank (not all_to_all)
  std::vector<int64_t> send_counts;  // all_to_all: elements for each destination rank
  std::vector<int64_t> recv_counts;  // all_to_all: elements expected from each source rank
  // Staged data: one chunk, or one per destination rank for all_to_all.
  std::vector<std::vector<std::byte>> chunks;
  std::string bad_arguments;  // why this rank's arguments are unusable; empty when fine
};

struct Exchange {
  std::string op;  // the first arrival's operation, for deadline messages
  std::vector<Arrival> ranks;
  int arrived = 0, departed = 0;
};

// A private copy of `bytes` bytes at `data`.
std::vector<std::byte> stage_bytes(const void* data, int64_t bytes);

// True for the element types all_reduce_sum adds: f32, f64, bf16, f16, i64, i32.
bool summable(DType dtype);

// Every rank called the same operation with the same element type and size, no rank's arguments
// were bad, and for all_to_all rank i's send_counts[j] equals rank j's recv_counts[i].
Status check_agreement(const Exchange& exchange, const std::string& group);

// out[k] = sum over ranks 0..n-1 (in that order) of each rank's chunk 0 element k; bf16 and f16
// accumulate in f32 and round once, so every rank computes bit-identical results.
void sum_in_rank_order(const Exchange& exchange, DType dtype, int64_t count, void* out);

// The local checks of one rank's all_to_all arguments ("" when fine): one entry per rank in each
// vector, counts and offsets >= 0, buffers present, receive regions not overlapping.
std::string check_all_to_all_arguments(int size, const void* send, const std::vector<int64_t>& send_counts,
                                       const std::vector<int64_t>& send_offsets, const void* recv,
                                       const std::vector<int64_t>& recv_counts,
                                       const std::vector<int64_t>& recv_offsets);

}  // namespace orochi::dist
