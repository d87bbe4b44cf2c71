// What Qwen3-VL needs to know about a mixed text + image + video sequence besides its token ids:
// each token's modality (transformers' mm_token_type_ids) and each vision input's patch grid.
#pragma once

#include <cstdint>

namespace orochi::qwen3vl {

// transformers' mm_token_type_ids: 1 for an image pad token, 2 for a video pad token, 0 for every
// other token (the vision start/end tokens and the labels around a block included).
enum class MmTokenType : uint8_t { kText = 0, kImage = 1, kVideo = 2 };

// A vision input's grid in patches (image_grid_thw / video_grid_thw): t temporal blocks (1 for an
// image), h x w patches. A block gives h*w / merge² tokens after the 2x2 merger.
struct GridThw {
  int64_t t = 1, h = 0, w = 0;
  bool operator==(const GridThw&) const = default;
};

}  // namespace orochi::qwen3vl
