// BIRD in its official layout (eval.h, LoadBird): <split>.json with question_id, db_id,
// question, evidence, SQL, difficulty; <split>_databases/<db_id>/<db_id>.sqlite (Li et al.,
// "Can LLM Already Serve as A Database Interface?", NeurIPS 2023; its dev release).
#include "quarry/bench/eval_internal.h"

namespace quarry::bench {

namespace fs = std::filesystem;
using json = nlohmann::ordered_json;

Result<EvalDataset> LoadBird(const fs::path& dir, const std::string& split) {
  using namespace eval_internal;
  if (auto ok = CheckDir(dir, "bird"); !ok) return std::unexpected(ok.error());
  const std::string layout = "--dir must be BIRD's " + split + " folder (" + split + ".json, " +
                             split + "_databases/<db_id>/<db_id>.sqlite), e.g. the unzipped " +
                             split + "_20240627";
  const fs::path file = dir / (split + ".json");
  auto doc = ReadQuestionFile(file, layout);
  if (!doc) return std::unexpected(doc.error());
  EvalDataset data;
  data.benchmark = Benchmark::kBird;
  data.split = split;
  data.dir = dir;
  for (size_t i = 0; i < doc->size(); ++i) {
    const json& e = (*doc)[i];
    EvalQuestion q;
    q.index = i;
    q.question_id = std::to_string(i);
    if (e.is_object() && e.contains("question_id")) {
      const json& id = e["question_id"];
      if (id.is_number_integer()) q.question_id = std::to_string(id.get<int64_t>());
      if (id.is_string()) q.question_id = id.get<std::string>();
    }
    auto db = StringField(e, "db_id", file, i);
    if (!db) return std::unexpected(db.error());
    auto text = StringField(e, "question", file, i);
    if (!text) return std::unexpected(text.error());
    auto sql = StringField(e, "SQL", file, i);
    if (!sql) return std::unexpected(sql.error());
    q.db_id = *db;
    q.question = *text;
    q.gold_sql = *sql;
    // evidence may be empty; absent or not a string is a malformed entry.
    auto evidence = StringField(e, "evidence", file, i);
    if (!evidence) return std::unexpected(evidence.error());
    q.evidence = *evidence;
    if (e.contains("difficulty") && e["difficulty"].is_string()) {
      q.difficulty = e["difficulty"].get<std::string>();
    }
    data.questions.push_back(std::move(q));
  }
  if (auto ok = FindDatabases(dir / (split + "_databases"), layout, data.questions); !ok) {
    return std::unexpected(ok.error());
  }
  return data;
}

}  // namespace quarry::bench
