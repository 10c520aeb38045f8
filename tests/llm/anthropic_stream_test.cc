// The Anthropic client's streamed replies against the real stand-in on 127.0.0.1: the Turn
// assembled from the events equals the whole reply's, however the bytes are cut; the pieces
// reach on_stream in order; error events, dropped connections and streams without
// message_stop end as the client's contract says.
#include <gtest/gtest.h>

#include <chrono>
#include <string>
#include <vector>

#include "quarry/llm/llm.h"
#include "support/anthropic_replies.h"
#include "support/provider_server.h"

namespace quarry::llm {
namespace {

using quarry::testing::Joined;
using quarry::testing::MessagesBody;
using quarry::testing::MessagesErrorBody;
using quarry::testing::MessagesErrorEvent;
using quarry::testing::MessagesEvents;
using quarry::testing::ProviderServer;
using quarry::testing::ScriptedMessage;
using quarry::testing::ScriptedResponse;
using quarry::testing::TextBlock;
using quarry::testing::ToolUseBlock;

constexpr const char* kKey = "sk-ant-test-0123456789abcdefSECRET";

::testing::AssertionResult Contains(const std::string& text, const std::string& part) {
  if (text.find(part) != std::string::npos) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << "\"" << text << "\" does not contain \"" << part << "\"";
}

// Everything a Turn says about the reply (not how it travelled: attempts,
// latency, streamed).
::testing::AssertionResult SameReply(const Turn& a, const Turn& b) {
  auto fail = [](const std::string& what) { return ::testing::AssertionFailure() << what; };
  if (a.content != b.content)
    return fail("content: \"" + a.content + "\" vs \"" + b.content + "\"");
  if (a.tool_calls.size() != b.tool_calls.size()) return fail("tool call count");
  for (size_t i = 0; i < a.tool_calls.size(); ++i) {
    const ToolCall& x = a.tool_calls[i];
    const ToolCall& y = b.tool_calls[i];
    if (x.id != y.id || x.name != y.name || x.arguments_json != y.arguments_json) {
      return fail("tool call " + std::to_string(i) + ": " + x.arguments_json + " vs " +
                  y.arguments_json);
    }
  }
  if (a.finish_reason != b.finish_reason) return fail("finish_reason");
  if (a.usage.input_tokens != b.usage.input_tokens ||
      a.usage.output_tokens != b.usage.output_tokens ||
      a.usage.cached_tokens != b.usage.cached_tokens ||
      a.usage.cache_write_tokens != b.usage.cache_write_tokens) {
    return fail("usage");
  }
  if (a.cost_usd != b.cost_usd || a.cost_known != b.cost_known ||
      a.cost_reported != b.cost_reported) {
    return fail("cost");
  }
  return ::testing::AssertionSuccess();
}

Request Question() {
  Request request;
  request.messages = {{Role::kSystem, "You are a data analyst.", {}, ""},
                      {Role::kUser, "Rows per region?", {}, ""}};
  return request;
}

// Text with a multi-byte character, and two parallel tool calls.
ScriptedMessage Reply() {
  ScriptedMessage reply;
  reply.content = {
      TextBlock("Checking the régions table first."),
      {"", "toolu_01A", "run_sql", R"({"sql": "SELECT region, count(*) FROM sales GROUP BY 1"})"},
      ToolUseBlock("toolu_01B", "describe_table", R"({"table": "sales"})")};
  reply.input_tokens = 120;
  reply.cache_creation_input_tokens = 300;
  reply.cache_read_input_tokens = 2000;
  reply.output_tokens = 42;
  return reply;
}

ScriptedResponse Streamed(std::vector<std::string> chunks) {
  ScriptedResponse response;
  response.chunks = std::move(chunks);
  return response;
}

class AnthropicStreamTest : public ::testing::Test {
 protected:
  ClientConfig Config() {
    ClientConfig config;
    config.provider = Provider::kAnthropic;
    config.base_url = server_.base_url();
    config.model = "claude-sonnet-4-5";
    config.api_key = kKey;
    config.request_timeout_ms = 10000;
    config.connect_timeout_ms = 5000;
    config.retry = RetryPolicy{4, 500, 30000};
    config.sleep = [this](std::chrono::milliseconds d) { sleeps_ms_.push_back(d.count()); };
    config.jitter_seed = 7;
    config.stream = true;
    config.on_stream = [this](const StreamDelta& delta) { deltas_.push_back(delta); };
    return config;
  }

  // The Turn of the same reply read whole (no streaming).
  Turn WholeTurn() {
    server_.Enqueue({200, {}, MessagesBody(Reply())});
    ClientConfig config = Config();
    config.stream = false;
    Result<Turn> turn = MakeAnthropicClient(config)->Complete(Question());
    EXPECT_TRUE(turn) << turn.error().message;
    return turn ? *turn : Turn{};
  }

  ProviderServer server_;
  std::vector<int64_t> sleeps_ms_;
  std::vector<StreamDelta> deltas_;
};

TEST_F(AnthropicStreamTest, StreamedTurnEqualsTheWholeReplysTurn) {
  const Turn whole = WholeTurn();
  EXPECT_FALSE(whole.streamed);
  EXPECT_EQ(whole.tool_calls.size(), 2u);
  EXPECT_EQ(whole.usage.input_tokens, 2420);
  server_.Enqueue(Streamed(MessagesEvents(Reply())));
  Result<Turn> turn = MakeAnthropicClient(Config())->Complete(Question());
  ASSERT_TRUE(turn) << turn.error().message;
  EXPECT_TRUE(turn->streamed);
  EXPECT_EQ(turn->attempts, 1);
  EXPECT_TRUE(SameReply(*turn, whole));
  EXPECT_EQ(turn->tool_calls[0].arguments_json,
            R"({"sql":"SELECT region, count(*) FROM sales GROUP BY 1"})");
  EXPECT_EQ(FinishReasonName(turn->finish_reason), "tool_calls");

  const auto requests = server_.requests();
  ASSERT_EQ(requests.size(), 2u);
  EXPECT_EQ(requests[1].Json()["stream"], true);
  EXPECT_EQ(requests[1].Header("accept"), "text/event-stream");
}

TEST_F(AnthropicStreamTest, DeltasReachOnStreamInOrder) {
  server_.Enqueue(Streamed(MessagesEvents(Reply(), 5)));
  ASSERT_TRUE(MakeAnthropicClient(Config())->Complete(Question()));
  // Text pieces, then per tool: its name, then its argument pieces, tagged with its position.
  std::string text;
  std::vector<std::string> names;
  std::vector<std::string> arguments(2);
  int stage = 0;  // 0: text; 1 + 2 x i: tool i
  for (const StreamDelta& delta : deltas_) {
    switch (delta.kind) {
      case StreamDelta::Kind::kText:
        EXPECT_EQ(stage, 0);
        text += delta.text;
        EXPECT_LE(delta.text.size(), 6u);  // as sent: 5 bytes, or 6 to keep "é" whole
        break;
      case StreamDelta::Kind::kToolCall:
        EXPECT_EQ(delta.index, static_cast<int>(names.size()));
        names.push_back(delta.text);
        stage = 1 + 2 * delta.index;
        break;
      case StreamDelta::Kind::kToolArguments:
        EXPECT_EQ(stage, 1 + 2 * delta.index);
        ASSERT_LT(delta.index, 2);
        arguments[delta.index] += delta.text;
        break;
    }
  }
  EXPECT_EQ(text, "Checking the régions table first.");
  EXPECT_EQ(names, (std::vector<std::string>{"run_sql", "describe_table"}));
  EXPECT_EQ(arguments[0], R"({"sql": "SELECT region, count(*) FROM sales GROUP BY 1"})");
  EXPECT_EQ(arguments[1], R"({"table": "sales"})");
  EXPECT_GT(deltas_.size(), 10u);
}

TEST_F(AnthropicStreamTest, AStreamCutAtEveryByteGivesTheSameTurn) {
  const Turn whole = WholeTurn();
  const std::string stream = Joined(MessagesEvents(Reply()));
  auto client = MakeAnthropicClient(Config());
  for (size_t cut = 1; cut < stream.size(); ++cut) {
    server_.Enqueue(Streamed({stream.substr(0, cut), stream.substr(cut)}));
    Result<Turn> turn = client->Complete(Question());
    ASSERT_TRUE(turn) << "cut at byte " << cut << ": " << turn.error().message;
    ASSERT_TRUE(SameReply(*turn, whole)) << "cut at byte " << cut;
  }
}

TEST_F(AnthropicStreamTest, OneBytePerChunkGivesTheSameTurn) {
  const Turn whole = WholeTurn();
  const std::string stream = Joined(MessagesEvents(Reply()));
  std::vector<std::string> bytes;
  for (char c : stream) bytes.emplace_back(1, c);
  server_.Enqueue(Streamed(bytes));
  Result<Turn> turn = MakeAnthropicClient(Config())->Complete(Question());
  ASSERT_TRUE(turn) << turn.error().message;
  EXPECT_TRUE(SameReply(*turn, whole));
  EXPECT_TRUE(turn->streamed);
}

TEST_F(AnthropicStreamTest, AJsonReplyToAStreamRequestIsReadWhole) {
  const Turn whole = WholeTurn();
  server_.Enqueue({200, {}, MessagesBody(Reply())});
  Result<Turn> turn = MakeAnthropicClient(Config())->Complete(Question());
  ASSERT_TRUE(turn) << turn.error().message;
  EXPECT_FALSE(turn->streamed);
  EXPECT_TRUE(SameReply(*turn, whole));
  EXPECT_TRUE(deltas_.empty());
}

TEST_F(AnthropicStreamTest, ErrorEventBeforeAnyPieceIsRetried) {
  std::vector<std::string> events = MessagesEvents(Reply());
  // message_start and ping, then the server gives up.
  server_.Enqueue(
      Streamed({events[0], events[1], MessagesErrorEvent("overloaded_error", "Overloaded")}));
  server_.Enqueue(Streamed(events));
  Result<Turn> turn = MakeAnthropicClient(Config())->Complete(Question());
  ASSERT_TRUE(turn) << turn.error().message;
  EXPECT_EQ(turn->attempts, 2);
  ASSERT_EQ(turn->retried_errors.size(), 1u);
  EXPECT_TRUE(Contains(turn->retried_errors[0],
                       "error event mid-stream: overloaded_error: Overloaded (received: "
                       "message_start, ping, error)"));
  EXPECT_EQ(sleeps_ms_.size(), 1u);
  EXPECT_EQ(turn->tool_calls.size(), 2u);
}

TEST_F(AnthropicStreamTest, ErrorEventAfterPiecesFailsWithoutResending) {
  std::vector<std::string> events = MessagesEvents(Reply());
  // message_start, ping, content_block_start, two text deltas, then the error.
  std::vector<std::string> cut(events.begin(), events.begin() + 5);
  cut.push_back(MessagesErrorEvent("overloaded_error", "Overloaded"));
  server_.Enqueue(Streamed(cut));
  server_.Enqueue(Streamed(events));
  Result<Turn> turn = MakeAnthropicClient(Config())->Complete(Question());
  ASSERT_FALSE(turn);
  EXPECT_EQ(turn.error().code, Error::Code::kModel);
  EXPECT_TRUE(Contains(turn.error().message,
                       "error event mid-stream: overloaded_error: Overloaded (received: "
                       "message_start, ping, content_block_start, content_block_delta x2, "
                       "error); not resent: 2 pieces of the reply had already arrived"));
  EXPECT_EQ(server_.pending(), 1u);
  EXPECT_EQ(deltas_.size(), 2u);
  EXPECT_TRUE(sleeps_ms_.empty());
}

TEST_F(AnthropicStreamTest, NonTransientErrorEventIsNotRetried) {
  server_.Enqueue(Streamed({MessagesErrorEvent("invalid_request_error", "bad request")}));
  server_.Enqueue(Streamed(MessagesEvents(Reply())));
  Result<Turn> turn = MakeAnthropicClient(Config())->Complete(Question());
  ASSERT_FALSE(turn);
  EXPECT_TRUE(Contains(turn.error().message, "invalid_request_error: bad request"));
  EXPECT_EQ(server_.pending(), 1u);
}

TEST_F(AnthropicStreamTest, ConnectionDroppedBeforeAnyByteIsRetried) {
  ScriptedResponse dropped = Streamed(MessagesEvents(Reply()));
  dropped.drop_after_chunks = 0;
  server_.Enqueue(dropped);
  server_.Enqueue(Streamed(MessagesEvents(Reply())));
  Result<Turn> turn = MakeAnthropicClient(Config())->Complete(Question());
  ASSERT_TRUE(turn) << turn.error().message;
  EXPECT_EQ(turn->attempts, 2);
  ASSERT_EQ(turn->retried_errors.size(), 1u);
  EXPECT_TRUE(Contains(turn->retried_errors[0], "network error"));
  EXPECT_TRUE(SameReply(*turn, WholeTurn()));
}

TEST_F(AnthropicStreamTest, ConnectionDroppedAfterSomeBytesIsNotRetried) {
  ScriptedResponse dropped = Streamed(MessagesEvents(Reply()));
  dropped.drop_after_chunks = 4;  // message_start, ping, content_block_start, one text piece
  server_.Enqueue(dropped);
  server_.Enqueue(Streamed(MessagesEvents(Reply())));
  Result<Turn> turn = MakeAnthropicClient(Config())->Complete(Question());
  ASSERT_FALSE(turn);
  EXPECT_EQ(turn.error().code, Error::Code::kModel);
  EXPECT_TRUE(Contains(turn.error().message, "the stream was cut off after "));
  EXPECT_TRUE(Contains(turn.error().message,
                       "(received: message_start, ping, content_block_start, "
                       "content_block_delta); not resent"));
  EXPECT_EQ(server_.pending(), 1u);
  EXPECT_EQ(deltas_.size(), 1u);
}

TEST_F(AnthropicStreamTest, AStreamWithoutMessageStopIsAnError) {
  std::vector<std::string> events = MessagesEvents(Reply());
  events.pop_back();  // message_stop
  server_.Enqueue(Streamed(events));
  server_.Enqueue(Streamed(MessagesEvents(Reply())));
  Result<Turn> turn = MakeAnthropicClient(Config())->Complete(Question());
  ASSERT_FALSE(turn);
  EXPECT_TRUE(Contains(turn.error().message, "the stream ended without message_stop after "));
  EXPECT_TRUE(Contains(turn.error().message, "content_block_stop, message_delta)"));
  EXPECT_EQ(server_.pending(), 1u);
}

TEST_F(AnthropicStreamTest, AStreamEndingMidEventSaysSo) {
  const std::string stream = Joined(MessagesEvents(Reply()));
  server_.Enqueue(Streamed({stream.substr(0, stream.size() - 10)}));
  Result<Turn> turn = MakeAnthropicClient(Config())->Complete(Question());
  ASSERT_FALSE(turn);
  EXPECT_TRUE(Contains(turn.error().message, "message_delta, an unfinished event)"));
}

TEST_F(AnthropicStreamTest, AnEventThatIsNotJsonIsAnError) {
  server_.Enqueue(Streamed({"event: message_start\ndata: {not json\n\n"}));
  Result<Turn> turn = MakeAnthropicClient(Config())->Complete(Question());
  ASSERT_FALSE(turn);
  EXPECT_TRUE(Contains(turn.error().message,
                       "unreadable stream: event \"message_start\" is not a JSON object"));
}

TEST_F(AnthropicStreamTest, OverloadedStatusBeforeTheStreamIsRetried) {
  server_.Enqueue({529, {}, MessagesErrorBody("overloaded_error", "Overloaded")});
  server_.Enqueue(Streamed(MessagesEvents(Reply())));
  Result<Turn> turn = MakeAnthropicClient(Config())->Complete(Question());
  ASSERT_TRUE(turn) << turn.error().message;
  EXPECT_EQ(turn->attempts, 2);
  EXPECT_TRUE(turn->streamed);
  EXPECT_EQ(turn->retried_errors.size(), 1u);
}

}  // namespace
}  // namespace quarry::llm
