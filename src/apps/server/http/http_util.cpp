#include "apps/server/http/http_util.h"

namespace orochi::apps::server {

void send_json(httplib::Response& res, int status, const nlohmann::json& body) {
  res.status = status;
  res.set_header("Cache-Control", "no-store");
  res.set_content(json_text(body), "application/json");
}

void send_error(httplib::Response& res, const ApiError& error) {
  if (error.http_status == 401) res.set_header("WWW-Authenticate", "Bearer");
  send_json(res, error.http_status, error.to_json());
}

httplib::Ranges take_ranges(const httplib::Request& req) {
  httplib::Ranges& ranges = const_cast<httplib::Request&>(req).ranges;
  httplib::Ranges taken;
  taken.swap(ranges);
  return taken;
}

std::optional<std::pair<uint64_t, uint64_t>> byte_range(const httplib::Ranges& ranges, uint64_t size,
                                                        bool& unsatisfiable) {
  unsatisfiable = false;
  if (ranges.size() != 1) return std::nullopt;
  const auto [first, last] = ranges[0];  // -1: not given ("bytes=-N" is the last N bytes)
  if (first < 0 && last < 0) return std::nullopt;
  if (first < 0) {  // a suffix: the last `last` bytes
    if (last == 0 || size == 0) {
      unsatisfiable = true;
      return std::nullopt;
    }
    const uint64_t n = std::min<uint64_t>(static_cast<uint64_t>(last), size);
    return std::pair{size - n, size - 1};
  }
  if (static_cast<uint64_t>(first) >= size) {
    unsatisfiable = true;
    return std::nullopt;
  }
  const uint64_t end = last < 0 ? size - 1 : std::min<uint64_t>(static_cast<uint64_t>(last), size - 1);
  return std::pair{static_cast<uint64_t>(first), end};
}

}  // namespace orochi::apps::server
