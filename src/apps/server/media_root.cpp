#include "apps/server/media_root.h"

#include <filesystem>

namespace orochi::apps::server {

namespace fs = std::filesystem;

Expected<MediaRoot> MediaRoot::open(const std::string& dir) {
  std::error_code ec;
  if (dir.empty() || !fs::is_directory(dir, ec))
    return invalid_argument("--media-root " + dir + " is not an existing folder");
  MediaRoot m;
  m.root_ = fs::canonical(dir, ec).string();
  if (ec) return io_error("cannot resolve --media-root " + dir + ": " + ec.message());
  return m;
}

Expected<std::string> MediaRoot::resolve(const std::string& relative) const {
  if (!enabled())
    return invalid_argument("this server takes no file paths (it was started without --media-root): upload the file "
                            "in a multipart request instead");
  if (relative.empty()) return invalid_argument("an empty path");
  if (relative.find('\0') != std::string::npos) return invalid_argument("a path with a NUL byte");
  const fs::path given(relative);
  if (given.is_absolute() || given.has_root_name() || given.has_root_directory())
    return invalid_argument("'" + relative + "' is absolute: paths are relative to the media root");
  for (const fs::path& part : given)
    if (part == "..") return invalid_argument("'" + relative + "' has a '..' part: paths stay inside the media root");
  std::error_code ec;
  const fs::path resolved = fs::canonical(fs::path(root_) / given, ec);
  if (ec) return not_found("no file '" + relative + "' in the media root");
  // Inside the root, component by component (a sibling "media2" does not pass as inside "media").
  const fs::path root(root_);
  auto r = root.begin();
  auto p = resolved.begin();
  for (; r != root.end(); ++r, ++p)
    if (p == resolved.end() || *p != *r)
      return invalid_argument("'" + relative + "' leads outside the media root (through a symbolic link)");
  if (!fs::is_regular_file(resolved, ec)) return invalid_argument("'" + relative + "' is not a regular file");
  return resolved.string();
}

}  // namespace orochi::apps::server
