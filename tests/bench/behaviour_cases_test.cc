// The behaviour suite's case file: the bundled tasks/behaviour/cases.json loads whole, a case
// written only as data runs its named check, and every mistake in a case file is an error naming
// the file, the case and the field, never a crash or a case left out.
#include <functional>

#include <gtest/gtest.h>

#include "quarry/bench/behaviour_internal.h"
#include "support/test_support.h"

namespace quarry::bench::behaviour {
namespace {

namespace fs = std::filesystem;
using quarry::testing::TempDir;

fs::path BundledFile() {
  return quarry::testing::SourceDir() / "tasks" / "behaviour" / "cases.json";
}

std::vector<std::string> Ids(const std::vector<CaseDef>& defs) {
  std::vector<std::string> ids;
  for (const auto& d : defs) ids.push_back(d.id);
  return ids;
}

TEST(BehaviourCasesTest, TheBundledFileLoadsTheFifteenCasesInTheSuitesOrder) {
  const auto& bundled = CaseDefs();
  ASSERT_TRUE(bundled.has_value()) << bundled.error().message;
  const std::vector<std::string> ids = {"count",
                                        "aggregate",
                                        "join",
                                        "top_n",
                                        "year_filter",
                                        "average",
                                        "empty_result",
                                        "follow_up",
                                        "write_refused",
                                        "injection",
                                        "chart",
                                        "missing_entity",
                                        "ambiguous_metric",
                                        "large_schema",
                                        "null_vs_text"};
  EXPECT_EQ(Ids(*bundled), ids);
  for (const auto& d : *bundled) EXPECT_TRUE(d.check) << d.id << ": no check bound";
  // The binary carries the repository's file, not a copy that could drift from it.
  auto on_disk = LoadCases(BundledFile());
  ASSERT_TRUE(on_disk.has_value()) << on_disk.error().message;
  EXPECT_EQ(Ids(*on_disk), ids);
  const CaseDef* follow = FindCase("follow_up");
  ASSERT_NE(follow, nullptr);
  EXPECT_TRUE(follow->thread);
  EXPECT_EQ(follow->questions.size(), 2u);
  EXPECT_EQ(follow->check_kind, "states_number_per_turn");
  ASSERT_NE(FindCase("large_schema"), nullptr);
  EXPECT_TRUE(FindCase("large_schema")->wide);
  EXPECT_EQ(FindCase("no_such_case"), nullptr);
}

TEST(BehaviourCasesTest, ACaseWrittenOnlyAsDataComputesItsReferenceAndRunsItsCheck) {
  TempDir dir;
  const fs::path file = dir.Write("cases.json", R"({"cases": [{
      "id": "genres", "checks": "a count: the answer states the number of genres",
      "questions": ["How many genres are there?"],
      "reference": {"genres": "SELECT count(*) FROM Genre",
                    "first": {"rows": "SELECT Name FROM Genre ORDER BY GenreId LIMIT 2"}},
      "check": {"kind": "states_number", "key": "genres", "tolerance": 0.5,
                "what": "the genres"}}]})");
  auto defs = LoadCases(file);
  ASSERT_TRUE(defs.has_value()) << defs.error().message;
  ASSERT_EQ(defs->size(), 1u);
  const CaseDef& def = defs->front();
  auto db = ReferenceDb::Open(quarry::testing::SourceDir() / "data" / "chinook.sqlite");
  ASSERT_TRUE(db.has_value()) << db.error().message;
  auto expected = Expected(def, *db);
  ASSERT_TRUE(expected.has_value()) << expected.error().message;
  EXPECT_EQ(expected->dump(), R"({"genres":25,"first":[["Rock"],["Jazz"]]})");
  CaseRun run;
  trace::Trace t;
  t.stop_reason = trace::StopReason::kAnswered;
  t.answer = "There are 25 genres.";
  run.traces = {t};
  run.expected = *expected;
  EXPECT_TRUE(def.check(run).pass);
  EXPECT_EQ(def.check(run).reason, "the answer states the genres 25");
  run.traces[0].answer = "There are 24 genres.";
  EXPECT_FALSE(def.check(run).pass);
}

// ---- A malformed case file: one mistake each, reported with the file, the case and the field

// A valid file of two cases, each mistake made on a copy of it.
json GoodFile() {
  return json::parse(R"({"cases": [
    {"id": "count", "checks": "a row count", "questions": ["How many tracks are there?"],
     "reference": {"tracks": "SELECT count(*) FROM Track"},
     "check": {"kind": "states_number", "key": "tracks", "tolerance": 0.5}},
    {"id": "follow_up", "checks": "a follow-up", "thread": true,
     "questions": ["How many customers are from Germany?", "And from France?"],
     "reference": {"germany": "SELECT 4", "france": "SELECT 5"},
     "check": {"kind": "states_number_per_turn", "turns": [
        {"key": "germany", "tolerance": 0.5}, {"key": "france", "tolerance": 0.5}]}}]})");
}

struct BadFile {
  std::string name;
  std::function<void(json&)> spoil;
  std::string says;  // after "<file>: "
};

class BehaviourCaseFileTest : public ::testing::TestWithParam<BadFile> {};

TEST_P(BehaviourCaseFileTest, IsAnErrorNamingTheFileTheCaseAndTheField) {
  json doc = GoodFile();
  GetParam().spoil(doc);
  TempDir dir;
  const fs::path file = dir.Write("cases.json", doc.dump(2));
  auto defs = LoadCases(file);
  ASSERT_FALSE(defs.has_value()) << GetParam().name << " loaded " << defs->size() << " case(s)";
  EXPECT_EQ(defs.error().code, Error::Code::kData);
  EXPECT_EQ(defs.error().message.rfind(file.string() + ": " + GetParam().says, 0), 0u)
      << defs.error().message;
}

json& Count(json& doc) { return doc["cases"][0]; }
json& FollowUp(json& doc) { return doc["cases"][1]; }

INSTANTIATE_TEST_SUITE_P(
    Mistakes, BehaviourCaseFileTest,
    ::testing::Values(
        BadFile{"UnknownCheckKind", [](json& d) { Count(d)["check"]["kind"] = "states_numbr"; },
                "case count: field 'check.kind' names no check kind: \"states_numbr\"; the kinds "
                "are: states_number, names_top_rows, says_none"},
        BadFile{"MissingCheckKind", [](json& d) { Count(d)["check"].erase("kind"); },
                "case count: field 'check.kind' is missing"},
        BadFile{"MissingQuestions", [](json& d) { FollowUp(d).erase("questions"); },
                "case follow_up: field 'questions' is missing"},
        BadFile{"MissingCheck", [](json& d) { Count(d).erase("check"); },
                "case count: field 'check' is missing"},
        BadFile{"MissingId", [](json& d) { FollowUp(d).erase("id"); },
                "cases[1]: field 'id' is missing"},
        BadFile{"MissingParameter", [](json& d) { Count(d)["check"].erase("tolerance"); },
                "case count: field 'check.tolerance' is missing"},
        BadFile{"MissingParameterInATurn",
                [](json& d) { FollowUp(d)["check"]["turns"][1].erase("key"); },
                "case follow_up: field 'check.turns[1].key' is missing"},
        BadFile{"ToleranceAsText", [](json& d) { Count(d)["check"]["tolerance"] = "0.5"; },
                "case count: field 'check.tolerance' should be a finite number >= 0, found a "
                "string"},
        BadFile{"NegativeTolerance", [](json& d) { Count(d)["check"]["tolerance"] = -1; },
                "case count: field 'check.tolerance' should be a finite number >= 0, found -1"},
        BadFile{"QuestionsAsText", [](json& d) { Count(d)["questions"] = "How many tracks?"; },
                "case count: field 'questions' should be an array of strings, found a string"},
        BadFile{"ThreadAsText", [](json& d) { FollowUp(d)["thread"] = "yes"; },
                "case follow_up: field 'thread' should be a boolean, found a string"},
        BadFile{"ReferenceAsNumber", [](json& d) { Count(d)["reference"]["tracks"] = 3503; },
                "case count: field 'reference.tracks' should be a string of SQL, found an "
                "integer"},
        BadFile{"CheckKeyWithoutAReference", [](json& d) { Count(d)["check"]["key"] = "trakcs"; },
                "case count: field 'check.key' names \"trakcs\", which no reference query of "
                "the case computes"},
        BadFile{"MisspelledParameter",
                [](json& d) {
                  Count(d)["check"].erase("tolerance");
                  Count(d)["check"]["tolerence"] = 0.5;
                },
                "case count: field 'check.tolerance' is missing"},
        BadFile{"ExtraParameter", [](json& d) { Count(d)["check"]["within"] = 0.5; },
                "case count: unknown field 'check.within' for a states_number check"},
        BadFile{"UnknownCaseField", [](json& d) { Count(d)["wdie"] = true; },
                "case count: unknown field 'wdie'"},
        BadFile{"TurnsNotOnePerQuestion", [](json& d) { FollowUp(d)["check"]["turns"].erase(1); },
                "case follow_up: field 'check.turns' should hold one entry per question (2), "
                "found 1"},
        BadFile{"DuplicateId", [](json& d) { FollowUp(d)["id"] = "count"; },
                "case count: field 'id' is used by an earlier case"},
        BadFile{"IdNotAName", [](json& d) { Count(d)["id"] = "Count Tracks"; },
                "cases[0]: field 'id' should match [a-z0-9_]+, found \"Count Tracks\""},
        BadFile{"CaseNotAnObject", [](json& d) { d["cases"][1] = "follow_up"; },
                "cases[1] should be an object, found a string"},
        BadFile{"NoCases", [](json& d) { d["cases"] = json::array(); }, "\"cases\" is empty"},
        BadFile{"CasesNotAnArray", [](json& d) { d["cases"] = json::object(); },
                "field 'cases' should be an array, found an object"}),
    [](const ::testing::TestParamInfo<BadFile>& mistake) { return mistake.param.name; });

TEST(BehaviourCasesTest, AFileThatIsNotJsonOrIsMissingIsAnErrorNamingIt) {
  TempDir dir;
  const fs::path file = dir.Write("cases.json", R"({"cases": [{"id": "count",)");
  auto defs = LoadCases(file);
  ASSERT_FALSE(defs.has_value());
  EXPECT_EQ(defs.error().message, file.string() + ": not valid JSON");
  auto missing = LoadCases(dir.path() / "nope.json");
  ASSERT_FALSE(missing.has_value());
  EXPECT_EQ(missing.error().code, Error::Code::kData);
  EXPECT_NE(missing.error().message.find((dir.path() / "nope.json").string() + " not found"),
            std::string::npos)
      << missing.error().message;
}

}  // namespace
}  // namespace quarry::bench::behaviour
