#include "support/h3_inputs.h"

#include "support/random.h"

namespace orochi::testing {

h3::H3Inputs h3_inputs(const h3::H3Config& c, const PackedRows& rows, uint64_t seed) {
  const auto nt = static_cast<int64_t>(rows.text.size()), na = static_cast<int64_t>(rows.audio.size());
  const auto nv = static_cast<int64_t>(rows.video.size()), S = nt + na + nv;
  std::vector<int64_t> tags(static_cast<size_t>(S));
  for (int64_t r : rows.text) tags[r] = h3::kTagText;
  for (int64_t r : rows.audio) tags[r] = h3::kTagAudio;
  for (int64_t r : rows.video) tags[r] = h3::kTagVideo;
  h3::H3Inputs in;
  in.video = random_normal({nv, c.video_patch_dim()}, seed + 1);
  in.audio = random_normal({na, c.audio_in_channels}, seed + 2);
  in.text = random_normal({nt, c.text_dim}, seed + 3);
  in.timestep_indices = Tensor::from_ints(rows.timestep_index, {S});
  in.token_tags = Tensor::from_ints(tags, {S});
  in.positions = Tensor::from_floats(rows.positions, {S, 3});
  in.video_indices = Tensor::from_ints(rows.video, {nv});
  in.audio_indices = Tensor::from_ints(rows.audio, {na});
  in.text_indices = Tensor::from_ints(rows.text, {nt});
  return in;
}

}  // namespace orochi::testing
