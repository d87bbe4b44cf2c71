#include "models/qwen3vl/rope_index.h"

#include <algorithm>
#include <string>

namespace orochi::qwen3vl {
namespace {

const char* modality_name(MmTokenType type) { return type == MmTokenType::kImage ? "image" : "video"; }

std::string describe(const GridThw& g) {
  return "(" + std::to_string(g.t) + ", " + std::to_string(g.h) + ", " + std::to_string(g.w) + ")";
}

}  // namespace

Expected<Tensor> rope_index(const std::vector<MmTokenType>& types, const std::vector<GridThw>& image_grids,
                            const std::vector<GridThw>& video_grids, int64_t merge) {
  if (merge < 1) return invalid_argument("the spatial merge size must be positive, got " + std::to_string(merge));
  // One grid per temporal block of a video: its blocks are separate pad runs.
  std::vector<GridThw> video_blocks;
  for (const GridThw& g : video_grids)
    for (int64_t i = 0; i < g.t; ++i) video_blocks.push_back({1, g.h, g.w});
  size_t next_image = 0, next_video = 0;

  const int64_t L = static_cast<int64_t>(types.size());
  std::vector<int64_t> pos(static_cast<size_t>(3 * L));  // [L, 3]
  int64_t cursor = 0;
  for (int64_t start = 0; start < L;) {
    const MmTokenType type = types[static_cast<size_t>(start)];
    int64_t end = start;
    while (end < L && types[static_cast<size_t>(end)] == type) ++end;
    if (type == MmTokenType::kText) {
      for (int64_t i = start; i < end; ++i, ++cursor)
        pos[3 * i] = pos[3 * i + 1] = pos[3 * i + 2] = cursor;
    } else {
      const bool image = type == MmTokenType::kImage;
      const std::vector<GridThw>& grids = image ? image_grids : video_blocks;
      size_t& next = image ? next_image : next_video;
      if (next >= grids.size())
        return invalid_argument("the " + std::string(modality_name(type)) + " pad run at token " +
                                std::to_string(start) + " has no grid left (" + std::to_string(grids.size()) + " " +
                                modality_name(type) + (image ? " grids" : " temporal blocks") +
                                " given): give one grid per image and one temporal block per video pad run");
      const GridThw g = grids[next++];
      if (g.t < 1 || g.h < merge || g.w < merge || g.h % merge || g.w % merge)
        return invalid_argument(std::string(modality_name(type)) + " grid " + describe(g) +
                                " does not merge: t >= 1 and h, w positive multiples of " + std::to_string(merge));
      const int64_t gh = g.h / merge, gw = g.w / merge;
      if (end - start != g.t * gh * gw)
        return invalid_argument("the " + std::string(modality_name(type)) + " pad run at token " +
                                std::to_string(start) + " has " + std::to_string(end - start) +
                                " tokens but its grid " + describe(g) + " gives " + std::to_string(g.t * gh * gw));
      int64_t i = start;
      for (int64_t ti = 0; ti < g.t; ++ti)
        for (int64_t r = 0; r < gh; ++r)
          for (int64_t c = 0; c < gw; ++c, ++i) {
            pos[3 * i] = cursor + ti;
            pos[3 * i + 1] = cursor + r;
            pos[3 * i + 2] = cursor + c;
          }
      cursor += std::max(gh, gw);
    }
    start = end;
  }
  if (next_image != image_grids.size() || next_video != video_blocks.size())
    return invalid_argument("the sequence has pad runs for " + std::to_string(next_image) + " of " +
                            std::to_string(image_grids.size()) + " image grids and " + std::to_string(next_video) +
                            " of " + std::to_string(video_blocks.size()) +
                            " video temporal blocks: every grid needs its pad run");
  return Tensor::from_ints(pos, {L, 3});
}

}  // namespace orochi::qwen3vl
