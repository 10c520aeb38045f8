// Tool hygiene as a user meets it, since an unverified reply must never pass for an answer: a
// model that answers in plain text has its reply shown, labelled unverified, by `ask` (text and
// JSON), `trace` and `view`, with exit 5;
// `quarry sql` shows NULL, the text 'NULL' and the empty string apart; a fenced query runs.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <regex>

#include "support/test_support.h"

namespace quarry {
namespace {

using json = nlohmann::ordered_json;
using quarry::testing::SourceDir;
using quarry::testing::TempDir;

const std::vector<std::string> kModelEnv = {"QUARRY_BASE_URL", "QUARRY_MODEL",
                                            "QUARRY_API_KEY",  "OPENROUTER_API_KEY",
                                            "QUARRY_FIXTURES", "QUARRY_PRICES"};
constexpr const char* kQuestion = "Which region has the highest total revenue?";

class ToolHygieneCliTest : public ::testing::Test {
 protected:
  testing::ProcessResult Quarry(std::vector<std::string> args) {
    args.insert(args.begin(), quarry::testing::QuarryBinary().string());
    return quarry::testing::RunProcess(args, cwd_.path(), {}, kModelEnv);
  }
  // Scripted turns for `--replay`, about data/sales.csv.
  std::string Fixture(const json& turns) {
    const json doc = {
        {"source", "scripted"}, {"question", kQuestion}, {"data", {"sales.csv"}}, {"turns", turns}};
    return cwd_.Write("fixture.json", doc.dump()).string();
  }
  std::string Sales() { return (SourceDir() / "data" / "sales.csv").string(); }
  TempDir cwd_;
};

json TextTurn(const std::string& text) {
  return {{"content", text},
          {"tool_calls", json::array()},
          {"usage", {{"input_tokens", 900}, {"output_tokens", 30}}}};
}

TEST_F(ToolHygieneCliTest, APlainTextReplyIsShownLabelledAndNotVerified) {
  const std::string fixture =
      Fixture({TextTurn("North, I think."), TextTurn("North is highest, at about $140k.")});
  auto r = Quarry({"ask", "--replay", fixture, "--data", Sales(), kQuestion});
  EXPECT_EQ(r.exit_code, 5) << r.out << r.err;
  EXPECT_NE(r.out.find("no answer: no_tool_call\nthe model replied without a tool call (not "
                       "verified): North is highest, at about $140k.\n"),
            std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("grounded no"), std::string::npos);

  auto j = Quarry({"ask", "--replay", fixture, "--format", "json", "--data", Sales(), kQuestion});
  EXPECT_EQ(j.exit_code, 5) << j.err;
  const json out = json::parse(j.out);
  EXPECT_EQ(out["answer"], "");
  EXPECT_EQ(out["grounded"], false);
  EXPECT_EQ(out["stop_reason"], "no_tool_call");
  EXPECT_EQ(out["reply"],
            json({{"text", "North is highest, at about $140k."}, {"verified", false}}));
  const json t =
      json::parse(quarry::testing::ReadFile(cwd_.path() / out["trace"].get<std::string>()));
  EXPECT_EQ(t["reply"]["text"], "North is highest, at about $140k.");
  EXPECT_EQ(t["verify"]["grounded"], false);

  auto summary = Quarry({"trace", "latest"});
  ASSERT_EQ(summary.exit_code, 0) << summary.err;
  EXPECT_NE(summary.out.find("reply:    (the model replied without a tool call; not verified) "
                             "North is highest, at about $140k."),
            std::string::npos)
      << summary.out;
  auto view = Quarry({"view", "latest"});
  ASSERT_EQ(view.exit_code, 0) << view.err;
  const std::string html =
      quarry::testing::ReadFile(cwd_.path() / view.out.substr(0, view.out.size() - 1));
  EXPECT_NE(html.find("The model replied without a tool call (not verified):</p><blockquote "
                      "class=\"reply\">North is highest, at about $140k.</blockquote>"),
            std::string::npos);
}

TEST_F(ToolHygieneCliTest, AnAnsweredRunHasNoReplyEvenAfterATextTurn) {
  const json sql = {{"content", ""},
                    {"tool_calls",
                     {{{"name", "run_sql"},
                       {"arguments",
                        {{"sql",
                          "```sql\nSELECT region, round(sum(revenue), 2) AS total "
                          "FROM sales GROUP BY region ORDER BY total DESC\n```"}}}}}},
                    {"usage", {{"input_tokens", 900}, {"output_tokens", 30}}}};
  const json answer = {
      {"content", ""},
      {"tool_calls",
       {{{"name", "final_answer"},
         {"arguments",
          {{"answer", "North, with 141794.14."}, {"supporting_values", {"North", "141794.14"}}}}}}},
      {"usage", {{"input_tokens", 900}, {"output_tokens", 30}}}};
  auto r = Quarry({"ask", "--replay", Fixture({TextTurn("Let me think."), sql, answer}), "--format",
                   "json", "--data", Sales(), kQuestion});
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  const json out = json::parse(r.out);
  EXPECT_EQ(out["grounded"], true);
  EXPECT_FALSE(out.contains("reply"));
  // The fenced query ran as SQL; the step says what was removed.
  const json t =
      json::parse(quarry::testing::ReadFile(cwd_.path() / out["trace"].get<std::string>()));
  bool cleaned = false;
  for (const auto& s : t["steps"]) {
    if (s.value("tool", "") != "run_sql") continue;
    EXPECT_EQ(s["status"], "ok");
    EXPECT_EQ(s["detail"]["cleaned"], "a Markdown code fence (```sql)");
    EXPECT_EQ(s["detail"]["sql"].get<std::string>().find("```"), std::string::npos);
    cleaned = true;
  }
  EXPECT_TRUE(cleaned);
  EXPECT_FALSE(t.contains("reply"));
}

TEST_F(ToolHygieneCliTest, SqlTextOutputShowsNullTextNullAndEmptyApart) {
  const auto db = cwd_.path() / "people.sqlite";
  quarry::testing::MakeSqlite(db,
                              "CREATE TABLE people(name TEXT, tag TEXT);"
                              "INSERT INTO people VALUES ('Ava', NULL), ('Bo', 'NULL'), "
                              "('Cy', ''), ('Di', 'vip');");
  auto r = Quarry({"sql", db.string(), "SELECT name, tag FROM people ORDER BY name"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "name | tag\nAva | NULL\nBo | \"NULL\"\nCy | \"\"\nDi | vip\n(4 rows)\n");
  auto csv =
      Quarry({"sql", "--format", "csv", db.string(), "SELECT name, tag FROM people ORDER BY name"});
  ASSERT_EQ(csv.exit_code, 0) << csv.err;
  EXPECT_EQ(csv.out, "name,tag\nAva,\nBo,NULL\nCy,\"\"\nDi,vip\n");
  // An unknown column names the real ones.
  auto bad = Quarry({"sql", db.string(), "SELECT nmae FROM people"});
  EXPECT_EQ(bad.exit_code, 3);
  EXPECT_NE(bad.err.find("no such column: nmae. Did you mean people.name? Columns of the tables "
                         "this query names: people(name, tag)"),
            std::string::npos)
      << bad.err;
}

TEST_F(ToolHygieneCliTest, DeeplyNestedFilesAreRefusedNotACrash) {
  const std::string deep = std::string(60000, '[') + std::string(60000, ']');
  const auto replay =
      cwd_.Write("deep.json", R"({"source":"scripted","question":"q","turns":)" + deep + "}");
  auto r = Quarry({"ask", "--replay", replay.string(), "--data", Sales(), kQuestion});
  EXPECT_LT(r.exit_code, 128) << r.err;
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.err.find("nested more than 256 levels"), std::string::npos) << r.err;
  const auto trace = cwd_.Write("trace.json", R"({"format_version":1,"steps":)" + deep + "}");
  auto v = Quarry({"view", trace.string()});
  EXPECT_LT(v.exit_code, 128) << v.err;
  EXPECT_NE(v.err.find("nested more than 256 levels"), std::string::npos) << v.err;
}

TEST_F(ToolHygieneCliTest, AReplayWithAWrongTypeIsADataErrorNotAnInternalOne) {
  const json doc = {{"format_version", 1},
                    {"question", kQuestion},
                    {"sources", json::array({json{{"path", 5}}})},
                    {"steps", json::array()}};
  const auto replay = cwd_.Write("typed.json", doc.dump());
  auto r = Quarry({"ask", "--replay", replay.string(), "--data", Sales(), kQuestion});
  EXPECT_LT(r.exit_code, 128) << r.err;
  EXPECT_EQ(r.err.find("internal error"), std::string::npos) << r.err;
}

TEST_F(ToolHygieneCliTest, DataCannotDriveTheTerminal) {
  const auto db = cwd_.path() / "esc.sqlite";
  quarry::testing::MakeSqlite(db,
                              "CREATE TABLE e(s TEXT, v TEXT);"
                              "INSERT INTO e VALUES ('a\x1b[2J\x1b]0;pwned\x07', 'x\x1b[31m');");
  auto r = Quarry({"sql", db.string(), "SELECT s FROM e"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out.find('\x1b'), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("\"a\\x1b[2J\\x1b]0;pwned\\x07\""), std::string::npos) << r.out;
  // An engine error quoting a value is escaped too.
  const auto csv = cwd_.Write("escv.csv", "v\nx\x1b[31mred\n");
  auto bad = Quarry({"sql", csv.string(), "SELECT CAST(v AS INTEGER) FROM escv"});
  EXPECT_EQ(bad.exit_code, 3) << bad.err;
  EXPECT_NE(bad.err.find("\\x1b[31mred"), std::string::npos) << bad.err;
  EXPECT_EQ(bad.err.find('\x1b'), std::string::npos) << bad.err;
}

}  // namespace
}  // namespace quarry
