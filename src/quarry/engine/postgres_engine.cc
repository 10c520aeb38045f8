// PostgreSQL through libpq. Placeholder: the engine lands with issue 14's engine work.
#include <libpq-fe.h>

#include "quarry/engine/engine_internal.h"

namespace quarry::engine::internal {

std::string RedactServerSpec(std::string_view spec) {
  return std::string(spec.substr(0, spec.find("://") == std::string_view::npos ? 0 : spec.find("://") + 3)) + "…";
}

Result<std::unique_ptr<Engine>> OpenPostgres(const std::string& spec, const OpenOptions&) {
  return Fail(Error::Code::kData, "cannot open " + RedactServerSpec(spec) + ": not built yet (libpq " +
                                      std::to_string(PQlibVersion()) + ")");
}

QueryOutcome QueryPostgresPastTextGuard(Engine&, std::string_view, const Limits&) {
  return std::unexpected(QueryFailure{FailureClass::kRuntimeError, "", "not a PostgreSQL engine"});
}

}  // namespace quarry::engine::internal
