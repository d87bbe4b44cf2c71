// Writing an output file safely: refuse a destination that cannot work before any work is done, and
// write under a temporary name next to it, renamed into place only when complete, so a failure
// never leaves a half-written file where the user expects a finished one. Temporary files are
// registered for removal on SIGINT/SIGTERM (io/interrupt_cleanup.h).
#pragma once

#include <functional>
#include <ostream>
#include <string>

#include "core/status.h"
#include "io/interrupt_cleanup.h"

namespace orochi::io {

// A path orochi may write: its folder exists, and the path is absent, a regular file, or a link to
// one. Refused: an empty path, a folder, a device node, FIFO or socket (orochi never replaces one:
// as root `/dev/null` stays a device), a path whose folder is missing or is not a folder.
// invalid_argument for what the path names, io_error for its folder.
Status check_output_path(const std::string& path);

// A video and the stage report beside it (same name, `.json` for the extension), checked before
// any work: check_output_path for both, the report must not be the video itself (`--out clip.json`),
// the path must not read as an option name (`--quiet`), and the folder must take a new file (a probe
// file is created and removed: permissions, read-only file systems and full disks show here, not
// after the run). Returns the report's path.
Expected<std::string> check_output_target(const std::string& video_path);

// The report path for a video: the same name with `.json` for the extension.
std::string report_path_for_video(const std::string& video_path);

// The temporary file for `path`: removed on destruction unless commit() moved it into place, and on
// SIGINT/SIGTERM.
class TemporaryOutput {
 public:
  explicit TemporaryOutput(std::string final_path);
  ~TemporaryOutput();
  TemporaryOutput(const TemporaryOutput&) = delete;
  TemporaryOutput& operator=(const TemporaryOutput&) = delete;

  // Hidden, in the same folder (so the rename stays on one file system), unique per process and
  // object: ".NAME.partial-PID-N".
  const std::string& path() const { return temp_path_; }
  // Renames the temporary file to the final path (replacing any file there).
  Status commit();

 private:
  std::string final_path_;
  std::string temp_path_;
  InterruptCleanup cleanup_;
  bool committed_ = false;
};

// Checks `path`, opens a temporary binary stream, runs `write` on it and commits when both the
// writer and the stream succeeded.
Status write_file_atomically(const std::string& path,
                             const std::function<Status(std::ostream&)>& write);

}  // namespace orochi::io
