// orochi serve's jobs folder (src/apps/server/job_store.*): ids made by the server and checked
// before they name a folder, records written whole, and what a restart finds — finished jobs as they
// were, queued and running ones marked failed (interrupted), a completed job without its video
// marked failed, cut-short creations and deletions and stray temporaries removed, anything not
// ours left alone.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <set>

#include "apps/server/job_id.h"
#include "apps/server/job_record.h"
#include "apps/server/job_store.h"
#include "core/check.h"
#include "support/temp_dir.h"

namespace orochi::apps::server {
namespace {

namespace fs = std::filesystem;

void write_text(const fs::path& p, const std::string& text) { std::ofstream(p, std::ios::binary) << text; }

JobRecord record(const std::string& id, uint64_t sequence, JobStatus status) {
  JobRecord r;
  r.id = id;
  r.sequence = sequence;
  r.status = status;
  r.created_at = 1000 + static_cast<int64_t>(sequence);
  return r;
}

// A job as the server writes one: its folder, request.json, status.json (and a video when completed).
std::string add_job(JobStore& store, uint64_t sequence, JobStatus status, bool with_video = true) {
  Expected<std::string> id = store.create();
  EXPECT_TRUE(id) << id.status().to_string();
  EXPECT_TRUE(store.write_request(*id, {{"prompt", "job " + std::to_string(sequence)}}).is_ok());
  JobRecord r = record(*id, sequence, status);
  if (is_finished(status)) r.completed_at = 2000;
  EXPECT_TRUE(store.write_status(r).is_ok());
  if (status == JobStatus::kCompleted && with_video) write_text(store.video_path(*id), "mp4 bytes");
  return *id;
}

TEST(ServerJobIds, MadeByTheServerAndCheckedStrictly) {
  std::set<std::string> seen;
  for (int i = 0; i < 1000; ++i) {
    const std::string id = make_job_id();
    EXPECT_TRUE(is_valid_job_id(id)) << id;
    EXPECT_EQ(id.size(), 38u);
    seen.insert(id);
  }
  EXPECT_EQ(seen.size(), 1000u);
  const std::string hex32 = "0123456789abcdef0123456789abcdef";
  EXPECT_TRUE(is_valid_job_id("video_" + hex32));
  for (const std::string& bad :
       {std::string(), std::string("video_"), "video_" + hex32.substr(1), "video_" + hex32 + "0", "Video_" + hex32,
        "video_" + std::string("0123456789ABCDEF0123456789abcdef"), "video-" + hex32, "../" + hex32.substr(0, 30),
        "video_" + hex32.substr(0, 30) + "/.", "video_" + hex32.substr(0, 30) + "..", std::string("video_") + '\0' + hex32.substr(1),
        "video_" + hex32.substr(0, 31) + "g", "/video_" + hex32.substr(1)})
    EXPECT_FALSE(is_valid_job_id(bad)) << bad;
}

TEST(ServerJobRecords, RoundTripAndRefuseWhatTheyCannotRead) {
  JobRecord r = record("video_" + std::string(32, 'a'), 7, JobStatus::kFailed);
  r.started_at = 1010;
  r.completed_at = 1020;
  r.error = JobError{"interrupted", "the server stopped"};
  r.timings = {{"e2e", 1.5}};
  Expected<JobRecord> back = record_from_json(record_json(r), "status.json");
  ASSERT_TRUE(back) << back.status().to_string();
  EXPECT_EQ(back->id, r.id);
  EXPECT_EQ(back->sequence, 7u);
  EXPECT_EQ(back->status, JobStatus::kFailed);
  EXPECT_EQ(back->started_at, 1010);
  EXPECT_EQ(back->completed_at, 1020);
  ASSERT_TRUE(back->error);
  EXPECT_EQ(back->error->code, "interrupted");
  EXPECT_EQ(back->timings["e2e"], 1.5);
  for (const char* s : {"queued", "in_progress", "completed", "failed", "cancelled"})
    EXPECT_EQ(status_name(*parse_status(s)), std::string(s));
  EXPECT_FALSE(parse_status("done"));
  nlohmann::json j = record_json(r);
  j["status"] = "running";
  EXPECT_FALSE(record_from_json(j, "status.json"));
  j = record_json(r);
  j.erase("sequence");
  EXPECT_FALSE(record_from_json(j, "status.json"));
  EXPECT_FALSE(record_from_json(nlohmann::json::array(), "status.json"));
}

TEST(ServerJobStore, FoldersAndFilesStayInsideTheJobsFolder) {
  testing::TempDir dir("server_store");
  Expected<JobStore> store = JobStore::open(dir.file("jobs"));
  ASSERT_TRUE(store) << store.status().to_string();
  EXPECT_TRUE(fs::is_directory(dir.file("jobs")));
  EXPECT_EQ(store->root(), fs::canonical(dir.file("jobs")).string());
  Expected<std::string> id = store->create();
  ASSERT_TRUE(id);
  EXPECT_TRUE(is_valid_job_id(*id));
  EXPECT_TRUE(fs::is_directory(store->inputs_folder(*id)));
  EXPECT_EQ(fs::path(store->video_path(*id)).parent_path(), fs::path(store->root()) / *id);
  // An id that was not checked never names a folder.
  EXPECT_THROW(store->folder("../../etc"), InternalError);
  EXPECT_THROW(store->folder("video_" + std::string(32, 'G')), InternalError);
  // A folder that is not there cannot be opened as the jobs folder's parent.
  EXPECT_FALSE(JobStore::open(dir.file("missing/jobs")));
  write_text(dir.file("file"), "x");
  EXPECT_FALSE(JobStore::open(dir.file("file")));
  EXPECT_FALSE(JobStore::open(""));
  // Writes leave no temporary file behind.
  ASSERT_TRUE(store->write_status(record(*id, 1, JobStatus::kQueued)).is_ok());
  ASSERT_TRUE(store->write_status(record(*id, 1, JobStatus::kInProgress)).is_ok());
  std::set<std::string> names;
  for (const auto& e : fs::directory_iterator(store->folder(*id))) names.insert(e.path().filename().string());
  EXPECT_EQ(names, (std::set<std::string>{"inputs", "status.json"}));
  // Removal takes the folder and everything in it.
  write_text(store->video_path(*id), "mp4");
  ASSERT_TRUE(store->remove(*id).is_ok());
  EXPECT_EQ(dir.entries(), 2u);  // jobs/ and the file
  EXPECT_TRUE(fs::is_empty(store->root()));
}

TEST(ServerJobStore, ARestartFindsFinishedJobsAndFailsInterruptedOnes) {
  testing::TempDir dir("server_recover");
  Expected<JobStore> opened = JobStore::open(dir.file("jobs"));
  ASSERT_TRUE(opened);
  JobStore& store = *opened;
  const std::string completed = add_job(store, 3, JobStatus::kCompleted);
  const std::string failed = add_job(store, 1, JobStatus::kFailed);
  const std::string cancelled = add_job(store, 2, JobStatus::kCancelled);
  const std::string queued = add_job(store, 4, JobStatus::kQueued);
  const std::string running = add_job(store, 5, JobStatus::kInProgress);
  const std::string lost_video = add_job(store, 6, JobStatus::kCompleted, /*with_video=*/false);
  // A creation cut short (no status.json), a deletion cut short, a temporary file, things not ours.
  Expected<std::string> half = store.create();
  ASSERT_TRUE(half);
  fs::create_directories(fs::path(store.root()) / ".deleting-video_x-3" / "inputs");
  write_text(fs::path(store.folder(completed)) / ".status.json.partial-99-1", "{");
  write_text(fs::path(store.root()) / "notes.txt", "mine");
  fs::create_directory(fs::path(store.root()) / "other");
  // A status file that is not a record: skipped and left as it is.
  const std::string corrupt = add_job(store, 7, JobStatus::kCompleted);
  write_text(fs::path(store.folder(corrupt)) / "status.json", "{not json");

  std::vector<std::string> notes;
  Expected<std::vector<JobStore::Job>> jobs = store.recover(5000, notes);
  ASSERT_TRUE(jobs) << jobs.status().to_string();
  std::vector<std::string> ids;
  for (const JobStore::Job& j : *jobs) ids.push_back(j.record.id);
  EXPECT_EQ(ids, (std::vector<std::string>{failed, cancelled, completed, queued, running, lost_video}));
  auto find = [&](const std::string& id) -> const JobStore::Job& {
    return *std::find_if(jobs->begin(), jobs->end(), [&](const JobStore::Job& j) { return j.record.id == id; });
  };
  EXPECT_EQ(find(completed).record.status, JobStatus::kCompleted);
  EXPECT_EQ(find(completed).record.completed_at, 2000);
  EXPECT_EQ(find(completed).request["prompt"], "job 3");
  EXPECT_EQ(find(failed).record.status, JobStatus::kFailed);
  EXPECT_EQ(find(cancelled).record.status, JobStatus::kCancelled);
  for (const std::string& id : {queued, running}) {
    const JobRecord& r = find(id).record;
    EXPECT_EQ(r.status, JobStatus::kFailed) << id;
    ASSERT_TRUE(r.error);
    EXPECT_EQ(r.error->code, "interrupted");
    EXPECT_NE(r.error->message.find("submit it again"), std::string::npos) << r.error->message;
    EXPECT_EQ(r.completed_at, 5000);
  }
  EXPECT_NE(find(queued).record.error->message.find("queued"), std::string::npos);
  EXPECT_NE(find(running).record.error->message.find("in progress"), std::string::npos);
  EXPECT_EQ(find(lost_video).record.status, JobStatus::kFailed);
  EXPECT_EQ(find(lost_video).record.error->code, "video_missing");
  // Written back: a second restart reads the same and changes nothing.
  std::vector<std::string> again_notes;
  Expected<std::vector<JobStore::Job>> again = store.recover(9000, again_notes);
  ASSERT_TRUE(again);
  ASSERT_EQ(again->size(), jobs->size());
  for (size_t i = 0; i < again->size(); ++i) {
    EXPECT_EQ(record_json((*again)[i].record), record_json((*jobs)[i].record)) << i;
  }
  // Leftovers removed; what is not ours, and the unreadable job, left.
  EXPECT_FALSE(fs::exists(store.folder(*half)));
  EXPECT_FALSE(fs::exists(fs::path(store.root()) / ".deleting-video_x-3"));
  EXPECT_FALSE(fs::exists(fs::path(store.folder(completed)) / ".status.json.partial-99-1"));
  EXPECT_TRUE(fs::exists(fs::path(store.root()) / "notes.txt"));
  EXPECT_TRUE(fs::is_directory(fs::path(store.root()) / "other"));
  EXPECT_TRUE(fs::exists(fs::path(store.folder(corrupt)) / "status.json"));
  bool noted_corrupt = false;
  for (const std::string& n : notes) noted_corrupt |= n.find(corrupt) != std::string::npos && n.find("skipped") != std::string::npos;
  EXPECT_TRUE(noted_corrupt);
}

}  // namespace
}  // namespace orochi::apps::server
