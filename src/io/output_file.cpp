#include "io/output_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <system_error>

namespace orochi::io {

namespace fs = std::filesystem;

namespace {

std::atomic<uint64_t> temporary_counter{0};

// What a non-regular file is, for the error.
const char* kind_of(mode_t mode) {
  if (S_ISDIR(mode)) return "a folder";
  if (S_ISCHR(mode)) return "a character device";
  if (S_ISBLK(mode)) return "a block device";
  if (S_ISFIFO(mode)) return "a FIFO (named pipe)";
  if (S_ISSOCK(mode)) return "a socket";
  return "not a regular file";
}

fs::path folder_of(const std::string& path) {
  fs::path folder = fs::path(path).parent_path();
  return folder.empty() ? fs::path(".") : folder;
}

}  // namespace

Status check_output_path(const std::string& path) {
  if (path.empty()) return invalid_argument("the output path is empty");
  struct stat st;
  if (::stat(path.c_str(), &st) == 0 && !S_ISREG(st.st_mode)) {
    if (S_ISDIR(st.st_mode)) return invalid_argument("cannot write " + path + ": it is a folder; name a file in it");
    return invalid_argument("cannot write " + path + ": it is " + kind_of(st.st_mode) +
                            ", and orochi writes regular files only (it never replaces a device or pipe); "
                            "name a file instead");
  }
  const fs::path folder = folder_of(path);
  if (::stat(folder.c_str(), &st) != 0)
    return io_error("cannot write " + path + ": the folder " + folder.string() + " does not exist; create it first");
  if (!S_ISDIR(st.st_mode))
    return io_error("cannot write " + path + ": " + folder.string() + " is not a folder");
  return Status::ok();
}

std::string report_path_for_video(const std::string& video_path) {
  return fs::path(video_path).replace_extension(".json").string();
}

Expected<std::string> check_output_target(const std::string& video_path) {
  if (video_path.rfind("-", 0) == 0)
    return usage_error("the output path " + video_path + " reads as an option name; to write a file of that "
                       "name, write ./" + video_path);
  OROCHI_RETURN_IF_ERROR(check_output_path(video_path));
  const std::string report = report_path_for_video(video_path);
  if (fs::path(report).lexically_normal() == fs::path(video_path).lexically_normal())
    return invalid_argument("the output " + video_path + " ends in .json, the name its stage report takes beside "
                            "it: name the video with .mp4");
  OROCHI_RETURN_IF_ERROR(check_output_path(report).with_context("the stage report beside the video"));
  // The folder must take a new file: create and remove a probe, as the run's temporary files will.
  const fs::path folder = folder_of(video_path);
  const std::string probe = (folder / ("." + fs::path(video_path).filename().string() + ".probe-" +
                                       std::to_string(::getpid()))).string();
  const int fd = ::open(probe.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
  if (fd < 0)
    return io_error("cannot write " + video_path + ": creating a file in " + folder.string() + " failed (" +
                    std::strerror(errno) + "); check that the folder is writable");
  ::close(fd);
  ::unlink(probe.c_str());
  return report;
}

TemporaryOutput::TemporaryOutput(std::string final_path) : final_path_(std::move(final_path)) {
  const fs::path p(final_path_);
  temp_path_ = (p.parent_path() / ("." + p.filename().string() + ".partial-" + std::to_string(::getpid()) + "-" +
                                   std::to_string(temporary_counter.fetch_add(1))))
                   .string();
  cleanup_ = InterruptCleanup(temp_path_);
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
