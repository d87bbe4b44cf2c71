#include "apps/reference_options.h"

namespace orochi::apps {
namespace {

using Kind = engine::ReferenceInput::Kind;

Kind kind_of(const std::string& option) {
  if (option == "image") return Kind::kFirstFrame;
  if (option == "last-image") return Kind::kLastFrame;
  if (option == "ref-image") return Kind::kImage;
  if (option == "ref-video") return Kind::kVideo;
  return Kind::kAudio;
}

}  // namespace

const std::set<std::string>& reference_repeatable_options() {
  // --image and --last-image repeat too, so a second one gets fl2va's own message (one of each).
  static const std::set<std::string> names = {"image", "last-image", "ref-image", "ref-video", "ref-audio"};
  return names;
}

const std::set<std::string>& reference_valued_options() {
  static const std::set<std::string> names = [] {
    std::set<std::string> n = reference_repeatable_options();
    n.insert({"ref-video-audio", "ref-size"});
    return n;
  }();
  return names;
}

void add_reference_options(std::set<std::string>& valued, std::set<std::string>& repeatable) {
  valued.insert(reference_valued_options().begin(), reference_valued_options().end());
  repeatable.insert(reference_repeatable_options().begin(), reference_repeatable_options().end());
}

Expected<ReferenceOptions> parse_reference_options(const Args& args) {
  ReferenceOptions o;
  OROCHI_ASSIGN_OR_RETURN(const std::string video_audio, args.get_choice("ref-video-audio", "on", {"on", "off"}));
  OROCHI_ASSIGN_OR_RETURN(const std::string size, args.get_choice("ref-size", "2048", {"2048", "match"}));
  o.ref_size = size == "match" ? engine::RefSize::kMatch : engine::RefSize::k2048;
  bool videos = false, images = false;
  for (const Args::Option& given : args.in_order(reference_repeatable_options())) {
    if (given.value.empty()) return usage_error("--" + given.name + " needs a file path, got an empty one");
    engine::ReferenceInput r;
    r.kind = kind_of(given.name);
    r.path = given.value;
    r.video_audio = video_audio == "on";
    videos |= r.kind == Kind::kVideo;
    images |= r.kind == Kind::kImage;
    o.references.push_back(std::move(r));
  }
  if (args.has("ref-video-audio") && !videos)
    return usage_error("--ref-video-audio applies to --ref-video files, and none is given");
  if (args.has("ref-size") && !images && !videos)
    return usage_error("--ref-size applies to --ref-image and --ref-video files, and none is given");
  return o;
}

}  // namespace orochi::apps
