// How sequence-parallel ranks exchange and split their work, chosen once by the engine's options
// layer (engine/run_switches.h) and passed down with the layout; nothing below it reads the
// environment.
#pragma once

#include <cstddef>
#include <vector>

namespace orochi::dist {

// How SP ranks bring q, k and v of all rows of their heads together: by gathering the rows of the
// attention input, by exchanging q/k/v chunks of every rank's heads, or whichever moves fewer bytes.
enum class SpQkv { kAuto, kGather, kHeads };

// Copy-engine pushes to a peer in pieces with host pauses between them (experimental; for timing
// whether an exchange's burst lowers the power-capped clock). 0 bytes: one copy per peer.
struct PeerCopyPace {
  size_t piece_bytes = 0;
  int gap_us = 0;
};

struct SequenceParallelOptions {
  SpQkv qkv = SpQkv::kAuto;
  // Attention one SP share of query rows at a time, each share's output sent while the next
  // computes (the earlier scheme, kept for side-by-side timing).
  bool split_attention = false;
  // Relative speeds of the SP ranks (rows split in proportion); empty: an even split.
  std::vector<double> row_weights;
  PeerCopyPace pace;
};

}  // namespace orochi::dist
