#include "engine/reference_checks.h"

#include <cmath>
#include <cstdio>

namespace orochi::engine {
namespace {

namespace lim = reference_limits;
using Kind = ReferenceInput::Kind;

std::string fixed(double v, int digits) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", digits, v);
  return buf;
}

std::string plural(int64_t n, const std::string& what) {
  return std::to_string(n) + " " + what + (n == 1 ? "" : "s");
}

std::string where(const ReferenceInput& r) { return std::string(reference_flag(r.kind)) + " " + r.path; }

// D's whole-frame drop/repeat onto 24 fps slots ends at floor(N * 24 / fps + 0.5) (REF2VA.md §2 step 2).
int64_t frames_at_24fps(int64_t frames, double fps) {
  return fps == 24.0 ? frames : static_cast<int64_t>(std::floor(static_cast<double>(frames) * (24.0 / fps) + 0.5));
}

Status check_counts(const GenerateRequest& request) {
  int64_t first = 0, last = 0, images = 0, videos = 0, audio = 0;
  for (const ReferenceInput& r : request.references) {
    switch (r.kind) {
      case Kind::kFirstFrame: ++first; break;
      case Kind::kLastFrame: ++last; break;
      case Kind::kImage: ++images; break;
      case Kind::kVideo: ++videos; break;
      case Kind::kAudio: ++audio; break;
    }
    if (r.path.empty()) return invalid_argument(std::string(reference_flag(r.kind)) + " needs a file path");
  }
  const int64_t keyframes = first + last, refs = images + videos + audio;
  if (keyframes > 0 && refs > 0)
    return invalid_argument("--image / --last-image (fl2va keyframes) cannot be combined with --ref-image, --ref-video "
                            "or --ref-audio (ref2va references): a request is one workflow; pass keyframes alone "
                            "(fl2va) or references alone (ref2va)");
  if (first > lim::kKeyframesEach)
    return invalid_argument("--image is given " + std::to_string(first) +
                            " times; fl2va takes one first keyframe (and one --last-image)");
  if (last > lim::kKeyframesEach)
    return invalid_argument("--last-image is given " + std::to_string(last) +
                            " times; fl2va takes one last keyframe (and one --image)");
  const std::string limits = "at most " + std::to_string(lim::kTotal) + " in all: up to " +
                             std::to_string(lim::kImages) + " --ref-image, " + std::to_string(lim::kVideos) +
                             " --ref-video and " + std::to_string(lim::kAudioClips) + " --ref-audio";
  const std::string counted = " (" + plural(images, "image") + ", " + plural(videos, "video") + ", " +
                              plural(audio, "audio clip") + ")";
  if (refs > lim::kTotal)
    return invalid_argument("ref2va takes " + limits + "; this request has " + std::to_string(refs) + counted +
                            "; drop some references");
  if (images > lim::kImages || videos > lim::kVideos || audio > lim::kAudioClips)
    return invalid_argument("ref2va takes " + limits + "; this request has" + counted + "; drop some references");
  if (audio > 0 && images == 0 && videos == 0)
    return invalid_argument("ref2va refuses audio references alone (--ref-audio without any --ref-image or "
                            "--ref-video), as the reference pipeline does; add a picture or video of the "
                            "subject, or drop --ref-audio for a t2va run");
  return Status::ok();
}

Status check_frames(const GenerateRequest& request, const std::string& workflow) {
  Expected<int64_t> aligned = pipeline::reference::align_num_frames(request.frames);
  if (!aligned) return aligned.status();
  if (*aligned < lim::kFramesMin || *aligned > lim::kFramesMax)
    return invalid_argument(workflow + " makes 5 to 15 s of video at 24 fps: --frames " +
                            std::to_string(lim::kFramesMin) + ".." + std::to_string(lim::kFramesMax) +
                            " (17n + 5, e.g. 124 for 5 s, 240 for 10 s, 345 for 15 s); got " +
                            std::to_string(request.frames));
  return Status::ok();
}

Status with_flag(const ReferenceInput& r, const Status& s) {
  return Status(s.code(), where(r) + ": " + s.message());
}

Status check_aspect(const ReferenceInput& r, const io::MediaProbe& p, const std::string& what) {
  const double w = static_cast<double>(p.width), h = static_cast<double>(p.height);
  if (w <= lim::kMaxAspect * h && h <= lim::kMaxAspect * w) return Status::ok();
  const std::string ratio = w >= h ? fixed(w / h, 2) + ":1" : "1:" + fixed(h / w, 2);
  return invalid_argument(where(r) + ": the " + what + " is " + std::to_string(p.width) + "x" +
                          std::to_string(p.height) + " (" + ratio + "); MiniMax-H3 takes aspects from 1:4 to 4:1; "
                          "crop it closer to that range");
}

Status check_audio_channels(const ReferenceInput& r, const io::MediaProbe& p, const std::string& what) {
  if (p.channels >= 1 && p.channels <= lim::kMaxAudioChannels) return Status::ok();
  return invalid_argument(where(r) + ": " + what + " has " + std::to_string(p.channels) +
                          " channels; reference audio must be mono or stereo (the reference pipeline refuses "
                          "more); downmix it to stereo (ffmpeg -ac 2)" +
                          (r.kind == Kind::kVideo ? ", or pass --ref-video-audio off to leave the soundtrack out"
                                                  : ""));
}

Status check_one(CheckedReference& c) {
  const ReferenceInput& r = c.input;
  Expected<io::MediaProbe> probed = io::probe_media(r.path);
  if (!probed) return with_flag(r, probed.status());
  const io::MediaProbe& p = c.probe = *probed;
  const std::string is = std::string("is ") + (p.kind == io::MediaKind::kAudio ? "an " : "a ") +
                         io::media_kind_name(p.kind) + " file (" + p.format + ")";
  switch (r.kind) {
    case Kind::kFirstFrame:
    case Kind::kLastFrame:
    case Kind::kImage:
      if (p.kind != io::MediaKind::kImage)
        return invalid_argument(where(r) + " " + is + ", not a picture; " + reference_flag(r.kind) +
                                " takes a PNG, JPEG or WebP image" +
                                (p.kind == io::MediaKind::kVideo && r.kind == Kind::kImage ? " (pass a video with --ref-video)"
                                 : p.kind == io::MediaKind::kAudio && r.kind == Kind::kImage ? " (pass audio with --ref-audio)"
                                                                                              : ""));
      return check_aspect(r, p, "picture");
    case Kind::kVideo: {
      if (p.kind != io::MediaKind::kVideo)
        return invalid_argument(where(r) + " " + is + ", not a video; --ref-video takes a video file (MP4, MOV, MKV, "
                                "WebM)" + (p.kind == io::MediaKind::kImage ? " (pass a picture with --ref-image)"
                                           : " (pass audio with --ref-audio)"));
      if (p.frames <= 0)
        return invalid_argument(where(r) + " has a video stream with no frames; give a video that has pictures "
                                "(at least " + std::to_string(lim::kVideoFramesAt24Min) + " frames at 24 fps, about 1 s)");
      if (!(p.fps > 0))
        return invalid_argument(where(r) + " does not state its frame rate, which the 24 fps conversion needs; remux "
                                "it with one (ffmpeg -i IN -r 24 OUT.mp4)");
      c.frames_at_24fps = frames_at_24fps(p.frames, p.fps);
      if (c.frames_at_24fps < lim::kVideoFramesAt24Min)
        return invalid_argument(where(r) + " is " + fixed(p.duration_seconds, 2) + " s (" +
                                std::to_string(p.frames) + " frames at " + fixed(p.fps, 3) + " fps, " +
                                std::to_string(c.frames_at_24fps) + " at 24 fps); a reference video needs at least " +
                                std::to_string(lim::kVideoFramesAt24Min) + " frames at 24 fps (" +
                                fixed(lim::kVideoFramesAt24Min / 24.0, 2) +
                                " s: one 17 + 5 frame clip of the video VAE); give a longer clip");
      OROCHI_RETURN_IF_ERROR(check_aspect(r, p, "video"));
      if (r.video_audio && p.has_audio) OROCHI_RETURN_IF_ERROR(check_audio_channels(r, p, "its soundtrack"));
      return Status::ok();
    }
    case Kind::kAudio:
      if (!p.has_audio)
        return invalid_argument(where(r) + " " + is + " without sound; --ref-audio takes an audio file (WAV, FLAC, "
                                "MP3, M4A) or a video with a soundtrack" +
                                (p.kind == io::MediaKind::kImage ? " (pass a picture with --ref-image)" : ""));
      if (!(p.audio_seconds > 0))
        return invalid_argument(where(r) + " holds no audio (0 s, or a length its header does not state); give a "
                                "clip with sound, 2 to 15 s is what the model was made for");
      return check_audio_channels(r, p, "the audio");
  }
  return Status::ok();
}

}  // namespace

Expected<ReferenceCheck> check_references(const GenerateRequest& request) {
  ReferenceCheck out;
  out.workflow = workflow_of(request);
  if (request.references.empty()) return out;
  // Counts and frames first: they cost nothing and need no file.
  OROCHI_RETURN_IF_ERROR(check_counts(request));
  OROCHI_RETURN_IF_ERROR(check_frames(request, out.workflow));
  for (const ReferenceInput& r : request.references) {
    CheckedReference c;
    c.input = r;
    OROCHI_RETURN_IF_ERROR(check_one(c));
    out.references.push_back(std::move(c));
  }
  if (out.workflow == "fl2va" && (request.width == 0 || request.height == 0)) {
    const CheckedReference* first = nullptr;  // --image, else --last-image
    for (const CheckedReference& c : out.references)
      if (c.input.kind == Kind::kFirstFrame || (!first && c.input.kind == Kind::kLastFrame)) first = &c;
    Expected<pipeline::reference::Size> canvas = pipeline::reference::resolve_canvas_size(
        static_cast<double>(first->probe.width), static_cast<double>(first->probe.height));
    if (!canvas) return with_flag(first->input, canvas.status());
    out.keyframe_canvas = *canvas;
  }
  return out;
}

std::string describe_reference(const CheckedReference& c) {
  const io::MediaProbe& p = c.probe;
  std::string s = where(c.input) + ": " + io::media_kind_name(p.kind);
  if (p.kind != io::MediaKind::kAudio) s += " " + std::to_string(p.width) + "x" + std::to_string(p.height);
  if (p.kind == io::MediaKind::kVideo)
    s += ", " + std::to_string(p.frames) + " frames at " + fixed(p.fps, 3) + " fps (" + fixed(p.duration_seconds, 2) +
         " s)";
  if (p.has_audio) {
    const bool used = c.input.kind == Kind::kAudio || (c.input.kind == Kind::kVideo && c.input.video_audio);
    s += std::string(p.kind == io::MediaKind::kVideo ? ", soundtrack " : ", ") + std::to_string(p.sample_rate) +
         " Hz x " + std::to_string(p.channels) + " (" + fixed(p.audio_seconds, 2) + " s)" +
         (used ? "" : ", left out (--ref-video-audio off)");
  }
  return s;
}

}  // namespace orochi::engine
