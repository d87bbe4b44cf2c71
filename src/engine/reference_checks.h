// What a request's references must be before any weight is read (issue 23; ../shared/docs/REF2VA.md
// §0-§3): the counts of each workflow, every file's headers (io::probe_media: no decode), the
// aspects, the reference videos' lengths, the soundtracks' channels, and the target frame rule.
// Every error names the flag and the file and says what to change. Engine::check_conditioning and
// Engine::plan call it; `orochi plan` too.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/status.h"
#include "engine/generate_request.h"
#include "io/media_in.h"
#include "pipeline/reference/reference_geometry.h"

namespace orochi::engine {

namespace reference_limits {
constexpr int64_t kImages = 9, kVideos = 3, kAudioClips = 3, kTotal = 12;  // D's ref2va limits
constexpr int64_t kKeyframesEach = 1;                                       // one --image, one --last-image
// With references the target is 5-15 s at 24 fps (D `align_num_frames` and its range check).
constexpr int64_t kFramesMin = 124, kFramesMax = 345;
// A reference video needs one whole VAE clip at 24 fps: 17 + 5 frames (REF2VA.md §2 step 5; the
// original release raises below it, diffusers pads with the last frame). That is 0.92 s.
constexpr int64_t kVideoFramesAt24Min = 22;
constexpr double kMaxAspect = 4.0;  // images and reference videos within 1:4..4:1
constexpr int kMaxAudioChannels = 2;  // mono or stereo (D raises otherwise)
}  // namespace reference_limits

struct CheckedReference {
  ReferenceInput input;
  io::MediaProbe probe;
  int64_t frames_at_24fps = 0;  // kVideo: the source's frames on D's 24 fps slots
};

struct ReferenceCheck {
  std::string workflow;                      // t2va, fl2va, ref2va (workflow_of)
  std::vector<CheckedReference> references;  // request order
  // fl2va without a canvas (width or height 0): the canvas the first keyframe's aspect resolves to
  // (D `MiniMaxH3ResizeStep`: --image, else --last-image).
  std::optional<pipeline::reference::Size> keyframe_canvas;
};

// invalid_argument for counts, mixes, aspects, lengths and frames outside the rules; the probe's
// own code (not_found, corrupt_file, unsupported, ...) for files that cannot be read, with the flag
// prepended. A request without references passes (workflow t2va).
Expected<ReferenceCheck> check_references(const GenerateRequest& request);

// One line per reference for `orochi plan` and errors: "--ref-video clip.mp4: video 832x480, 60
// frames at 30 fps (2.00 s), soundtrack 44100 Hz x 2".
std::string describe_reference(const CheckedReference& reference);

}  // namespace orochi::engine
