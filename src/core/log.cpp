#include "core/log.h"

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>

#include "core/env.h"

namespace orochi {
namespace {

LogLevel level_from_env() {
  const std::optional<std::string> value = env_value("OROCHI_LOG");
  if (!value) return LogLevel::kInfo;
  const char* env = value->c_str();
  if (std::strcmp(env, "debug") == 0) return LogLevel::kDebug;
  if (std::strcmp(env, "warn") == 0) return LogLevel::kWarn;
  if (std::strcmp(env, "error") == 0) return LogLevel::kError;
  if (std::strcmp(env, "off") == 0) return LogLevel::kOff;
  return LogLevel::kInfo;
}

std::atomic<int>& level_storage() {
  static std::atomic<int> level{static_cast<int>(level_from_env())};
  return level;
}

const char* level_tag(LogLevel level) {
  switch (level) {
    case LogLevel::kDebug: return "debug";
    case LogLevel::kInfo: return "info";
    case LogLevel::kWarn: return "warn";
    case LogLevel::kError: return "error";
    case LogLevel::kOff: return "";
  }
  return "";
}

}  // namespace

LogLevel log_level() { return static_cast<LogLevel>(level_storage().load()); }
void set_log_level(LogLevel level) { level_storage().store(static_cast<int>(level)); }

void log_message(LogLevel level, const std::string& message) {
  static std::mutex mutex;  // worker threads log too; keep lines whole
  std::lock_guard<std::mutex> lock(mutex);
  std::fprintf(stderr, "[orochi %s] %s\n", level_tag(level), message.c_str());
}

}  // namespace orochi
