// A multipart POST /v1/videos read part by part as it arrives: reference files go straight into
// the job's inputs/ folder (never whole in memory), text parts become the request's fields.
#pragma once

#include <httplib.h>

#include <fstream>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "apps/server/api_error.h"
#include "apps/server/request_fields.h"

namespace orochi::apps::server {

class UploadReceiver {
 public:
  explicit UploadReceiver(std::string folder) : folder_(std::move(folder)) {}

  // httplib's callbacks: a part begins, a piece of its content. False stops the reading (error() says why).
  bool begin(const httplib::MultipartFormData& part);
  bool append(const char* data, size_t size);
  // After the last part.
  void finish();

  const std::optional<ApiError>& error() const { return error_; }
  const nlohmann::json& fields() const { return fields_; }
  const std::vector<UploadedFile>& uploads() const { return uploads_; }

 private:
  void end_part();

  std::string folder_;
  nlohmann::json fields_ = nlohmann::json::object();
  std::vector<UploadedFile> uploads_;
  std::optional<ApiError> error_;
  std::string name_;  // the current part's field; empty between parts
  bool file_ = false;
  std::string text_;
  std::ofstream out_;
};

// A saved upload's file extension: the client's (1 to 8 letters and digits) or one for its content
// type, never any other part of the client's file name.
std::string upload_extension(const std::string& filename, const std::string& content_type);

}  // namespace orochi::apps::server
