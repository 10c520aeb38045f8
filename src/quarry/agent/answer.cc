// What an accepted answer records beside its text: the queries it rests on and their SQL as
// one script, which `ask` prints and the eval runs.
#include <algorithm>

#include "quarry/agent/agent_internal.h"

namespace quarry::agent {

std::vector<trace::AnswerQuery> AnswerQueries(const VerifyReport& report,
                                              const std::vector<EvidenceSource>& sources,
                                              const trace::AnswerQuery& last_query,
                                              const std::vector<trace::AnswerQuery>& charts) {
  std::vector<trace::AnswerQuery> queries;
  for (int i : report.sources()) {
    if (i < 0 || i >= static_cast<int>(sources.size())) continue;
    const EvidenceSource& s = sources[static_cast<size_t>(i)];
    // The cards and an earlier turn's kept result are no query of this run.
    if (s.tool == kSchemaCardTool || s.turn > 0) continue;
    queries.push_back({s.step, s.tool, s.query});
  }
  if (queries.empty() && !last_query.query.empty() && charts.empty()) {
    queries.push_back(last_query);
  }
  // A chart is a deliverable: its query is the answer's too, grounded values or not.
  for (const trace::AnswerQuery& c : charts) {
    const bool listed = std::any_of(queries.begin(), queries.end(),
                                    [&](const trace::AnswerQuery& q) { return q.step == c.step; });
    if (!listed && !c.query.empty()) queries.push_back(c);
  }
  std::sort(
      queries.begin(), queries.end(),
      [](const trace::AnswerQuery& a, const trace::AnswerQuery& b) { return a.step < b.step; });
  return queries;
}

std::string AnswerSql(const std::vector<trace::AnswerQuery>& queries) {
  std::string script;
  for (const auto& q : queries) {
    if (q.tool == "run_python") continue;
    std::string sql = q.query;
    while (!sql.empty() && (sql.back() == ';' || sql.back() == ' ' || sql.back() == '\n'))
      sql.pop_back();
    script += (script.empty() ? "" : "\n\n") + sql + ";";
  }
  return script;
}

}  // namespace quarry::agent
