// Server-to-client requests in process: elicitation/create is written as a request with the
// model's question and choices, and the response the reader delivers by id decides the reply;
// a stop, the end of input, a decline or a malformed answer all end the wait with no reply.
#include <chrono>
#include <mutex>
#include <stop_token>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "quarry/mcp/mcp_internal.h"

namespace quarry::mcp {
namespace {

using std::chrono::milliseconds;

// Writes go to a list; a responder thread answers each request the way the test says.
class FakeClient {
 public:
  explicit FakeClient(std::function<std::optional<json>(const json& request)> answer)
      : answer_(std::move(answer)), requests_([this](const json& m) {
          std::lock_guard lock(mu_);
          written_.push_back(m);
          if (m.contains("method") && m["method"] == "elicitation/create") {
            if (auto reply = answer_(m)) {
              json response = *reply;
              response["jsonrpc"] = "2.0";
              response["id"] = m["id"];
              threads_.emplace_back([this, response] {
                std::this_thread::sleep_for(milliseconds(20));
                delivered_ = requests_.Deliver(response);
              });
            }
          }
          return true;
        }) {}
  ~FakeClient() {
    for (auto& t : threads_) t.join();
  }
  ClientRequests& requests() { return requests_; }
  std::vector<json> written() {
    std::lock_guard lock(mu_);
    return written_;
  }
  // Whether the responder's Deliver took the response. Elicit may return as soon as Deliver
  // hands the response over, before the responder stores what Deliver returned: wait for it.
  bool delivered() {
    std::vector<std::thread> threads;
    {
      std::lock_guard lock(mu_);
      threads.swap(threads_);
    }
    for (auto& t : threads) t.join();
    return delivered_;
  }

 private:
  std::function<std::optional<json>(const json&)> answer_;
  std::mutex mu_;
  std::vector<json> written_;
  std::vector<std::thread> threads_;
  std::atomic<bool> delivered_ = false;
  ClientRequests requests_;
};

json Accept(const std::string& reply) {
  return {{"result", {{"action", "accept"}, {"content", {{"reply", reply}}}}}};
}

TEST(ElicitTest, AnAcceptedReplyComesBackAndTheChoicesAreTheSchemasEnum) {
  FakeClient client([](const json&) { return Accept("by revenue"); });
  std::stop_source stop;
  const auto reply =
      Elicit(client.requests(),
             {"Top customer by what?", {"by revenue", "by number of orders"}, "top customer"},
             stop.get_token());
  ASSERT_TRUE(reply.has_value());
  EXPECT_EQ(*reply, "by revenue");
  const auto written = client.written();
  ASSERT_EQ(written.size(), 1u);
  const json& params = written[0]["params"];
  EXPECT_EQ(params["message"], "quarry's analyst asks: Top customer by what?");
  EXPECT_EQ(params["requestedSchema"]["type"], "object");
  EXPECT_EQ(params["requestedSchema"]["properties"]["reply"]["enum"],
            json::parse(R"(["by revenue", "by number of orders"])"));
  EXPECT_EQ(params["requestedSchema"]["required"], json::parse(R"(["reply"])"));
  EXPECT_TRUE(written[0]["id"].get<std::string>().starts_with("quarry-"));
  EXPECT_TRUE(client.delivered());
}

TEST(ElicitTest, DeclineCancelErrorsAndMalformedContentGiveNoReply) {
  const std::vector<json> answers = {
      {{"result", {{"action", "decline"}}}},
      {{"result", {{"action", "cancel"}}}},
      {{"error", {{"code", -32601}, {"message", "Method not found"}}}},
      {{"result", {{"action", "accept"}, {"content", {{"reply", 42}}}}}},
      {{"result", {{"action", "accept"}}}},
      Accept("   "),
      {{"result", "accept"}},
  };
  for (const json& answer : answers) {
    FakeClient client([&](const json&) { return answer; });
    std::stop_source stop;
    EXPECT_FALSE(Elicit(client.requests(), {"Which artist?", {}, ""}, stop.get_token()).has_value())
        << answer.dump();
    // Without choices the reply is free text.
    EXPECT_FALSE(
        client.written()[0]["params"]["requestedSchema"]["properties"]["reply"].contains("enum"));
  }
}

TEST(ElicitTest, AStopEndsTheWaitAndCancelsTheRequestAtTheClient) {
  FakeClient client([](const json&) { return std::nullopt; });  // never answers
  std::stop_source stop;
  std::thread stopper([&] {
    std::this_thread::sleep_for(milliseconds(100));
    stop.request_stop();
  });
  const auto started = std::chrono::steady_clock::now();
  EXPECT_FALSE(Elicit(client.requests(), {"Which artist?", {}, ""}, stop.get_token()).has_value());
  stopper.join();
  EXPECT_LT(std::chrono::steady_clock::now() - started, std::chrono::seconds(10));
  const auto written = client.written();
  ASSERT_EQ(written.size(), 2u);
  EXPECT_EQ(written[1]["method"], "notifications/cancelled");
  EXPECT_EQ(written[1]["params"]["requestId"], written[0]["id"]);
}

TEST(ElicitTest, TheEndOfInputEndsEveryWaitAndLaterRequestsAreNotSent) {
  FakeClient client([](const json&) { return std::nullopt; });
  std::stop_source stop;
  std::thread closer([&] {
    std::this_thread::sleep_for(milliseconds(100));
    client.requests().Close();
  });
  EXPECT_FALSE(Elicit(client.requests(), {"Which artist?", {}, ""}, stop.get_token()).has_value());
  closer.join();
  EXPECT_FALSE(Elicit(client.requests(), {"Which year?", {}, ""}, stop.get_token()).has_value());
  EXPECT_EQ(client.written().size(), 1u) << "nothing is sent once input has ended";
}

TEST(ElicitTest, AResponseToNoPendingRequestIsNotDelivered) {
  FakeClient client([](const json&) { return std::nullopt; });
  EXPECT_FALSE(client.requests().Deliver({{"jsonrpc", "2.0"}, {"id", "quarry-9"}, {"result", {}}}));
  EXPECT_FALSE(client.requests().Deliver({{"jsonrpc", "2.0"}, {"id", 1}, {"result", {}}}));
}

}  // namespace
}  // namespace quarry::mcp
