// Sequence-parallel row shares that follow how fast each GPU actually runs. Under Ulysses every
// rank attends over all rows of its heads (work no share can move) and does everything else on
// its own rows. Two equal GPUs can still run at different speeds: on an H200 pair under the 700 W
// cap the warmer one clocks ~1-3% lower, and the slower rank sets the pace of every exchange
// (bench/RESULTS.md, sessions 8 and 9). Giving the faster rank more rows evens the ranks out; a
// caller whose fixed work is separated from the row work by a barrier passes fixed_ms = 0.
//
//   loads = what each rank measured in the last forward (fixed part, row part, rows)
//   Expected<RowShares> next = balanced_shares(S, loads, share_capacity(S, ranks));
#pragma once

#include <cstdint>
#include <vector>

#include "core/status.h"
#include "dist/comm.h"

namespace orochi::dist {

// One rank's compute time in one forward, the time it stood waiting for its peers left out.
struct RankLoad {
  double fixed_ms = 0;     // work every rank does in full whatever its rows (attention over all rows)
  double per_rows_ms = 0;  // work on its own rows (GEMMs, norms): proportional to `rows`
  int64_t rows = 0;        // the rows it owned
};

// The most rows one of `parts` ranks may own after balancing: even_share's largest plus 1/16,
// so buffers sized for it let a GPU that runs up to ~6% faster take the rows it can. The memory
// planner sizes a rank's activations with the same bound.
int64_t share_capacity(int64_t rows, int parts);

struct RowShares {
  std::vector<Range> shares;  // contiguous, in rank order, covering [0, rows)
  double predicted_ms = 0;    // the slowest rank's predicted time with these shares
  double current_ms = 0;      // ... with the shares the loads were measured on
};

// Shares of `rows` rows among the ranks of `loads` that equalize fixed + rows * per-row cost,
// each between `rows / parts - (capacity - rows / parts)` and `capacity` rows (a per-row cost
// is the rank's per_rows_ms / its rows). invalid_argument for loads that cannot be used: no
// ranks, a rank that owned no rows, negative or non-finite times, a capacity below an even split.
Expected<RowShares> balanced_shares(int64_t rows, const std::vector<RankLoad>& loads, int64_t capacity);

}  // namespace orochi::dist
