#include "apps/server/http/upload_receiver.h"

#include <algorithm>
#include <cctype>

namespace orochi::apps::server {
namespace {

constexpr size_t kTextPartMaxBytes = 1 << 20;
constexpr size_t kFilesMax = 64;

}  // namespace

std::string upload_extension(const std::string& filename, const std::string& content_type) {
  const size_t dot = filename.rfind('.');
  if (dot != std::string::npos) {
    std::string ext = filename.substr(dot + 1);
    if (!ext.empty() && ext.size() <= 8 && std::all_of(ext.begin(), ext.end(), [](unsigned char c) { return std::isalnum(c); })) {
      std::transform(ext.begin(), ext.end(), ext.begin(), [](unsigned char c) { return std::tolower(c); });
      return "." + ext;
    }
  }
  static const std::pair<const char*, const char*> kTypes[] = {
      {"image/png", ".png"},  {"image/jpeg", ".jpg"}, {"image/webp", ".webp"}, {"video/mp4", ".mp4"},
      {"video/quicktime", ".mov"}, {"video/webm", ".webm"}, {"audio/wav", ".wav"}, {"audio/x-wav", ".wav"},
      {"audio/flac", ".flac"}, {"audio/mpeg", ".mp3"}};
  const std::string type = content_type.substr(0, content_type.find(';'));
  for (const auto& [t, ext] : kTypes)
    if (type == t) return ext;
  return "";
}

bool UploadReceiver::begin(const httplib::MultipartFormData& part) {
  end_part();
  if (error_) return false;
  if (part.name.empty()) {
    error_ = bad_request("a form part has no name");
    return false;
  }
  name_ = part.name;
  file_ = !part.filename.empty();
  text_.clear();
  if (!file_) return true;
  if (!is_file_field(name_)) {
    error_ = bad_request("the form field '" + name_.substr(0, 60) +
                             "' holds a file; files go in image, input_reference, last_image or reference",
                         name_);
    return false;
  }
  if (uploads_.size() >= kFilesMax) {
    error_ = bad_request("at most 12 reference files, got more than " + std::to_string(kFilesMax), name_);
    return false;
  }
  UploadedFile f;
  f.field = name_;
  f.filename = part.filename;
  f.content_type = part.content_type;
  f.path = folder_ + "/input-" + std::to_string(uploads_.size() + 1) + upload_extension(part.filename, part.content_type);
  out_.open(f.path, std::ios::binary | std::ios::trunc);
  if (!out_) {
    error_ = ApiError{500, "server_error", "cannot save the upload in " + folder_, name_};
    return false;
  }
  uploads_.push_back(std::move(f));
  return true;
}

bool UploadReceiver::append(const char* data, size_t size) {
  if (error_) return false;
  if (file_) {
    out_.write(data, static_cast<std::streamsize>(size));
    if (!out_) error_ = ApiError{500, "server_error", "saving the upload failed; check the jobs folder's free space", name_};
    return !error_;
  }
  if (text_.size() + size > kTextPartMaxBytes) {
    error_ = ApiError{413, "body_too_large", "the form field '" + name_.substr(0, 60) + "' is longer than 1 MiB", name_};
    return false;
  }
  text_.append(data, size);
  return true;
}

void UploadReceiver::finish() { end_part(); }

void UploadReceiver::end_part() {
  if (name_.empty()) return;
  const std::string name = std::move(name_);
  name_.clear();
  if (file_) {
    out_.close();
    if (out_.fail() && !error_)
      error_ = ApiError{500, "server_error", "saving the upload failed; check the jobs folder's free space", name};
    return;
  }
  if (error_) return;
  if (fields_.contains(name)) {
    error_ = bad_request("the form field '" + name.substr(0, 60) + "' is given twice", name);
    return;
  }
  ApiResult<nlohmann::json> value = multipart_field_value(name, text_);
  if (!value) {
    error_ = value.error();
    return;
  }
  fields_[name] = *value;
}

}  // namespace orochi::apps::server
