// Writing an output file safely: refuse a destination that cannot work before any work is done, and
// write under a temporary name next to it, renamed into place only when complete, so a failure
// never leaves a half-written file where the user expects a finished one.
#pragma once

#include <functional>
#include <ostream>
#include <string>

#include "core/status.h"

namespace orochi::io {

// invalid_argument for an empty path or a folder; io_error when the parent folder does not exist.
Status check_output_path(const std::string& path);

// The temporary file for `path`: removed on destruction unless commit() moved it into place.
class TemporaryOutput {
 public:
  explicit TemporaryOutput(std::string final_path);
  ~TemporaryOutput();
  TemporaryOutput(const TemporaryOutput&) = delete;
  TemporaryOutput& operator=(const TemporaryOutput&) = delete;

  // Hidden, in the same folder (so the rename stays on one file system), unique per process.
  const std::string& path() const { return temp_path_; }
  // Renames the temporary file to the final path (replacing any file there).
  Status commit();

 private:
  std::string final_path_;
  std::string temp_path_;
  bool committed_ = false;
};

// Checks `path`, opens a temporary binary stream, runs `write` on it and commits when both the
// writer and the stream succeeded.
Status write_file_atomically(const std::string& path,
                             const std::function<Status(std::ostream&)>& write);

}  // namespace orochi::io
