// The event-stream parser against the standard's own examples and against every way a stream
// can be cut into pieces on the wire.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "quarry/llm/sse.h"

namespace quarry::llm::internal {
namespace {

std::vector<SseEvent> ParseInPieces(std::string_view stream, const std::vector<size_t>& cuts) {
  SseParser parser;
  std::vector<SseEvent> events;
  size_t from = 0;
  for (size_t cut : cuts) {
    EXPECT_TRUE(parser.Feed(stream.substr(from, cut - from),
                            [&](const SseEvent& e) { events.push_back(e); }));
    from = cut;
  }
  EXPECT_TRUE(parser.Feed(stream.substr(from), [&](const SseEvent& e) { events.push_back(e); }));
  return events;
}

std::string Describe(const std::vector<SseEvent>& events) {
  std::string out;
  for (const SseEvent& e : events) out += "[" + e.type + "|" + e.data + "|" + e.id + "]";
  return out;
}

// A stream with every feature: a BOM, comments, CRLF, CR and LF endings, multi-line data, a
// field without a colon, an id, an unknown field and an event with no data.
const std::string kStream =
    "\xEF\xBB\xBF: keep-alive\r\n"
    "event: message_start\r\n"
    "data: {\"a\":1}\r\n\r\n"
    "data: first\rdata: second\r\r"
    "id: 7\nevent: ping\nretry: 1500\nunknown: x\n\n"
    "data\n\n"
    "data:no space\n"
    "data:  two spaces\n\n"
    "data: [DONE]\n\n";

const std::string kExpected =
    "[message_start|{\"a\":1}|][message|first\nsecond|][message||7][message|no space\n two "
    "spaces|7][message|[DONE]|7]";

TEST(SseParserTest, ParsesTheStandardsFields) {
  SseParser parser;
  std::vector<SseEvent> events;
  ASSERT_TRUE(parser.Feed(kStream, [&](const SseEvent& e) { events.push_back(e); }));
  EXPECT_EQ(Describe(events), kExpected);
  EXPECT_EQ(parser.retry_ms(), 1500);
  EXPECT_FALSE(parser.pending());
}

TEST(SseParserTest, TheSameEventsWhereverTheStreamIsCut) {
  for (size_t cut = 0; cut <= kStream.size(); ++cut) {
    EXPECT_EQ(Describe(ParseInPieces(kStream, {cut})), kExpected) << "cut at byte " << cut;
  }
  std::vector<size_t> every_byte;
  for (size_t i = 1; i < kStream.size(); ++i) every_byte.push_back(i);
  EXPECT_EQ(Describe(ParseInPieces(kStream, every_byte)), kExpected);
}

TEST(SseParserTest, AnUnfinishedEventIsPendingAndNotDispatched) {
  SseParser parser;
  int dispatched = 0;
  ASSERT_TRUE(parser.Feed("data: {\"partial\": tr", [&](const SseEvent&) { ++dispatched; }));
  EXPECT_EQ(dispatched, 0);
  EXPECT_TRUE(parser.pending());
  ASSERT_TRUE(parser.Feed("ue}\n", [&](const SseEvent&) { ++dispatched; }));
  EXPECT_EQ(dispatched, 0);
  EXPECT_TRUE(parser.pending());  // the line ended, the event did not
  ASSERT_TRUE(parser.Feed("\n", [&](const SseEvent&) { ++dispatched; }));
  EXPECT_EQ(dispatched, 1);
  EXPECT_FALSE(parser.pending());
}

TEST(SseParserTest, ABomAfterTheStartIsData) {
  SseParser parser;
  std::vector<SseEvent> events;
  ASSERT_TRUE(
      parser.Feed("data: a\n\n\xEF\xBB\xBF"
                  "data: b\n\n",
                  [&](const SseEvent& e) { events.push_back(e); }));
  // The second BOM belongs to the field name, which is then unknown: no second event.
  EXPECT_EQ(Describe(events), "[message|a|]");
}

TEST(SseParserTest, AnOversizedEventStopsTheParser) {
  SseParser parser(64);
  int dispatched = 0;
  EXPECT_TRUE(parser.Feed("data: small\n\n", [&](const SseEvent&) { ++dispatched; }));
  EXPECT_FALSE(
      parser.Feed("data: " + std::string(100, 'x'), [&](const SseEvent&) { ++dispatched; }));
  EXPECT_TRUE(parser.overflowed());
  EXPECT_FALSE(parser.Feed("\n\ndata: later\n\n", [&](const SseEvent&) { ++dispatched; }));
  EXPECT_EQ(dispatched, 1);
  SseParser lines(64);  // many short data lines add up too
  bool ok = true;
  for (int i = 0; i < 20 && ok; ++i) ok = lines.Feed("data: 0123456789\n", [](const SseEvent&) {});
  EXPECT_FALSE(ok);
}

}  // namespace
}  // namespace quarry::llm::internal
