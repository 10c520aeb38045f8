// Spider in its official layout (eval.h, LoadSpider): <split>.json, <split>_gold.sql,
// database/<db_id>/<db_id>.sqlite (Yu et al., "Spider", EMNLP 2018; the test-suite evaluation
// reads the same files).
#include <fstream>

#include "quarry/bench/eval_internal.h"

namespace quarry::bench {
namespace {

namespace fs = std::filesystem;
using json = nlohmann::ordered_json;

// <split>_gold.sql: one "SQL<TAB>db_id" line per question, in the question file's order.
Result<void> ReadGoldFile(const fs::path& path, std::vector<EvalQuestion>& questions) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return Fail(Error::Code::kData, "cannot read " + path.string());
  std::vector<std::pair<std::string, std::string>> lines;
  std::string line;
  while (std::getline(in, line)) {
    while (!line.empty() && (line.back() == '\r' || line.back() == ' ')) line.pop_back();
    if (line.empty()) continue;
    const size_t tab = line.rfind('\t');
    if (tab == std::string::npos) {
      return Fail(Error::Code::kData, path.string() + ": line " + std::to_string(lines.size() + 1) +
                                          " is not \"SQL<TAB>db_id\"");
    }
    lines.emplace_back(line.substr(0, tab), line.substr(tab + 1));
  }
  if (lines.size() != questions.size()) {
    return Fail(Error::Code::kData, path.string() + " has " + std::to_string(lines.size()) +
                                        " queries for " + std::to_string(questions.size()) +
                                        " questions: it must be the gold file of the same split");
  }
  for (size_t i = 0; i < lines.size(); ++i) {
    if (lines[i].second != questions[i].db_id) {
      return Fail(Error::Code::kData, path.string() + ": line " + std::to_string(i + 1) +
                                          " is for database " + lines[i].second + ", question " +
                                          std::to_string(i) + " for " + questions[i].db_id);
    }
    questions[i].gold_sql = lines[i].first;
  }
  return {};
}

}  // namespace

Result<EvalDataset> LoadSpider(const fs::path& dir, const std::string& split) {
  using namespace eval_internal;
  if (auto ok = CheckDir(dir, "spider"); !ok) return std::unexpected(ok.error());
  const std::string layout =
      "--dir must be Spider's folder (" + split + ".json, " + split +
      "_gold.sql, database/<db_id>/<db_id>.sqlite), e.g. the unzipped spider_data";
  const fs::path file = dir / (split + ".json");
  auto doc = ReadQuestionFile(file, layout);
  if (!doc) return std::unexpected(doc.error());
  EvalDataset data;
  data.benchmark = Benchmark::kSpider;
  data.split = split;
  data.dir = dir;
  for (size_t i = 0; i < doc->size(); ++i) {
    const json& e = (*doc)[i];
    EvalQuestion q;
    q.index = i;
    q.question_id = std::to_string(i);
    auto db = StringField(e, "db_id", file, i);
    if (!db) return std::unexpected(db.error());
    auto text = StringField(e, "question", file, i);
    if (!text) return std::unexpected(text.error());
    auto query = StringField(e, "query", file, i);
    if (!query) return std::unexpected(query.error());
    q.db_id = *db;
    q.question = *text;
    q.gold_sql = *query;
    data.questions.push_back(std::move(q));
  }
  std::error_code ec;
  if (const fs::path gold = dir / (split + "_gold.sql"); fs::exists(gold, ec)) {
    if (auto ok = ReadGoldFile(gold, data.questions); !ok) return std::unexpected(ok.error());
  }
  fs::path databases = dir / (split + "_database");
  if (!fs::is_directory(databases, ec)) databases = dir / "database";
  if (auto ok = FindDatabases(databases, layout, data.questions); !ok) {
    return std::unexpected(ok.error());
  }
  return data;
}

}  // namespace quarry::bench
