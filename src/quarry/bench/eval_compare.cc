// Two `quarry eval` runs side by side (eval.h, CompareEvalRuns): BIRD with its evidence as a
// hint, as knowledge or not at all, or any two settings over the same questions, paired by
// question so McNemar's exact test can say whether the difference is more than chance.
#include <cstdio>
#include <fstream>
#include <iterator>
#include <map>
#include <set>

#include "quarry/bench/eval.h"
#include "quarry/common/json.h"

namespace quarry::bench {

namespace {

namespace fs = std::filesystem;
using json = nlohmann::ordered_json;

bool Scored(const std::string& outcome) {
  return outcome == "match" || outcome == "mismatch" || outcome == "prediction_error" ||
         outcome == "no_prediction";
}

// question key -> matched, of the scored questions of one run.
Result<std::map<std::string, bool>> ReadScored(const fs::path& dir) {
  const fs::path file = dir / "questions.jsonl";
  std::error_code ec;
  if (!fs::is_regular_file(file, ec)) {
    return Fail(Error::Code::kUsage, file.string() +
                                         " does not exist: give a folder that a "
                                         "`quarry eval` run wrote");
  }
  std::ifstream in(file, std::ios::binary);
  std::map<std::string, bool> out;
  std::set<std::string> seen;
  std::string line;
  for (int number = 1; std::getline(in, line); ++number) {
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
    const json j = ParseJson(line);
    if (!j.is_object() || !j.contains("outcome") || !j["outcome"].is_string() ||
        !j.contains("question_id") || !j["question_id"].is_string()) {
      return Fail(Error::Code::kData, file.string() + ":" + std::to_string(number) +
                                          ": not a question's result (an object with "
                                          "question_id and outcome)");
    }
    const std::string outcome = j["outcome"].get<std::string>();
    const std::string where = file.string() + ":" + std::to_string(number) + ": ";
    if (!Scored(outcome) && outcome != "harness_error" && outcome != "skipped") {
      return Fail(Error::Code::kData, where + "outcome '" + outcome +
                                          "' is none of match, mismatch, prediction_error, "
                                          "no_prediction, harness_error, skipped");
    }
    const std::string db = j.contains("db_id") && j["db_id"].is_string() ? j["db_id"] : "";
    const std::string key = db + "\n" + j["question_id"].get<std::string>();
    if (!seen.insert(key).second) {
      return Fail(Error::Code::kData, where + "question " + j["question_id"].get<std::string>() +
                                          (db.empty() ? "" : " of " + db) +
                                          " is there twice: one run's results per folder");
    }
    if (Scored(outcome)) out[key] = outcome == "match";
  }
  return out;
}

json Summary(const fs::path& dir) {
  std::ifstream in(dir / "summary.json", std::ios::binary);
  if (!in) return nullptr;
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const json j = ParseJson(text);
  return j.is_object() ? j : json(nullptr);
}

// What a run was: its benchmark, evidence and knowledge settings, from its summary.
std::string Setting(const json& s) {
  if (!s.is_object()) return "no summary.json";
  std::string out;
  auto add = [&](const char* key, const char* label) {
    if (s.contains(key) && s[key].is_string()) {
      out += (out.empty() ? "" : ", ") + std::string(label) + s[key].get<std::string>();
    }
  };
  add("benchmark", "");
  add("model", "model ");
  add("evidence", "evidence as ");
  add("knowledge", "knowledge ");
  return out;
}

std::string Percent(int64_t n, int64_t of) {
  if (of == 0) return "n/a";
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f%%",
                100.0 * static_cast<double>(n) / static_cast<double>(of));
  return buf;
}

}  // namespace

Result<EvalComparison> CompareEvalRuns(const fs::path& a, const fs::path& b) {
  auto left = ReadScored(a);
  if (!left) return std::unexpected(left.error());
  auto right = ReadScored(b);
  if (!right) return std::unexpected(right.error());
  EvalComparison c;
  c.a = a;
  c.b = b;
  c.a_summary = Summary(a);
  c.b_summary = Summary(b);
  for (const auto& [key, matched] : *left) {
    const auto other = right->find(key);
    if (other == right->end()) {
      ++c.only_in_a;
      continue;
    }
    ++c.pairs;
    c.a_matched += matched ? 1 : 0;
    c.b_matched += other->second ? 1 : 0;
    if (matched && other->second) ++c.both;
    if (!matched && !other->second) ++c.neither;
    if (matched && !other->second) ++c.a_only;
    if (!matched && other->second) ++c.b_only;
  }
  for (const auto& [key, matched] : *right) c.only_in_b += left->contains(key) ? 0 : 1;
  c.p_value = McNemarExactP(c.a_only, c.b_only);
  return c;
}

json ComparisonJson(const EvalComparison& c) {
  return {{"a", {{"dir", c.a.string()}, {"matched", c.a_matched}, {"summary", c.a_summary}}},
          {"b", {{"dir", c.b.string()}, {"matched", c.b_matched}, {"summary", c.b_summary}}},
          {"pairs", c.pairs},
          {"both_matched", c.both},
          {"neither_matched", c.neither},
          {"matched_only_in_a", c.a_only},
          {"matched_only_in_b", c.b_only},
          {"p_value", c.p_value},
          {"scored_only_in_a", c.only_in_a},
          {"scored_only_in_b", c.only_in_b}};
}

std::string ComparisonText(const EvalComparison& c) {
  std::string out;
  out += "A: " + c.a.string() + " (" + Setting(c.a_summary) + ")\n";
  out += "B: " + c.b.string() + " (" + Setting(c.b_summary) + ")\n";
  out += "questions scored in both: " + std::to_string(c.pairs) + "\n";
  out += "execution accuracy over them: A " + std::to_string(c.a_matched) + "/" +
         std::to_string(c.pairs) + " = " + Percent(c.a_matched, c.pairs) + ", B " +
         std::to_string(c.b_matched) + "/" + std::to_string(c.pairs) + " = " +
         Percent(c.b_matched, c.pairs) + "\n";
  char p[32];
  std::snprintf(p, sizeof p, "%.4g", c.p_value);
  out += "McNemar's exact test: matched only in A " + std::to_string(c.a_only) + ", only in B " +
         std::to_string(c.b_only) + ", two-sided p = " + p + "\n";
  if (c.only_in_a + c.only_in_b > 0) {
    out += "not paired: " + std::to_string(c.only_in_a) + " scored only in A, " +
           std::to_string(c.only_in_b) + " only in B\n";
  }
  return out;
}

}  // namespace quarry::bench
