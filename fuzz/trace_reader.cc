// libFuzzer target: a trace.json from anywhere (one a colleague sent, one edited by hand), read as
// `quarry trace` and `quarry view` read it: quarry::ParseJson, trace::FromJson, then the summary
// and the HTML page. A trace that reads back writes out as JSON that reads again.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "quarry/common/json.h"
#include "quarry/trace/trace.h"

namespace trace = quarry::trace;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  const auto doc = quarry::ParseJson(text);
  if (doc.is_discarded()) return 0;
  const auto read = trace::FromJson(doc);
  if (!read) {
    if (read.error().message.empty()) std::abort();
    return 0;
  }
  (void)trace::Summary(*read);
  (void)trace::TotalsLine(*read);
  // No artifact directory: a chart the trace names is looked up where it says, and missing
  // ones are noted on the page.
  (void)trace::RenderHtml(*read, "");
  const auto again = trace::FromJson(trace::ToJson(*read));
  if (!again) std::abort();
  for (const auto& step : read->steps) (void)trace::ToJson(step);
  return 0;
}
