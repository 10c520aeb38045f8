// SharedEngine (engine.h): queries take turns on the one inner engine.
#include <stop_token>

#include "quarry/engine/engine.h"

namespace quarry::engine {

SharedEngine::SharedEngine(Engine& inner) : inner_(inner) {
  snapshots_.push_back({inner.cards_version(), inner.describe(), inner.sources()});
}

const SharedEngine::Snapshot& SharedEngine::Latest() const {
  std::lock_guard lock(mu_);
  return snapshots_.back();
}

const std::vector<TableCard>& SharedEngine::describe() const { return Latest().cards; }
const std::vector<Source>& SharedEngine::sources() const { return Latest().sources; }
uint64_t SharedEngine::cards_version() const { return Latest().version; }

QueryOutcome SharedEngine::Query(std::string_view sql, const Limits& limits) {
  {
    std::unique_lock lock(mu_);
    std::stop_token stop = limits.stop;
    if (!free_.wait(lock, stop, [this] { return !busy_; })) {
      return std::unexpected(
          QueryFailure{FailureClass::kRuntimeError, "",
                       "the query was cancelled while it waited for another query to finish",
                       Error::Code::kCancelled});
    }
    busy_ = true;
  }
  QueryOutcome outcome = inner_.Query(sql, limits);
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

}  // namespace quarry::engine
