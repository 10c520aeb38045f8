// libFuzzer target: the bounded JSON parse every input from outside goes through
// (quarry::ParseJson). What it accepts is within the depth bound and survives a dump and a
// second parse unchanged; what it refuses says why.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>

#include "quarry/common/json.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  std::string problem;
  const auto doc = quarry::ParseJson(text, &problem);
  if (doc.is_discarded()) {
    if (problem.empty()) std::abort();
    return 0;
  }
  if (quarry::JsonDepth(text) > quarry::kMaxJsonDepth) std::abort();
  const std::string dumped =
      doc.dump(-1, ' ', false, nlohmann::ordered_json::error_handler_t::replace);
  std::string again_problem;
  const auto again = quarry::ParseJson(dumped, &again_problem);
  if (again.is_discarded() || again != doc) std::abort();
  // The unordered form, as some readers use it.
  const auto plain = quarry::ParseJson<nlohmann::json>(text);
  if (plain.is_discarded()) std::abort();
  return 0;
}
