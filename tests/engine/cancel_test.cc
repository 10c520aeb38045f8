// Limits::stop on both engines: a runaway query stops within about a second of the request,
// fails with Error::Code::kCancelled (not a timeout), and the engine serves the next query.
#include <gtest/gtest.h>

#include <chrono>
#include <iostream>
#include <stop_token>
#include <thread>

#include "quarry/engine/engine.h"
#include "support/test_support.h"

namespace quarry::engine {
namespace {

using Clock = std::chrono::steady_clock;
using quarry::testing::SourceDir;
using quarry::testing::TempDir;

// Never ends on its own: each step adds a row, forever.
constexpr const char* kRunaway =
    "WITH RECURSIVE r(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM r) SELECT count(*) FROM r";

struct Stopped {
  QueryOutcome outcome;
  int64_t stop_to_return_ms = 0;  // from the stop request to Query's return
};

// Runs `sql` with a 60 s timeout and requests a stop after `after_ms` from another thread.
Stopped RunAndStop(Engine& engine, const std::string& sql, int after_ms) {
  std::stop_source source;
  Clock::time_point requested;
  std::jthread stopper([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(after_ms));
    requested = Clock::now();
    source.request_stop();
  });
  Stopped s{engine.Query(sql, Limits{60000, 200, source.get_token()}), 0};
  const auto returned = Clock::now();
  stopper.join();
  s.stop_to_return_ms =
      std::chrono::duration_cast<std::chrono::milliseconds>(returned - requested).count();
  return s;
}

class CancelTest : public ::testing::Test {
 protected:
  void SetUp() override {
    csv_ = tmp_.Write("sales.csv", "region,revenue\nNorth,10.5\nSouth,20\n");
    sqlite_ = SourceDir() / "data" / "chinook.sqlite";
  }
  void ExpectCancelledThenUsable(Engine& engine) {
    const Stopped s = RunAndStop(engine, kRunaway, 400);
    ASSERT_FALSE(s.outcome.has_value()) << "the runaway query returned rows";
    EXPECT_EQ(s.outcome.error().code, Error::Code::kCancelled) << s.outcome.error().message;
    EXPECT_NE(s.outcome.error().message.find("cancelled"), std::string::npos)
        << s.outcome.error().message;
    EXPECT_LT(s.stop_to_return_ms, 1000) << "the query ran on after the stop request";
    EXPECT_GE(s.stop_to_return_ms, 0) << "it returned before the stop was requested";
    std::cerr << DialectName(engine.dialect()) << ": the stop request to Query's return took "
              << s.stop_to_return_ms << " ms\n";

    auto next = engine.Query("SELECT 6 * 7 AS answer", Limits{});
    ASSERT_TRUE(next.has_value()) << next.error().message;
    EXPECT_EQ(next->rows.at(0).at(0), "42");
  }
  TempDir tmp_;
  std::filesystem::path csv_, sqlite_;
};

TEST_F(CancelTest, DuckDbStopsARunawayQueryWithinASecondAndServesTheNext) {
  auto duck = Open({csv_});
  ASSERT_TRUE(duck.has_value()) << duck.error().message;
  ExpectCancelledThenUsable(**duck);
  // A second stop on the same engine works as the first did.
  ExpectCancelledThenUsable(**duck);
}

TEST_F(CancelTest, SqliteStopsARunawayQueryWithinASecondAndServesTheNext) {
  auto lite = Open({sqlite_});
  ASSERT_TRUE(lite.has_value()) << lite.error().message;
  ExpectCancelledThenUsable(**lite);
}

TEST_F(CancelTest, AStopRequestedBeforeTheQueryRunsNothing) {
  std::stop_source source;
  source.request_stop();
  for (const auto& path : {csv_, sqlite_}) {
    auto engine = Open({path});
    ASSERT_TRUE(engine.has_value()) << engine.error().message;
    const auto started = Clock::now();
    auto r = (*engine)->Query(kRunaway, Limits{60000, 200, source.get_token()});
    ASSERT_FALSE(r.has_value()) << path;
    EXPECT_EQ(r.error().code, Error::Code::kCancelled) << path;
    EXPECT_LT(Clock::now() - started, std::chrono::milliseconds(500)) << path;
  }
}

TEST_F(CancelTest, ATimeoutIsStillATimeoutWhenAStopCouldComeButDoesNot) {
  std::stop_source source;  // never requested
  auto duck = Open({csv_});
  ASSERT_TRUE(duck.has_value());
  auto r = (*duck)->Query(kRunaway, Limits{300, 200, source.get_token()});
  ASSERT_FALSE(r.has_value());
  EXPECT_EQ(r.error().failure_class, FailureClass::kTimeout) << r.error().message;
  EXPECT_EQ(r.error().code, Error::Code::kData);
}

}  // namespace
}  // namespace quarry::engine
