// The M-RoPE positions of a mixed sequence, as transformers' Qwen3VLModel.get_rope_index lays them
// out (REF2VA.md §4.5). Videos are split into one (1, h, w) grid per temporal block, since H3 puts
// a timestamp between blocks. Walking the runs of equal token type with a cursor p = 0:
//   a text run gives its j-th token (p, p, p) and advances p by one per token;
//   a vision run takes the next grid of its modality (t, h, w), gives the token at merged
//   (ti, r, c) in row-major order (p + ti, p + r, p + c) and advances p by max(h, w) / merge.
#pragma once

#include <cstdint>
#include <vector>

#include "core/status.h"
#include "core/tensor.h"
#include "models/qwen3vl/multimodal_tokens.h"

namespace orochi::qwen3vl {

// Positions i64 [L, 3] (t, h, w) of a sequence with `types[i]` the modality of token i. Image
// grids and video grids are in sequence order; `spatial_merge_size` is the vision config's (2).
// invalid_argument when a vision run has no grid left, a run's length is not its grid's token
// count, a grid is left over, or a grid does not merge.
Expected<Tensor> rope_index(const std::vector<MmTokenType>& types, const std::vector<GridThw>& image_grids,
                            const std::vector<GridThw>& video_grids, int64_t spatial_merge_size = 2);

}  // namespace orochi::qwen3vl
