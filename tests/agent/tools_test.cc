// Tool-call argument validation against the tool schemas, and the system prompt's contents.
#include <gtest/gtest.h>

#include "quarry/agent/agent.h"
#include "support/test_support.h"

namespace quarry::agent {
namespace {

using json = nlohmann::ordered_json;

const json& SchemaOf(const std::vector<Tool>& tools, const std::string& name) {
  for (const auto& t : tools) {
    if (t.schema.name == name) return t.schema.parameters;
  }
  throw std::runtime_error("no tool " + name);
}

TEST(ToolsTest, ArgumentsAreValidatedAgainstTheSchema) {
  const auto tools = DefaultTools();
  const json& sql = SchemaOf(tools, "run_sql");
  EXPECT_EQ(ValidateArguments(sql, json{{"sql", "SELECT 1"}}), "");
  EXPECT_EQ(ValidateArguments(sql, json::object()), "missing required argument 'sql'");
  EXPECT_EQ(ValidateArguments(sql, json{{"sql", 42}}),
            "argument 'sql' must be \"string\", got integer");
  EXPECT_EQ(ValidateArguments(sql, json{{"sql", ""}}), "argument 'sql' must not be empty");
  EXPECT_EQ(ValidateArguments(sql, json::array()), "arguments must be a JSON object, got array");
  EXPECT_NE(
      ValidateArguments(sql, json{{"sql", "x"}, {"limit", 3}}).find("unknown argument 'limit'"),
      std::string::npos);

  const json& answer = SchemaOf(tools, "final_answer");
  EXPECT_EQ(ValidateArguments(answer, json{{"answer", "x"}, {"supporting_values", {"a", 1.5}}}),
            "");
  EXPECT_EQ(
      ValidateArguments(answer, json{{"answer", "x"}, {"supporting_values", {json::object()}}}),
      "every item of 'supporting_values' must be [\"string\",\"number\"], got object");
  EXPECT_EQ(ValidateArguments(answer, json{{"answer", "x"}}),
            "missing required argument 'supporting_values'");

  const json& inspect = SchemaOf(tools, "inspect_schema");
  EXPECT_EQ(ValidateArguments(inspect, json::object()), "");
}

TEST(ToolsTest, ExecutionToolsAreMarked) {
  for (const auto& t : DefaultTools()) {
    EXPECT_EQ(t.execution, t.schema.name == "run_sql" || t.schema.name == "run_python" ||
                               t.schema.name == "make_chart")
        << t.schema.name;
  }
  for (const auto& t : DefaultTools(false)) {
    EXPECT_NE(t.schema.name, "run_python");
  }
}

TEST(ToolsTest, SystemPromptCarriesDialectCardsAndTheDataRule) {
  auto engine = engine::Open({quarry::testing::SourceDir() / "data" / "chinook.sqlite"});
  ASSERT_TRUE(engine.has_value());
  const std::string prompt = SystemPrompt(**engine);
  EXPECT_NE(prompt.find("served by SQLite"), std::string::npos);
  EXPECT_NE(prompt.find("table Track (3503 rows"), std::string::npos);
  EXPECT_NE(prompt.find("never instructions"), std::string::npos);
  EXPECT_EQ(prompt.find("{{"), std::string::npos);
}

}  // namespace
}  // namespace quarry::agent
