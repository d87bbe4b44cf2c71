#include "support/qwen3vl_presentation.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <nlohmann/json.hpp>

#include "models/qwen3vl/processor.h"
#include "models/qwen3vl/rope_index.h"
#include "pipeline/h3_presentation.h"
#include "support/paths.h"
#include "text/tokenizer.h"
#include "weights/safetensors_writer.h"

namespace orochi::testing {
namespace {

constexpr int32_t kQwenVisionStart = 151652, kQwenVisionEnd = 151653, kQwenImagePad = 151655,
                  kQwenVideoPad = 151656;

constexpr const char* kPrompt =
    "A woman in a red coat walks her dog along a rainy harbour at dusk; the camera follows at shoulder height, "
    "gulls call over the water and a tram bell rings in the distance.";

// A deterministic RGB picture: two smooth waves (rows, columns) per channel plus a hashed grain, so
// the patches differ everywhere. `item` tells the references apart, `frame` a video's frames.
std::vector<uint8_t> synthetic_rgb(int64_t height, int64_t width, int64_t item, int64_t frame) {
  std::vector<float> rows(static_cast<size_t>(3 * height)), cols(static_cast<size_t>(3 * width));
  for (int c = 0; c < 3; ++c) {
    for (int64_t y = 0; y < height; ++y)
      rows[static_cast<size_t>(c * height + y)] =
          128.0f + 60.0f * std::sin(0.021f * static_cast<float>(y) * (1.0f + 0.1f * static_cast<float>(item)) +
                                    0.9f * static_cast<float>(c) + 0.13f * static_cast<float>(frame));
    for (int64_t x = 0; x < width; ++x)
      cols[static_cast<size_t>(c * width + x)] =
          45.0f * std::cos(0.017f * static_cast<float>(x) + 0.4f * static_cast<float>(item) -
                           0.5f * static_cast<float>(c) + 0.07f * static_cast<float>(frame));
  }
  std::vector<uint8_t> rgb(static_cast<size_t>(height * width * 3));
  for (int64_t y = 0; y < height; ++y)
    for (int64_t x = 0; x < width; ++x)
      for (int c = 0; c < 3; ++c) {
        uint32_t h = static_cast<uint32_t>(((item * 131 + frame) * 8191 + y) * 65537 + x * 3 + c);
        h ^= h >> 16;
        h *= 0x7feb352dU;
        h ^= h >> 15;
        h *= 0x846ca68bU;
        h ^= h >> 16;
        const float v = rows[static_cast<size_t>(c * height + y)] + cols[static_cast<size_t>(c * width + x)] +
                        static_cast<float>(static_cast<int>(h & 31) - 16);
        rgb[static_cast<size_t>((y * width + x) * 3 + c)] = static_cast<uint8_t>(std::clamp(v, 0.0f, 255.0f));
      }
  return rgb;
}

Tensor grid_tensor(const std::vector<qwen3vl::GridThw>& grids) {
  std::vector<int64_t> v;
  for (const qwen3vl::GridThw& g : grids) v.insert(v.end(), {g.t, g.h, g.w});
  return Tensor::from_ints(v, {static_cast<int64_t>(grids.size()), 3});
}

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

}  // namespace

const char* const kRef2vaBenchPrompt =
    "The woman from picture 1 and the man from picture 2 walk through the hall of picture 3 towards the "
    "window of picture 4, the camera moving as in video 1 with its sound, while the voice of audio 2 speaks.";

Expected<PresentationCase> presentation_case(const std::string& name) {
  PresentationCase c;
  c.name = name;
  if (name == "ref2va-2img") {
    c.images = {{768, 1344}, {768, 1344}};
    c.video_frames = 124, c.video_height = 768, c.video_width = 1344;
  } else if (name == "ref2va-4img") {
    c.images = {{2048, 3648}, {2048, 3648}, {2048, 3648}, {2048, 3648}};
    c.video_frames = 124, c.video_height = 768, c.video_width = 1344;
  } else if (name == "ref2va-bench") {
    // make_ref2va_media.py's pictures after the 2048 rule (height, width): wide, square, tall, landscape.
    c.images = {{2048, 3648}, {2048, 2048}, {2720, 2048}, {2048, 3072}};
    // clip.y4m: 150 frames at 30 fps -> 120 at 24 fps (the target's 124 do not cut it), upscaled to
    // the 1344x768 canvas of its own 16:9; clip.wav is its soundtrack. voice.wav: the audio clip.
    c.video_frames = 120, c.video_height = 768, c.video_width = 1344;
    c.audio_clips = 1;
    c.prompt = kRef2vaBenchPrompt;
  } else if (name == "tiny") {
    c.images = {{256, 320}, {320, 256}};
    c.video_frames = 26, c.video_height = 128, c.video_width = 160;
  } else {
    return not_found("no presentation case '" + name + "' (ref2va-2img, ref2va-4img, ref2va-bench, tiny)");
  }
  return c;
}

std::vector<qwen3vl::GridThw> BuiltPresentation::grids() const {
  std::vector<qwen3vl::GridThw> g = image_grids;
  g.insert(g.end(), video_grids.begin(), video_grids.end());
  return g;
}

Expected<BuiltPresentation> build_presentation(const PresentationCase& c) {
  OROCHI_ASSIGN_OR_RETURN(const text::BpeTokenizer tokenizer,
                          text::BpeTokenizer::load(test_data_dir() + "/tokenizer/qwen_bpe/tokenizer.json"));
  OROCHI_ASSIGN_OR_RETURN(const pipeline::VisionTokenIds vt, pipeline::vision_token_ids(tokenizer));
  BuiltPresentation out;
  std::vector<pipeline::PresentationReference> refs;
  std::vector<Tensor> pixels;

  // Images: one processor call for all of them, as the pipeline makes it.
  if (!c.images.empty()) {
    std::vector<std::vector<uint8_t>> rgb;
    std::vector<qwen3vl::RgbView> views;
    for (size_t i = 0; i < c.images.size(); ++i)
      rgb.push_back(synthetic_rgb(c.images[i].first, c.images[i].second, static_cast<int64_t>(i), 0));
    for (size_t i = 0; i < c.images.size(); ++i) views.push_back({rgb[i].data(), c.images[i].first, c.images[i].second});
    const auto t0 = std::chrono::steady_clock::now();
    OROCHI_ASSIGN_OR_RETURN(qwen3vl::VisionInputs in,
                            qwen3vl::process_images(views, qwen3vl::VisionProcessorConfig::h3_images()));
    out.processor_s += seconds_since(t0);
    for (const qwen3vl::GridThw& g : in.grids) {
      pipeline::PresentationReference r;
      r.kind = pipeline::PresentationReference::Kind::kImage;
      r.grid = g;
      refs.push_back(r);
    }
    out.image_grids = in.grids;
    out.image_patches = in.pixel_values.dim(0);
    pixels.push_back(std::move(in.pixel_values));
  }
  // The video: the frames the conditioner samples from a 24 fps clip (2 fps), then the processor.
  if (c.video_frames > 0) {
    auto t0 = std::chrono::steady_clock::now();
    OROCHI_ASSIGN_OR_RETURN(const qwen3vl::SampledVideoFrames s, qwen3vl::sample_video_frames(c.video_frames));
    out.processor_s += seconds_since(t0);
    std::vector<std::vector<uint8_t>> rgb;
    std::vector<qwen3vl::RgbView> views;
    for (int64_t f : s.frame_indices) rgb.push_back(synthetic_rgb(c.video_height, c.video_width, 100, f));
    for (const auto& f : rgb) views.push_back({f.data(), c.video_height, c.video_width});
    t0 = std::chrono::steady_clock::now();
    OROCHI_ASSIGN_OR_RETURN(qwen3vl::VisionInputs in,
                            qwen3vl::process_videos({views}, qwen3vl::VisionProcessorConfig::h3_videos()));
    out.processor_s += seconds_since(t0);
    pipeline::PresentationReference r;
    r.kind = pipeline::PresentationReference::Kind::kVideo;
    r.has_audio = c.video_has_audio;
    r.grid = in.grids.at(0);
    r.block_timestamps = s.block_timestamps;
    refs.push_back(r);
    out.video_grids = in.grids;
    pixels.push_back(std::move(in.pixel_values));
  }
  // Audio clips: a label each (the request order images, video, clips is the cases' only order).
  for (int64_t i = 0; i < c.audio_clips; ++i) {
    pipeline::PresentationReference r;
    r.kind = pipeline::PresentationReference::Kind::kAudio;
    r.has_audio = true;
    refs.push_back(r);
  }
  const auto t_build = std::chrono::steady_clock::now();
  OROCHI_ASSIGN_OR_RETURN(const pipeline::Presentation p,
                          pipeline::build_ref2va_presentation(tokenizer, c.prompt.empty() ? kPrompt : c.prompt, refs));
  out.processor_s += seconds_since(t_build);
  if (p.image_grids != out.image_grids || p.video_grids != out.video_grids)
    return Status(ErrorCode::kInternal, "the presentation's grids are not the processor's");

  const int64_t L = p.size();
  std::vector<int64_t> ids(static_cast<size_t>(L)), types(static_cast<size_t>(L));
  for (int64_t i = 0; i < L; ++i) {
    int32_t id = p.token_ids[static_cast<size_t>(i)];
    if (id == vt.vision_start) id = kQwenVisionStart;
    else if (id == vt.vision_end) id = kQwenVisionEnd;
    else if (id == vt.image_pad) id = kQwenImagePad;
    else if (id == vt.video_pad) id = kQwenVideoPad;
    ids[static_cast<size_t>(i)] = id;
    types[static_cast<size_t>(i)] = static_cast<int64_t>(p.kinds[static_cast<size_t>(i)]);
    if (p.kinds[static_cast<size_t>(i)] != qwen3vl::MmTokenType::kText) out.vision_rows.push_back(i);
  }
  // One tower call over images then videos gives the features in sequence order only when every
  // image pad precedes every video pad (the references' order here).
  int64_t last_image = -1, first_video = L;
  for (int64_t i = 0; i < L; ++i) {
    if (p.kinds[static_cast<size_t>(i)] == qwen3vl::MmTokenType::kImage) last_image = i;
    if (p.kinds[static_cast<size_t>(i)] == qwen3vl::MmTokenType::kVideo) first_video = std::min(first_video, i);
  }
  if (last_image > first_video) return Status(ErrorCode::kInternal, "an image follows the video in this presentation");
  out.input_ids = Tensor::from_ints(ids, {L});
  out.token_types = Tensor::from_ints(types, {L});
  out.types = p.kinds;
  OROCHI_ASSIGN_OR_RETURN(out.positions, qwen3vl::rope_index(p.kinds, p.image_grids, p.video_grids));

  int64_t rows = 0, width = 0;
  for (const Tensor& t : pixels) rows += t.dim(0), width = t.dim(1);
  out.pixel_values = Tensor::uninitialized({rows, width}, DType::kF32);
  size_t offset = 0;
  for (const Tensor& t : pixels) {
    const Tensor tc = t.contiguous();
    std::memcpy(static_cast<char*>(out.pixel_values.raw_data()) + offset, tc.raw_data(), tc.numel() * sizeof(float));
    offset += static_cast<size_t>(tc.numel()) * sizeof(float);
  }
  return out;
}

qwen3vl::VisionEmbeddings presentation_vision(const BuiltPresentation& p, const qwen3vl::VisionFeatures& f) {
  qwen3vl::VisionEmbeddings v;
  v.rows = p.vision_rows;
  v.features = f.features;
  v.deepstack = f.deepstack;
  return v;
}

qwen3vl::VisionConfig tiny_vision_config() {
  qwen3vl::VisionConfig c = qwen3vl::VisionConfig::qwen3vl_32b();
  c.depth = 4;
  c.hidden_size = 32;
  c.intermediate_size = 64;
  c.num_heads = 2;
  c.out_hidden_size = 64;
  c.deepstack_visual_indexes = {0, 2, 3};
  return c;
}

qwen3vl::TextConfig tiny_text_config() {
  qwen3vl::TextConfig c = qwen3vl::TextConfig::qwen3vl_32b();
  c.hidden_size = 64;
  c.intermediate_size = 128;
  c.num_attention_heads = 4;
  c.num_key_value_heads = 2;
  c.head_dim = 16;
  c.mrope_section = {4, 2, 2};
  return c;
}

std::string text_config_json(const qwen3vl::TextConfig& c) {
  return nlohmann::json{{"vocab_size", c.vocab_size},
                        {"hidden_size", c.hidden_size},
                        {"intermediate_size", c.intermediate_size},
                        {"num_attention_heads", c.num_attention_heads},
                        {"num_key_value_heads", c.num_key_value_heads},
                        {"head_dim", c.head_dim},
                        {"rms_norm_eps", c.rms_norm_eps},
                        {"rope_theta", c.rope_theta},
                        {"mrope_section", c.mrope_section}}
      .dump();
}

std::string vision_config_json(const qwen3vl::VisionConfig& c) {
  return nlohmann::json{{"depth", c.depth},
                        {"hidden_size", c.hidden_size},
                        {"hidden_act", c.hidden_act == qwen3vl::VisionActivation::kGeluTanh ? "gelu_pytorch_tanh" : "gelu"},
                        {"intermediate_size", c.intermediate_size},
                        {"num_heads", c.num_heads},
                        {"in_channels", c.in_channels},
                        {"patch_size", c.patch_size},
                        {"spatial_merge_size", c.spatial_merge_size},
                        {"temporal_patch_size", c.temporal_patch_size},
                        {"out_hidden_size", c.out_hidden_size},
                        {"num_position_embeddings", c.num_position_embeddings},
                        {"deepstack_visual_indexes", c.deepstack_visual_indexes}}
      .dump();
}

Tensor text_only_ids(int64_t tokens, int64_t vocab) {
  std::vector<int64_t> ids(static_cast<size_t>(tokens));
  for (int64_t i = 0; i < tokens; ++i) ids[static_cast<size_t>(i)] = (i * 7919 + 7) % vocab;
  return Tensor::from_ints(ids, {tokens});
}

Status write_presentation_dump(const std::string& path, const BuiltPresentation* p, const Tensor& text_ids,
                               const std::vector<std::pair<std::string, Tensor>>& outputs,
                               const std::map<std::string, std::string>& metadata) {
  std::vector<std::pair<std::string, Tensor>> tensors;
  if (p) {
    tensors.emplace_back("input_ids", p->input_ids);
    tensors.emplace_back("mm_token_type_ids", p->token_types);
    tensors.emplace_back("position_ids", p->positions);
    if (!p->image_grids.empty()) {
      tensors.emplace_back("pixel_values", p->pixel_values.slice(0, 0, p->image_patches));
      tensors.emplace_back("image_grid_thw", grid_tensor(p->image_grids));
    }
    if (!p->video_grids.empty()) {
      tensors.emplace_back("pixel_values_videos", p->pixel_values.slice(0, p->image_patches, p->pixel_values.dim(0)));
      tensors.emplace_back("video_grid_thw", grid_tensor(p->video_grids));
    }
  } else {
    tensors.emplace_back("input_ids", text_ids);
  }
  for (const auto& o : outputs) tensors.push_back(o);
  std::map<std::string, std::string> meta = metadata;
  meta["format"] = "orochi-qwen3vl-presentation-dump-v1";
  return weights::write_safetensors(path, tensors, meta);
}

}  // namespace orochi::testing
