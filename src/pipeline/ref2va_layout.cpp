#include "pipeline/ref2va_layout.h"

#include <algorithm>
#include <numeric>
#include <string>

namespace orochi::pipeline {
namespace {

Status check_grid(const std::string& what, int64_t h, int64_t w, int64_t ph, int64_t pw) {
  if (h < ph || w < pw || h % ph || w % pw)
    return invalid_argument(what + ": a latent grid of " + std::to_string(h) + "x" + std::to_string(w) +
                            " is not a whole number of " + std::to_string(ph) + "x" + std::to_string(pw) +
                            " patches");
  return Status::ok();
}

}  // namespace

Expected<Ref2vaLayout> build_ref2va_layout(const Ref2vaLayoutRequest& r) {
  const int64_t L = static_cast<int64_t>(r.text_tags.size());
  if (L < 1) return invalid_argument("the prompt produced no text rows");
  for (int64_t tag : r.text_tags)
    if (tag != 0 && tag != 1) return invalid_argument("a text row's tag must be 0 or 1");
  if (r.patch_h < 1 || r.patch_w < 1) return invalid_argument("bad patch size");
  if (r.latent_frames < 1) return invalid_argument("the target has no latent frames");
  if (Status s = check_grid("the target", r.latent_height, r.latent_width, r.patch_h, r.patch_w); !s.is_ok())
    return s;
  if (r.audio_latents < 0 || r.audio_channels < 1) return invalid_argument("bad audio latent count");

  Ref2vaLayout out;
  PackedLayout& p = out.packed;
  p.rows_per_frame = (r.latent_height / r.patch_h) * (r.latent_width / r.patch_w);

  // Sizes first: every block's rows, then the sequence length.
  std::vector<FrameGrid> grids;
  int64_t cursor = L;
  for (size_t i = 0; i < r.references.size(); ++i) {
    const ReferenceGeometry& g = r.references[i];
    const std::string what = "reference " + std::to_string(i + 1);
    ReferenceRows b;
    b.kind = g.kind;
    b.first_row = cursor;
    if (g.kind == ReferenceKind::kAudio) {
      if (g.audio_latents < 1) return invalid_argument(what + " (audio) has no audio latents");
      b.audio_rows = g.audio_latents * r.audio_channels;
    } else {
      if (Status s = check_grid(what, g.latent_height, g.latent_width, r.patch_h, r.patch_w); !s.is_ok()) return s;
      if (g.kind == ReferenceKind::kImage && (g.latent_frames != 1 || g.audio_latents != 0))
        return invalid_argument(what + " (image) must be one latent frame without audio");
      if (g.latent_frames < 1) return invalid_argument(what + " (video) has no latent frames");
      if (g.audio_latents < 0) return invalid_argument(what + " (video) has a negative soundtrack length");
      grids.push_back(frame_position_grid(g.latent_height, g.latent_width, r.patch_h, r.patch_w));
      b.audio_rows = g.audio_latents * r.audio_channels;
      b.video_rows = g.latent_frames * grids.back().rows();
    }
    b.video_offset = p.condition_video_rows;
    b.audio_offset = p.condition_audio_rows;
    p.condition_video_rows += b.video_rows;
    p.condition_audio_rows += b.audio_rows;
    cursor += b.audio_rows + b.video_rows;
    out.blocks.push_back(b);
  }
  out.target_audio_start = cursor;
  out.target_video_start = cursor + r.audio_latents * r.audio_channels;
  p.rows = out.target_video_start + r.latent_frames * p.rows_per_frame;

  // Positions on the shared rotary clock, in f64.
  const FrameGrid target = frame_position_grid(r.latent_height, r.latent_width, r.patch_h, r.patch_w);
  std::vector<double> pos(p.rows * 3, 0.0);
  for (int64_t j = 0; j < L; ++j) pos[j * 3] = static_cast<double>(j);
  double clock = static_cast<double>(L);
  size_t visual = 0;
  for (size_t i = 0; i < r.references.size(); ++i) {
    const ReferenceGeometry& g = r.references[i];
    ReferenceRows& b = out.blocks[i];
    b.origin = clock;
    if (g.kind == ReferenceKind::kAudio) {
      fill_audio_positions(pos, b.first_row, g.audio_latents, r.audio_channels, clock, target.w);
      clock += static_cast<double>(g.audio_latents);
      continue;
    }
    const FrameGrid& grid = grids[visual++];
    if (g.kind == ReferenceKind::kImage) {
      fill_frame_positions(pos, b.first_row, clock, grid);
      clock += 1.0;  // an image takes one integer rotary slot
      continue;
    }
    // Video: the soundtrack (on this video's own width extremes), then the frames, at one origin.
    fill_audio_positions(pos, b.first_row, g.audio_latents, r.audio_channels, clock, grid.w);
    double span = 0.0;
    const std::vector<double> times = temporal_position_grid(g.latent_frames, clock, &span);
    const int64_t video_start = b.first_row + b.audio_rows;
    for (int64_t k = 0; k < g.latent_frames; ++k) fill_frame_positions(pos, video_start + k * grid.rows(), times[k], grid);
    clock += std::max(static_cast<double>(g.audio_latents), span);
  }
  out.target_origin = clock;
  fill_audio_positions(pos, out.target_audio_start, r.audio_latents, r.audio_channels, clock, target.w);
  const std::vector<double> times = temporal_position_grid(r.latent_frames, clock);
  for (int64_t k = 0; k < r.latent_frames; ++k)
    fill_frame_positions(pos, out.target_video_start + k * p.rows_per_frame, times[k], target);

  out.positions_f64 = Tensor::empty({p.rows, 3}, DType::kF64);
  std::copy(pos.begin(), pos.end(), out.positions_f64.data<double>());
  const std::vector<float> pos_f(pos.begin(), pos.end());
  p.positions = Tensor::from_floats(pos_f, {p.rows, 3});

  // Index streams: reference ranges in request order, then the target's; tags from them.
  std::vector<int64_t> video, audio;
  video.reserve(p.condition_video_rows + r.latent_frames * p.rows_per_frame);
  audio.reserve(p.condition_audio_rows + r.audio_latents * r.audio_channels);
  auto append = [](std::vector<int64_t>& v, int64_t begin, int64_t n) {
    for (int64_t k = 0; k < n; ++k) v.push_back(begin + k);
  };
  for (const ReferenceRows& b : out.blocks) {
    append(audio, b.first_row, b.audio_rows);
    append(video, b.first_row + b.audio_rows, b.video_rows);
  }
  append(video, out.target_video_start, p.rows - out.target_video_start);
  append(audio, out.target_audio_start, out.target_video_start - out.target_audio_start);
  std::vector<int64_t> tags(p.rows, 0);
  std::copy(r.text_tags.begin(), r.text_tags.end(), tags.begin());
  for (int64_t a : audio) tags[a] = 2;
  for (int64_t v : video) tags[v] = 0;
  p.token_tags = Tensor::from_ints(tags, {p.rows});
  p.video_indices = Tensor::from_ints(video, {static_cast<int64_t>(video.size())});
  p.audio_indices = Tensor::from_ints(audio, {static_cast<int64_t>(audio.size())});
  std::vector<int64_t> text(L);
  std::iota(text.begin(), text.end(), 0);
  p.text_indices = Tensor::from_ints(text, {L});
  return out;
}

}  // namespace orochi::pipeline
