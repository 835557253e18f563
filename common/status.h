// Status and StatusOr<T>: errors as values (no exceptions across module edges).
// Codes mirror the HTTP mapping the API uses, so a store or codec error keeps its
// meaning all the way to the client. `field` names the request field at fault, if any.
#pragma once

#include <optional>
#include <string>
#include <utility>
#include <variant>

namespace frugal {

enum class StatusCode {
  kOk,
  kInvalidArgument,     // 400: malformed input; `field` says which
  kUnauthenticated,     // 401
  kPermissionDenied,    // 403
  kNotFound,            // 404
  kConflict,            // 409: state or idempotency conflict
  kPayloadTooLarge,     // 413
  kFailedPrecondition,  // 422: well-formed but not acceptable now
  kUnavailable,         // 503: database or dependency down; retry later
  kInternal,            // 500: a bug
};

const char* StatusCodeName(StatusCode code);

class [[nodiscard]] Status {
 public:
  Status() = default;
  Status(StatusCode code, std::string message, std::string field = "")
      : code_(code), message_(std::move(message)), field_(std::move(field)) {}

  static Status Ok() { return Status(); }
  bool ok() const { return code_ == StatusCode::kOk; }
  StatusCode code() const { return code_; }
  const std::string& message() const { return message_; }
  const std::string& field() const { return field_; }
  std::string ToString() const;

 private:
  StatusCode code_ = StatusCode::kOk;
  std::string message_;
  std::string field_;
};

inline Status InvalidArgument(std::string msg, std::string field = "") {
  return Status(StatusCode::kInvalidArgument, std::move(msg), std::move(field));
}
inline Status NotFound(std::string msg) { return Status(StatusCode::kNotFound, std::move(msg)); }
inline Status Conflict(std::string msg) { return Status(StatusCode::kConflict, std::move(msg)); }
inline Status Unavailable(std::string msg) {
  return Status(StatusCode::kUnavailable, std::move(msg));
}
inline Status Internal(std::string msg) { return Status(StatusCode::kInternal, std::move(msg)); }
inline Status FailedPrecondition(std::string msg, std::string field = "") {
  return Status(StatusCode::kFailedPrecondition, std::move(msg), std::move(field));
}

// Holds either a value or a non-OK Status. Accessing value() of an error is a bug.
template <typename T>
class [[nodiscard]] StatusOr {
 public:
  StatusOr(T value) : value_(std::move(value)) {}  // NOLINT: implicit by design
  StatusOr(Status status) : status_(std::move(status)) {}  // NOLINT

  bool ok() const { return status_.ok(); }
  const Status& status() const { return status_; }
  T& value() & { return *value_; }
  const T& value() const& { return *value_; }
  T&& value() && { return std::move(*value_); }
  T* operator->() { return &*value_; }
  const T* operator->() const { return &*value_; }
  T& operator*() & { return *value_; }
  const T& operator*() const& { return *value_; }

 private:
  Status status_;
  std::optional<T> value_;
};

}  // namespace frugal

#define FRUGAL_CONCAT_INNER(a, b) a##b
#define FRUGAL_CONCAT(a, b) FRUGAL_CONCAT_INNER(a, b)

// Returns the status from the enclosing function if it is an error.
#define RETURN_IF_ERROR(expr)                    \
  do {                                           \
    ::frugal::Status _st = (expr);               \
    if (!_st.ok()) return _st;                   \
  } while (0)

// `ASSIGN_OR_RETURN(auto x, F())` declares x from F()'s value or returns its error.
#define ASSIGN_OR_RETURN(lhs, expr) \
  ASSIGN_OR_RETURN_IMPL(FRUGAL_CONCAT(_statusor_, __LINE__), lhs, expr)
#define ASSIGN_OR_RETURN_IMPL(tmp, lhs, expr) \
  auto tmp = (expr);                          \
  if (!tmp.ok()) return tmp.status();         \
  lhs = std::move(tmp).value()
