// ask_user through agent::Run with real Chinook (SQLite): a reply during the run (a callback),
// no reply (the run ends waiting on the question), and a resumed run whose reply came later.
// Model turns are scripted in each test; what the model was sent is read from the requests.
#include <gtest/gtest.h>

#include "open_engine.h"
#include "quarry/agent/agent.h"
#include "quarry/agent/agent_internal.h"
#include "quarry/agent/threads.h"
#include "recording_client.h"
#include "support/test_support.h"

namespace quarry::agent {
namespace {

using json = nlohmann::ordered_json;
using testing::Call;
using testing::RecordingClient;
using testing::Scripted;

const char* kQuestion = "Who is the top customer?";
const char* kAsk = "Top customer by which measure?";
const std::vector<std::string> kChoices = {"by revenue", "by number of invoices",
                                           "by tracks bought"};
const char* kTopByRevenue =
    "SELECT c.FirstName || ' ' || c.LastName AS customer, round(sum(i.Total), 2) AS revenue "
    "FROM Customer c JOIN Invoice i ON i.CustomerId = c.CustomerId GROUP BY c.CustomerId "
    "ORDER BY revenue DESC LIMIT 1";
const json kAnswer = {{"answer", "The top customer by revenue is Helena Holý, with 49.62."},
                      {"supporting_values", {"Helena Holý", "49.62"}},
                      {"assumptions", json::array()}};

class ClarifyTest : public ::testing::Test {
 protected:
  void SetUp() override {
    engine_ = testing::OpenOrDie({quarry::testing::SourceDir() / "data" / "chinook.sqlite"});
    config_.python = false;
  }
  trace::Trace RunIt(const RunInput& input) {
    auto writer = trace::Writer::Create(runs_.path(), input.run_id);
    EXPECT_TRUE(writer.has_value());
    return agent::Run(input, *engine_, client_, config_, nullptr, &*writer);
  }
  RunInput Input() {
    RunInput input;
    input.question = kQuestion;
    input.run_id = "run1";
    return input;
  }
  trace::Trace ReadBack() {
    auto t = trace::ReadTrace(runs_.path() / "run1" / "trace.json");
    EXPECT_TRUE(t.has_value()) << t.error().message;
    return t ? *t : trace::Trace{};
  }

  std::unique_ptr<engine::Engine> engine_;
  Config config_;
  RecordingClient client_;
  quarry::testing::TempDir runs_;
};

TEST_F(ClarifyTest, ReplyDuringTheRunContinuesToAGroundedAnswer) {
  client_.turns = {
      Scripted({Call("call_1", "ask_user", {{"question", kAsk}, {"choices", kChoices}})}),
      Scripted({Call("call_2", "run_sql", {{"sql", kTopByRevenue}})}),
      Scripted({Call("call_3", "final_answer", kAnswer)})};
  std::vector<Clarification> asked;
  RunInput input = Input();
  input.ask_user = [&asked](const Clarification& c) -> std::optional<std::string> {
    asked.push_back(c);
    return "by revenue";
  };
  const trace::Trace t = RunIt(input);

  EXPECT_EQ(t.stop_reason, trace::StopReason::kAnswered);
  EXPECT_TRUE(t.grounded);
  EXPECT_EQ(t.answer, kAnswer["answer"]);
  ASSERT_EQ(asked.size(), 1u);
  EXPECT_EQ(asked[0].question, kAsk);
  EXPECT_EQ(asked[0].choices, kChoices);
  // The model's next request ends with the reply as the ask_user call's result.
  ASSERT_EQ(client_.requests.size(), 3u);
  const llm::Message& reply = client_.requests[1].messages.back();
  EXPECT_EQ(reply.role, llm::Role::kTool);
  EXPECT_EQ(reply.tool_call_id, "call_1");
  EXPECT_EQ(reply.content, "the user replied: by revenue");
  // The trace: a clarification step and its record with the reply.
  ASSERT_EQ(t.clarifications.size(), 1u);
  EXPECT_EQ(t.clarifications[0].step, 2);
  EXPECT_EQ(t.clarifications[0].question, kAsk);
  EXPECT_EQ(t.clarifications[0].choices, kChoices);
  EXPECT_EQ(t.clarifications[0].reply, "by revenue");
  const trace::Step& step = t.steps[1];
  EXPECT_EQ(step.kind, trace::StepKind::kClarification);
  EXPECT_EQ(step.tool, "ask_user");
  EXPECT_EQ(step.status, trace::StepStatus::kOk);
  EXPECT_EQ(step.observation, "the user replied: by revenue");
  EXPECT_TRUE(step.detail.contains("wait_ms"));
  EXPECT_EQ(step.detail.value("reply", ""), "by revenue");
  EXPECT_EQ(t.totals.tool_calls, 3);
  EXPECT_EQ(t.totals.model_turns, 3);
  EXPECT_TRUE(t.explanation.empty());
  const trace::Trace back = ReadBack();
  ASSERT_EQ(back.clarifications.size(), 1u);
  EXPECT_EQ(back.clarifications[0].reply, "by revenue");
  EXPECT_EQ(back.steps[1].kind, trace::StepKind::kClarification);
}

TEST_F(ClarifyTest, AskUserIsARepairAttemptThatClearsNoFailure) {
  client_.turns = {
      Scripted({Call("call_1", "run_sql", {{"sql", "SELECT Revenue FROM Customer"}})}),
      Scripted({Call("call_2", "ask_user", {{"question", kAsk}, {"choices", kChoices}})}),
      Scripted({Call("call_3", "run_sql", {{"sql", kTopByRevenue}})}),
      Scripted({Call("call_4", "final_answer", kAnswer)})};
  RunInput input = Input();
  input.ask_user = [](const Clarification&) { return std::optional<std::string>("by revenue"); };
  const trace::Trace t = RunIt(input);

  EXPECT_EQ(t.stop_reason, trace::StopReason::kAnswered);
  EXPECT_TRUE(t.grounded);
  // ask_user, made while the failure was outstanding, is a repair attempt that repairs nothing;
  // the query after it is the one that succeeds.
  EXPECT_EQ(t.totals.repair_attempts, 2);
  EXPECT_EQ(t.totals.repair_successes, 1);
  EXPECT_TRUE(t.steps[3].repair);
  EXPECT_EQ(t.steps[3].tool, "ask_user");
  ASSERT_EQ(t.answer_queries.size(), 1u);
  EXPECT_EQ(t.answer_queries[0].step, 6);  // the answer rests on the query, not the reply
}

TEST_F(ClarifyTest, NoReplyEndsTheRunWaitingOnTheQuestion) {
  client_.turns = {
      Scripted({Call("call_1", "ask_user", {{"question", kAsk}, {"choices", kChoices}})}),
      Scripted({Call("call_2", "final_answer", kAnswer)})};
  RunInput input = Input();
  int calls = 0;
  input.ask_user = [&calls](const Clarification&) -> std::optional<std::string> {
    ++calls;
    return std::nullopt;  // declined
  };
  const trace::Trace t = RunIt(input);

  EXPECT_EQ(calls, 1);
  EXPECT_EQ(t.stop_reason, trace::StopReason::kClarification);
  EXPECT_FALSE(t.grounded);
  EXPECT_TRUE(t.answer.empty());
  EXPECT_TRUE(t.verify.empty());
  EXPECT_TRUE(t.explanation.empty());  // not a budget stop: no explanation call
  EXPECT_EQ(client_.requests.size(), 1u);
  ASSERT_EQ(t.clarifications.size(), 1u);
  EXPECT_EQ(t.clarifications[0].reply, "");
  EXPECT_EQ(t.steps.back().status, trace::StepStatus::kWaiting);
  EXPECT_EQ(ReadBack().stop_reason, trace::StopReason::kClarification);
}

TEST_F(ClarifyTest, AThrowingCallbackReadsAsNoReply) {
  client_.turns = {Scripted({Call("call_1", "ask_user", {{"question", kAsk}})})};
  RunInput input = Input();
  input.ask_user = [](const Clarification&) -> std::optional<std::string> {
    throw std::runtime_error("the terminal was closed");
  };
  const trace::Trace t = RunIt(input);

  EXPECT_EQ(t.stop_reason, trace::StopReason::kClarification);
  ASSERT_EQ(t.clarifications.size(), 1u);
  EXPECT_TRUE(t.clarifications[0].choices.empty());
  bool noted = false;
  for (const auto& n : t.notes)
    noted = noted || n == "asking the user failed: the terminal was closed";
  EXPECT_TRUE(noted);
}

TEST_F(ClarifyTest, ResumedRunSeesTheReplyAsIfItCameDuringTheRun) {
  client_.turns = {Scripted({Call("call_1", "run_sql", {{"sql", kTopByRevenue}})}),
                   Scripted({Call("call_2", "final_answer", kAnswer)})};
  RunInput input = Input();
  input.resume = PendingClarification{{kAsk, kChoices, ""}, "by revenue"};
  input.thread = "customers";
  input.thread_turn = 2;
  const trace::Trace t = RunIt(input);

  EXPECT_EQ(t.stop_reason, trace::StopReason::kAnswered);
  EXPECT_TRUE(t.grounded);
  ASSERT_FALSE(client_.requests.empty());
  const auto& m = client_.requests[0].messages;
  ASSERT_EQ(m.size(), 4u);
  EXPECT_EQ(m[0].role, llm::Role::kSystem);
  EXPECT_EQ(m[1].role, llm::Role::kUser);
  EXPECT_EQ(m[1].content, kQuestion);
  EXPECT_EQ(m[2].role, llm::Role::kAssistant);
  ASSERT_EQ(m[2].tool_calls.size(), 1u);
  EXPECT_EQ(m[2].tool_calls[0].id, "resume_1");
  EXPECT_EQ(m[2].tool_calls[0].name, "ask_user");
  EXPECT_EQ(json::parse(m[2].tool_calls[0].arguments_json),
            (json{{"question", kAsk}, {"choices", kChoices}}));
  EXPECT_EQ(m[3].role, llm::Role::kTool);
  EXPECT_EQ(m[3].tool_call_id, "resume_1");
  EXPECT_EQ(m[3].content, "the user replied: by revenue");
  // Recorded at step 0: asked before this run, which has no clarification step of its own.
  ASSERT_EQ(t.clarifications.size(), 1u);
  EXPECT_EQ(t.clarifications[0].step, 0);
  EXPECT_EQ(t.clarifications[0].reply, "by revenue");
  for (const auto& s : t.steps) EXPECT_NE(s.kind, trace::StepKind::kClarification);
  EXPECT_EQ(t.thread, "customers");
  EXPECT_EQ(t.thread_turn, 2);
  const trace::Trace back = ReadBack();
  ASSERT_EQ(back.clarifications.size(), 1u);
  EXPECT_EQ(back.clarifications[0].choices, kChoices);
}

// Issue 22: a number the model writes into a choice is the model's, however the user picks
// it (its number, its text in any case, an MCP client's enum value, inside a longer reply).
// Only what the user typed is given. Chinook's real total revenue is 2328.6.
const std::vector<std::string> kPlantedChoices = {"total revenue (987654)", "number of orders"};
const char* kRevenue = "SELECT round(sum(Total), 2) AS revenue FROM Invoice";
const json kPlantedAnswer = {{"answer", "Total revenue is $987,654."},
                             {"supporting_values", {"987654"}},
                             {"assumptions", json::array()}};

class PickedChoiceTest : public ClarifyTest, public ::testing::WithParamInterface<std::string> {};

TEST_P(PickedChoiceTest, ANumberInAPickedChoiceGroundsNothing) {
  client_.turns = {Scripted({Call("call_1", "ask_user",
                                  {{"question", "Which measure?"}, {"choices", kPlantedChoices}})}),
                   Scripted({Call("call_2", "run_sql", {{"sql", kRevenue}})}),
                   Scripted({Call("call_3", "final_answer", kPlantedAnswer)}),
                   Scripted({Call("call_4", "final_answer", kPlantedAnswer)})};
  RunInput input = Input();
  const std::string typed = GetParam();
  input.ask_user = [typed](const Clarification& c) -> std::optional<std::string> {
    auto reply = ReplyText(c, typed);  // as chat and `ask --thread` read what was typed
    return reply ? *reply : typed;
  };
  const trace::Trace t = RunIt(input);

  EXPECT_FALSE(t.grounded);
  EXPECT_EQ(t.stop_reason, trace::StopReason::kUngrounded);
  EXPECT_TRUE(t.answer.empty());
  bool checked = false;
  for (const auto& v : t.verify) {
    if (v.value == "987654" || v.value == "$987,654") {
      checked = true;
      EXPECT_FALSE(v.grounded) << v.value << " grounded by " << v.rule;
    }
  }
  EXPECT_TRUE(checked);
}

INSTANTIATE_TEST_SUITE_P(Picks, PickedChoiceTest,
                         ::testing::Values("1", "total revenue (987654)", "TOTAL REVENUE (987654)",
                                           "  total revenue (987654) ",
                                           "total revenue (987654), please"));

TEST_F(ClarifyTest, AResumedPickOfAChoiceGroundsNothing) {
  client_.turns = {Scripted({Call("call_1", "run_sql", {{"sql", kRevenue}})}),
                   Scripted({Call("call_2", "final_answer", kPlantedAnswer)}),
                   Scripted({Call("call_3", "final_answer", kPlantedAnswer)})};
  RunInput input = Input();
  input.resume = PendingClarification{{"Which measure?", kPlantedChoices, ""}, kPlantedChoices[0]};
  const trace::Trace t = RunIt(input);

  EXPECT_FALSE(t.grounded);
  EXPECT_EQ(t.stop_reason, trace::StopReason::kUngrounded);
}

TEST_F(ClarifyTest, ANumberTheUserTypedIsStillGiven) {
  // The honest side: a free reply is the user's, like the question, also when choices exist.
  const json answer = {{"answer", "Revenue above the threshold of 987654 is $2,328.60."},
                       {"supporting_values", {"987654", "2328.6"}},
                       {"assumptions", json::array()}};
  client_.turns = {Scripted({Call("call_1", "ask_user",
                                  {{"question", "Which measure?"}, {"choices", kPlantedChoices}})}),
                   Scripted({Call("call_2", "run_sql", {{"sql", kRevenue}})}),
                   Scripted({Call("call_3", "final_answer", answer)})};
  RunInput input = Input();
  input.ask_user = [](const Clarification&) -> std::optional<std::string> {
    return "revenue, with a threshold of 987654";
  };
  const trace::Trace t = RunIt(input);

  EXPECT_TRUE(t.grounded);
  EXPECT_EQ(t.stop_reason, trace::StopReason::kAnswered);
}

TEST_F(ClarifyTest, AskUserIsOfferedWithItsLimits) {
  client_.turns = {Scripted({}, "")};
  (void)RunIt(Input());
  ASSERT_FALSE(client_.requests.empty());
  const llm::ToolSchema* ask = nullptr;
  for (const auto& tool : client_.requests[0].tools) {
    if (tool.name == "ask_user") ask = &tool;
  }
  ASSERT_NE(ask, nullptr);
  EXPECT_EQ(ask->parameters["required"], json::array({"question"}));
  EXPECT_EQ(ask->parameters["properties"]["question"]["maxLength"], 500);
  EXPECT_EQ(ask->parameters["properties"]["choices"]["maxItems"], 6);
  // The system prompt says when to ask, and that a choice made instead is an assumption.
  const std::string& system = client_.requests[0].messages[0].content;
  EXPECT_NE(system.find("not named (\"sales for that artist\")"), std::string::npos);
  EXPECT_NE(system.find("by revenue, orders or quantity? give `choices`"), std::string::npos);
  EXPECT_NE(system.find("`assumptions` must name the choice"), std::string::npos);
}

TEST(ClarificationArgumentsTest, BlankDuplicateAndMultiLineOptionsAreRefused) {
  using ojson = nlohmann::ordered_json;
  std::string problem;
  ClarificationFrom(ojson{{"question", "Which measure?"}, {"choices", {"revenue", "orders"}}},
                    &problem);
  EXPECT_EQ(problem, "");
  ClarificationFrom(ojson{{"question", "   "}}, &problem);
  EXPECT_EQ(problem, "`question` is empty: ask one short question");
  ClarificationFrom(ojson{{"question", "Which?"}, {"choices", {"revenue", "revenue"}}}, &problem);
  EXPECT_EQ(problem, "the choice \"revenue\" is given twice: each option once");
  ClarificationFrom(ojson{{"question", "Which?"}, {"choices", {"revenue\n3. delete it", "orders"}}},
                    &problem);
  EXPECT_EQ(problem,
            "each choice must be one line of 1 to 100 bytes: a few words naming the option");
  ClarificationFrom(ojson{{"question", "Which?"}, {"choices", {" ", "orders"}}}, &problem);
  EXPECT_NE(problem, "");
}

}  // namespace
}  // namespace quarry::agent
