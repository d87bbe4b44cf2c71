#include "pipeline/h3_presentation.h"

#include <cmath>
#include <cstdio>
#include <functional>
#include <utility>

namespace orochi::pipeline {
namespace {

std::string describe(const VisionGrid& g) {
  return "(" + std::to_string(g.t) + ", " + std::to_string(g.h) + ", " + std::to_string(g.w) + ")";
}

// Builds the token list segment by segment, as the pipeline's emit() does. `encode` tokenizes one
// segment: the tokenizer's, or (for the sizes alone) as many placeholder ids as it counts.
class PresentationWriter {
 public:
  using SegmentEncoder = std::function<Expected<std::vector<int32_t>>(const std::string&)>;
  PresentationWriter(SegmentEncoder encode, VisionTokenIds ids) : encode_(std::move(encode)), ids_(ids) {}
  PresentationWriter(const text::BpeTokenizer& tokenizer, VisionTokenIds ids)
      : PresentationWriter([&tokenizer](const std::string& s) { return tokenizer.encode(s); }, ids) {}

  // One text segment, tokenized on its own.
  Status text(const std::string& segment) {
    OROCHI_ASSIGN_OR_RETURN(const std::vector<int32_t> ids, encode_(segment));
    for (const int32_t id : ids) push(id, qwen3vl::MmTokenType::kText, kH3TextTag);
    return Status::ok();
  }

  // <|vision_start|> pad×n <|vision_end|>, every row tagged video.
  void vision(qwen3vl::MmTokenType pad_kind, int64_t n) {
    const int32_t pad = pad_kind == qwen3vl::MmTokenType::kImage ? ids_.image_pad : ids_.video_pad;
    push(ids_.vision_start, qwen3vl::MmTokenType::kText, kH3VideoTag);
    for (int64_t i = 0; i < n; ++i) push(pad, pad_kind, kH3VideoTag);
    push(ids_.vision_end, qwen3vl::MmTokenType::kText, kH3VideoTag);
  }

  Presentation& out() { return out_; }

 private:
  void push(int32_t id, qwen3vl::MmTokenType kind, int64_t tag) {
    out_.token_ids.push_back(id);
    out_.kinds.push_back(kind);
    out_.dit_tags.push_back(tag);
  }

  SegmentEncoder encode_;
  VisionTokenIds ids_;
  Presentation out_;
};

// Tokens of one image, or of one temporal block of a video: h*w/merge² per temporal slot.
Status check_grid(const VisionGrid& g, int64_t merge_size, const std::string& what) {
  if (merge_size < 1) return invalid_argument("the processor's merge size must be positive, got " +
                                              std::to_string(merge_size));
  if (g.t < 1 || g.h < merge_size || g.w < merge_size || g.h % merge_size != 0 || g.w % merge_size != 0)
    return invalid_argument(what + " has the vision grid " + describe(g) + "; Qwen3-VL needs t >= 1 and h, w " +
                            "positive multiples of the merge size " + std::to_string(merge_size) +
                            " (an image of H x W pixels has h = H/16, w = W/16)");
  return Status::ok();
}

Expected<Presentation> finish(PresentationWriter& writer) {
  if (writer.out().token_ids.empty())
    return invalid_argument("the presentation is empty: give a prompt (Qwen3-VL needs at least one token)");
  return std::move(writer.out());
}

// fl2va: per keyframe in packed order "<Picture i>: " + V(<|image_pad|>, n) (D FL2VATextEncoderStep).
Status write_fl2va_keyframes(PresentationWriter& writer, const std::vector<VisionGrid>& keyframe_grids,
                             int64_t merge_size) {
  for (size_t i = 0; i < keyframe_grids.size(); ++i) {
    const VisionGrid& g = keyframe_grids[i];
    OROCHI_RETURN_IF_ERROR(check_grid(g, merge_size, "keyframe " + std::to_string(i + 1)));
    OROCHI_RETURN_IF_ERROR(writer.text("<Picture " + std::to_string(i + 1) + ">: "));
    writer.vision(qwen3vl::MmTokenType::kImage, g.t * g.h * g.w / (merge_size * merge_size));
    writer.out().image_grids.push_back(g);
  }
  return Status::ok();
}

// ref2va: the references in request order (D Ref2VATextEncoderStep._build_presentation).
Status write_ref2va_references(PresentationWriter& writer, const std::vector<PresentationReference>& references,
                               int64_t merge_size) {
  using Kind = PresentationReference::Kind;
  int64_t images = 0, videos = 0, audios = 0;
  for (size_t i = 0; i < references.size(); ++i) {
    const PresentationReference& r = references[i];
    const std::string what = "reference " + std::to_string(i + 1);
    if (r.kind == Kind::kAudio || r.has_audio)
      OROCHI_RETURN_IF_ERROR(writer.text("<Audio " + std::to_string(++audios) + ">: "));
    if (r.kind == Kind::kImage) {
      OROCHI_RETURN_IF_ERROR(check_grid(r.grid, merge_size, what + " (an image)"));
      OROCHI_RETURN_IF_ERROR(writer.text("<Picture " + std::to_string(++images) + ">: "));
      writer.vision(qwen3vl::MmTokenType::kImage, r.grid.t * r.grid.h * r.grid.w / (merge_size * merge_size));
      writer.out().image_grids.push_back(r.grid);
    } else if (r.kind == Kind::kVideo) {
      OROCHI_RETURN_IF_ERROR(check_grid(r.grid, merge_size, what + " (a video)"));
      if (static_cast<int64_t>(r.block_timestamps.size()) != r.grid.t)
        return invalid_argument(what + " (a video) has " + std::to_string(r.grid.t) + " vision blocks but " +
                                std::to_string(r.block_timestamps.size()) +
                                " block timestamps; give one timestamp per temporal block");
      OROCHI_RETURN_IF_ERROR(writer.text("<Video " + std::to_string(++videos) + ">: "));
      for (const double ts : r.block_timestamps) {
        OROCHI_RETURN_IF_ERROR(writer.text(timestamp_label(ts)));
        writer.vision(qwen3vl::MmTokenType::kVideo, r.grid.h * r.grid.w / (merge_size * merge_size));
      }
      writer.out().video_grids.push_back(r.grid);
    }
  }
  return Status::ok();
}

// Placeholder ids, as many as `count` says a segment takes.
PresentationWriter::SegmentEncoder counting_encoder(const SegmentTokenCount& count) {
  return [count](const std::string& segment) -> Expected<std::vector<int32_t>> {
    OROCHI_ASSIGN_OR_RETURN(const int64_t n, count(segment));
    if (n < 0) return invalid_argument("a text segment cannot take " + std::to_string(n) + " tokens");
    return std::vector<int32_t>(static_cast<size_t>(n), 0);
  };
}

// The written references' sizes with the prompt's tokens after them.
Expected<PresentationSize> size_of(PresentationWriter& writer, int64_t prompt_tokens) {
  if (prompt_tokens < 1) return invalid_argument("the prompt must take at least one token, got " +
                                                 std::to_string(prompt_tokens));
  const Presentation& p = writer.out();
  PresentationSize size;
  size.prompt_rows = prompt_tokens;
  size.rows = p.size() + prompt_tokens;
  for (const qwen3vl::MmTokenType kind : p.kinds) size.vision_tokens += kind != qwen3vl::MmTokenType::kText;
  for (const std::vector<VisionGrid>* grids : {&p.image_grids, &p.video_grids})
    for (const VisionGrid& g : *grids) size.vision_patches += g.t * g.h * g.w;
  size.label_rows = size.rows - size.prompt_rows;
  for (const int64_t tag : p.dit_tags) size.label_rows -= tag == kH3VideoTag;
  return size;
}

}  // namespace

Expected<VisionTokenIds> vision_token_ids(const text::BpeTokenizer& tokenizer) {
  VisionTokenIds ids;
  const std::pair<const char*, int32_t*> wanted[] = {{"<|vision_start|>", &ids.vision_start},
                                                     {"<|vision_end|>", &ids.vision_end},
                                                     {"<|image_pad|>", &ids.image_pad},
                                                     {"<|video_pad|>", &ids.video_pad}};
  for (const auto& [token, slot] : wanted) {
    const std::optional<int32_t> id = tokenizer.token_id(token);
    if (!id) return not_found(std::string("the tokenizer has no ") + token +
                              " token; images and videos need Qwen3-VL's tokenizer (the checkpoint's tokenizer/)");
    *slot = *id;
  }
  return ids;
}

std::string timestamp_label(double seconds) {
  // glibc's %.1f rounds the exact binary value half to even, as CPython's float formatting does.
  char buf[64];
  std::snprintf(buf, sizeof(buf), "<%.1f seconds>", seconds);
  return buf;
}

Expected<Presentation> build_t2va_presentation(const text::BpeTokenizer& tokenizer, const std::string& prompt) {
  PresentationWriter writer(tokenizer, VisionTokenIds{});
  OROCHI_RETURN_IF_ERROR(writer.text(prompt));
  return finish(writer);
}

Expected<Presentation> build_fl2va_presentation(const text::BpeTokenizer& tokenizer, const std::string& prompt,
                                                const std::vector<VisionGrid>& keyframe_grids, int64_t merge_size) {
  VisionTokenIds ids;
  if (!keyframe_grids.empty()) {
    OROCHI_ASSIGN_OR_RETURN(ids, vision_token_ids(tokenizer));
  }
  PresentationWriter writer(tokenizer, ids);
  OROCHI_RETURN_IF_ERROR(write_fl2va_keyframes(writer, keyframe_grids, merge_size));
  OROCHI_RETURN_IF_ERROR(writer.text(prompt));
  return finish(writer);
}

Expected<Presentation> build_ref2va_presentation(const text::BpeTokenizer& tokenizer, const std::string& prompt,
                                                 const std::vector<PresentationReference>& references,
                                                 int64_t merge_size) {
  using Kind = PresentationReference::Kind;
  VisionTokenIds ids;
  bool any_vision = false;
  for (const PresentationReference& r : references) any_vision |= r.kind != Kind::kAudio;
  if (any_vision) {
    OROCHI_ASSIGN_OR_RETURN(ids, vision_token_ids(tokenizer));
  }
  PresentationWriter writer(tokenizer, ids);
  OROCHI_RETURN_IF_ERROR(write_ref2va_references(writer, references, merge_size));
  OROCHI_RETURN_IF_ERROR(writer.text(prompt));
  return finish(writer);
}

Expected<PresentationSize> fl2va_presentation_size(const std::vector<VisionGrid>& keyframe_grids,
                                                  int64_t prompt_tokens, const SegmentTokenCount& count,
                                                  int64_t merge_size) {
  PresentationWriter writer(counting_encoder(count), VisionTokenIds{});
  OROCHI_RETURN_IF_ERROR(write_fl2va_keyframes(writer, keyframe_grids, merge_size));
  return size_of(writer, prompt_tokens);
}

Expected<PresentationSize> ref2va_presentation_size(const std::vector<PresentationReference>& references,
                                                   int64_t prompt_tokens, const SegmentTokenCount& count,
                                                   int64_t merge_size) {
  PresentationWriter writer(counting_encoder(count), VisionTokenIds{});
  OROCHI_RETURN_IF_ERROR(write_ref2va_references(writer, references, merge_size));
  return size_of(writer, prompt_tokens);
}

SegmentTokenCount estimated_segment_tokens() {
  return [](const std::string&) -> Expected<int64_t> { return kEstimatedSegmentTokens; };
}


}  // namespace orochi::pipeline
