// Reading a knowledge folder (knowledge.h, Load): YAML through yaml-cpp, Markdown by its
// headings, front matter and fenced blocks. Every problem is an error naming the file, the line
// and what to write instead; nothing in a file can crash the process.
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <map>
#include <set>

#include "quarry/common/read_file.h"
#include "quarry/common/text.h"
#include "quarry/knowledge/knowledge.h"

namespace quarry::knowledge {

namespace {

namespace fs = std::filesystem;

// Larger is not a knowledge file anyone reviews in git: a mistake, refused before parsing.
constexpr size_t kMaxFileBytes = 1 << 20;

// A problem in one file, thrown inside this file only and turned into an Error by Load.
struct Bad {
  std::string message;
};

class Reader {
 public:
  Reader(std::string file, int line_offset = 0)
      : file_(std::move(file)), line_offset_(line_offset) {}
  const std::string& file() const { return file_; }

  int Line(const YAML::Node& node) const {
    const YAML::Mark mark = node.Mark();
    return mark.is_null() ? line_offset_ : mark.line + 1 + line_offset_;
  }
  [[noreturn]] void Fail(const YAML::Node& node, const std::string& problem) const {
    throw Bad{file_ + ":" + std::to_string(Line(node)) + ": " + problem};
  }
  Origin At(const YAML::Node& node) const { return {file_, Line(node)}; }

  // A scalar as text; `what` names it in the error ("the sql of metric 'revenue'").
  std::string Text(const YAML::Node& node, const std::string& what) const {
    if (!node || node.IsNull()) return "";
    if (!node.IsScalar()) Fail(node, what + " must be text, not a list or a map");
    return node.Scalar();
  }
  // A scalar, or a list of scalars.
  std::vector<std::string> Texts(const YAML::Node& node, const std::string& what) const {
    std::vector<std::string> out;
    if (!node || node.IsNull()) return out;
    if (node.IsScalar()) return {node.Scalar()};
    if (!node.IsSequence()) Fail(node, what + " must be a list of text");
    for (const auto& item : node) out.push_back(Text(item, what));
    return out;
  }
  bool Flag(const YAML::Node& node, const std::string& what) const {
    if (!node || node.IsNull()) return false;
    const std::string v = Lower(Text(node, what));
    if (v == "true" || v == "yes") return true;
    if (v == "false" || v == "no") return false;
    Fail(node, what + " must be true or false, not '" + node.Scalar() + "'");
  }
  // `node` is a map whose keys are all in `known`; a typo is an error, not silently ignored.
  void Keys(const YAML::Node& node, const std::string& what,
            const std::vector<std::string>& known) const {
    if (!node.IsMap()) Fail(node, what + " must be a map of " + Join(known));
    std::vector<std::string> seen;
    for (const auto& entry : node) {
      const std::string key = entry.first.IsScalar() ? entry.first.Scalar() : "?";
      // YAML lets a key stand twice, the last one winning: here it is a mistake.
      if (std::ranges::find(seen, key) != seen.end()) {
        Fail(entry.first, what + " gives '" + key + "' twice");
      }
      seen.push_back(key);
      if (std::ranges::find(known, key) == known.end()) {
        Fail(entry.first, what + " has an unknown key '" + key + "' (known: " + Join(known) + ")");
      }
    }
  }

 private:
  static std::string Join(const std::vector<std::string>& names) {
    std::string out;
    for (const auto& n : names) out += (out.empty() ? "" : ", ") + n;
    return out;
  }
  std::string file_;
  int line_offset_;
};

// A knowledge file's text. Only a regular file of the folder's own is read: a symlink could make
// a cloned repository's .quarry/ send /proc/self/environ or ~/.ssh to the model provider with
// the prompt. A byte-order mark is dropped; a NUL means the file is not text.
std::string ReadSmall(const fs::path& path, const std::string& name) {
  std::error_code ec;
  const fs::file_status st = fs::symlink_status(path, ec);
  if (ec) throw Bad{name + ": cannot read it: " + ec.message()};
  if (fs::is_symlink(st)) {
    throw Bad{name +
              ": is a symbolic link; knowledge files must be regular files in the folder "
              "(copy the file in instead)"};
  }
  if (!fs::is_regular_file(st)) throw Bad{name + ": is not a regular file"};
  const auto size = fs::file_size(path, ec);
  if (!ec && size > kMaxFileBytes) {
    throw Bad{name + ": " + std::to_string(size) +
              " bytes is too large for a knowledge file (at most 1 MiB): split it"};
  }
  auto text = ReadFileText(path, "knowledge file");
  if (!text) throw Bad{name + ": " + text.error().message};
  if (text->find('\0') != std::string::npos) {
    throw Bad{name + ": holds a NUL byte: a knowledge file is text (YAML or Markdown)"};
  }
  if (text->starts_with("\xEF\xBB\xBF")) text->erase(0, 3);
  return *text;
}

YAML::Node ParseYaml(const std::string& text, const Reader& reader, int line_offset = 0) {
  try {
    return YAML::Load(text);
  } catch (const YAML::Exception& e) {
    const int line = e.mark.is_null() ? line_offset : e.mark.line + 1 + line_offset;
    throw Bad{reader.file() + ":" + std::to_string(line) + ": not valid YAML: " + e.msg};
  }
}

// The top-level map's `key` ("metrics:"), or the whole document when it is the expected kind.
YAML::Node Section(const YAML::Node& doc, const std::string& key, const Reader& reader) {
  if (!doc || doc.IsNull()) return YAML::Node();
  if (!doc.IsMap()) reader.Fail(doc, "the file must be a map with '" + key + ":' at the top");
  reader.Keys(doc, "the file", {key});
  return doc[key];
}

void LoadTable(const fs::path& path, const std::string& name, Knowledge& k) {
  const Reader r(name);
  const YAML::Node doc = ParseYaml(ReadSmall(path, name), r);
  if (!doc || doc.IsNull()) return;
  r.Keys(doc, "a table file", {"table", "grain", "description", "columns"});
  TableDoc t;
  t.table = r.Text(doc["table"], "table");
  if (t.table.empty()) t.table = path.stem().string();
  t.grain = r.Text(doc["grain"], "grain");
  t.description = r.Text(doc["description"], "description");
  t.origin = r.At(doc);
  if (const YAML::Node columns = doc["columns"]; columns && !columns.IsNull()) {
    if (!columns.IsMap()) r.Fail(columns, "columns must be a map of column name to its meaning");
    for (const auto& entry : columns) {
      ColumnDoc c;
      c.name = r.Text(entry.first, "a column's name");
      const YAML::Node v = entry.second;
      const std::string what = "column '" + c.name + "'";
      if (v.IsScalar() || v.IsNull()) {
        c.meaning = r.Text(v, what);
      } else {
        r.Keys(v, what, {"meaning", "unit", "values", "personal"});
        c.meaning = r.Text(v["meaning"], "the meaning of " + what);
        c.unit = r.Text(v["unit"], "the unit of " + what);
        c.personal = r.Flag(v["personal"], "personal of " + what);
        if (const YAML::Node values = v["values"]; values && !values.IsNull()) {
          if (values.IsMap()) {
            for (const auto& value : values) {
              c.values.emplace_back(r.Text(value.first, "a value of " + what),
                                    r.Text(value.second, "the meaning of a value of " + what));
            }
          } else {
            for (const auto& value : r.Texts(values, "the values of " + what)) {
              c.values.emplace_back(value, "");
            }
          }
        }
      }
      t.columns.push_back(std::move(c));
    }
  }
  k.tables.push_back(std::move(t));
}

void LoadRelationships(const fs::path& path, Knowledge& k) {
  const Reader r("relationships.yaml");
  const YAML::Node list = Section(ParseYaml(ReadSmall(path, r.file()), r), "relationships", r);
  if (!list || list.IsNull()) return;
  if (!list.IsSequence()) r.Fail(list, "relationships must be a list of {from, to, cardinality}");
  static const std::set<std::string> kinds = {"many-to-one", "one-to-many", "one-to-one",
                                              "many-to-many"};
  for (const auto& item : list) {
    r.Keys(item, "a relationship", {"from", "to", "cardinality", "note"});
    Relationship rel;
    rel.from = r.Text(item["from"], "from");
    rel.to = r.Text(item["to"], "to");
    rel.cardinality = r.Text(item["cardinality"], "cardinality");
    rel.note = r.Text(item["note"], "note");
    rel.origin = r.At(item);
    for (const auto* end : {&rel.from, &rel.to}) {
      const size_t dot = end->find('.');
      if (dot == std::string::npos || dot == 0 || dot + 1 == end->size()) {
        r.Fail(item,
               "a relationship's from and to are table.column, e.g. from: orders.customer_id");
      }
    }
    if (!rel.cardinality.empty() && !kinds.contains(rel.cardinality)) {
      r.Fail(item["cardinality"],
             "cardinality is one of many-to-one, one-to-many, one-to-one, many-to-many, not '" +
                 rel.cardinality + "'");
    }
    k.relationships.push_back(std::move(rel));
  }
}

void LoadMetrics(const fs::path& path, Knowledge& k) {
  const Reader r("metrics.yaml");
  const YAML::Node map = Section(ParseYaml(ReadSmall(path, r.file()), r), "metrics", r);
  if (!map || map.IsNull()) return;
  if (!map.IsMap()) r.Fail(map, "metrics must be a map of metric name to {sql, table, ...}");
  for (const auto& entry : map) {
    Metric m;
    m.name = r.Text(entry.first, "a metric's name");
    if (Trim(m.name).empty()) r.Fail(entry.first, "a metric has an empty name");
    const std::string what = "metric '" + m.name + "'";
    r.Keys(entry.second, what, {"sql", "table", "filter", "time", "description", "synonyms"});
    m.sql = r.Text(entry.second["sql"], "the sql of " + what);
    m.table = r.Text(entry.second["table"], "the table of " + what);
    m.filter = r.Text(entry.second["filter"], "the filter of " + what);
    m.time = r.Text(entry.second["time"], "the time column of " + what);
    m.description = r.Text(entry.second["description"], "the description of " + what);
    m.synonyms = r.Texts(entry.second["synonyms"], "the synonyms of " + what);
    m.origin = r.At(entry.first);
    if (Trim(m.sql).empty()) {
      r.Fail(entry.first,
             what + " has no sql: give an aggregate expression, e.g. sql: sum(amount)");
    }
    if (Trim(m.table).empty()) {
      r.Fail(entry.first, what + " has no table: name the table it is measured over");
    }
    k.metrics.push_back(std::move(m));
  }
}

void LoadGlossary(const fs::path& path, Knowledge& k) {
  const Reader r("glossary.yaml");
  const YAML::Node map = Section(ParseYaml(ReadSmall(path, r.file()), r), "terms", r);
  if (!map || map.IsNull()) return;
  if (!map.IsMap()) r.Fail(map, "terms must be a map of term to what it means");
  for (const auto& entry : map) {
    Term t;
    t.name = r.Text(entry.first, "a term");
    if (Trim(t.name).empty()) r.Fail(entry.first, "a term is empty");
    const std::string what = "term '" + t.name + "'";
    t.origin = r.At(entry.first);
    if (entry.second.IsScalar()) {
      t.means = entry.second.Scalar();
    } else {
      r.Keys(entry.second, what, {"means", "synonyms", "column", "value", "metric"});
      t.means = r.Text(entry.second["means"], "what " + what + " means");
      t.synonyms = r.Texts(entry.second["synonyms"], "the synonyms of " + what);
      t.column = r.Text(entry.second["column"], "the column of " + what);
      t.value = r.Text(entry.second["value"], "the value of " + what);
      t.metric = r.Text(entry.second["metric"], "the metric of " + what);
    }
    if (Trim(t.means).empty() && t.column.empty() && t.metric.empty()) {
      r.Fail(entry.first, what + " says nothing: give means:, a column: or a metric:");
    }
    k.terms.push_back(std::move(t));
  }
}

std::vector<std::string> Lines(const std::string& text) {
  std::vector<std::string> out;
  size_t start = 0;
  while (start <= text.size()) {
    size_t end = text.find('\n', start);
    if (end == std::string::npos) end = text.size();
    std::string line = text.substr(start, end - start);
    if (!line.empty() && line.back() == '\r') line.pop_back();
    out.push_back(std::move(line));
    start = end + 1;
  }
  return out;
}

void LoadRule(const fs::path& path, const std::string& name, Knowledge& k) {
  const std::vector<std::string> lines = Lines(ReadSmall(path, name));
  Rule rule;
  rule.name = path.stem().string();
  rule.origin = {name, 0};
  std::string body;
  for (const std::string& line : lines) {
    if (rule.title.empty() && line.starts_with("# ")) {
      rule.title = std::string(Trim(std::string_view(line).substr(2)));
      continue;
    }
    body += line + "\n";
  }
  rule.text = std::string(Trim(body));
  if (rule.title.empty()) rule.title = rule.name;
  if (rule.text.empty()) throw Bad{name + ": the rule is empty: write what must always be done"};
  k.rules.push_back(std::move(rule));
}

void LoadQuery(const fs::path& path, const std::string& name, Knowledge& k) {
  const std::vector<std::string> lines = Lines(ReadSmall(path, name));
  VerifiedQuery q;
  q.name = path.stem().string();
  q.origin = {name, 1};
  size_t i = 0;
  if (!lines.empty() && lines[0] == "---") {
    std::string front;
    for (i = 1; i < lines.size() && lines[i] != "---"; ++i) front += lines[i] + "\n";
    if (i == lines.size()) throw Bad{name + ":1: the front matter has no closing '---' line"};
    ++i;
    const Reader r(name, 1);
    const YAML::Node doc = ParseYaml(front, r, 1);
    if (doc && !doc.IsNull()) {
      r.Keys(doc, "the front matter",
             {"question", "verified_by", "verified_at", "tags", "result_rows", "result_sha256"});
      q.question = r.Text(doc["question"], "question");
      q.verified_by = r.Text(doc["verified_by"], "verified_by");
      q.verified_at = r.Text(doc["verified_at"], "verified_at");
      q.tags = r.Texts(doc["tags"], "tags");
      q.result_sha256 = r.Text(doc["result_sha256"], "result_sha256");
      if (const std::string rows = r.Text(doc["result_rows"], "result_rows"); !rows.empty()) {
        try {
          size_t used = 0;
          q.result_rows = std::stoll(rows, &used);
          if (used != rows.size() || *q.result_rows < 0) throw std::invalid_argument(rows);
        } catch (const std::exception&) {
          r.Fail(doc["result_rows"], "result_rows must be a whole number, not '" + rows + "'");
        }
      }
    }
  }
  if (Trim(q.question).empty()) {
    throw Bad{name + ":1: no question: start the file with front matter, ---, question: ..., ---"};
  }
  size_t open = i;
  while (open < lines.size() && Lower(Trim(lines[open])) != "```sql") ++open;
  if (open == lines.size()) {
    throw Bad{name + ": no ```sql block: put the query's SQL in one, closed by ```"};
  }
  std::string sql;
  size_t close = open + 1;
  for (; close < lines.size() && Trim(lines[close]) != "```"; ++close) sql += lines[close] + "\n";
  if (close == lines.size()) {
    throw Bad{name + ":" + std::to_string(open + 1) + ": the ```sql block is never closed by ```"};
  }
  q.sql = std::string(Trim(sql));
  for (size_t more = close + 1; more < lines.size(); ++more) {
    if (Lower(Trim(lines[more])) == "```sql") {
      throw Bad{name + ":" + std::to_string(more + 1) +
                ": a second ```sql block: a verified query holds one query"};
    }
  }
  if (q.sql.empty())
    throw Bad{name + ":" + std::to_string(open + 1) + ": the ```sql block is empty"};
  k.queries.push_back(std::move(q));
}

// The files of `dir` whose name ends in `ext`, sorted; none when `dir` does not exist. A
// folder that cannot be listed, or that is a link, is an error, never "no files"; a file there
// with a near-miss name (".yml" for ".yaml", ".yaml" under rules/) is an error too, since it was
// surely meant to be read.
std::vector<fs::path> FilesIn(const fs::path& dir, const std::string& sub, const std::string& ext) {
  std::vector<fs::path> out;
  std::error_code ec;
  const fs::file_status st = fs::symlink_status(dir, ec);
  if (ec || !fs::exists(st)) return out;
  if (fs::is_symlink(st)) throw Bad{sub + "/: is a symbolic link; make it a folder"};
  if (!fs::is_directory(st)) throw Bad{sub + ": is not a folder"};
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    const std::string name = it->path().filename().string();
    if (name.starts_with(".")) continue;
    if (name.ends_with(ext)) {
      out.push_back(it->path());  // ReadSmall refuses what is not a regular file
    } else if (name.ends_with(".yml") || name.ends_with(".yaml") || name.ends_with(".md")) {
      throw Bad{sub + "/" + name + ": files in " + sub + "/ end in " + ext + ": rename it"};
    }
  }
  if (ec) throw Bad{sub + "/: cannot list it: " + ec.message()};
  std::ranges::sort(out);
  return out;
}

// Whether the folder holds `name`, as anything at all (a dangling link too: ReadSmall says why
// it cannot be read, rather than the file being skipped).
bool Present(const fs::path& dir, const std::string& name) {
  std::error_code ec;
  const fs::file_status st = fs::symlink_status(dir / name, ec);
  if (ec && ec != std::errc::no_such_file_or_directory) {
    throw Bad{name + ": cannot read it: " + ec.message()};
  }
  return fs::exists(st) || fs::is_symlink(st);
}

}  // namespace

Result<Knowledge> Load(const fs::path& dir) {
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) {
    return Fail(Error::Code::kUsage,
                "knowledge folder " + dir.string() +
                    (fs::exists(dir, ec) ? " is not a folder" : " does not exist") +
                    ": give a folder with metrics.yaml, tables/, ... "
                    "(docs/knowledge.md)");
  }
  Knowledge k;
  k.dir = dir;
  try {
    // The folder itself must be listable: an unreadable one is not an empty one.
    std::error_code list_ec;
    fs::directory_iterator listed(dir, list_ec);
    if (list_ec) throw Bad{dir.string() + ": cannot list it: " + list_ec.message()};
    for (const auto& entry : listed) {
      const std::string name = entry.path().filename().string();
      for (const char* known : {"relationships", "metrics", "glossary"}) {
        if (name == std::string(known) + ".yml") {
          throw Bad{name + ": knowledge files end in .yaml: rename it " + known + ".yaml"};
        }
      }
    }
    for (const auto& path : FilesIn(dir / "tables", "tables", ".yaml")) {
      LoadTable(path, "tables/" + path.filename().string(), k);
    }
    if (Present(dir, "relationships.yaml")) LoadRelationships(dir / "relationships.yaml", k);
    if (Present(dir, "metrics.yaml")) LoadMetrics(dir / "metrics.yaml", k);
    if (Present(dir, "glossary.yaml")) LoadGlossary(dir / "glossary.yaml", k);
    for (const auto& path : FilesIn(dir / "rules", "rules", ".md")) {
      LoadRule(path, "rules/" + path.filename().string(), k);
    }
    for (const auto& path : FilesIn(dir / "queries", "queries", ".md")) {
      LoadQuery(path, "queries/" + path.filename().string(), k);
    }
  } catch (const Bad& bad) {
    return Fail(Error::Code::kUsage, "knowledge: " + bad.message);
  } catch (const YAML::Exception& e) {  // a conversion past the checks above, or depth
    return Fail(Error::Code::kUsage, "knowledge: " + std::string(e.what()));
  } catch (const std::exception& e) {
    return Fail(Error::Code::kUsage, "knowledge: " + std::string(e.what()));
  }
  // One name, one definition: a second metric or table file of the same name is a mistake.
  std::map<std::string, Origin> seen;
  for (const auto& t : k.tables) {
    if (auto [it, fresh] = seen.emplace("table " + Lower(t.table), t.origin); !fresh) {
      return Fail(Error::Code::kUsage, "knowledge: " + t.origin.file + ": table '" + t.table +
                                           "' is described twice (also in " + it->second.file +
                                           ")");
    }
  }
  for (const auto& m : k.metrics) {
    const std::string key = "metric " + Lower(m.name);
    if (auto [it, fresh] = seen.emplace(key, m.origin); !fresh) {
      return Fail(Error::Code::kUsage, "knowledge: " + m.origin.file + ":" +
                                           std::to_string(m.origin.line) + ": metric '" + m.name +
                                           "' is defined twice (first at line " +
                                           std::to_string(it->second.line) + ")");
    }
  }
  return k;
}

}  // namespace quarry::knowledge
