#include "core/status.h"

namespace orochi {

const char* error_code_name(ErrorCode code) {
  switch (code) {
    case ErrorCode::kOk: return "ok";
    case ErrorCode::kInvalidArgument: return "invalid argument";
    case ErrorCode::kNotFound: return "not found";
    case ErrorCode::kCorruptFile: return "corrupt file";
    case ErrorCode::kShapeMismatch: return "shape mismatch";
    case ErrorCode::kUnsupported: return "unsupported";
    case ErrorCode::kIo: return "i/o error";
    case ErrorCode::kInternal: return "internal error";
    case ErrorCode::kDeadline: return "deadline exceeded";
    case ErrorCode::kUsage: return "usage error";
    case ErrorCode::kCancelled: return "cancelled";
    case ErrorCode::kNonFinite: return "non-finite values";
  }
  return "unknown error";
}

std::string Status::to_string() const {
  if (is_ok()) return "ok";
  return std::string(error_code_name(code_)) + ": " + message_;
}

Status Status::with_context(const std::string& context) const {
  if (is_ok()) return *this;
  return Status(code_, context + ": " + message_);
}

Status invalid_argument(std::string m) { return {ErrorCode::kInvalidArgument, std::move(m)}; }
Status not_found(std::string m) { return {ErrorCode::kNotFound, std::move(m)}; }
Status corrupt_file(std::string m) { return {ErrorCode::kCorruptFile, std::move(m)}; }
Status shape_mismatch(std::string m) { return {ErrorCode::kShapeMismatch, std::move(m)}; }
Status unsupported(std::string m) { return {ErrorCode::kUnsupported, std::move(m)}; }
Status io_error(std::string m) { return {ErrorCode::kIo, std::move(m)}; }
Status deadline_exceeded(std::string m) { return {ErrorCode::kDeadline, std::move(m)}; }
Status usage_error(std::string m) { return {ErrorCode::kUsage, std::move(m)}; }

}  // namespace orochi
