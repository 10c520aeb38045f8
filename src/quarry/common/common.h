// Vocabulary shared by every module: the error value that expected failures carry, and the
// failure classes a tool observation can have. Header-only; depends on nothing.
#pragma once

#include <expected>
#include <stop_token>
#include <string>
#include <string_view>
#include <utility>

namespace quarry {

// What ended an operation. `message` names the operation and the object, e.g.
// "sqlite prepare failed: no such table: t1"; it is shown to users as is.
struct Error {
  enum class Code {
    kUsage,     // the caller asked for something malformed (bad flag, bad argument)
    kData,      // a data source is missing, unreadable, empty or of the wrong kind
    kModel,     // the model provider failed or answered with something unusable
    kInternal,  // a bug or an unexpected system failure
    kCancelled,  // the caller asked it to stop (Ctrl-C, SIGTERM, MCP notifications/cancelled)
  };
  Code code = Code::kInternal;
  std::string message;
};

// Cancellation is a std::stop_token everywhere: the CLI's signal handler and the MCP server's
// notifications/cancelled request a stop on a std::stop_source; whatever is running (a query,
// a Python child, a model request) stops within about a second and fails with kCancelled.
using StopToken = std::stop_token;

template <typename T>
using Result = std::expected<T, Error>;

inline std::unexpected<Error> Fail(Error::Code code, std::string message) {
  return std::unexpected<Error>(Error{code, std::move(message)});
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
    case FailureClass::kNone: return "none";
    case FailureClass::kSyntaxError: return "syntax_error";
    case FailureClass::kGuardViolation: return "guard_violation";
    case FailureClass::kRuntimeError: return "runtime_error";
    case FailureClass::kTimeout: return "timeout";
    case FailureClass::kEmptyResult: return "empty_result";
    case FailureClass::kBadArguments: return "bad_arguments";
  }
  return "none";
}

}  // namespace quarry
