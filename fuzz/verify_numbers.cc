// libFuzzer target: the verify gate's number extraction and the gate itself on any bytes. The
// first line is the answer (the model's text); the other lines are what the model was shown:
// each a cell of a one-column result, and all of them as a script's stdout. Every number the
// scanner finds lies within the text, and the words around it can be read.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "quarry/agent/verify.h"
#include "quarry/agent/verify/internal.h"

namespace agent = quarry::agent;
namespace internal = quarry::agent::internal;

namespace {

void ReadAround(std::string_view text) {
  for (const bool words : {true, false}) {
    for (const internal::NumberToken& token : internal::Scan(text, words)) {
      if (token.begin > token.end || token.end > text.size()) std::abort();
      std::string word;
      bool marked = false;
      internal::DirectionAt(text, token, &word);
      internal::ReferenceWord(text, token, &marked);
      internal::BoundAt(text, token);
      internal::Hedged(text, token);
      internal::IsCount(text, token);
    }
  }
  internal::Normalise(text);
  internal::NameWords(text);
  internal::CountWords(text);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view input(reinterpret_cast<const char*>(data), size);
  const size_t newline = input.find('\n');
  const std::string_view answer = input.substr(0, newline);
  const std::string_view shown =
      newline == std::string_view::npos ? std::string_view() : input.substr(newline + 1);
  ReadAround(answer);

  std::vector<std::vector<std::optional<std::string>>> rows;
  for (size_t begin = 0; begin < shown.size();) {
    const size_t end = std::min(shown.find('\n', begin), shown.size());
    rows.push_back({std::string(shown.substr(begin, end - begin))});
    begin = end + 1;
  }
  agent::Evidence evidence;
  evidence.AddResult({1, "run_sql", "SELECT value FROM t", static_cast<int64_t>(rows.size())},
                     {"value"}, rows);
  evidence.AddText({2, "run_python", "print(x)", -1}, shown);
  const std::vector<std::string> supporting = agent::ExtractNumbers(answer);
  const agent::VerifyReport report = agent::Verify(answer, supporting, evidence, "How many?");
  (void)report.grounded();
  (void)report.unsupported();
  return 0;
}
