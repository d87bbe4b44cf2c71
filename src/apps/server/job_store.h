// The jobs folder (--jobs-dir): one folder per job, named by its id, so a restart finds every job
// and its video again.
//
//   <jobs-dir>/video_<32 hex>/request.json   the request as accepted (written once)
//                             status.json    the JobRecord (rewritten at every status change)
//                             inputs/        uploaded reference files (input-N.EXT)
//                             video.mp4      the finished video, video.json its stage report
//
// Every file is written under a temporary name in its folder and renamed into place, so a stop at
// any moment leaves each file old or new, never half-written. A job exists once its status.json
// does (written last at creation); a folder without one is a creation a stop cut short. Deletion
// renames the folder to .deleting-<id> first, so a stop halfway never leaves half a job. The store
// writes nothing outside its folder and touches no name it did not make.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "apps/server/job_record.h"
#include "core/status.h"

namespace orochi::apps::server {

class JobStore {
 public:
  struct Job {
    JobRecord record;
    nlohmann::json request;
  };

  // The folder, created when missing (its parent must exist), canonicalized.
  static Expected<JobStore> open(const std::string& dir);

  // Every job found, in creation order. Jobs a stop interrupted (queued or in progress) are marked
  // failed (code "interrupted") and written back: they are not re-run (the restarted server may
  // have another model or options, and a job that crashed the server would crash it again). A
  // completed job whose video is gone is marked failed too. Leftovers of cut-short creations and
  // deletions and stray temporary files are removed. `notes` gets a line for each change and for
  // each folder skipped (not ours, or unreadable: left as it is).
  Expected<std::vector<Job>> recover(int64_t now, std::vector<std::string>& notes);

  const std::string& root() const { return root_; }
  // A job's folder and files. `id` must be valid (is_valid_job_id): an invariant, checked.
  std::string folder(const std::string& id) const;
  std::string video_path(const std::string& id) const;
  std::string report_path(const std::string& id) const;
  std::string inputs_folder(const std::string& id) const;

  // A new job's folder with its inputs/ folder, under a fresh id no folder has. The job does not
  // exist until write_status(); discard() removes a folder that never got that far.
  Expected<std::string> create();
  Status write_request(const std::string& id, const nlohmann::json& request) const;
  Status write_status(const JobRecord& record) const;
  void discard(const std::string& id) const;
  // The job's folder and everything in it.
  Status remove(const std::string& id) const;

 private:
  explicit JobStore(std::string root) : root_(std::move(root)) {}
  std::string root_;
};

}  // namespace orochi::apps::server
