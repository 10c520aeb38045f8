// The LLM judge (suite.h): prompts/judge.md filled with the question, the rubric, the computed
// facts and the answer; three calls, sampled (the facts in a different order per call, at a
// nonzero temperature), each reply read as {"verdict", "reason"}; the majority decides, and a
// reply that cannot be read is no vote (reported, never guessed).
#include <algorithm>
#include <cctype>
#include <map>

#include "quarry/bench/suite.h"
#include "quarry/common/json.h"
#include "quarry/common/json_fields.h"

namespace quarry::bench {

const std::map<std::string, std::string>& JudgePrompts();  // embedded prompts/judge.md

namespace {

using json = nlohmann::ordered_json;

void ReplaceAll(std::string& text, const std::string& mark, const std::string& value) {
  for (size_t pos = 0; (pos = text.find(mark, pos)) != std::string::npos; pos += value.size()) {
    text.replace(pos, mark.size(), value);
  }
}

// Material between the prompt's markers cannot close them: "</answer>" inside the answer
// would let it pose as the prompt's own text.
std::string Defang(std::string text) {
  for (size_t pos = 0; (pos = text.find("</", pos)) != std::string::npos; pos += 3) {
    text.replace(pos, 2, "< /");
  }
  return text;
}

}  // namespace

std::vector<size_t> JudgeFactOrder(size_t n, int vote) {
  std::vector<size_t> order(n);
  for (size_t i = 0; i < n; ++i) order[i] = i;
  if (vote == 1) std::reverse(order.begin(), order.end());
  if (vote == 2 && n > 1) std::rotate(order.begin(), order.begin() + 1, order.end());
  return order;
}

std::string JudgePrompt(const Task& task, std::string_view answer, int vote) {
  std::string text = JudgePrompts().at("judge");
  std::string facts;
  for (size_t i : JudgeFactOrder(task.facts.size(), vote)) {
    facts += "- " + Defang(task.facts[i]) + "\n";
  }
  if (!facts.empty()) facts.pop_back();
  // The answer last: what it holds can never be taken for a later placeholder.
  ReplaceAll(text, "{{question}}", Defang(task.question));
  ReplaceAll(text, "{{rubric}}", Defang(task.rubric));
  ReplaceAll(text, "{{facts}}", facts);
  ReplaceAll(text, "{{answer}}", Defang(std::string(answer)));
  return text;
}

JudgeVote ParseJudgeReply(std::string_view reply) {
  JudgeVote vote;
  vote.reply = std::string(reply.substr(0, 2000));
  // The reply is one JSON object, bare or in one code fence. Text beside it could say the
  // opposite ("Verdict: fail. {\"verdict\": \"pass\"}"), so a reply with any is no vote.
  std::string_view body = reply;
  const auto trim = [](std::string_view t) {
    const size_t a = t.find_first_not_of(" \t\r\n");
    if (a == std::string_view::npos) return std::string_view();
    return t.substr(a, t.find_last_not_of(" \t\r\n") - a + 1);
  };
  body = trim(body);
  if (body.starts_with("```") && body.size() >= 6 && body.ends_with("```")) {
    body = body.substr(3, body.size() - 6);
    if (body.starts_with("json")) body.remove_prefix(4);
    body = trim(body);
  }
  if (body.empty() || body.front() != '{' || body.back() != '}') {
    vote.reason = "unparseable judge reply: not one JSON object (text beside it is not read)";
    return vote;
  }
  const json doc = ParseJson(body);
  if (doc.is_discarded() || !doc.is_object()) {
    vote.reason = "unparseable judge reply: not a JSON object";
    return vote;
  }
  std::string verdict = JsonString(doc, "verdict");
  for (char& c : verdict) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  if (verdict != "pass" && verdict != "fail") {
    vote.reason = "unparseable judge reply: 'verdict' is not \"pass\" or \"fail\"";
    return vote;
  }
  vote.verdict = verdict;
  vote.reason = JsonString(doc, "reason");
  return vote;
}

JudgeResult JudgeAnswer(llm::Client& client, const Task& task, std::string_view answer) {
  JudgeResult result;
  for (int i = 0; i < kJudgeCalls; ++i) {
    llm::Request request;
    request.messages.push_back({llm::Role::kUser, JudgePrompt(task, answer, i), {}, {}});
    request.temperature = kJudgeTemperature;
    auto turn = client.Complete(request);
    JudgeVote vote;
    if (!turn) {
      vote.reason = "judge call failed: " + turn.error().message;
    } else {
      vote = ParseJudgeReply(turn->content);
      vote.cost_usd = turn->cost_usd;
      vote.latency_ms = turn->latency_ms;
    }
    result.cost_usd += vote.cost_usd;
    if (vote.verdict == "pass") {
      ++result.pass_votes;
    } else if (vote.verdict == "fail") {
      ++result.fail_votes;
    } else {
      ++result.no_votes;
    }
    result.votes.push_back(std::move(vote));
  }
  const int majority = kJudgeCalls / 2 + 1;
  result.decided = result.pass_votes >= majority || result.fail_votes >= majority;
  result.pass = result.pass_votes >= majority;
  result.agreed = result.no_votes == 0 &&
                  (result.pass_votes == kJudgeCalls || result.fail_votes == kJudgeCalls);
  return result;
}

}  // namespace quarry::bench
