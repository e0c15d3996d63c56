// Must-check results for internal code. The ABI adapters in plugin/ turn an Error into an
// ncclResult_t plus one log line; nothing below plugin/ throws across a C boundary.
#pragma once

#include <optional>
#include <string>
#include <utility>

namespace pilot {

/// An error with a human-readable message (lowercase, no final period).
struct Error {
  std::string message;
};

/// A value or an error. [[nodiscard]] so that a dropped error is a compiler warning.
template <typename T>
class [[nodiscard]] Expected {
 public:
  Expected(T value) : value_(std::move(value)) {}      // NOLINT: implicit by design
  Expected(Error error) : error_(std::move(error)) {}  // NOLINT

  bool ok() const { return value_.has_value(); }
  explicit operator bool() const { return ok(); }
  T& value() { return *value_; }
  const T& value() const { return *value_; }
  T* operator->() { return &*value_; }
  const T* operator->() const { return &*value_; }
  T& operator*() { return *value_; }
  const std::string& error() const { return error_.message; }

 private:
  std::optional<T> value_;
  Error error_;
};

/// Success or an error, for functions with no value to return.
class [[nodiscard]] Status {
 public:
  static Status success() { return Status(); }
  Status(Error error) : error_(std::move(error.message)), failed_(true) {}  // NOLINT
  bool ok() const { return !failed_; }
  explicit operator bool() const { return ok(); }
  const std::string& error() const { return error_; }

 private:
  Status() = default;
  std::string error_;
  bool failed_ = false;
};

}  // namespace pilot
