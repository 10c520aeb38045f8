// Vocabulary shared by every module: the error value that expected failures carry, and the
// failure classes a tool observation can have. Header-only; depends only on common/text.h.
#pragma once

#include <expected>
#include <stop_token>
#include <string>
#include <string_view>
#include <utility>

#include "quarry/common/text.h"

namespace quarry {

// What ended an operation. `message` names the operation and the object, e.g.
// "sqlite prepare failed: no such table: t1"; it is shown to users as is.
struct Error {
  enum class Code {
    kUsage,      // the caller asked for something malformed (bad flag, bad argument)
    kData,       // a data source is missing, unreadable, empty or of the wrong kind
    kModel,      // the model provider failed or answered with something unusable
    kInternal,   // a bug or an unexpected system failure
    kCancelled,  // the caller asked it to stop (Ctrl-C, SIGTERM, MCP notifications/cancelled)
  };
  Code code = Code::kInternal;
  std::string message;
};

// Cancellation is a std::stop_token everywhere: the CLI's signal handler and the MCP server's
// notifications/cancelled request a stop on a std::stop_source; whatever is running (a query,
// a Python child, a model request) stops within about a second and fails with kCancelled.
using StopToken = std::stop_token;

// A value or the Error that stopped it. [[nodiscard]] on the type marks every function that
// returns one: a Result nobody looks at is an error dropped, and the compiler says where.
template <typename T>
class [[nodiscard]] Result : public std::expected<T, Error> {
 public:
  using Base = std::expected<T, Error>;
  using Base::Base;
  Result() = default;
  Result(const Base& base) : Base(base) {}        // NOLINT: a std::expected converts
  Result(Base&& base) : Base(std::move(base)) {}  // NOLINT: a std::expected converts
};

inline std::unexpected<Error> Fail(Error::Code code, std::string message) {
  return std::unexpected<Error>(Error{code, std::move(message)});
}

// `error` with what the caller knows put in front, its code kept (LevelDB's
// Status::IOError(fname, msg)): Context(e, "cannot load data/x.csv") reads "cannot load
// data/x.csv: " + e.message. A message past 600 bytes is cut on a UTF-8 boundary, with "…":
// DuckDB's CSV errors quote whole lines, and a 2 MB cell must not become a 2 MB error.
inline Error Context(Error error, std::string_view what) {
  if (constexpr size_t kMaxMessage = 600; error.message.size() > kMaxMessage) {
    error.message = error.message.substr(0, Utf8Prefix(error.message, kMaxMessage)) + "…";
  }
  error.message = std::string(what) + ": " + error.message;
  return error;
}

// Why a tool call failed, as the model is told (DESIGN.md, "Tools"). kNone means success.
enum class FailureClass {
  kNone,
  kSyntaxError,     // the SQL or Python did not parse
  kGuardViolation,  // a read-only or sandbox rule was broken; the message names the rule
  kRuntimeError,    // it parsed but failed while running (unknown column, type error, ...)
  kTimeout,         // the wall-clock limit interrupted it
  kEmptyResult,     // it ran and returned no rows
  kBadArguments,    // tool-call arguments that are not valid JSON or do not fit the schema
};

inline std::string_view FailureClassName(FailureClass c) {
  switch (c) {
    case FailureClass::kNone:
      return "none";
    case FailureClass::kSyntaxError:
      return "syntax_error";
    case FailureClass::kGuardViolation:
      return "guard_violation";
    case FailureClass::kRuntimeError:
      return "runtime_error";
    case FailureClass::kTimeout:
      return "timeout";
    case FailureClass::kEmptyResult:
      return "empty_result";
    case FailureClass::kBadArguments:
      return "bad_arguments";
  }
  return "none";
}

}  // namespace quarry
