// The frames between the kernel (kernel.cc) and its runner (runner.py) on the socket pair and
// pipes: "<length>\n<JSON object>", at most 16 MB each. Internal to the sandbox.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace quarry::sandbox::internal {

// The largest frame body, in bytes.
inline constexpr size_t kMaxFrameBytes = 16 << 20;

// `message` as one frame; invalid UTF-8 in it is replaced, never thrown on.
std::string Frame(const nlohmann::ordered_json& message);

// Takes one complete frame off the front of `buffer`. nullopt: incomplete so far. A frame that
// breaks the protocol (no length line, a length past 16 MB, a body that is no JSON object)
// sets `broken`.
std::optional<nlohmann::ordered_json> TakeFrame(std::string& buffer, bool& broken);

// The strings of the array at `key`; empty when there is none (other elements skipped).
std::vector<std::string> Strings(const nlohmann::ordered_json& message, const char* key);

// A runner frame's "status" (runner.py): "ok", a failure class's name, or "internal_error"
// when the runner itself broke. A status no entry names reads as kInternalError.
enum class FrameStatus { kOk, kSyntaxError, kGuardViolation, kRuntimeError, kInternalError };
FrameStatus StatusOf(const nlohmann::ordered_json& frame);

}  // namespace quarry::sandbox::internal
