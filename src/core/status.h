// User-facing errors: Status and Expected<T>. Nothing crosses a public API as an exception;
// a failure the user can fix (bad file, bad shape, bad flag) comes back as one of these with advice.
#pragma once

#include <string>
#include <utility>
#include <variant>

namespace orochi {

enum class ErrorCode {
  kOk = 0,
  kInvalidArgument,  // the request or a flag is wrong
  kNotFound,         // a file or key is missing
  kCorruptFile,      // a file is truncated or malformed
  kShapeMismatch,    // a tensor has the wrong shape or dtype
  kUnsupported,      // valid input we do not handle (yet)
  kIo,               // the OS refused (open, mmap, write)
  kInternal,         // an invariant broke: a bug in Orochi
  kDeadline,         // a peer rank or device did not answer in time (communication deadline)
  kUsage,            // the command line is wrong (unknown option, missing or malformed value): exit 2
  kCancelled,        // the caller asked the run to stop (a signal, a server's cancel)
  kNonFinite,        // a stage produced NaN or Inf (named with the stage)
};

const char* error_code_name(ErrorCode code);

class [[nodiscard]] Status {
 public:
  Status() = default;
  Status(ErrorCode code, std::string message) : code_(code), message_(std::move(message)) {}

  static Status ok() { return {}; }
  bool is_ok() const { return code_ == ErrorCode::kOk; }
  explicit operator bool() const { return is_ok(); }
  ErrorCode code() const { return code_; }
  const std::string& message() const { return message_; }
  // "corrupt file: <message>"
  std::string to_string() const;
  // Prefixes context ("loading transformer: ...") while keeping the code.
  Status with_context(const std::string& context) const;

 private:
  ErrorCode code_ = ErrorCode::kOk;
  std::string message_;
};

template <typename T>
class [[nodiscard]] Expected {
 public:
  Expected(T value) : v_(std::move(value)) {}  // NOLINT: implicit by design
  Expected(Status status) : v_(std::move(status)) {}  // NOLINT

  bool has_value() const { return v_.index() == 0; }
  explicit operator bool() const { return has_value(); }
  T& value() & { return std::get<0>(v_); }
  const T& value() const& { return std::get<0>(v_); }
  T&& value() && { return std::get<0>(std::move(v_)); }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }
  // The error; ok() when a value is held.
  Status status() const { return has_value() ? Status::ok() : std::get<1>(v_); }

 private:
  std::variant<T, Status> v_;
};

Status invalid_argument(std::string message);
Status not_found(std::string message);
Status corrupt_file(std::string message);
Status shape_mismatch(std::string message);
Status unsupported(std::string message);
Status io_error(std::string message);
Status deadline_exceeded(std::string message);
Status usage_error(std::string message);

}  // namespace orochi

// Returns the Status from the enclosing function when `expr` fails.
#define OROCHI_RETURN_IF_ERROR(expr)                  \
  do {                                                \
    ::orochi::Status orochi_status_ = (expr);         \
    if (!orochi_status_.is_ok()) return orochi_status_; \
  } while (0)

#define OROCHI_CONCAT_INNER(a, b) a##b
#define OROCHI_CONCAT(a, b) OROCHI_CONCAT_INNER(a, b)
// `OROCHI_ASSIGN_OR_RETURN(auto x, make_x());` unwraps an Expected or returns its Status.
#define OROCHI_ASSIGN_OR_RETURN(lhs, expr) \
  OROCHI_ASSIGN_OR_RETURN_IMPL(OROCHI_CONCAT(orochi_expected_, __LINE__), lhs, expr)
#define OROCHI_ASSIGN_OR_RETURN_IMPL(tmp, lhs, expr) \
  auto tmp = (expr);                                 \
  if (!tmp.has_value()) return tmp.status();         \
  lhs = std::move(tmp).value()
