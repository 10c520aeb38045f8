// The shared text helpers (quarry/common/text.h) and name tables (quarry/common/names.h).
#include "quarry/common/text.h"

#include <gtest/gtest.h>

#include <string>

#include "quarry/common/names.h"

namespace quarry {
namespace {

TEST(TextTest, LowerFoldsAsciiAndKeepsUtf8) {
  EXPECT_EQ(Lower("Sales.CSV"), "sales.csv");
  EXPECT_EQ(Lower("ÄRGER Straße"), "Ärger straße") << "UTF-8 bytes are never touched";
  EXPECT_EQ(Lower(""), "");
}

TEST(TextTest, TrimDropsAsciiWhitespaceOnly) {
  EXPECT_EQ(Trim(" \t\r\n total \v\f"), "total");
  EXPECT_EQ(Trim("\xC2\xA0x\xC2\xA0"), "\xC2\xA0x\xC2\xA0") << "a no-break space is text";
  EXPECT_EQ(Trim("   "), "");
}

// A model's text cut for an error or a log line keeps whole characters: half of 'é' would
// reach the model or a trace as U+FFFD.
TEST(TextTest, Utf8PrefixNeverSplitsACharacter) {
  const std::string word = "caf\xC3\xA9";  // "café": é is two bytes
  EXPECT_EQ(Utf8Prefix(word, 4), 3u);
  EXPECT_EQ(Utf8Prefix(word, 5), 5u);
  EXPECT_EQ(Utf8Prefix(word, 100), 5u);
  const std::string emoji = "ab\xF0\x9F\x93\x88";  // a 4-byte character after two letters
  for (size_t max = 2; max < 6; ++max) EXPECT_EQ(Utf8Prefix(emoji, max), 2u) << max;
  EXPECT_EQ(Utf8Prefix(emoji, 6), 6u);
  EXPECT_EQ(Utf8Prefix("abc", 0), 0u);
  std::string long_text(199, 'x');
  long_text += "\xC3\xA9tail";
  EXPECT_EQ(long_text.substr(0, Utf8Prefix(long_text, 200)), std::string(199, 'x'));
}

enum class Colour { kRed, kGreen };
constexpr NamePair<Colour> kColourNames[] = {{Colour::kRed, "red"}, {Colour::kGreen, "green"}};

TEST(TextTest, EscapeMarkupQuotesTheFiveAndDropsForbiddenControls) {
  EXPECT_EQ(EscapeMarkup("<img src=x onerror='a(\"b\")'>&"),
            "&lt;img src=x onerror=&#39;a(&quot;b&quot;)&#39;&gt;&amp;");
  EXPECT_EQ(EscapeMarkup("a\x01"
                         "b\x1f\tc\nd\re\x7f caf\xc3\xa9"),
            "ab\tc\nd\re\x7f caf\xc3\xa9");
}

TEST(NamesTest, ATableReadsBothWays) {
  EXPECT_EQ(NameOf(kColourNames, Colour::kGreen), "green");
  EXPECT_EQ(ValueOf(kColourNames, "red"), Colour::kRed);
  EXPECT_EQ(ValueOf(kColourNames, "Red"), std::nullopt);
  static_assert(NameOf(kColourNames, Colour::kRed) == "red");
}

}  // namespace
}  // namespace quarry
