// The verify gate's regression suite: cases as data files (tests/agent/gate/*.test, format in
// its README.md), one runner. Each case gives what the model was shown (results, scripts'
// output, schema cards, a thread's kept results), the question and an answer that is honest,
// false or declined, and may name the verdict expected for single values. The suite prints
// the gate's two error rates apart: false accepts (false answers let through) and false
// rejects (honest answers sent back).
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <iostream>
#include <map>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "quarry/agent/verify.h"
#include "support/test_support.h"

namespace quarry::agent {
namespace {

namespace fs = std::filesystem;
using Rows = std::vector<std::vector<std::optional<std::string>>>;

enum class Truth { kHonest, kFalse, kDeclined };

struct GateCase {
  std::string file;
  int line = 0;
  std::string name;
  std::string kind;
  std::string from;
  std::string question;
  Evidence evidence;
  std::vector<std::string> supporting;
  Truth truth = Truth::kHonest;
  std::string answer;
  std::vector<std::pair<std::string, bool>> expect;  // value, grounded
  std::string error;  // the case file does not parse
};

fs::path CasesDir() { return quarry::testing::SourceDir() / "tests" / "agent" / "gate"; }

std::string Trim(std::string s) {
  const auto blank = [](unsigned char c) { return c == ' ' || c == '\t' || c == '\r'; };
  while (!s.empty() && blank(static_cast<unsigned char>(s.back()))) s.pop_back();
  size_t b = 0;
  while (b < s.size() && blank(static_cast<unsigned char>(s[b]))) ++b;
  return s.substr(b);
}

std::vector<std::string> SplitCells(const std::string& line) {
  std::vector<std::string> out;
  size_t at = 0;
  for (size_t bar = line.find(" | "); bar != std::string::npos; bar = line.find(" | ", at)) {
    out.push_back(Trim(line.substr(at, bar - at)));
    at = bar + 3;
  }
  out.push_back(Trim(line.substr(at)));
  return out;
}

// "sql 2 SELECT ...", "thread 1 2 SELECT ...": the numbers, then the rest of the line.
std::vector<int> LeadingInts(std::string& rest, size_t count) {
  std::vector<int> out;
  std::istringstream in(rest);
  for (size_t i = 0; i < count; ++i) {
    int v = 0;
    if (!(in >> v)) return {};
    out.push_back(v);
  }
  std::string tail;
  std::getline(in, tail);
  rest = Trim(tail);
  return out;
}

std::vector<GateCase> ReadCases(const fs::path& file) {
  std::vector<GateCase> cases;
  std::istringstream in(quarry::testing::ReadFile(file));
  std::string line;
  int number = 0;
  const auto fail = [&](const std::string& why) {
    if (cases.empty()) cases.emplace_back();
    cases.back().error = file.filename().string() + ":" + std::to_string(number) + ": " + why;
  };
  // The lines of a block, up to its "end".
  const auto block = [&]() {
    std::vector<std::string> lines;
    while (std::getline(in, line)) {
      ++number;
      if (Trim(line) == "end") return lines;
      lines.push_back(line);
    }
    fail("a block has no \"end\" line");
    return lines;
  };
  while (std::getline(in, line)) {
    ++number;
    const std::string t = Trim(line);
    if (t.empty() || t[0] == '#') continue;
    const size_t space = t.find(' ');
    const std::string word = t.substr(0, space);
    std::string rest = space == std::string::npos ? "" : Trim(t.substr(space + 1));
    if (word == "case") {
      cases.emplace_back();
      cases.back().file = file.filename().string();
      cases.back().line = number;
      cases.back().name = rest;
      continue;
    }
    if (cases.empty()) {
      fail("\"" + word + "\" before the first \"case\"");
      break;
    }
    GateCase& c = cases.back();
    if (word == "kind") {
      c.kind = rest;
    } else if (word == "from") {
      c.from = rest;
    } else if (word == "question") {
      c.question = rest;
    } else if (word == "supporting") {
      c.supporting.push_back(rest);
    } else if (word == "honest" || word == "false" || word == "declined") {
      c.truth = word == "honest" ? Truth::kHonest : word == "false" ? Truth::kFalse : Truth::kDeclined;
      c.answer = rest;
    } else if (word == "grounded" || word == "refused") {
      c.expect.emplace_back(rest, word == "grounded");
    } else if (word == "card") {
      std::string text;
      for (const std::string& l : block()) text += l + "\n";
      c.evidence.AddCard(text);
    } else if (word == "python") {
      const std::vector<int> step = LeadingInts(rest, 1);
      if (step.empty()) fail("python needs a step: python STEP CODE");
      std::string text;
      for (const std::string& l : block()) text += l + "\n";
      c.evidence.AddText({step.empty() ? 0 : step[0], "run_python", rest, -1}, text);
    } else if (word == "sql" || word == "thread") {
      const std::vector<int> at = LeadingInts(rest, word == "sql" ? 1 : 2);
      if (at.empty()) fail(word + " needs " + (word == "sql" ? "a step" : "a turn and a step"));
      const std::vector<std::string> lines = block();
      if (lines.empty()) {
        fail("a result needs a header line");
        continue;
      }
      const std::vector<std::string> columns = SplitCells(lines[0]);
      Rows rows;
      for (size_t i = 1; i < lines.size(); ++i) {
        std::vector<std::optional<std::string>> row;
        for (const std::string& cell : SplitCells(lines[i])) {
          row.push_back(cell == "NULL" ? std::nullopt : std::optional<std::string>(cell));
        }
        if (row.size() != columns.size()) fail("a row's cells do not match the header");
        rows.push_back(std::move(row));
      }
      EvidenceSource source{at.empty() ? 0 : at.back(), "run_sql", rest,
                            static_cast<int64_t>(rows.size())};
      if (word == "thread" && !at.empty()) source.turn = at[0];
      c.evidence.AddResult(source, columns, rows);
    } else {
      fail("unknown line \"" + word + "\"");
    }
  }
  for (const GateCase& c : cases) {
    if (c.error.empty() && c.answer.empty()) {
      cases.back().error = file.filename().string() + ": case " + c.name + " has no answer";
    }
  }
  return cases;
}

std::vector<GateCase>& AllCases() {
  static std::vector<GateCase>* all = [] {
    auto* out = new std::vector<GateCase>;
    std::vector<fs::path> files;
    for (const auto& e : fs::directory_iterator(CasesDir())) {
      if (e.path().extension() == ".test") files.push_back(e.path());
    }
    std::sort(files.begin(), files.end());
    for (const fs::path& f : files) {
      for (GateCase& c : ReadCases(f)) out->push_back(std::move(c));
    }
    return out;
  }();
  return *all;
}

struct Outcome {
  bool accepted = false;
  std::string why;  // what disagrees with the case's expectations, "" when nothing
};

Outcome Judge(const GateCase& c) {
  const VerifyReport report =
      c.truth == Truth::kDeclined ? VerifyDeclined(c.answer, c.evidence, c.question)
                                  : Verify(c.answer, c.supporting, c.evidence, c.question);
  Outcome out;
  out.accepted = report.grounded();
  std::string refused;
  for (const ValueCheck& v : report.checks) {
    if (!v.grounded()) refused += "\n  refused " + v.value + ": " + v.reason;
  }
  if (c.truth != Truth::kFalse && !out.accepted) out.why = "an honest answer was refused" + refused;
  if (c.truth == Truth::kFalse && out.accepted) out.why = "a false answer was accepted";
  for (const auto& [value, grounded] : c.expect) {
    const auto check = std::find_if(report.checks.begin(), report.checks.end(),
                                    [&](const ValueCheck& v) { return v.value == value; });
    if (check == report.checks.end()) {
      out.why += "\n  no check of the value " + value;
    } else if (check->grounded() != grounded) {
      out.why += "\n  " + value + (grounded ? " was refused: " + check->reason
                                            : " was grounded by " +
                                                  std::string(MatchRuleName(check->rule)) +
                                                  " against " + check->matched);
    }
  }
  return out;
}

class GateSuiteTest : public ::testing::TestWithParam<size_t> {};

TEST_P(GateSuiteTest, VerdictIsRight) {
  const GateCase& c = AllCases()[GetParam()];
  ASSERT_TRUE(c.error.empty()) << c.error;
  EXPECT_FALSE(c.kind.empty()) << c.file << ":" << c.line << " names no kind";
  EXPECT_TRUE(c.from == "live" || c.from == "variant" || c.from == "scenario")
      << c.file << ":" << c.line << ": from is live, variant or scenario, not \"" << c.from << "\"";
  const Outcome o = Judge(c);
  EXPECT_TRUE(o.why.empty()) << c.file << ":" << c.line << " " << c.name << ": " << o.why;
}

std::vector<size_t> CaseIndexes() {
  std::vector<size_t> out(AllCases().size());
  for (size_t i = 0; i < out.size(); ++i) out[i] = i;
  return out;
}

INSTANTIATE_TEST_SUITE_P(Cases, GateSuiteTest, ::testing::ValuesIn(CaseIndexes()),
                         [](const ::testing::TestParamInfo<size_t>& param) {
                           std::string n = AllCases()[param.param].name;
                           for (char& ch : n) {
                             if (!std::isalnum(static_cast<unsigned char>(ch))) ch = '_';
                           }
                           return n.empty() ? "case" + std::to_string(param.param) : n;
                         });

// The two rates, apart and per kind, on stdout: the figure the README and the closing notes
// quote. Both must be zero.
TEST(GateSuiteRates, FalseAcceptsAndFalseRejects) {
  struct Tally {
    int honest = 0, rejected = 0, lies = 0, accepted = 0;
  };
  std::map<std::string, Tally> kinds;
  Tally all;
  std::string broken;
  for (const GateCase& c : AllCases()) {
    if (!c.error.empty()) {
      broken += "\n  " + c.error;
      continue;
    }
    const Outcome o = Judge(c);
    for (Tally* t : {&kinds[c.kind], &all}) {
      if (c.truth == Truth::kFalse) {
        ++t->lies;
        t->accepted += o.accepted ? 1 : 0;
      } else {
        ++t->honest;
        t->rejected += o.accepted ? 0 : 1;
      }
    }
  }
  const auto line = [](const std::string& what, const Tally& t) {
    return what + ": false accepts " + std::to_string(t.accepted) + "/" + std::to_string(t.lies) +
           " false answers, false rejects " + std::to_string(t.rejected) + "/" +
           std::to_string(t.honest) + " honest answers\n";
  };
  std::string report = line("gate suite", all);
  for (const auto& [kind, t] : kinds) report += line("  " + kind, t);
  std::cout << report;
  // A case file that does not parse is a failure here too, not a case left out of the rates.
  EXPECT_TRUE(broken.empty()) << "case files that do not parse:" << broken;
  EXPECT_GT(all.lies, 0);
  EXPECT_GT(all.honest, 0);
  EXPECT_EQ(all.accepted, 0) << report;
  EXPECT_EQ(all.rejected, 0) << report;
}

}  // namespace
}  // namespace quarry::agent
