#include "apps/server/job_store.h"

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>

#include "apps/server/job_id.h"
#include "core/check.h"
#include "io/output_file.h"

namespace orochi::apps::server {
namespace {

namespace fs = std::filesystem;

constexpr const char* kDeletingPrefix = ".deleting-";

Expected<nlohmann::json> read_json(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return not_found(path.string() + ": " + std::strerror(errno));
  try {
    return nlohmann::json::parse(in);
  } catch (const nlohmann::json::exception& e) {
    return corrupt_file(path.string() + ": not valid JSON (" + e.what() + ")");
  }
}

Status write_json(const fs::path& path, const nlohmann::json& j) {
  return io::write_file_atomically(path.string(), [&](std::ostream& out) {
    out << j.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) << "\n";
    return Status::ok();
  });
}

// Temporary files (io::TemporaryOutput's ".NAME.partial-PID-N") a stop left in a job's folder.
void remove_temporaries(const fs::path& folder) {
  std::error_code ec;
  for (const fs::directory_entry& e : fs::directory_iterator(folder, ec)) {
    const std::string name = e.path().filename().string();
    if (name.size() > 1 && name[0] == '.' && name.find(".partial-") != std::string::npos) fs::remove(e.path(), ec);
  }
}

}  // namespace

Expected<JobStore> JobStore::open(const std::string& dir) {
  if (dir.empty()) return invalid_argument("--jobs-dir needs a folder");
  std::error_code ec;
  fs::create_directory(dir, ec);
  if (ec) return io_error("cannot create the jobs folder " + dir + ": " + ec.message() + "; its parent must exist");
  if (!fs::is_directory(dir)) return invalid_argument("--jobs-dir " + dir + " is not a folder");
  const fs::path root = fs::canonical(dir, ec);
  if (ec) return io_error("cannot resolve the jobs folder " + dir + ": " + ec.message());
  return JobStore(root.string());
}

std::string JobStore::folder(const std::string& id) const {
  OROCHI_CHECK(is_valid_job_id(id), "a job folder for an unchecked id");
  return (fs::path(root_) / id).string();
}
std::string JobStore::video_path(const std::string& id) const { return folder(id) + "/video.mp4"; }
std::string JobStore::report_path(const std::string& id) const { return folder(id) + "/video.json"; }
std::string JobStore::inputs_folder(const std::string& id) const { return folder(id) + "/inputs"; }

Expected<std::vector<JobStore::Job>> JobStore::recover(int64_t now, std::vector<std::string>& notes) {
  std::vector<Job> jobs;
  std::error_code ec;
  fs::directory_iterator it(root_, ec);
  if (ec) return io_error("cannot read the jobs folder " + root_ + ": " + ec.message());
  for (const fs::directory_entry& entry : it) {
    const std::string name = entry.path().filename().string();
    if (name.rfind(kDeletingPrefix, 0) == 0 && entry.is_directory()) {
      fs::remove_all(entry.path(), ec);  // a deletion a stop cut short
      continue;
    }
    if (!is_valid_job_id(name) || !entry.is_directory()) {
      notes.push_back("skipped " + entry.path().string() + ": not a job folder");
      continue;
    }
    const fs::path status_file = entry.path() / "status.json";
    if (!fs::exists(status_file)) {  // a creation a stop cut short: never acknowledged to a client
      fs::remove_all(entry.path(), ec);
      notes.push_back("removed " + name + ": its creation did not finish");
      continue;
    }
    remove_temporaries(entry.path());
    Expected<nlohmann::json> status = read_json(status_file);
    Expected<nlohmann::json> request = read_json(entry.path() / "request.json");
    Expected<JobRecord> record =
        status ? record_from_json(*status, status_file.string()) : Expected<JobRecord>(status.status());
    if (!record || !request || record->id != name) {
      const Status why = !record ? record.status() : !request ? request.status() : corrupt_file("its id is not its folder's");
      notes.push_back("skipped " + name + " (left as it is): " + why.message());
      continue;
    }
    Job job{std::move(record).value(), std::move(request).value()};
    JobRecord& r = job.record;
    const bool interrupted = !is_finished(r.status);
    const bool video_lost = r.status == JobStatus::kCompleted && !fs::is_regular_file(video_path(name));
    if (interrupted || video_lost) {
      const std::string was = r.status == JobStatus::kQueued ? "queued" : "in progress";
      r.error = interrupted ? JobError{"interrupted", "the server stopped while this job was " + was +
                                                          "; a restarted server does not re-run it: submit it again"}
                            : JobError{"video_missing", "the video file of this completed job is gone from " + folder(name)};
      r.status = JobStatus::kFailed;
      if (r.completed_at == 0) r.completed_at = now;
      if (Status s = write_status(r); !s.is_ok()) return s;
      notes.push_back("marked " + name + " failed: " + r.error->message);
    }
    jobs.push_back(std::move(job));
  }
  std::sort(jobs.begin(), jobs.end(), [](const Job& a, const Job& b) { return a.record.sequence < b.record.sequence; });
  return jobs;
}

Expected<std::string> JobStore::create() {
  for (int attempt = 0; attempt < 8; ++attempt) {
    const std::string id = make_job_id();
    std::error_code ec;
    if (!fs::create_directory(folder(id), ec)) {
      if (ec) return io_error("cannot create a job folder in " + root_ + ": " + ec.message());
      continue;  // that id's folder exists (a 2^-128 chance): draw another
    }
    if (!fs::create_directory(inputs_folder(id), ec)) {
      discard(id);
      return io_error("cannot create a job folder in " + root_ + ": " + ec.message());
    }
    return id;
  }
  return io_error("no fresh job id after 8 draws in " + root_);
}

Status JobStore::write_request(const std::string& id, const nlohmann::json& request) const {
  return write_json(fs::path(folder(id)) / "request.json", request);
}

Status JobStore::write_status(const JobRecord& record) const {
  return write_json(fs::path(folder(record.id)) / "status.json", record_json(record));
}

void JobStore::discard(const std::string& id) const {
  std::error_code ec;
  fs::remove_all(folder(id), ec);
}

Status JobStore::remove(const std::string& id) const {
  static std::atomic<uint64_t> counter{0};
  const fs::path doomed =
      fs::path(root_) / (std::string(kDeletingPrefix) + id + "-" + std::to_string(counter.fetch_add(1)));
  std::error_code ec;
  fs::rename(folder(id), doomed, ec);
  if (ec) return io_error("cannot delete " + folder(id) + ": " + ec.message());
  fs::remove_all(doomed, ec);
  if (ec) return io_error("deleting " + doomed.string() + ": " + ec.message());
  return Status::ok();
}

}  // namespace orochi::apps::server
