// SharedEngine: the one opened engine as concurrent MCP tool calls use it. Queries take turns
// (a DuckDB or SQLite connection serves one query at a time); waiting for a turn ends on the
// caller's stop request, so a cancelled call never waits behind a long query.
#include "quarry/mcp/mcp_internal.h"

namespace quarry::mcp {

SharedEngine::SharedEngine(engine::Engine& inner) : inner_(inner) {
  snapshots_.push_back({inner.cards_version(), inner.describe(), inner.sources()});
}

const SharedEngine::Snapshot& SharedEngine::Latest() const {
  std::lock_guard lock(mu_);
  return snapshots_.back();
}

const std::vector<engine::TableCard>& SharedEngine::describe() const { return Latest().cards; }
const std::vector<engine::Source>& SharedEngine::sources() const { return Latest().sources; }
uint64_t SharedEngine::cards_version() const { return Latest().version; }

engine::QueryOutcome SharedEngine::Query(std::string_view sql, const engine::Limits& limits) {
  {
    std::unique_lock lock(mu_);
    std::stop_token stop = limits.stop;
    if (!free_.wait(lock, stop, [this] { return !busy_; })) {
      return std::unexpected(engine::QueryFailure{
          FailureClass::kRuntimeError, "",
          "the query was cancelled while it waited for another query to finish",
          Error::Code::kCancelled});
    }
    busy_ = true;
  }
  engine::QueryOutcome outcome = inner_.Query(sql, limits);
  {
    std::lock_guard lock(mu_);
    // Still this query's turn, so the inner engine's cards are not changing under the copy.
    if (const uint64_t v = inner_.cards_version(); v != snapshots_.back().version) {
      snapshots_.push_back({v, inner_.describe(), inner_.sources()});
    }
    busy_ = false;
  }
  free_.notify_one();
  return outcome;
}

}  // namespace quarry::mcp
