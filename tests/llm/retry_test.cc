// The retry arithmetic on its own: which replies are retried and how long the client waits.
#include <gtest/gtest.h>

#include <random>

#include "quarry/llm/http_internal.h"

namespace quarry::llm::internal {
namespace {

TEST(RetryTest, OnlyRateLimitsAndServerErrorsAreRetryable) {
  for (long status : {429L, 500L, 502L, 503L, 504L}) EXPECT_TRUE(IsRetryableStatus(status));
  for (long status : {200L, 400L, 401L, 402L, 403L, 404L, 408L, 422L}) {
    EXPECT_FALSE(IsRetryableStatus(status)) << status;
  }
}

TEST(RetryTest, RetryAfterSecondsAndMilliseconds) {
  EXPECT_EQ(ServerRetryDelayMs("2", "", 0), 2000);
  EXPECT_EQ(ServerRetryDelayMs(" 0 ", "", 0), 0);
  EXPECT_EQ(ServerRetryDelayMs("2", "1500", 0), 1500);  // the finer header wins
  EXPECT_EQ(ServerRetryDelayMs("", "", 0), std::nullopt);
  EXPECT_EQ(ServerRetryDelayMs("soon", "", 0), std::nullopt);
  EXPECT_EQ(ServerRetryDelayMs("-5", "", 0), std::nullopt);
}

TEST(RetryTest, RetryAfterHttpDate) {
  const char* date = "Wed, 21 Oct 2015 07:28:00 GMT";
  std::time_t when = curl_getdate(date, nullptr);
  ASSERT_NE(when, -1);
  EXPECT_EQ(ServerRetryDelayMs(date, "", when - 3), 3000);
  EXPECT_EQ(ServerRetryDelayMs(date, "", when + 60), 0);  // already past: retry now
}

TEST(RetryTest, FullJitterStaysUnderTheDoublingCeiling) {
  RetryPolicy policy{6, 500, 4000};
  std::mt19937_64 rng(1);
  for (int trial = 0; trial < 200; ++trial) {
    EXPECT_LE(BackoffDelayMs(policy, 1, rng), 500);
    EXPECT_LE(BackoffDelayMs(policy, 2, rng), 1000);
    EXPECT_LE(BackoffDelayMs(policy, 3, rng), 2000);
    EXPECT_LE(BackoffDelayMs(policy, 10, rng), 4000);
    EXPECT_GE(BackoffDelayMs(policy, 10, rng), 0);
  }
  // Jitter actually spreads the waits instead of sending every client back at once.
  int64_t first = BackoffDelayMs(policy, 5, rng);
  bool varied = false;
  for (int trial = 0; trial < 20 && !varied; ++trial)
    varied = BackoffDelayMs(policy, 5, rng) != first;
  EXPECT_TRUE(varied);
}

}  // namespace
}  // namespace quarry::llm::internal
