// Options::stop against real sandboxed children: a Python that never ends is killed within
// about a second of the stop request, one-shot and in the warm kernel, whose process goes with
// it; a kernel whose run was stopped starts no new Python.
#include <gtest/gtest.h>
#include <signal.h>

#include <chrono>
#include <stop_token>
#include <thread>

#include "quarry/sandbox/kernel.h"
#include "quarry/sandbox/sandbox.h"
#include "support/test_support.h"

namespace quarry::sandbox {
namespace {

using Clock = std::chrono::steady_clock;
constexpr const char* kForever = "while True:\n    pass\n";

class SandboxCancelTest : public ::testing::Test {
 protected:
  void SetUp() override {
    QUARRY_SKIP_WITHOUT_SANDBOX(NamespaceUnavailableReason());
    options_.workdir = dir_.path() / "workdir";
    options_.timeout_ms = 60000;
    options_.stop = source_.get_token();
  }
  // Requests the stop `after_ms` from now, on another thread; returns when it was requested.
  void StopAfter(int after_ms) {
    stopper_ = std::jthread([this, after_ms] {
      std::this_thread::sleep_for(std::chrono::milliseconds(after_ms));
      requested_ = Clock::now();
      source_.request_stop();
    });
  }
  int64_t MsSinceStop() {
    stopper_.join();
    return std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - requested_).count();
  }
  quarry::testing::TempDir dir_;
  std::stop_source source_;
  Options options_;
  std::jthread stopper_;
  Clock::time_point requested_;
};

TEST_F(SandboxCancelTest, AOneShotPythonIsKilledWithinASecond) {
  StopAfter(1000);
  auto r = RunPython(kForever, options_);
  const int64_t ms = MsSinceStop();
  ASSERT_FALSE(r.has_value()) << "the endless loop returned a result";
  EXPECT_EQ(r.error().code, Error::Code::kCancelled) << r.error().message;
  EXPECT_NE(r.error().message.find("cancelled"), std::string::npos);
  EXPECT_LT(ms, 1000);
}

TEST_F(SandboxCancelTest, AKernelCallIsKilledWithItsProcessAndLaterCallsRunNothing) {
  Kernel k(options_);
  ASSERT_TRUE(k.Start().has_value());
  auto first = k.Run("x = 1\nprint(x)", std::nullopt);
  ASSERT_TRUE(first.has_value()) << first.error().message;
  EXPECT_EQ(first->stdout_text, "1\n");
  const auto pid = k.pid();
  ASSERT_TRUE(pid.has_value());

  StopAfter(1000);
  auto r = k.Run(kForever, std::nullopt);
  const int64_t ms = MsSinceStop();
  ASSERT_FALSE(r.has_value());
  EXPECT_EQ(r.error().code, Error::Code::kCancelled) << r.error().message;
  EXPECT_LT(ms, 1000);
  EXPECT_FALSE(k.pid().has_value()) << "the killed kernel is still there";
  EXPECT_NE(kill(*pid, 0), 0) << "the kernel's process outlived the cancel";

  // The run is over: a later call is cancelled at once, without starting a Python.
  const auto started = Clock::now();
  auto after = k.Run("print(2)", std::nullopt);
  ASSERT_FALSE(after.has_value());
  EXPECT_EQ(after.error().code, Error::Code::kCancelled);
  EXPECT_LT(Clock::now() - started, std::chrono::milliseconds(1000));
  EXPECT_FALSE(k.pid().has_value());
}

}  // namespace
}  // namespace quarry::sandbox
