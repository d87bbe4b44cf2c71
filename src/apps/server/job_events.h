// What GET /v1/videos/{id}/events streams: each job's recent events (status changes, progress),
// numbered by one counter, so a subscriber asks for the events after the last one it saw and waits
// for more. Progress comes every step; a subscriber that falls more than kKept events behind skips
// the oldest (each progress event is a full snapshot, so nothing it needs is lost).
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <map>
#include <mutex>
#include <string>
#include <vector>

namespace orochi::apps::server {

struct JobEvent {
  uint64_t sequence = 0;
  std::string type;  // "status", "progress", "done" (the job finished: the last event)
  std::string data;  // JSON text
};

class EventHub {
 public:
  static constexpr size_t kKept = 64;

  void publish(const std::string& id, const std::string& type, const std::string& data);
  // The number of the latest event so far (0 before any): subscribe from there.
  uint64_t latest() const;
  // The job's events after `after`, waiting up to `timeout` for one; none on timeout.
  std::vector<JobEvent> wait(const std::string& id, uint64_t after, std::chrono::milliseconds timeout);
  // Drops a deleted job's events (its subscribers see no more).
  void forget(const std::string& id);
  // Wakes every waiter now (the server is stopping).
  void wake_all();

 private:
  mutable std::mutex mutex_;
  std::condition_variable changed_;
  uint64_t sequence_ = 0;
  std::map<std::string, std::deque<JobEvent>> events_;
};

}  // namespace orochi::apps::server
