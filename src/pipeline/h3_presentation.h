// MiniMax-H3's presentation of a request to its Qwen3-VL conditioner: the token ids the text stack
// reads, as diffusers' modular pipeline builds them (FL2VATextEncoderStep, Ref2VATextEncoderStep.
// _build_presentation; REF2VA.md §4.3):
//   t2va    the prompt, verbatim;
//   fl2va   per keyframe "<Picture i>: " + V(<|image_pad|>, n), then the prompt;
//   ref2va  per reference in request order, labels numbered per modality: "<Audio j>: " first when it
//           carries sound (an audio clip, or a video's soundtrack); an image "<Picture i>: " +
//           V(<|image_pad|>, n); a video "<Video k>: " and per temporal block "<ts seconds>" +
//           V(<|video_pad|>, n_block); then the prompt.
// V(pad, n) = <|vision_start|> pad×n <|vision_end|>. Every text segment is tokenized on its own
// (add_special_tokens=False) and the pieces are concatenated, which is not the same as tokenizing
// the joined string. The rows of a V block carry DiT tag 0 (video), every other row tag 1 (text).
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "core/status.h"
#include "models/qwen3vl/multimodal_tokens.h"
#include "text/tokenizer.h"

namespace orochi::pipeline {

// H3's modality tags of the packed DiT rows (diffusers MINIMAX_H3_*_TAG) that text rows carry.
inline constexpr int64_t kH3VideoTag = 0;
inline constexpr int64_t kH3TextTag = 1;

// A vision input's grid in patches, as Qwen's processors report it (t temporal blocks, 1 for an image).
using VisionGrid = qwen3vl::GridThw;

// One ref2va reference, in request order. Audio sends nothing to Qwen: only its label.
struct PresentationReference {
  enum class Kind { kImage, kVideo, kAudio };
  Kind kind = Kind::kImage;
  bool has_audio = false;                 // an audio clip, or a video with its soundtrack
  VisionGrid grid;                        // image and video
  std::vector<double> block_timestamps;   // video: one per temporal block (grid.t of them), seconds
};

struct Presentation {
  std::vector<int32_t> token_ids;
  std::vector<qwen3vl::MmTokenType> kinds;   // per token: Qwen's mm_token_type_ids
  std::vector<int64_t> dit_tags;             // per token: kH3TextTag or kH3VideoTag
  std::vector<VisionGrid> image_grids;       // the images' grids in sequence order
  std::vector<VisionGrid> video_grids;       // the videos' grids in sequence order
  int64_t size() const { return static_cast<int64_t>(token_ids.size()); }
};

// The special token ids the presentation needs, looked up in the tokenizer (151652..151656 in
// Qwen3-VL's). not_found names the missing token: the tokenizer is not Qwen3-VL's.
struct VisionTokenIds {
  int32_t vision_start = 0, vision_end = 0, image_pad = 0, video_pad = 0;
};
Expected<VisionTokenIds> vision_token_ids(const text::BpeTokenizer& tokenizer);

// "<x.x seconds>" as Python's f"<{ts:.1f} seconds>": the exact binary value rounded half to even.
std::string timestamp_label(double seconds);

// The frames the conditioner reads from a reference video and their block timestamps are the
// processor's: qwen3vl::sample_video_frames (models/qwen3vl/processor.h).

// The prompt alone (t2va).
Expected<Presentation> build_t2va_presentation(const text::BpeTokenizer& tokenizer, const std::string& prompt);
// Keyframes in packed order, each with its image grid; `merge_size` is the processor's (2).
Expected<Presentation> build_fl2va_presentation(const text::BpeTokenizer& tokenizer, const std::string& prompt,
                                                const std::vector<VisionGrid>& keyframe_grids,
                                                int64_t merge_size = 2);
// References in request order. invalid_argument for a grid that does not merge (h or w not a
// multiple of merge_size, t < 1, an image with t != 1 is allowed as Qwen counts t*h*w/merge²) or a
// video whose timestamps do not match its blocks.
Expected<Presentation> build_ref2va_presentation(const text::BpeTokenizer& tokenizer, const std::string& prompt,
                                                 const std::vector<PresentationReference>& references,
                                                 int64_t merge_size = 2);

// The presentation's size without its token ids, for the planner (configs and media headers alone):
// the vision blocks are exact, every text segment (label, timestamp) takes what `count` says (a
// tokenizer's count, or estimated_segment_tokens()), the prompt `prompt_tokens`. Errors: those of
// the builders above, and a prompt of fewer than 1 token.
struct PresentationSize {
  int64_t rows = 0;            // L
  int64_t vision_tokens = 0;   // the pad tokens: the tower's merged outputs
  int64_t vision_patches = 0;  // the patches the tower reads
  int64_t label_rows = 0;      // label and timestamp text before the prompt (tag 1)
  int64_t prompt_rows = 0;
};
using SegmentTokenCount = std::function<Expected<int64_t>(const std::string& segment)>;
// "<Picture 1>: ", "<Audio 2>: ", "<2.2 seconds>" take about 6 tokens each in Qwen's BPE (REF2VA.md §6).
inline constexpr int64_t kEstimatedSegmentTokens = 6;
SegmentTokenCount estimated_segment_tokens();
Expected<PresentationSize> fl2va_presentation_size(const std::vector<VisionGrid>& keyframe_grids,
                                                  int64_t prompt_tokens, const SegmentTokenCount& count,
                                                  int64_t merge_size = 2);
Expected<PresentationSize> ref2va_presentation_size(const std::vector<PresentationReference>& references,
                                                   int64_t prompt_tokens, const SegmentTokenCount& count,
                                                   int64_t merge_size = 2);

}  // namespace orochi::pipeline
