// Reference files named by path in a request (JSON): only inside --media-root. A path is relative
// to that folder and is refused when it is absolute, holds a '..' part, or resolves (symlinks
// followed) to anything outside the folder or to something that is not a regular file.
#pragma once

#include <string>

#include "core/status.h"

namespace orochi::apps::server {

class MediaRoot {
 public:
  // No root: every path is refused, with the advice to start the server with --media-root or to upload.
  MediaRoot() = default;
  // `dir` must be an existing folder; kept canonical.
  static Expected<MediaRoot> open(const std::string& dir);

  bool enabled() const { return !root_.empty(); }
  const std::string& root() const { return root_; }

  // The canonical path of the regular file `relative` names inside the root (invalid_argument,
  // or not_found for a file that is not there).
  Expected<std::string> resolve(const std::string& relative) const;

 private:
  std::string root_;
};

}  // namespace orochi::apps::server
