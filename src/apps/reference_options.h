// The reference flags `orochi generate` and `orochi plan` share (issue 23): fl2va keyframes
// (--image, --last-image) and ref2va references (--ref-image, --ref-video, --ref-audio, repeatable),
// kept in command-line order, with --ref-video-audio and --ref-size. The parser takes them as given;
// counts, files and limits are the engine's checks (engine/reference_checks.h), one place for all.
#pragma once

#include <set>
#include <string>
#include <vector>

#include "apps/args.h"
#include "core/status.h"
#include "engine/generate_request.h"

namespace orochi::apps {

// The valued options (all seven) and those of them that may repeat.
const std::set<std::string>& reference_valued_options();
const std::set<std::string>& reference_repeatable_options();

struct ReferenceOptions {
  std::vector<engine::ReferenceInput> references;  // command-line order
  engine::RefSize ref_size = engine::RefSize::k2048;
};

// Usage errors for a bad --ref-video-audio / --ref-size value, an empty path, or --ref-video-audio
// or --ref-size without a reference they apply to (videos; images or videos).
Expected<ReferenceOptions> parse_reference_options(const Args& args);

// Adds the options' names to a command's option sets.
void add_reference_options(std::set<std::string>& valued, std::set<std::string>& repeatable);

}  // namespace orochi::apps
