// orochi serve's queue (src/apps/server/job_queue.*) with stand-in work instead of the engine: one
// job at a time in submission order, a bound that answers 429, cancel of a queued job at once and of
// a running one through its flag, progress as a share of the job, every change in status.json and
// in the events (in order), and deletion of a finished job with its folder.
#include <gtest/gtest.h>

#include <chrono>
#include <condition_variable>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <thread>

#include "apps/server/job_queue.h"
#include "support/temp_dir.h"

namespace orochi::apps::server {
namespace {

namespace fs = std::filesystem;
using namespace std::chrono_literals;

// Work that reports `steps` denoise steps and waits at each for the test to let it go (or for cancel).
struct Gate {
  std::mutex m;
  std::condition_variable cv;
  int released = 0;
  std::vector<std::string> ran;
  void release(int n = 1000) {
    std::lock_guard<std::mutex> l(m);
    released += n;
    cv.notify_all();
  }
};

class StandInWork : public JobWork {
 public:
  StandInWork(Gate& gate, std::string name, int steps, bool fail = false)
      : gate_(gate), name_(std::move(name)), steps_(steps), fail_(fail) {}
  Expected<nlohmann::json> run(const std::function<void(const StageProgress&)>& progress,
                               const std::atomic<bool>& cancel) override {
    {
      std::lock_guard<std::mutex> l(gate_.m);
      gate_.ran.push_back(name_);
    }
    progress({"denoise", 0, steps_, 0});
    for (int i = 1; i <= steps_; ++i) {
      std::unique_lock<std::mutex> l(gate_.m);
      // Polled: the cancel flag is the engine's contract (read at each step), not a notification.
      const auto deadline = std::chrono::steady_clock::now() + 10s;
      while (!(gate_.released > 0 || cancel.load()) && std::chrono::steady_clock::now() < deadline)
        gate_.cv.wait_for(l, 5ms);
      if (cancel.load()) return Status(ErrorCode::kCancelled, "cancelled at step " + std::to_string(i));
      --gate_.released;
      l.unlock();
      progress({"denoise", i, steps_, 0.5});
    }
    if (fail_) return invalid_argument("the stand-in failed");
    return nlohmann::json{{"e2e", 1.0}};
  }

 private:
  Gate& gate_;
  std::string name_;
  int steps_;
  bool fail_;
};

struct Events {
  std::mutex m;
  std::condition_variable cv;
  std::vector<std::pair<std::string, JobSnapshot>> seen;
  void add(const JobSnapshot& s, const std::string& kind) {
    std::lock_guard<std::mutex> l(m);
    seen.emplace_back(kind, s);
    cv.notify_all();
  }
  // Waits until `id` has had an event of `kind`.
  bool wait_for(const std::string& id, const std::string& kind) {
    std::unique_lock<std::mutex> l(m);
    return cv.wait_for(l, 10s, [&] {
      for (const auto& [k, s] : seen)
        if (k == kind && s.record.id == id) return true;
      return false;
    });
  }
};

class ServerJobQueue : public ::testing::Test {
 protected:
  void SetUp() override {
    Expected<JobStore> s = JobStore::open(dir_.file("jobs"));
    ASSERT_TRUE(s);
    store_ = std::make_unique<JobStore>(std::move(s).value());
    queue_ = std::make_unique<JobQueue>(*store_, 2, [this](const JobSnapshot& s, const std::string& k) { events_.add(s, k); });
  }
  std::string submit(const std::string& name, int steps, bool fail = false) {
    Expected<std::string> id = store_->create();
    EXPECT_TRUE(id);
    EXPECT_TRUE(store_->write_request(*id, {{"prompt", name}}).is_ok());  // as POST /v1/videos does first
    ApiResult<JobSnapshot> s = queue_->submit(*id, {{"prompt", name}}, std::make_unique<StandInWork>(gate_, name, steps, fail));
    if (!s) {
      last_error_ = s.error();
      store_->discard(*id);
      return "";
    }
    return *id;
  }
  JobRecord on_disk(const std::string& id) {
    std::ifstream in(fs::path(store_->folder(id)) / "status.json");
    return *record_from_json(nlohmann::json::parse(in), "status.json");
  }
  bool wait_status(const std::string& id, JobStatus status) {
    for (int i = 0; i < 1000; ++i) {
      if (queue_->get(id)->record.status == status) return true;
      std::this_thread::sleep_for(10ms);
    }
    return false;
  }

  testing::TempDir dir_{"server_queue"};
  std::unique_ptr<JobStore> store_;
  Gate gate_;
  Events events_;
  std::unique_ptr<JobQueue> queue_;
  ApiError last_error_;
};

TEST_F(ServerJobQueue, OneAtATimeBoundedAndCancellable) {
  queue_->start();
  const std::string a = submit("a", 3);
  ASSERT_TRUE(events_.wait_for(a, "progress"));  // a runs; b and c wait
  const std::string b = submit("b", 1);
  const std::string c = submit("c", 1, /*fail=*/true);
  ASSERT_FALSE(b.empty());
  ASSERT_FALSE(c.empty());
  EXPECT_TRUE(queue_->full());
  EXPECT_EQ(submit("d", 1), "");
  EXPECT_EQ(last_error_.http_status, 429);
  EXPECT_NE(last_error_.message.find("--queue-max 2"), std::string::npos) << last_error_.message;
  EXPECT_EQ(queue_->get(b)->queue_position, 1u);
  EXPECT_EQ(queue_->get(c)->queue_position, 2u);
  EXPECT_EQ(on_disk(b).status, JobStatus::kQueued);
  EXPECT_EQ(on_disk(a).status, JobStatus::kInProgress);
  const JobQueue::Counts counts = queue_->counts();
  EXPECT_EQ(counts.queued, 2u);
  EXPECT_EQ(counts.running, 1u);

  // Progress: the denoiser's share of the job, its mean step time and the rest of the stage.
  gate_.release(1);
  for (int i = 0; i < 500 && queue_->get(a)->progress->done < 1; ++i) std::this_thread::sleep_for(10ms);
  const JobSnapshot mid = *queue_->get(a);
  ASSERT_TRUE(mid.progress);
  EXPECT_EQ(mid.progress->stage, "denoise");
  EXPECT_EQ(mid.progress->done, 1);
  EXPECT_EQ(mid.progress->total, 3);
  EXPECT_DOUBLE_EQ(mid.progress->mean_seconds, 0.5);
  EXPECT_DOUBLE_EQ(mid.progress->eta_seconds, 1.0);
  EXPECT_EQ(mid.progress->percent, 2 + 88 / 3);

  // Cancel the queued b at once; cancel the running a through its flag.
  ApiResult<JobQueue::Removal> cb = queue_->cancel_or_delete(b);
  ASSERT_TRUE(cb);
  EXPECT_FALSE(cb->deleted);
  EXPECT_EQ(cb->snapshot.record.status, JobStatus::kCancelled);
  EXPECT_EQ(on_disk(b).status, JobStatus::kCancelled);
  EXPECT_FALSE(queue_->full());
  ApiResult<JobQueue::Removal> ca = queue_->cancel_or_delete(a);
  ASSERT_TRUE(ca);
  EXPECT_TRUE(ca->snapshot.cancel_requested);
  ASSERT_TRUE(wait_status(a, JobStatus::kCancelled));
  EXPECT_NE(queue_->get(a)->record.error->message.find("cancelled at step 2"), std::string::npos);
  EXPECT_EQ(on_disk(a).status, JobStatus::kCancelled);

  // c runs next (b was cancelled) and fails with the work's reason, as the engine's errors map.
  gate_.release();
  ASSERT_TRUE(wait_status(c, JobStatus::kFailed));
  const JobRecord rc = on_disk(c);
  EXPECT_EQ(rc.error->code, "invalid_request");
  EXPECT_EQ(rc.error->message, "the stand-in failed");
  EXPECT_EQ(gate_.ran, (std::vector<std::string>{"a", "c"}));

  // A finished job is deleted with its folder; an unknown or malformed id is refused.
  ApiResult<JobQueue::Removal> dc = queue_->cancel_or_delete(c);
  ASSERT_TRUE(dc);
  EXPECT_TRUE(dc->deleted);
  EXPECT_FALSE(fs::exists(store_->folder(c)));
  EXPECT_FALSE(queue_->get(c));
  EXPECT_EQ(queue_->cancel_or_delete(c).error().http_status, 404);
  EXPECT_EQ(queue_->cancel_or_delete("../etc").error().http_status, 400);

  // The events of a: status (queued), status (in progress), progress..., status (cancel asked), done.
  std::vector<std::string> kinds;
  {
    std::lock_guard<std::mutex> l(events_.m);
    for (const auto& [k, s] : events_.seen)
      if (s.record.id == a) kinds.push_back(k);
  }
  ASSERT_GE(kinds.size(), 5u);
  EXPECT_EQ(kinds.front(), "status");
  EXPECT_EQ(kinds[1], "status");
  EXPECT_EQ(kinds[2], "progress");
  EXPECT_EQ(kinds.back(), "done");
}

TEST_F(ServerJobQueue, ACompletedJobKeepsItsTimingsAndARestartedQueueListsIt) {
  queue_->start();
  gate_.release();
  const std::string a = submit("a", 2);
  ASSERT_TRUE(wait_status(a, JobStatus::kCompleted));
  EXPECT_EQ(on_disk(a).timings["e2e"], 1.0);
  EXPECT_GT(on_disk(a).completed_at, 0);
  queue_->stop();
  EXPECT_EQ(submit("late", 1), "");
  EXPECT_EQ(last_error_.http_status, 503);

  std::ofstream(store_->video_path(a)) << "mp4";  // the stand-in writes no video; the engine's work does
  std::vector<std::string> notes;
  Expected<std::vector<JobStore::Job>> found = store_->recover(unix_now(), notes);
  ASSERT_TRUE(found);
  JobQueue again(*store_, 2, nullptr);
  again.restore(std::move(found).value());
  std::vector<JobSnapshot> listed = again.list();
  ASSERT_EQ(listed.size(), 1u);
  EXPECT_EQ(listed[0].record.status, JobStatus::kCompleted);
  EXPECT_EQ(listed[0].request["prompt"], "a");
}

}  // namespace
}  // namespace orochi::apps::server
