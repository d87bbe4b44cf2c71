#include "apps/server/job_events.h"

namespace orochi::apps::server {

void EventHub::publish(const std::string& id, const std::string& type, const std::string& data) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    std::deque<JobEvent>& kept = events_[id];
    if (type == "done") kept.clear();  // a finished job keeps its last event only
    kept.push_back({++sequence_, type, data});
    if (kept.size() > kKept) kept.pop_front();
  }
  changed_.notify_all();
}

uint64_t EventHub::latest() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return sequence_;
}

std::vector<JobEvent> EventHub::wait(const std::string& id, uint64_t after, std::chrono::milliseconds timeout) {
  std::unique_lock<std::mutex> lock(mutex_);
  std::vector<JobEvent> out;
  auto collect = [&] {
    auto it = events_.find(id);
    if (it == events_.end()) return false;
    for (const JobEvent& e : it->second)
      if (e.sequence > after) out.push_back(e);
    return !out.empty();
  };
  changed_.wait_for(lock, timeout, collect);
  return out;
}

void EventHub::forget(const std::string& id) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    events_.erase(id);
  }
  changed_.notify_all();
}

void EventHub::wake_all() { changed_.notify_all(); }

}  // namespace orochi::apps::server
