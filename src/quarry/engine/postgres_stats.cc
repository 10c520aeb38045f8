// PostgreSQL card statistics from the planner's own (pg_class.reltuples, pg_stats), so opening
// a database with huge tables reads catalogs, not tables.
#include <cstdlib>

#include "quarry/engine/postgres_internal.h"

namespace quarry::engine::internal {

Result<void> ProfilePgCards(PostgresEngine&, size_t count, std::vector<TableCard>& cards,
                            const std::function<PgRelationFacts(size_t)>& facts) {
  for (size_t i = 0; i < count; ++i) {
    const PgRelationFacts f = facts(i);
    cards[i].row_count = f.reltuples < 0 ? 0 : f.reltuples;
  }
  return {};
}

}  // namespace quarry::engine::internal
