#include "io/output_file.h"

#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <system_error>

namespace orochi::io {

namespace fs = std::filesystem;

Status check_output_path(const std::string& path) {
  if (path.empty()) return invalid_argument("the output path is empty");
  std::error_code ec;
  if (fs::is_directory(path, ec)) return invalid_argument("cannot write " + path + ": it is a folder");
  fs::path folder = fs::path(path).parent_path();
  if (folder.empty()) folder = ".";
  if (!fs::is_directory(folder, ec))
    return io_error("cannot write " + path + ": the folder " + folder.string() +
                    " does not exist; create it first");
  return Status::ok();
}

TemporaryOutput::TemporaryOutput(std::string final_path) : final_path_(std::move(final_path)) {
  const fs::path p(final_path_);
  temp_path_ =
      (p.parent_path() / ("." + p.filename().string() + ".partial-" + std::to_string(::getpid())))
          .string();
}

TemporaryOutput::~TemporaryOutput() {
  std::error_code ignored;
  if (!committed_) fs::remove(temp_path_, ignored);
}

Status TemporaryOutput::commit() {
  std::error_code ec;
  fs::rename(temp_path_, final_path_, ec);
  if (ec) return io_error("cannot move the finished file to " + final_path_ + ": " + ec.message());
  committed_ = true;
  return Status::ok();
}

Status write_file_atomically(const std::string& path,
                             const std::function<Status(std::ostream&)>& write) {
  OROCHI_RETURN_IF_ERROR(check_output_path(path));
  TemporaryOutput temp(path);
  {
    std::ofstream out(temp.path(), std::ios::binary | std::ios::trunc);
    if (!out)
      return io_error("cannot write " + path + ": " + std::strerror(errno) +
                      "; check that its folder is writable");
    OROCHI_RETURN_IF_ERROR(write(out));
    out.flush();
    if (!out) return io_error("writing " + path + " failed; check the free disk space");
  }
  return temp.commit();
}

}  // namespace orochi::io
