// The server's errors as clients see them: an HTTP status and {"error": {"code", "message",
// "param"}} (OpenAI's error object; `param` names the request field at fault, or is null). The
// message says what to fix. Engine errors map here in one place (from_status).
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <utility>
#include <variant>

#include "core/status.h"

namespace orochi::apps::server {

struct ApiError {
  int http_status = 400;
  std::string code;     // machine-readable: "invalid_request", "queue_full", "not_found", ...
  std::string message;  // what is wrong and what to do
  std::string param;    // the field at fault; empty: none

  nlohmann::json to_json() const;
};

ApiError bad_request(std::string message, std::string param = "");
ApiError unknown_video(const std::string& id);  // 404, or 400 for a string that is not an id at all

// An engine or file error of a request: invalid arguments, missing or corrupt files and shapes are
// the request's (400), valid requests the model cannot do yet 422, I/O and internal errors 500.
ApiError from_status(const Status& status, std::string param = "");

// A value or an ApiError (the server's Expected).
template <typename T>
class ApiResult {
 public:
  ApiResult(T value) : v_(std::move(value)) {}         // NOLINT: implicit by design
  ApiResult(ApiError error) : v_(std::move(error)) {}  // NOLINT
  bool ok() const { return v_.index() == 0; }
  explicit operator bool() const { return ok(); }
  T& operator*() { return std::get<0>(v_); }
  const T& operator*() const { return std::get<0>(v_); }
  T* operator->() { return &std::get<0>(v_); }
  const T* operator->() const { return &std::get<0>(v_); }
  const ApiError& error() const { return std::get<1>(v_); }

 private:
  std::variant<T, ApiError> v_;
};

// JSON text for a response: invalid UTF-8 in a client's strings is replaced, never thrown on.
std::string json_text(const nlohmann::json& j);

}  // namespace orochi::apps::server
