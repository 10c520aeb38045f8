// The verify gate's regression suite: cases as data files (tests/agent/gate/*.test, format in
// its README.md), one runner. Each case gives what the model was shown (results, scripts'
// output, schema cards, a thread's kept results), the question and an answer that is honest,
// false or declined, and may name the verdict expected for single values (and the rule, the
// evidence and the reason behind it). Each case is its own test, named after the case; the
// suite prints the gate's two error rates apart: false accepts (false answers let through) and
// false rejects (honest answers sent back).
#include <gtest/gtest.h>

#include <algorithm>
#include <exception>
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

// One thing the model was shown, kept in the order the case gives it: the evidence is built
// when the case is judged, so a `keys` line can still reach the result above it.
struct Shown {
  enum class Kind { kResult, kText, kCard, kCode, kCells };
  Kind kind = Kind::kResult;
  EvidenceSource source;
  std::vector<std::string> columns;  // kResult: the header; kCells: the cells
  Rows rows;
  std::vector<std::string> keys;  // kResult: columns the schema declares as keys
  std::string text;               // kText: the output; kCard: the card
};

Shown& Show(std::vector<Shown>& shown, Shown::Kind kind) {
  shown.emplace_back();
  shown.back().kind = kind;
  return shown.back();
}

// What a case expects of the check of one value.
struct ValueExpect {
  std::string value;
  bool grounded = true;
  std::optional<std::string> origin;     // also picks the check when a value is checked twice
  std::optional<std::string> rule;       // MatchRuleName of the rule that grounded it
  std::optional<std::string> matched;    // the evidence it matched, exactly
  std::vector<std::string> matched_has;  // parts of it
  std::optional<std::string> column;     // the column that grounded it
  std::vector<std::string> reason_has;   // parts of the reason it was refused
};

// One line of a `checks` block: the report's checks, all of them, in order.
struct CheckLine {
  std::string value;
  std::string origin;
  std::string rule;
};

struct GateCase {
  std::string file;
  int line = 0;
  std::string name;
  std::string test_name;  // the name sanitized for gtest, unique in the suite
  std::string kind;
  std::string from;
  std::string question;
  std::vector<Shown> shown;
  std::vector<std::string> supporting;
  bool answered = false;
  Truth truth = Truth::kHonest;
  std::string answer;
  std::vector<ValueExpect> expect;
  std::optional<std::vector<CheckLine>> checks;
  std::optional<std::vector<std::string>> unsupported;
  std::optional<std::vector<int>> source_steps;
  std::string error;  // the case file does not parse: "file:line: why"
};

fs::path CasesDir() { return quarry::testing::SourceDir() / "tests" / "agent" / "gate"; }

std::string Trim(std::string s) {
  const auto blank = [](unsigned char c) { return c == ' ' || c == '\t' || c == '\r'; };
  while (!s.empty() && blank(static_cast<unsigned char>(s.back()))) s.pop_back();
  size_t b = 0;
  while (b < s.size() && blank(static_cast<unsigned char>(s[b]))) ++b;
  return s.substr(b);
}

// A value written between backticks is exactly what they hold: `` is the empty string,
// `NULL` the four letters, `  "x" ` keeps its spaces and quotes.
std::string Unquote(const std::string& s) {
  if (s.size() >= 2 && s.front() == '`' && s.back() == '`') return s.substr(1, s.size() - 2);
  return s;
}

// "a | b | c": the cells, trimmed, as written (backticks still on).
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
  const std::string file_name = file.filename().string();
  std::vector<GateCase> cases;
  std::istringstream in(quarry::testing::ReadFile(file));
  std::string line;
  int number = 0;
  bool describing = false;  // the line before was a value's verdict or one of its details
  // The first error of a case is kept: later ones are usually its echoes.
  const auto fail_at = [&](int at, const std::string& why) {
    if (cases.empty()) {
      cases.emplace_back();
      cases.back().file = file_name;
      cases.back().line = at;
      cases.back().name = "unparsed";
    }
    std::string& error = cases.back().error;
    if (error.empty()) error = file_name + ":" + std::to_string(at) + ": " + why;
  };
  const auto fail = [&](const std::string& why) { fail_at(number, why); };
  // The lines of a block, up to its "end".
  const auto block = [&]() {
    const int start = number;
    std::vector<std::string> lines;
    while (std::getline(in, line)) {
      ++number;
      if (Trim(line) == "end") return lines;
      lines.push_back(line);
    }
    fail_at(start, "the block begun here has no \"end\" line");
    return lines;
  };
  const auto joined = [](const std::vector<std::string>& lines, bool final_newline) {
    std::string text;
    for (size_t i = 0; i < lines.size(); ++i) {
      text += lines[i];
      if (final_newline || i + 1 < lines.size()) text += "\n";
    }
    return text;
  };
  while (std::getline(in, line)) {
    ++number;
    const std::string t = Trim(line);
    if (t.empty() || t[0] == '#') continue;
    const size_t space = t.find(' ');
    const std::string word = t.substr(0, space);
    std::string rest = space == std::string::npos ? "" : Trim(t.substr(space + 1));
    if (word == "case") {
      describing = false;
      cases.emplace_back();
      cases.back().file = file_name;
      cases.back().line = number;
      cases.back().name = rest;
      if (rest.empty()) fail("a case needs a name: case NAME");
      continue;
    }
    if (cases.empty()) {
      fail("\"" + word + "\" before the first \"case\"");
      break;
    }
    GateCase& c = cases.back();
    // A value's details follow its grounded or refused line directly.
    const bool value_line = describing;
    describing = word == "grounded" || word == "refused";
    if (word == "kind") {
      c.kind = rest;
    } else if (word == "from") {
      c.from = rest;
      if (rest != "live" && rest != "variant" && rest != "scenario") {
        fail("from is live, variant or scenario, not \"" + rest + "\"");
      }
    } else if (word == "question") {
      c.question = rest;
    } else if (word == "supporting") {
      c.supporting.push_back(Unquote(rest));
    } else if (word == "honest" || word == "false" || word == "declined") {
      if (c.answered) fail("a case has one answer; this is its second");
      c.answered = true;
      c.truth = word == "honest"  ? Truth::kHonest
                : word == "false" ? Truth::kFalse
                                  : Truth::kDeclined;
      c.answer = rest;
    } else if (word == "grounded" || word == "refused") {
      c.expect.emplace_back();
      c.expect.back().value = Unquote(rest);
      c.expect.back().grounded = word == "grounded";
    } else if (word == "origin" || word == "rule" || word == "matched" || word == "matched-has" ||
               word == "column" || word == "reason-has") {
      if (!value_line) {
        fail("\"" + word +
             "\" describes the check of a value: put it right under its grounded or "
             "refused line");
        continue;
      }
      describing = true;
      ValueExpect& e = c.expect.back();
      const bool for_refused = word == "origin" || word == "reason-has";
      const bool for_grounded = word != "reason-has";
      if ((e.grounded && !for_grounded) || (!e.grounded && !for_refused)) {
        fail("\"" + word + "\" does not apply to a " + (e.grounded ? "grounded" : "refused") +
             " value");
        continue;
      }
      const std::string v = Unquote(rest);
      if (word == "origin") e.origin = v;
      if (word == "rule") e.rule = v;
      if (word == "matched") e.matched = v;
      if (word == "matched-has") e.matched_has.push_back(v);
      if (word == "column") e.column = v;
      if (word == "reason-has") e.reason_has.push_back(v);
    } else if (word == "checks") {
      if (!rest.empty()) fail("checks takes no text: its lines follow, up to end");
      const int start = number;
      std::vector<CheckLine> lines;
      for (const std::string& l : block()) {
        const std::vector<std::string> cells = SplitCells(l);
        if (cells.size() != 3) {
          fail_at(start, "a checks line is VALUE | ORIGIN | RULE: \"" + Trim(l) + "\"");
          continue;
        }
        lines.push_back({Unquote(cells[0]), cells[1], cells[2]});
      }
      c.checks = std::move(lines);
    } else if (word == "unsupported") {
      std::vector<std::string> values;
      if (!rest.empty()) {
        for (const std::string& v : SplitCells(rest)) values.push_back(Unquote(v));
      }
      c.unsupported = std::move(values);
    } else if (word == "sources") {
      std::vector<int> steps;
      std::istringstream ints(rest);
      for (int step = 0; ints >> step;) steps.push_back(step);
      if (!ints.eof()) fail("sources lists steps: sources STEP STEP ...");
      c.source_steps = std::move(steps);
    } else if (word == "card") {
      if (!rest.empty()) fail("card takes no text: the card follows, up to end");
      Show(c.shown, Shown::Kind::kCard).text = joined(block(), true);
    } else if (word == "python") {
      const std::vector<int> step = LeadingInts(rest, 1);
      if (step.empty()) fail("python needs a step: python STEP CODE");
      Shown& text = Show(c.shown, Shown::Kind::kText);
      text.source = {step.empty() ? 0 : step[0], "run_python", rest, -1};
      text.text = joined(block(), true);
    } else if (word == "failed") {
      const std::vector<int> step = LeadingInts(rest, 1);
      if (step.empty() || !rest.empty()) fail("failed needs a step and nothing else: failed STEP");
      Show(c.shown, Shown::Kind::kCode).source = {step.empty() ? 0 : step[0], "run_python",
                                                  joined(block(), false), -1};
    } else if (word == "cells") {
      std::vector<std::string> values;
      for (const std::string& v : SplitCells(rest)) {
        if (v == "NULL") fail("cells hold text, never SQL NULL: write `NULL` for the word");
        values.push_back(Unquote(v));
      }
      Show(c.shown, Shown::Kind::kCells).columns = std::move(values);
    } else if (word == "keys") {
      if (c.shown.empty() || c.shown.back().kind != Shown::Kind::kResult) {
        fail("keys names key columns of the result just above it: none is there");
        continue;
      }
      for (const std::string& k : SplitCells(rest)) c.shown.back().keys.push_back(k);
    } else if (word == "sql" || word == "thread") {
      const std::vector<int> at = LeadingInts(rest, word == "sql" ? 1 : 2);
      if (at.empty()) fail(word + " needs " + (word == "sql" ? "a step" : "a turn and a step"));
      const int start = number;
      const std::vector<std::string> lines = block();
      if (lines.empty()) {
        fail_at(start, "a result needs a header line");
        continue;
      }
      Shown result;
      result.kind = Shown::Kind::kResult;
      result.columns = SplitCells(lines[0]);
      for (size_t i = 1; i < lines.size(); ++i) {
        std::vector<std::optional<std::string>> row;
        for (const std::string& cell : SplitCells(lines[i])) {
          row.push_back(cell == "NULL" ? std::nullopt : std::optional<std::string>(Unquote(cell)));
        }
        if (row.size() != result.columns.size()) {
          fail_at(start + static_cast<int>(i) + 1, "a row's cells do not match the header");
        }
        result.rows.push_back(std::move(row));
      }
      result.source = {at.empty() ? 0 : at.back(), "run_sql", rest,
                       static_cast<int64_t>(result.rows.size())};
      if (word == "thread" && !at.empty()) result.source.turn = at[0];
      c.shown.push_back(std::move(result));
    } else {
      fail("unknown line \"" + word + "\"");
    }
  }
  if (cases.empty()) fail_at(number, "the file holds no case");
  for (GateCase& c : cases) {
    if (!c.error.empty()) continue;
    const std::string at = file_name + ":" + std::to_string(c.line) + ": case " + c.name;
    if (!c.answered) {
      c.error = at + " has no answer (honest, false or declined)";
    } else if (c.answer.empty() && c.supporting.empty()) {
      c.error = at + " states nothing: its answer is empty and it has no supporting values";
    } else if (c.truth == Truth::kDeclined && !c.supporting.empty()) {
      c.error = at + " is declined, and a declined reply has no supporting values";
    } else if (c.kind.empty()) {
      c.error = at + " names no kind";
    } else if (c.from.empty()) {
      c.error = at + " says not where it is from (live, variant or scenario)";
    }
  }
  return cases;
}

std::vector<GateCase>& AllCases() {
  static std::vector<GateCase>* all = [] {
    auto* out = new std::vector<GateCase>;
    try {
      std::vector<fs::path> files;
      for (const auto& e : fs::directory_iterator(CasesDir())) {
        if (e.path().extension() == ".test") files.push_back(e.path());
      }
      std::sort(files.begin(), files.end());
      for (const fs::path& f : files) {
        for (GateCase& c : ReadCases(f)) out->push_back(std::move(c));
      }
    } catch (const std::exception& e) {
      out->emplace_back();
      out->back().name = "unreadable";
      out->back().error = std::string("the case files cannot be read: ") + e.what();
    }
    // gtest names each case's test after the case: a name used twice is an error of the later
    // case, which still gets a name of its own so the others run.
    std::map<std::string, const GateCase*> named;
    for (GateCase& c : *out) {
      std::string n = c.name.empty() ? "case" : c.name;
      for (char& ch : n) {
        if (!std::isalnum(static_cast<unsigned char>(ch))) ch = '_';
      }
      if (const auto it = named.find(n); it != named.end()) {
        if (c.error.empty()) {
          c.error = c.file + ":" + std::to_string(c.line) + ": case " + c.name +
                    " has the name of the case at " + it->second->file + ":" +
                    std::to_string(it->second->line);
        }
        const std::string base = n;
        for (int i = 2; named.contains(n); ++i) n = base + "_" + std::to_string(i);
      }
      c.test_name = n;
      named[n] = &c;
    }
    return out;
  }();
  return *all;
}

Evidence EvidenceOf(const GateCase& c) {
  Evidence evidence;
  for (const Shown& s : c.shown) {
    switch (s.kind) {
      case Shown::Kind::kResult:
        evidence.AddResult(s.source, s.columns, s.rows, s.keys);
        break;
      case Shown::Kind::kText:
        evidence.AddText(s.source, s.text);
        break;
      case Shown::Kind::kCard:
        evidence.AddCard(s.text);
        break;
      case Shown::Kind::kCode:
        evidence.AddCode(s.source);
        break;
      case Shown::Kind::kCells:
        for (const std::string& v : s.columns) evidence.AddValue(v);
        break;
    }
  }
  return evidence;
}

std::string Joined(const std::vector<std::string>& values) {
  std::string out;
  for (const std::string& v : values) out += (out.empty() ? "" : " | ") + v;
  return out;
}

struct Outcome {
  bool accepted = false;
  std::string why;  // what disagrees with the case's expectations, "" when nothing
};

Outcome Judge(const GateCase& c) {
  const Evidence evidence = EvidenceOf(c);
  const VerifyReport report = c.truth == Truth::kDeclined
                                  ? VerifyDeclined(c.answer, evidence, c.question)
                                  : Verify(c.answer, c.supporting, evidence, c.question);
  Outcome out;
  out.accepted = report.grounded();
  std::string refused;
  for (const ValueCheck& v : report.checks) {
    if (v.grounded()) continue;
    refused += "\n  refused " + v.value + ": " + v.reason;
    // The model acts on the reason: a refusal without one is a bug whatever the case says.
    if (v.reason.empty()) out.why += "\n  " + v.value + " was refused with no reason";
  }
  if (c.truth != Truth::kFalse && !out.accepted) {
    out.why += "\nan honest answer was refused" + refused;
  }
  if (c.truth == Truth::kFalse && out.accepted) out.why += "\na false answer was accepted";
  for (const ValueExpect& e : c.expect) {
    const auto check =
        std::find_if(report.checks.begin(), report.checks.end(), [&](const ValueCheck& v) {
          return v.value == e.value && (!e.origin || v.origin == *e.origin);
        });
    if (check == report.checks.end()) {
      out.why += "\n  no check of the value " + e.value + (e.origin ? " from " + *e.origin : "");
      continue;
    }
    const std::string rule(MatchRuleName(check->rule));
    if (check->grounded() != e.grounded) {
      out.why += "\n  " + e.value +
                 (e.grounded ? " was refused: " + check->reason
                             : " was grounded by " + rule + " against " + check->matched);
      continue;
    }
    if (e.rule && rule != *e.rule) {
      out.why += "\n  " + e.value + " was grounded by " + rule + ", not " + *e.rule;
    }
    if (e.matched && check->matched != *e.matched) {
      out.why +=
          "\n  " + e.value + " matched \"" + check->matched + "\", not \"" + *e.matched + "\"";
    }
    for (const std::string& part : e.matched_has) {
      if (check->matched.find(part) != std::string::npos) continue;
      out.why += "\n  " + e.value + " matched \"" + check->matched + "\", which does not hold \"" +
                 part + "\"";
    }
    if (e.column && check->column != *e.column) {
      out.why += "\n  " + e.value + " was grounded by the column \"" + check->column +
                 "\", not \"" + *e.column + "\"";
    }
    for (const std::string& part : e.reason_has) {
      if (check->reason.find(part) != std::string::npos) continue;
      out.why +=
          "\n  " + e.value + " was refused for a reason without \"" + part + "\": " + check->reason;
    }
  }
  if (c.checks) {
    std::string want, got;
    for (const CheckLine& l : *c.checks) {
      want += "\n    " + l.value + " | " + l.origin + " | " + l.rule;
    }
    for (const ValueCheck& v : report.checks) {
      got += "\n    " + v.value + " | " + v.origin + " | " + std::string(MatchRuleName(v.rule));
    }
    if (want != got) out.why += "\n  the checks are" + got + "\n  not" + want;
  }
  if (c.unsupported && report.unsupported() != *c.unsupported) {
    out.why += "\n  unsupported is \"" + Joined(report.unsupported()) + "\", not \"" +
               Joined(*c.unsupported) + "\"";
  }
  if (c.source_steps) {
    std::vector<int> steps;
    for (int s : report.sources()) steps.push_back(evidence.sources()[static_cast<size_t>(s)].step);
    if (steps != *c.source_steps) {
      std::string got;
      for (int s : steps) got += " " + std::to_string(s);
      out.why += "\n  the values were grounded by the sources of steps" + got;
    }
  }
  return out;
}

class GateSuiteTest : public ::testing::TestWithParam<size_t> {};

TEST_P(GateSuiteTest, VerdictIsRight) {
  const GateCase& c = AllCases()[GetParam()];
  ASSERT_TRUE(c.error.empty()) << c.error;
  const Outcome o = Judge(c);
  EXPECT_TRUE(o.why.empty()) << c.file << ":" << c.line << " " << c.name << ":" << o.why;
}

std::vector<size_t> CaseIndexes() {
  std::vector<size_t> out(AllCases().size());
  for (size_t i = 0; i < out.size(); ++i) out[i] = i;
  return out;
}

INSTANTIATE_TEST_SUITE_P(Cases, GateSuiteTest, ::testing::ValuesIn(CaseIndexes()),
                         [](const ::testing::TestParamInfo<size_t>& param) {
                           return AllCases()[param.param].test_name;
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
