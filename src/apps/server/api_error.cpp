#include "apps/server/api_error.h"

#include "apps/server/job_id.h"

namespace orochi::apps::server {

nlohmann::json ApiError::to_json() const {
  nlohmann::json e{{"code", code}, {"message", message}};
  e["param"] = param.empty() ? nlohmann::json(nullptr) : nlohmann::json(param);
  return {{"error", e}};
}

ApiError bad_request(std::string message, std::string param) {
  return {400, "invalid_request", std::move(message), std::move(param)};
}

ApiError unknown_video(const std::string& id) {
  if (!is_valid_job_id(id))
    return {400, "invalid_video_id",
            "'" + id.substr(0, 80) + "' is not a video id: ids are 'video_' and 32 hex digits, as POST /v1/videos "
            "returns them",
            "video_id"};
  return {404, "video_not_found", "no video " + id + " on this server (GET /v1/videos lists them)", "video_id"};
}

ApiError from_status(const Status& status, std::string param) {
  switch (status.code()) {
    case ErrorCode::kInvalidArgument:
    case ErrorCode::kUsage:
    case ErrorCode::kShapeMismatch:
    case ErrorCode::kNotFound:
    case ErrorCode::kCorruptFile:
      return {400, "invalid_request", status.message(), std::move(param)};
    case ErrorCode::kUnsupported:
      return {422, "unsupported_request", status.message(), std::move(param)};
    default:
      return {500, "server_error", status.to_string(), std::move(param)};
  }
}

std::string json_text(const nlohmann::json& j) {
  return j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

}  // namespace orochi::apps::server
