#include "pipeline/fl2va.h"

#include <chrono>
#include <cstring>
#include <string>

#include "core/stopwatch.h"
#include "pipeline/reference/reference_image.h"

namespace orochi::pipeline {
namespace {


}  // namespace

Expected<Fl2vaKeyframes> prepare_fl2va_keyframes(const std::vector<Fl2vaKeyframe>& keyframes,
                                                 std::optional<reference::Size> canvas,
                                                 const reference::CanvasRule& rule) {
  const Fl2vaKeyframe* first = nullptr;
  const Fl2vaKeyframe* last = nullptr;
  for (const Fl2vaKeyframe& k : keyframes) {
    const Fl2vaKeyframe*& slot = k.anchor == KeyframeAnchor::kFirst ? first : last;
    if (slot)
      return invalid_argument(std::string("fl2va takes one ") +
                              (k.anchor == KeyframeAnchor::kFirst ? "first keyframe (--image)" : "last keyframe (--last-image)") +
                              ", got two");
    slot = &k;
  }
  if (!first && !last) return invalid_argument("fl2va needs a first keyframe (--image) and/or a last one (--last-image)");
  Fl2vaKeyframes out;
  std::vector<io::RgbImage> ordered;
  if (first) {
    out.anchors.push_back(KeyframeAnchor::kFirst);
    ordered.push_back(first->image);
  }
  if (last) {
    out.anchors.push_back(KeyframeAnchor::kLast);
    ordered.push_back(last->image);
  }
  OROCHI_ASSIGN_OR_RETURN(reference::Keyframes prepared, reference::prepare_keyframes(ordered, canvas, rule));
  out.canvas = prepared.canvas;
  out.images = std::move(prepared.images);
  return out;
}

Tensor keyframe_pixels(const io::RgbImage& image) {
  const int64_t H = image.height, W = image.width;
  Tensor t = Tensor::uninitialized({3, 1, H, W}, DType::kU8);
  uint8_t* p = t.data<uint8_t>();
  for (int64_t c = 0; c < 3; ++c)
    for (int64_t i = 0; i < H * W; ++i) p[c * H * W + i] = image.rgb[static_cast<size_t>(i * 3 + c)];
  return t;
}

Expected<std::vector<Tensor>> encode_keyframes(VideoEncoder& encoder, const std::vector<io::RgbImage>& images,
                                               const T2vaProgressCallback& progress, const std::atomic<bool>* cancel) {
  std::vector<Tensor> latents;
  const int64_t n = static_cast<int64_t>(images.size());
  for (int64_t i = 0; i < n; ++i) {
    if (cancel && cancel->load()) return Status(ErrorCode::kCancelled, "cancelled before the keyframe encode");
    const auto t0 = Clock::now();
    OROCHI_ASSIGN_OR_RETURN(Tensor z, encoder.encode_condition(keyframe_pixels(images[static_cast<size_t>(i)])));
    latents.push_back(std::move(z));
    if (progress) progress({"keyframe encode", i + 1, n, seconds_since(t0)});
  }
  return latents;
}

Expected<T2vaPlan> plan_fl2va(const h3::H3Config& config, const T2vaShape& shape) {
  if (shape.keyframes.empty())
    return invalid_argument("fl2va needs a first keyframe (--image) and/or a last one (--last-image)");
  return plan_t2va(config, shape);
}

Expected<T2vaResult> run_fl2va(models::Denoiser& denoiser, VideoDecoder& video_vae, AudioDecoder& audio_vae,
                               VideoEncoder& encoder, const Fl2vaRequest& request,
                               const T2vaPlan& plan, const T2vaRunOptions& options) {
  const size_t n = plan.shape.keyframes.size();
  if (n == 0 || request.keyframes.size() != n)
    return invalid_argument("the fl2va plan has " + std::to_string(n) + " keyframe(s), the request " +
                            std::to_string(request.keyframes.size()));
  for (const io::RgbImage& k : request.keyframes)
    if (k.width != plan.geometry.width || k.height != plan.geometry.height)
      return shape_mismatch("a keyframe is " + std::to_string(k.width) + "x" + std::to_string(k.height) +
                            ", the plan's canvas " + std::to_string(plan.geometry.width) + "x" +
                            std::to_string(plan.geometry.height) + " (prepare_fl2va_keyframes puts it there)");
  if (encoder.latent_channels() != plan.model.in_channels)
    return unsupported("the video VAE encoder makes " + std::to_string(encoder.latent_channels()) +
                       " latent channels, the transformer denoises " + std::to_string(plan.model.in_channels));
  T2vaRequest run = request.base;
  const auto t0 = Clock::now();
  OROCHI_ASSIGN_OR_RETURN(run.condition_latents,
                          encode_keyframes(encoder, request.keyframes, options.progress, options.cancel));
  const double encode_s = seconds_since(t0);
  OROCHI_ASSIGN_OR_RETURN(T2vaResult result, run_t2va(denoiser, video_vae, audio_vae, run, plan, options));
  result.times.condition_encode_s = encode_s;
  return result;
}

}  // namespace orochi::pipeline
