// Streamed Chat Completions ("stream": true) against the real stand-in on 127.0.0.1: the same
// completion scripted whole and as chat.completion.chunk events gives the same turn, however
// the bytes are cut; [DONE], keep-alives, error events, dropped connections, servers that
// refuse stream_options or answer with whole JSON. Sleeps are injected, never slept.
#include <gtest/gtest.h>

#include <chrono>
#include <string>
#include <vector>

#include "quarry/llm/llm.h"
#include "quarry/llm/openai_stream_internal.h"
#include "support/provider_server.h"
#include "support/stream_replies.h"

namespace quarry::llm {
namespace {

using json = nlohmann::ordered_json;
using quarry::testing::CompletionBody;
using quarry::testing::ErrorChunk;
using quarry::testing::ProviderServer;
using quarry::testing::ScriptedCompletion;
using quarry::testing::ScriptedResponse;
using quarry::testing::StreamBody;
using quarry::testing::StreamChunks;
using quarry::testing::StreamedResponse;
using quarry::testing::StreamShape;

::testing::AssertionResult Contains(const std::string& text, const std::string& part) {
  if (text.find(part) != std::string::npos) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << "\"" << text << "\" does not contain \"" << part << "\"";
}

Request Question() {
  Request request;
  request.messages = {{Role::kSystem, "You are a data analyst.", {}, ""},
                      {Role::kUser, "How many rows are in sales?", {}, ""}};
  return request;
}

// Everything of a turn that must not depend on how it travelled.
void ExpectSameTurn(const Turn& streamed, const Turn& whole) {
  EXPECT_EQ(streamed.content, whole.content);
  ASSERT_EQ(streamed.tool_calls.size(), whole.tool_calls.size());
  for (size_t i = 0; i < whole.tool_calls.size(); ++i) {
    EXPECT_EQ(streamed.tool_calls[i].id, whole.tool_calls[i].id) << i;
    EXPECT_EQ(streamed.tool_calls[i].name, whole.tool_calls[i].name) << i;
    EXPECT_EQ(streamed.tool_calls[i].arguments_json, whole.tool_calls[i].arguments_json) << i;
  }
  EXPECT_EQ(streamed.finish_reason, whole.finish_reason);
  EXPECT_EQ(streamed.usage.input_tokens, whole.usage.input_tokens);
  EXPECT_EQ(streamed.usage.output_tokens, whole.usage.output_tokens);
  EXPECT_EQ(streamed.usage.cached_tokens, whole.usage.cached_tokens);
  EXPECT_EQ(streamed.usage.cache_write_tokens, whole.usage.cache_write_tokens);
  EXPECT_DOUBLE_EQ(streamed.cost_usd, whole.cost_usd);
  EXPECT_EQ(streamed.cost_reported, whole.cost_reported);
  EXPECT_EQ(streamed.cost_known, whole.cost_known);
}

// A text answer with characters of several byte lengths, so cuts land inside them.
ScriptedCompletion TextCompletion() {
  ScriptedCompletion c;
  c.content = "Sales grew 12 % — from 1.2 M€ to 1.35 M€ (東京 led).\nDone.";
  c.prompt_tokens = 1200;
  c.completion_tokens = 31;
  return c;
}

ScriptedCompletion ParallelCalls() {
  ScriptedCompletion c;
  c.content = "Two queries.";
  c.tool_calls = {
      {"call_a", "run_sql", R"({"sql": "SELECT count(*) FROM sales WHERE région = 'Nord'"})"},
      {"call_b", "describe_table", R"({"table":"sales"})"}};
  c.prompt_tokens = 2100;
  c.completion_tokens = 64;
  c.cached_tokens = 1536;
  return c;
}

class OpenAiStreamTest : public ::testing::Test {
 protected:
  ClientConfig Config() {
    ClientConfig config;
    config.base_url = server_.base_url();
    config.model = "openai/gpt-4o-mini";
    config.api_key = "sk-test-0123456789abcdefSECRET";
    config.request_timeout_ms = 10000;
    config.connect_timeout_ms = 5000;
    config.retry = RetryPolicy{4, 500, 30000};
    config.sleep = [this](std::chrono::milliseconds d) { sleeps_ms_.push_back(d.count()); };
    config.jitter_seed = 7;
    return config;
  }

  // The turn for `completion` sent whole, by a client that does not stream.
  Turn Whole(const ScriptedCompletion& completion, ClientConfig config) {
    config.stream = false;
    server_.Enqueue({200, {}, CompletionBody(completion)});
    Result<Turn> turn = MakeOpenAiClient(config)->Complete(Question());
    EXPECT_TRUE(turn) << turn.error().message;
    return turn ? *turn : Turn{};
  }

  Result<Turn> Streamed(ScriptedResponse response, const ClientConfig& config) {
    server_.Enqueue(std::move(response));
    return MakeOpenAiClient(config)->Complete(Question());
  }

  ProviderServer server_;
  std::vector<int64_t> sleeps_ms_;
};

TEST_F(OpenAiStreamTest, AsksForAStreamWithUsage) {
  Result<Turn> turn = Streamed(StreamedResponse(TextCompletion()), Config());
  ASSERT_TRUE(turn) << turn.error().message;
  EXPECT_TRUE(turn->streamed);
  const json body = server_.requests().at(0).Json();
  EXPECT_EQ(body["stream"], true);
  EXPECT_EQ(body["stream_options"], json({{"include_usage", true}}));
}

TEST_F(OpenAiStreamTest, NoStreamSendsNoStreamField) {
  ClientConfig config = Config();
  config.stream = false;
  server_.Enqueue({200, {}, CompletionBody(TextCompletion())});
  Result<Turn> turn = MakeOpenAiClient(config)->Complete(Question());
  ASSERT_TRUE(turn) << turn.error().message;
  EXPECT_FALSE(turn->streamed);
  EXPECT_EQ(turn->content, TextCompletion().content);
  const json body = server_.requests().at(0).Json();
  EXPECT_FALSE(body.contains("stream")) << body.dump();
  EXPECT_FALSE(body.contains("stream_options")) << body.dump();
}

TEST_F(OpenAiStreamTest, StreamedTextEqualsTheWholeReply) {
  const Turn whole = Whole(TextCompletion(), Config());
  Result<Turn> streamed = Streamed(StreamedResponse(TextCompletion()), Config());
  ASSERT_TRUE(streamed) << streamed.error().message;
  EXPECT_TRUE(streamed->streamed);
  EXPECT_EQ(streamed->content, TextCompletion().content);
  EXPECT_EQ(FinishReasonName(streamed->finish_reason), "stop");
  EXPECT_EQ(streamed->usage.input_tokens, 1200);
  EXPECT_GT(streamed->cost_usd, 0.0) << "priced from the table: usage arrived";
  ExpectSameTurn(*streamed, whole);
}

TEST_F(OpenAiStreamTest, StreamedParallelToolCallsEqualTheWholeReply) {
  const Turn whole = Whole(ParallelCalls(), Config());
  for (bool interleave : {false, true}) {
    StreamShape shape;
    shape.interleave = interleave;
    shape.piece_bytes = 5;
    Result<Turn> streamed = Streamed(StreamedResponse(ParallelCalls(), shape), Config());
    ASSERT_TRUE(streamed) << streamed.error().message;
    ASSERT_EQ(streamed->tool_calls.size(), 2u);
    EXPECT_EQ(streamed->tool_calls[0].id, "call_a");
    EXPECT_EQ(streamed->tool_calls[0].arguments_json, ParallelCalls().tool_calls[0].arguments);
    EXPECT_EQ(streamed->tool_calls[1].name, "describe_table");
    EXPECT_EQ(FinishReasonName(streamed->finish_reason), "tool_calls");
    ExpectSameTurn(*streamed, whole);
  }
}

TEST_F(OpenAiStreamTest, CachedTokensAndReportedCostEqualTheWholeReply) {
  ScriptedCompletion c = ParallelCalls();
  c.cost_usd = 0.000731;
  ClientConfig config = Config();
  config.provider = Provider::kOpenRouter;
  const Turn whole = Whole(c, config);
  Result<Turn> streamed = Streamed(StreamedResponse(c), config);
  ASSERT_TRUE(streamed) << streamed.error().message;
  EXPECT_EQ(streamed->usage.cached_tokens, 1536);
  EXPECT_TRUE(streamed->cost_reported);
  EXPECT_DOUBLE_EQ(streamed->cost_usd, 0.000731);
  ExpectSameTurn(*streamed, whole);
  // Priced from the table (no reported cost), the cached share at its own rate.
  const Turn priced_whole = Whole(ParallelCalls(), Config());
  Result<Turn> priced = Streamed(StreamedResponse(ParallelCalls()), Config());
  ASSERT_TRUE(priced) << priced.error().message;
  EXPECT_FALSE(priced->cost_reported);
  EXPECT_GT(priced->cost_usd, 0.0);
  ExpectSameTurn(*priced, priced_whole);
}

// The assembly itself, fed the body cut at every byte: every cut in two, then byte by byte.
TEST_F(OpenAiStreamTest, EveryCutOfTheBodyAssemblesTheSameCompletion) {
  ScriptedCompletion c = ParallelCalls();
  c.cost_usd = 0.0004;
  StreamShape shape;
  shape.keep_alive = true;
  shape.interleave = true;
  const std::string body = StreamBody(c, shape);
  internal::CompletionStream reference(nullptr);
  ASSERT_TRUE(reference.Feed(body));
  ASSERT_TRUE(reference.done());
  const json expected = reference.Completion();
  ASSERT_EQ(expected["choices"][0]["message"]["tool_calls"].size(), 2u);
  for (size_t cut = 0; cut <= body.size(); ++cut) {
    internal::CompletionStream stream(nullptr);
    ASSERT_TRUE(stream.Feed(std::string_view(body).substr(0, cut)));
    ASSERT_TRUE(stream.Feed(std::string_view(body).substr(cut)));
    ASSERT_TRUE(stream.done()) << cut;
    ASSERT_EQ(stream.Completion(), expected) << "cut at byte " << cut;
  }
  internal::CompletionStream bytewise(nullptr);
  for (char byte : body) ASSERT_TRUE(bytewise.Feed(std::string_view(&byte, 1)));
  EXPECT_EQ(bytewise.Completion(), expected);
}

// The same through the HTTP client: the stand-in sends the body in two chunks cut at every
// position, then one byte per chunk.
TEST_F(OpenAiStreamTest, StreamCutAtEveryByteGivesTheSameTurn) {
  ScriptedCompletion c;
  c.content = "Nord: 41 €.";
  c.tool_calls = {{"call_q", "run_sql", R"({"sql":"SELECT 1"})"}};
  c.prompt_tokens = 900;
  c.completion_tokens = 12;
  c.cached_tokens = 512;
  const Turn whole = Whole(c, Config());
  const std::string body = StreamBody(c);
  auto client = MakeOpenAiClient(Config());
  for (size_t cut = 1; cut < body.size(); ++cut) {
    ScriptedResponse response;
    response.chunks = {body.substr(0, cut), body.substr(cut)};
    server_.Enqueue(std::move(response));
    Result<Turn> turn = client->Complete(Question());
    ASSERT_TRUE(turn) << "cut at byte " << cut << ": " << turn.error().message;
    ASSERT_TRUE(turn->streamed);
    ExpectSameTurn(*turn, whole);
    if (::testing::Test::HasFailure()) FAIL() << "cut at byte " << cut;
  }
  ScriptedResponse bytes;
  for (char byte : body) bytes.chunks.emplace_back(1, byte);
  server_.Enqueue(std::move(bytes));
  Result<Turn> turn = client->Complete(Question());
  ASSERT_TRUE(turn) << turn.error().message;
  ExpectSameTurn(*turn, whole);
}

TEST_F(OpenAiStreamTest, DoneEndsTheStreamAndWhatFollowsIsIgnored) {
  ScriptedResponse response = StreamedResponse(TextCompletion());
  response.chunks.push_back("data: {this is not JSON\n\n");
  Result<Turn> turn = Streamed(std::move(response), Config());
  ASSERT_TRUE(turn) << turn.error().message;
  EXPECT_EQ(turn->content, TextCompletion().content);
}

TEST_F(OpenAiStreamTest, AFinishReasonWithoutDoneIsAccepted) {
  StreamShape shape;
  shape.done = false;
  Result<Turn> turn = Streamed(StreamedResponse(TextCompletion(), shape), Config());
  ASSERT_TRUE(turn) << turn.error().message;
  EXPECT_EQ(turn->content, TextCompletion().content);
  EXPECT_EQ(turn->usage.output_tokens, 31);
}

TEST_F(OpenAiStreamTest, NeitherDoneNorFinishReasonIsAnError) {
  StreamShape shape;
  shape.done = false;
  shape.finish = false;
  shape.usage = false;
  Result<Turn> turn = Streamed(StreamedResponse(TextCompletion(), shape), Config());
  ASSERT_FALSE(turn);
  EXPECT_EQ(turn.error().code, Error::Code::kModel);
  EXPECT_TRUE(Contains(turn.error().message, "ended without [DONE] or a finish reason"));
  EXPECT_TRUE(Contains(turn.error().message, "characters of text"));
  EXPECT_TRUE(Contains(turn.error().message, "not resent"));
  EXPECT_EQ(server_.requests().size(), 1u);
}

TEST_F(OpenAiStreamTest, KeepAliveCommentsAreIgnored) {
  const Turn whole = Whole(ParallelCalls(), Config());
  StreamShape shape;
  shape.keep_alive = true;
  ScriptedResponse response = StreamedResponse(ParallelCalls(), shape);
  ASSERT_EQ(response.chunks.front(), ": OPENROUTER PROCESSING\n\n");
  Result<Turn> turn = Streamed(std::move(response), Config());
  ASSERT_TRUE(turn) << turn.error().message;
  ExpectSameTurn(*turn, whole);
}

TEST_F(OpenAiStreamTest, ErrorEventMidStreamIsAModelErrorNotResent) {
  ScriptedResponse response = StreamedResponse(TextCompletion());
  response.chunks.resize(3);  // the role and two pieces of text
  response.chunks.push_back(ErrorChunk("Provider returned error: upstream disconnected", 502));
  Result<Turn> turn = Streamed(std::move(response), Config());
  ASSERT_FALSE(turn);
  EXPECT_EQ(turn.error().code, Error::Code::kModel);
  EXPECT_TRUE(Contains(turn.error().message, "error event 502"));
  EXPECT_TRUE(Contains(turn.error().message, "upstream disconnected"));
  EXPECT_TRUE(Contains(turn.error().message, "not resent"));
  EXPECT_EQ(server_.requests().size(), 1u);
}

TEST_F(OpenAiStreamTest, ErrorEventBeforeAnyTextIsResent) {
  ScriptedResponse failing;
  failing.chunks = {": OPENROUTER PROCESSING\n\n", ErrorChunk("Upstream overloaded", 503)};
  server_.Enqueue(std::move(failing));
  Result<Turn> turn = Streamed(StreamedResponse(TextCompletion()), Config());
  ASSERT_TRUE(turn) << turn.error().message;
  EXPECT_EQ(turn->attempts, 2);
  EXPECT_EQ(turn->content, TextCompletion().content);
  ASSERT_EQ(turn->retried_errors.size(), 1u);
  EXPECT_TRUE(Contains(turn->retried_errors[0], "Upstream overloaded"));
  EXPECT_EQ(sleeps_ms_.size(), 1u);
}

TEST_F(OpenAiStreamTest, ConnectionDroppedBeforeAnythingIsResent) {
  ScriptedResponse dropped = StreamedResponse(TextCompletion());
  dropped.drop_after_chunks = 0;
  server_.Enqueue(std::move(dropped));
  ScriptedResponse after_keep_alive;  // a comment is no part of the reply
  after_keep_alive.chunks = {": OPENROUTER PROCESSING\n\n", "data: {\"choices\": []}\n\n"};
  after_keep_alive.drop_after_chunks = 1;
  server_.Enqueue(std::move(after_keep_alive));
  Result<Turn> turn = Streamed(StreamedResponse(TextCompletion()), Config());
  ASSERT_TRUE(turn) << turn.error().message;
  EXPECT_EQ(turn->attempts, 3);
  EXPECT_EQ(turn->content, TextCompletion().content);
  EXPECT_EQ(server_.requests().size(), 3u);
}

TEST_F(OpenAiStreamTest, ConnectionDroppedAfterSomeTextIsAClearError) {
  ScriptedResponse dropped = StreamedResponse(TextCompletion());
  dropped.drop_after_chunks = 4;  // the role and three pieces of text
  server_.Enqueue(std::move(dropped));
  server_.Enqueue(StreamedResponse(TextCompletion()));  // must not be asked for
  Result<Turn> turn = MakeOpenAiClient(Config())->Complete(Question());
  ASSERT_FALSE(turn);
  EXPECT_EQ(turn.error().code, Error::Code::kModel);
  EXPECT_TRUE(Contains(turn.error().message, "the connection broke after"));
  EXPECT_TRUE(Contains(turn.error().message, "bytes (4 events: 19 characters of text)"));
  EXPECT_TRUE(Contains(turn.error().message, "not resent"));
  EXPECT_EQ(server_.requests().size(), 1u);
  EXPECT_EQ(server_.pending(), 1u);
}

TEST_F(OpenAiStreamTest, ConnectionBrokenAfterDoneStillGivesTheTurn) {
  ScriptedResponse response = StreamedResponse(ParallelCalls());
  response.drop_after_chunks = response.chunks.size();  // every event, but no end of the body
  Result<Turn> turn = Streamed(std::move(response), Config());
  ASSERT_TRUE(turn) << turn.error().message;
  EXPECT_EQ(turn->tool_calls.size(), 2u);
  EXPECT_EQ(turn->usage.cached_tokens, 1536);
  EXPECT_EQ(server_.requests().size(), 1u);
}

TEST_F(OpenAiStreamTest, MalformedChunkIsAnError) {
  ScriptedResponse response;
  response.chunks = {"data: {\"choices\": [{\"delta\": {\"content\": \"Hi\"}}]}\n\n",
                     "data: {\"choices\": [oops\n\n"};
  Result<Turn> turn = Streamed(std::move(response), Config());
  ASSERT_FALSE(turn);
  EXPECT_TRUE(Contains(turn.error().message, "malformed"));
  EXPECT_TRUE(Contains(turn.error().message, "not a JSON object"));
}

TEST_F(OpenAiStreamTest, RejectedStreamOptionsAreDroppedAndStayOff) {
  server_.Enqueue({400,
                   {},
                   R"({"object":"error","message":"[{'type': 'extra_forbidden', 'loc': ('body', )"
                   R"('stream_options'), 'msg': 'Extra inputs are not permitted'}]","code":400})"});
  server_.Enqueue(StreamedResponse(TextCompletion()));
  server_.Enqueue(StreamedResponse(TextCompletion()));
  auto client = MakeOpenAiClient(Config());
  Result<Turn> turn = client->Complete(Question());
  ASSERT_TRUE(turn) << turn.error().message;
  EXPECT_EQ(turn->content, TextCompletion().content);
  EXPECT_EQ(turn->attempts, 1) << "an adaptation is no failed attempt";
  ASSERT_EQ(turn->retried_errors.size(), 1u);
  EXPECT_TRUE(Contains(turn->retried_errors[0], "resent without stream_options"));
  ASSERT_TRUE(client->Complete(Question()));
  const auto sent = server_.requests();
  ASSERT_EQ(sent.size(), 3u);
  EXPECT_TRUE(sent[0].Json().contains("stream_options"));
  for (size_t i = 1; i < 3; ++i) {
    EXPECT_EQ(sent[i].Json()["stream"], true) << i;
    EXPECT_FALSE(sent[i].Json().contains("stream_options")) << i;
  }
}

TEST_F(OpenAiStreamTest, AJsonReplyToAStreamRequestIsReadWhole) {
  const Turn whole = Whole(ParallelCalls(), Config());
  server_.Enqueue({200, {}, CompletionBody(ParallelCalls())});
  std::vector<StreamDelta> deltas;
  ClientConfig config = Config();
  config.on_stream = [&](const StreamDelta& d) { deltas.push_back(d); };
  Result<Turn> turn = MakeOpenAiClient(config)->Complete(Question());
  ASSERT_TRUE(turn) << turn.error().message;
  EXPECT_FALSE(turn->streamed);
  EXPECT_TRUE(deltas.empty());
  EXPECT_EQ(server_.requests().back().Json()["stream"], true);
  ExpectSameTurn(*turn, whole);
}

TEST_F(OpenAiStreamTest, OnStreamGetsEachPieceInOrder) {
  std::vector<StreamDelta> deltas;
  ClientConfig config = Config();
  config.on_stream = [&](const StreamDelta& d) { deltas.push_back(d); };
  StreamShape shape;
  shape.interleave = true;
  shape.piece_bytes = 6;
  Result<Turn> turn = Streamed(StreamedResponse(ParallelCalls(), shape), config);
  ASSERT_TRUE(turn) << turn.error().message;
  using Kind = StreamDelta::Kind;
  std::string text;
  std::vector<std::string> names;
  std::vector<std::string> arguments(2);
  bool text_after_call = false;
  for (const StreamDelta& d : deltas) {
    if (d.kind == Kind::kText) {
      text += d.text;
      text_after_call = text_after_call || !names.empty();
    } else if (d.kind == Kind::kToolCall) {
      EXPECT_EQ(d.index, static_cast<int>(names.size()));
      names.push_back(d.text);
    } else {
      ASSERT_LT(d.index, static_cast<int>(names.size())) << "arguments before the call's name";
      arguments[d.index] += d.text;
    }
  }
  EXPECT_EQ(text, ParallelCalls().content);
  EXPECT_FALSE(text_after_call);
  EXPECT_EQ(names, (std::vector<std::string>{"run_sql", "describe_table"}));
  EXPECT_EQ(arguments[0], ParallelCalls().tool_calls[0].arguments);
  EXPECT_EQ(arguments[1], ParallelCalls().tool_calls[1].arguments);
  EXPECT_GT(deltas.size(), 10u) << "pieces, not the whole text at the end";
  EXPECT_EQ(deltas[0].kind, Kind::kText);
  EXPECT_EQ(deltas[0].text, "Two qu");
}

TEST_F(OpenAiStreamTest, WaitLineStopsWhenTheFirstBytesArrive) {
  std::vector<std::string> events;
  ClientConfig config = Config();
  config.on_wait = [&](int64_t ms) { events.push_back(ms < 0 ? "end" : "wait"); };
  config.on_stream = [&](const StreamDelta&) {
    if (events.empty() || events.back() != "text") events.push_back("text");
  };
  ScriptedResponse response = StreamedResponse(TextCompletion());
  response.delay = std::chrono::milliseconds(1300);       // waited for: the line shows
  response.chunk_delay = std::chrono::milliseconds(700);  // streaming: the line stays away
  response.chunks.resize(4);
  response.chunks.push_back(
      "data: {\"choices\": [{\"delta\": {}, \"finish_reason\": \"stop\"}]}\n\n");
  Result<Turn> turn = Streamed(std::move(response), config);
  ASSERT_TRUE(turn) << turn.error().message;
  ASSERT_GE(events.size(), 3u);
  EXPECT_EQ(events[0], "wait");
  size_t end = 0;
  while (end < events.size() && events[end] == "wait") ++end;
  ASSERT_LT(end, events.size());
  EXPECT_EQ(events[end], "end");
  EXPECT_EQ(std::vector<std::string>(events.begin() + end + 1, events.end()),
            std::vector<std::string>{"text"})
      << "no waiting line once the text streams, and no second end";
}

// From a user trial: servers that reuse an index for the next call, send `data:` with
// nothing, or cut an emoji's surrogate pair across two chunks.
std::string Chunk(const std::string& delta, const std::string& finish = "null") {
  return "data: {\"id\":\"c\",\"object\":\"chat.completion.chunk\",\"choices\":[{\"index\":0,"
         "\"delta\":" +
         delta + ",\"finish_reason\":" + finish + "}]}\n\n";
}

TEST(OpenAiStreamQuirksTest, ANewIdAtAnIndexInUseStartsACallOfItsOwn) {
  const std::string body =
      Chunk(
          R"({"tool_calls":[{"index":0,"id":"x1","type":"function","function":{"name":"run_sql","arguments":"{\"sql\": \"SELECT 1\"}"}}]})") +
      Chunk(
          R"({"tool_calls":[{"index":0,"id":"x2","type":"function","function":{"name":"run_sql","arguments":""}}]})") +
      Chunk(R"({"tool_calls":[{"index":0,"function":{"arguments":"{\"sql\": \"SELECT 2\"}"}}]})") +
      Chunk("{}", "\"tool_calls\"") + "data: [DONE]\n\n";
  internal::CompletionStream stream(nullptr);
  ASSERT_TRUE(stream.Feed(body));
  const json calls = stream.Completion()["choices"][0]["message"]["tool_calls"];
  ASSERT_EQ(calls.size(), 2u) << calls.dump();
  EXPECT_EQ(calls[0]["id"], "x1");
  EXPECT_EQ(calls[0]["function"]["arguments"], R"({"sql": "SELECT 1"})");
  EXPECT_EQ(calls[1]["id"], "x2");
  EXPECT_EQ(calls[1]["function"]["arguments"], R"({"sql": "SELECT 2"})");
}

TEST(OpenAiStreamQuirksTest, BlankEventsAreSkippedAndLoneSurrogatesReadAsReplacements) {
  const std::string body = "data: \n\ndata:\n\n" + Chunk(R"({"content":"a\ud83c"})") +
                           Chunk(R"({"content":"\udf89b \ud83c\udf89 \\ud83c"})") +
                           Chunk("{}", "\"stop\"") + "data: [DONE]\n\n";
  internal::CompletionStream stream(nullptr);
  ASSERT_TRUE(stream.Feed(body)) << stream.error();
  ASSERT_TRUE(stream.done());
  // Each half alone is U+FFFD; a whole pair is the emoji; an escaped backslash stays text.
  EXPECT_EQ(stream.Completion()["choices"][0]["message"]["content"],
            "a\xEF\xBF\xBD\xEF\xBF\xBD"
            "b \xF0\x9F\x8E\x89 \\ud83c");
}

}  // namespace
}  // namespace quarry::llm
