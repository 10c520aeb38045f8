// The runner's frames (frames_internal.h): length-prefixed JSON, and the status names it sends.
#include "quarry/sandbox/frames_internal.h"

#include "quarry/common/json.h"
#include "quarry/common/json_fields.h"
#include "quarry/common/names.h"

namespace quarry::sandbox::internal {

using json = nlohmann::ordered_json;

namespace {

constexpr NamePair<FrameStatus> kFrameStatusNames[] = {
    {FrameStatus::kOk, "ok"},
    {FrameStatus::kSyntaxError, "syntax_error"},
    {FrameStatus::kGuardViolation, "guard_violation"},
    {FrameStatus::kRuntimeError, "runtime_error"},
    {FrameStatus::kInternalError, "internal_error"},
};

}  // namespace

std::string Frame(const json& message) {
  const std::string body = message.dump(-1, ' ', false, json::error_handler_t::replace);
  return std::to_string(body.size()) + "\n" + body;
}

std::optional<json> TakeFrame(std::string& buffer, bool& broken) {
  const size_t nl = buffer.find('\n');
  if (nl == std::string::npos) {
    broken = buffer.size() > 20;
    return std::nullopt;
  }
  const std::string digits = buffer.substr(0, nl);
  if (digits.empty() || digits.size() > 9 ||
      digits.find_first_not_of("0123456789") != std::string::npos) {
    broken = true;
    return std::nullopt;
  }
  const size_t size = std::stoul(digits);
  if (size > kMaxFrameBytes) {
    broken = true;
    return std::nullopt;
  }
  if (buffer.size() < nl + 1 + size) return std::nullopt;
  json message = ParseJson(std::string_view(buffer).substr(nl + 1, size));
  buffer.erase(0, nl + 1 + size);
  if (!message.is_object()) {
    broken = true;
    return std::nullopt;
  }
  return message;
}

std::vector<std::string> Strings(const json& message, const char* key) {
  std::vector<std::string> out;
  if (!message.is_object() || !message.contains(key) || !message[key].is_array()) return out;
  for (const auto& s : message[key]) {
    if (s.is_string()) out.push_back(s.get<std::string>());
  }
  return out;
}

FrameStatus StatusOf(const json& frame) {
  return ValueOf(kFrameStatusNames, JsonString(frame, "status"))
      .value_or(FrameStatus::kInternalError);
}

}  // namespace quarry::sandbox::internal
