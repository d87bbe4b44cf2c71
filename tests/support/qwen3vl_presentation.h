// H3 presentations for the Qwen3-VL conditioner built the way a ref2va request builds them, from
// synthetic media (no files): deterministic RGB images and video frames -> Qwen's real processor
// (process_images / process_videos, the 2 fps frame sampling of a 24 fps video) -> the H3
// presentation builder (pipeline/h3_presentation, the test BPE tokenizer) -> M-RoPE positions
// (rope_index). Used by the full-size comparison with transformers (tests/cuda/
// test_qwen3vl_presentation_gpu.cpp, scripts/device/compare_qwen3vl_presentation.py) and its tiny
// CPU check (tests/test_qwen3vl_presentation.cpp).
//
// The test tokenizer numbers the vision tokens 3003..3006; they are moved to Qwen3-VL's ids
// (<|vision_start|> 151652, <|vision_end|> 151653, <|image_pad|> 151655, <|video_pad|> 151656) so
// the sequence reads as the release's does. The other ids are the test tokenizer's (< 3011).
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "core/status.h"
#include "core/tensor.h"
#include "models/qwen3vl/multimodal_tokens.h"
#include "models/qwen3vl/text_config.h"
#include "models/qwen3vl/text_model.h"
#include "models/qwen3vl/vision_config.h"
#include "models/qwen3vl/vision_model.h"

namespace orochi::testing {

struct PresentationCase {
  std::string name;
  std::vector<std::pair<int64_t, int64_t>> images;  // (height, width) of each reference image
  int64_t video_frames = 0;                          // a 24 fps reference video; 0: none
  int64_t video_height = 0, video_width = 0;
  bool video_has_audio = true;
  int64_t audio_clips = 0;  // audio clips after the video: a "<Audio j>: " label each, nothing for Qwen
  std::string prompt;       // empty: the comparison's default prompt
};

// "ref2va-2img": 2 images at 1344x768 + a 124-frame 1344x768 video with sound (8064 vision tokens);
// "ref2va-4img": 4 images at 3648x2048 (2048 short edge) + the same video (35,232 vision tokens);
// "ref2va-bench": issue 23's preprocessing request as scripts/device/peer_ref2va_preprocess.py hands it
//   to diffusers (make_ref2va_media.py's media normalized): 4 pictures at 3648x2048, 2048x2048,
//   2048x2720 and 3072x2048 (W x H), a 5 s 30 fps video on its 1344x768 canvas with its soundtrack
//   (120 frames at 24 fps: 10 sampled at 2 fps, 5 blocks), a 4 s audio clip, the peer's prompt
//   (kRef2vaBenchPrompt): 28,016 vision tokens, 28,217 in all with the test tokenizer, the same
//   tokens as the peer's (it uses that tokenizer too); only the pixels differ (synthetic here, of
//   the same sizes), which changes no time;
// "tiny": 2 small images + a 26-frame video (for the tiny CPU check). not_found for another name.
Expected<PresentationCase> presentation_case(const std::string& name);

// peer_ref2va_preprocess.py's PROMPT, verbatim (tests/test_qwen3vl_presentation.cpp checks the two
// stay the same): with the same tokenizer (tests/data/tokenizer/qwen_bpe) the two sides' presentations
// then have the same tokens.
extern const char* const kRef2vaBenchPrompt;

struct BuiltPresentation {
  Tensor input_ids;        // i64 [L], Qwen3-VL's vision ids
  Tensor token_types;      // i64 [L], mm_token_type_ids
  std::vector<qwen3vl::MmTokenType> types;
  Tensor positions;        // i64 [L, 3], rope_index
  Tensor pixel_values;     // f32 [image patches + video patches, 3·2·16·16]: the images', then the video's
  int64_t image_patches = 0;
  std::vector<qwen3vl::GridThw> image_grids, video_grids;
  std::vector<qwen3vl::GridThw> grids() const;  // images then videos: one vision tower call
  std::vector<int64_t> vision_rows;             // the pad rows, ascending
  // Seconds in Qwen's processor (frame sampling, process_images, process_videos) and the presentation
  // builder: the part diffusers' "processor" time covers (not the synthetic media, not rope_index).
  double processor_s = 0;
  int64_t size() const { return input_ids.numel(); }
};

// The test tokenizer (tests/data/tokenizer/qwen_bpe) with the case's prompt (or the default one).
Expected<BuiltPresentation> build_presentation(const PresentationCase& c);

// The tower's outputs for grids() (one call; host or device tensors) at the pad rows, in sequence
// order: what the text stack takes.
qwen3vl::VisionEmbeddings presentation_vision(const BuiltPresentation& p, const qwen3vl::VisionFeatures& f);

// The tiny CPU check's shapes: the release's patch 16 / temporal 2 / merge 2 and 48x48 position
// table with narrow widths (vision 32 wide, 2 heads, 4 blocks, DeepStack after 0/2/3; text 64
// wide, 4 q / 2 kv heads of 16, MLP 128, the full vocabulary, M-RoPE sections [4, 2, 2]).
qwen3vl::VisionConfig tiny_vision_config();
qwen3vl::TextConfig tiny_text_config();
// The config fields transformers needs, as JSON text for a dump's metadata.
std::string text_config_json(const qwen3vl::TextConfig& c);
std::string vision_config_json(const qwen3vl::VisionConfig& c);

// Text-only ids for a prompt of `tokens` tokens, spread over the vocabulary (bench text's).
Tensor text_only_ids(int64_t tokens, int64_t vocab);

// The dump the comparison script reads (format "orochi-qwen3vl-presentation-dump-v1"): the inputs
// (input_ids, mm_token_type_ids, position_ids, pixel_values, pixel_values_videos, image_grid_thw,
// video_grid_thw; the vision ones only when present) and `outputs` (e.g. hidden_2, hidden_final).
Status write_presentation_dump(const std::string& path, const BuiltPresentation* p, const Tensor& text_ids,
                               const std::vector<std::pair<std::string, Tensor>>& outputs,
                               const std::map<std::string, std::string>& metadata);

}  // namespace orochi::testing
