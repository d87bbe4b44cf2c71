#include "io/output_pair.h"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <filesystem>

#include "io/interrupt_cleanup.h"
#include "io/output_file.h"

namespace orochi::io {

namespace fs = std::filesystem;

namespace {

std::atomic<uint64_t> pair_counter{0};

// Creates `path` empty (it must not exist): the reservation of a temporary file.
Status create_empty(const std::string& path, const std::string& for_path) {
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
  if (fd < 0)
    return io_error("cannot write " + for_path + ": creating " + path + " failed (" + std::strerror(errno) +
                    "); check that the folder is writable");
  ::close(fd);
  return Status::ok();
}

// Holds an exclusive flock on a folder while alive (nothing when the file system refuses it).
class FolderLock {
 public:
  explicit FolderLock(const fs::path& folder) : fd_(::open(folder.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC)) {
    if (fd_ >= 0) {
      while (::flock(fd_, LOCK_EX) != 0 && errno == EINTR) {
      }
    }
  }
  ~FolderLock() {
    if (fd_ >= 0) ::close(fd_);  // closing releases the lock
  }
  FolderLock(const FolderLock&) = delete;
  FolderLock& operator=(const FolderLock&) = delete;

 private:
  int fd_;
};

}  // namespace

struct OutputPair::State {
  std::string video, report, video_temp, report_temp;
  InterruptCleanup video_cleanup, report_cleanup;
  bool report_written = false, committed = false;
};

OutputPair::OutputPair(std::unique_ptr<State> state) : state_(std::move(state)) {}
OutputPair::OutputPair(OutputPair&&) noexcept = default;
OutputPair& OutputPair::operator=(OutputPair&&) noexcept = default;

OutputPair::~OutputPair() {
  if (!state_) return;
  // Whatever commit() did not move: unlink of a moved name fails harmlessly.
  if (!state_->committed) ::unlink(state_->video_temp.c_str());
  ::unlink(state_->report_temp.c_str());
}

Expected<OutputPair> OutputPair::reserve(const std::string& video_path) {
  auto s = std::make_unique<State>();
  s->video = video_path;
  OROCHI_ASSIGN_OR_RETURN(s->report, check_output_target(video_path));
  // One tag for both temporary files: ".NAME.partial-PID-N", N counting this process's pairs.
  const std::string tag = ".partial-" + std::to_string(::getpid()) + "-" + std::to_string(pair_counter.fetch_add(1));
  auto temp_for = [&](const std::string& path) {
    const fs::path p(path);
    return (p.parent_path() / ("." + p.filename().string() + tag)).string();
  };
  s->video_temp = temp_for(s->video);
  s->report_temp = temp_for(s->report);
  // Registered before they exist, so no instant has an unregistered temporary file.
  s->video_cleanup = InterruptCleanup(s->video_temp);
  s->report_cleanup = InterruptCleanup(s->report_temp);
  OROCHI_RETURN_IF_ERROR(create_empty(s->video_temp, s->video));
  if (Status st = create_empty(s->report_temp, s->report); !st.is_ok()) {
    ::unlink(s->video_temp.c_str());
    return st;
  }
  return OutputPair(std::move(s));
}

const std::string& OutputPair::video_path() const { return state_->video; }
const std::string& OutputPair::report_path() const { return state_->report; }
const std::string& OutputPair::video_temp() const { return state_->video_temp; }

Status OutputPair::write_report(const std::string& text) {
  const int fd = ::open(state_->report_temp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0)
    return io_error("cannot write the stage report " + state_->report + ": " + std::strerror(errno));
  size_t done = 0;
  while (done < text.size()) {
    const ssize_t n = ::write(fd, text.data() + done, text.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      const std::string why = n < 0 ? std::strerror(errno) : "no progress";
      ::close(fd);
      return io_error("cannot write the stage report " + state_->report + ": " + why +
                      (errno == ENOSPC ? " (the disk is full)" : ""));
    }
    done += static_cast<size_t>(n);
  }
  if (::close(fd) != 0)
    return io_error("cannot write the stage report " + state_->report + ": " + std::strerror(errno));
  state_->report_written = true;
  return Status::ok();
}

Status OutputPair::commit() {
  State& s = *state_;
  FolderLock lock(fs::path(s.video).parent_path().empty() ? fs::path(".") : fs::path(s.video).parent_path());
  if (::unlink(s.report.c_str()) != 0 && errno != ENOENT)
    return io_error("cannot remove the old stage report " + s.report + " (" + std::strerror(errno) +
                    "), so the new video was not put beside it");
  if (::rename(s.video_temp.c_str(), s.video.c_str()) != 0)
    return io_error("cannot move the finished video to " + s.video + ": " + std::strerror(errno));
  s.committed = true;
  if (!s.report_written) {  // its reserved, empty temporary file goes now, not at destruction
    ::unlink(s.report_temp.c_str());
    return Status::ok();
  }
  if (::rename(s.report_temp.c_str(), s.report.c_str()) != 0)
    return io_error("wrote " + s.video + " but cannot move its stage report to " + s.report + ": " +
                    std::strerror(errno));
  return Status::ok();
}

}  // namespace orochi::io
