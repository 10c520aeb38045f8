// What the Spider and BIRD loaders share (eval_internal.h), the question as the model sees it,
// and the deterministic sample of questions (eval.h).
#include <algorithm>
#include <fstream>
#include <map>
#include <random>
#include <sstream>

#include "quarry/bench/eval_internal.h"
#include "quarry/common/json.h"

namespace quarry::bench {

namespace fs = std::filesystem;
using json = nlohmann::ordered_json;

namespace eval_internal {

Result<void> CheckDir(const fs::path& dir, std::string_view benchmark) {
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) {
    return Fail(Error::Code::kUsage, "eval " + std::string(benchmark) + ": --dir " + dir.string() +
                                         " is not a directory");
  }
  return {};
}

Result<json> ReadQuestionFile(const fs::path& path, const std::string& layout) {
  std::error_code ec;
  if (!fs::is_regular_file(path, ec)) {
    return Fail(Error::Code::kData, path.string() + " is missing: " + layout);
  }
  std::ifstream in(path, std::ios::binary);
  std::stringstream buf;
  buf << in.rdbuf();
  if (!in && !in.eof()) return Fail(Error::Code::kData, "cannot read " + path.string());
  std::string problem = "not valid JSON";
  json doc = ParseJson(buf.str(), &problem);
  if (doc.is_discarded()) {
    return Fail(Error::Code::kData,
                path.string() + " is " + problem + ": it should be the benchmark's question file");
  }
  if (!doc.is_array()) {
    return Fail(Error::Code::kData, path.string() + " should be a JSON array of questions");
  }
  return doc;
}

Result<std::string> StringField(const json& entry, const char* key, const fs::path& file,
                                size_t index) {
  if (entry.is_object()) {
    const auto it = entry.find(key);
    if (it != entry.end() && it->is_string()) return it->get<std::string>();
  }
  return Fail(Error::Code::kData, file.string() + ": entry " + std::to_string(index) +
                                      " has no string field '" + key + "'");
}

Result<void> FindDatabases(const fs::path& databases, const std::string& layout,
                           std::vector<EvalQuestion>& questions) {
  std::error_code ec;
  if (!fs::is_directory(databases, ec)) {
    return Fail(Error::Code::kData,
                "the database folder " + databases.string() + " is missing: " + layout);
  }
  // db_id -> its files, main first; empty when the main file is missing.
  std::map<std::string, std::vector<fs::path>> found;
  for (EvalQuestion& q : questions) {
    auto it = found.find(q.db_id);
    if (it == found.end()) {
      // A db_id is a folder name: one path component, never "..".
      if (q.db_id.empty() || q.db_id == "." || q.db_id == ".." ||
          q.db_id.find('/') != std::string::npos) {
        return Fail(Error::Code::kData, "question " + q.question_id + " has the db_id \"" +
                                            q.db_id + "\", which is not a folder name");
      }
      const fs::path folder = databases / q.db_id;
      const fs::path main = folder / (q.db_id + ".sqlite");
      std::vector<fs::path> suite;
      // A missing database costs its questions, not the whole run: RunEval skips and counts
      // them.
      if (fs::is_regular_file(main, ec)) {
        suite.push_back(main);
        std::vector<fs::path> extra;
        for (const auto& e : fs::directory_iterator(folder, ec)) {
          if (e.path().extension() == ".sqlite" && e.path() != main &&
              fs::is_regular_file(e.path(), ec)) {
            extra.push_back(e.path());
          }
        }
        std::sort(extra.begin(), extra.end());
        suite.insert(suite.end(), extra.begin(), extra.end());
      }
      it = found.emplace(q.db_id, std::move(suite)).first;
    }
    q.db_missing = it->second.empty();
    q.db_path = q.db_missing ? databases / q.db_id / (q.db_id + ".sqlite") : it->second.front();
    q.suite_paths = it->second;
  }
  return {};
}

}  // namespace eval_internal

std::string_view BenchmarkName(Benchmark b) { return b == Benchmark::kBird ? "bird" : "spider"; }

std::string PromptQuestion(const EvalQuestion& q) {
  size_t end = q.evidence.find_last_not_of(" \t\r\n");
  if (end == std::string::npos) return q.question;
  return q.question + "\n\nHint: " + q.evidence.substr(0, end + 1);
}

std::string_view EvidenceName(Evidence e) {
  switch (e) {
    case Evidence::kHint:
      return "hint";
    case Evidence::kKnowledge:
      return "knowledge";
    case Evidence::kNone:
      return "none";
  }
  return "hint";
}

Result<std::shared_ptr<const knowledge::Knowledge>> QuestionKnowledge(
    const std::filesystem::path& dir, const EvalQuestion& q, Evidence evidence) {
  knowledge::Knowledge k;
  bool any = false;
  if (!dir.empty()) {
    std::error_code ec;
    const bool own = !q.db_id.empty() && std::filesystem::is_directory(dir / q.db_id, ec);
    auto loaded = knowledge::Load(own ? dir / q.db_id : dir);
    if (!loaded) return std::unexpected(loaded.error());
    k = std::move(*loaded);
    any = true;
  }
  const size_t end = q.evidence.find_last_not_of(" \t\r\n");
  if (evidence == Evidence::kKnowledge && end != std::string::npos) {
    knowledge::Rule rule;
    rule.name = "evidence";
    rule.title = "Evidence for this question";
    rule.text = q.evidence.substr(0, end + 1);
    rule.origin = {"BIRD evidence", 0};
    k.rules.push_back(std::move(rule));
    any = true;
  }
  if (!any) return std::shared_ptr<const knowledge::Knowledge>();
  return std::make_shared<const knowledge::Knowledge>(std::move(k));
}

std::vector<size_t> SampleIndices(size_t total, size_t n, uint64_t seed) {
  std::vector<size_t> all(total);
  for (size_t i = 0; i < total; ++i) all[i] = i;
  if (n == 0 || n >= total) return all;
  std::mt19937_64 gen(seed);
  for (size_t i = 0; i < n; ++i) {
    // Uniform in [i, total): reject draws past the largest multiple of the range, so no index
    // is favoured (std::uniform_int_distribution differs between standard libraries).
    const uint64_t range = total - i;
    const uint64_t limit = UINT64_MAX - UINT64_MAX % range;
    uint64_t draw = gen();
    while (draw >= limit) draw = gen();
    std::swap(all[i], all[i + static_cast<size_t>(draw % range)]);
  }
  all.resize(n);
  std::sort(all.begin(), all.end());
  return all;
}

}  // namespace quarry::bench
