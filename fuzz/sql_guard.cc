// libFuzzer target: the SQL guard's text layer (engine::CheckQueryText) on any bytes as the
// model's SQL, in every dialect. A refusal must say why.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>
#include <vector>

#include "quarry/engine/engine.h"

using quarry::engine::CheckQueryText;
using quarry::engine::Dialect;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view sql(reinterpret_cast<const char*>(data), size);
  static const std::vector<std::string> tables = {"sales", "customers", "\"odd \"\"name\""};
  for (const Dialect dialect : {Dialect::kDuckDB, Dialect::kSQLite, Dialect::kPostgreSQL,
                                Dialect::kMySQL, Dialect::kClickHouse}) {
    const auto failure = CheckQueryText(sql, dialect, tables);
    if (failure && failure->message.empty()) std::abort();
  }
  return 0;
}
