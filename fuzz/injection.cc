// libFuzzer target: any bytes as a tool observation or schema text (quarry's own or the user's
// data) through the injection detector and the marking the loop applies. Nothing may throw or
// crash; every excerpt stays within kInjectionExcerptBytes and, for valid UTF-8 input, is valid
// UTF-8; marking appends the reminder exactly when something was found.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>

#include "quarry/agent/injection_internal.h"

namespace {

bool ValidUtf8(std::string_view s) {
  for (size_t i = 0; i < s.size();) {
    const unsigned char c = static_cast<unsigned char>(s[i]);
    const size_t n = c < 0x80 ? 1 : (c >> 5) == 6 ? 2 : (c >> 4) == 14 ? 3 : (c >> 3) == 30 ? 4 : 0;
    if (n == 0 || i + n > s.size()) return false;
    for (size_t k = 1; k < n; ++k) {
      if ((static_cast<unsigned char>(s[i + k]) & 0xC0) != 0x80) return false;
    }
    i += n;
  }
  return true;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  const bool valid = ValidUtf8(text);
  const auto found = quarry::agent::FindInjection(text);
  for (const auto& m : found) {
    if (m.excerpt.size() > quarry::agent::kInjectionExcerptBytes) std::abort();
    if (valid && !ValidUtf8(m.excerpt)) std::abort();
    if (m.offset > size) std::abort();
  }
  std::string marked(text);
  std::vector<quarry::trace::InjectionRecord> records;
  const bool any = quarry::agent::MarkInjection(marked, 1, "observation", records);
  if (any != !found.empty() || records.size() != found.size()) std::abort();
  if (any == (marked.size() == size)) std::abort();
  return 0;
}
