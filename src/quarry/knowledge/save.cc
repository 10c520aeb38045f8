// Writing knowledge files, only ever after the user agreed: a verified query file
// (SaveVerifiedQuery, what `quarry learn` saves), never over another, and a glossary term
// (SaveTerm, a remembered clarification), appended to glossary.yaml.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <sstream>

#include "quarry/common/text.h"
#include "quarry/engine/rank.h"
#include "quarry/knowledge/knowledge.h"

namespace quarry::knowledge {

namespace {

// A YAML scalar that reads back as `text`: double-quoted, with its quotes, backslashes and
// control characters escaped.
std::string Quoted(const std::string& text) {
  std::string out = "\"";
  for (char c : text) {
    const auto u = static_cast<unsigned char>(c);
    if (c == '"' || c == '\\') {
      out += '\\';
      out += c;
    } else if (c == '\n') {
      out += "\\n";
    } else if (u < 0x20 || u == 0x7f) {
      char hex[8];
      std::snprintf(hex, sizeof hex, "\\x%02x", u);
      out += hex;
    } else {
      out += c;
    }
  }
  return out + "\"";
}

// One line of text for a comment or a value that must not break the layout.
std::string OneLine(std::string text) {
  std::replace_if(
      text.begin(), text.end(), [](char c) { return c == '\n' || c == '\r'; }, ' ');
  return std::string(Trim(text));
}

// `term` as the lines of one glossary entry, each indented by `indent` spaces.
std::string TermEntry(const Term& term, const std::string& comment, int indent) {
  const std::string pad(static_cast<size_t>(indent), ' ');
  std::string out;
  if (!comment.empty()) out += pad + "# " + OneLine(comment) + "\n";
  out += pad + Quoted(term.name) + ":\n";
  out += pad + "  means: " + Quoted(term.means) + "\n";
  if (!term.synonyms.empty()) {
    out += pad + "  synonyms: [";
    for (size_t i = 0; i < term.synonyms.size(); ++i)
      out += (i ? ", " : "") + Quoted(term.synonyms[i]);
    out += "]\n";
  }
  if (!term.metric.empty()) out += pad + "  metric: " + Quoted(term.metric) + "\n";
  if (!term.column.empty()) out += pad + "  column: " + Quoted(term.column) + "\n";
  if (!term.value.empty()) out += pad + "  value: " + Quoted(term.value) + "\n";
  return out;
}

// Where a name is already defined in `k` as a term or a metric (its name or a synonym), or "".
std::string DefinedAt(const Knowledge& k, const std::string& name) {
  const std::string want = engine::JoinWords(name);
  const auto is = [&](const std::string& n) { return engine::JoinWords(n) == want; };
  for (const Term& t : k.terms) {
    if (is(t.name) || std::any_of(t.synonyms.begin(), t.synonyms.end(), is)) {
      return "the glossary term '" + t.name + "' (" + t.origin.file + ":" +
             std::to_string(t.origin.line) + ")";
    }
  }
  for (const Metric& m : k.metrics) {
    if (is(m.name) || std::any_of(m.synonyms.begin(), m.synonyms.end(), is)) {
      return "the metric '" + m.name + "' (" + m.origin.file + ":" + std::to_string(m.origin.line) +
             ")";
    }
  }
  return "";
}

// Writes `text` as `path` through a new file beside it renamed over it, so a reader never sees
// half a file and a failed write leaves the old one.
Result<void> ReplaceFile(const std::filesystem::path& path, const std::string& text) {
  std::string tmp = (path.parent_path() / ".glossary.yaml.XXXXXX").string();
  const int fd = ::mkstemp(tmp.data());
  if (fd < 0) {
    return Fail(Error::Code::kData, "cannot write " + path.string() + ": " + std::strerror(errno));
  }
  // The file keeps its own mode and owner: a glossary kept private stays private.
  struct stat was {};
  if (::stat(path.c_str(), &was) == 0) {
    ::fchmod(fd, was.st_mode & 07777);
    [[maybe_unused]] const int owned = ::fchown(fd, was.st_uid, was.st_gid);
  } else {
    ::fchmod(fd, 0644);
  }
  const bool written = ::write(fd, text.data(), text.size()) == static_cast<ssize_t>(text.size());
  const bool synced = ::fsync(fd) == 0;
  const bool closed = ::close(fd) == 0;
  if (!written || !synced || !closed || std::rename(tmp.c_str(), path.c_str()) != 0) {
    ::unlink(tmp.c_str());
    return Fail(Error::Code::kData, "cannot write " + path.string());
  }
  return {};
}

}  // namespace

Result<Origin> SaveTerm(const std::filesystem::path& dir, const Term& given,
                        const std::string& comment) {
  Term term = given;
  term.name = OneLine(term.name);
  term.means = std::string(Trim(term.means));
  if (engine::JoinWords(term.name).empty()) {
    return Fail(Error::Code::kUsage, "the term has no name: name the phrase it defines");
  }
  if (term.name.size() > kMaxTermBytes) {
    return Fail(Error::Code::kUsage, "the term is " + std::to_string(term.name.size()) +
                                         " bytes: a term is a short phrase of at most " +
                                         std::to_string(kMaxTermBytes) + " bytes");
  }
  if (term.means.empty() && term.metric.empty() && term.column.empty()) {
    return Fail(Error::Code::kUsage, "the term '" + term.name + "' says nothing: give its meaning");
  }
  std::error_code ec;
  const std::filesystem::path file = dir / "glossary.yaml";
  std::string old;
  if (std::filesystem::exists(dir, ec)) {
    auto k = Load(dir);  // a folder that does not load is not written to: its error says why
    if (!k) return std::unexpected(k.error());
    for (const std::string& name : [&] {
           std::vector<std::string> all{term.name};
           all.insert(all.end(), term.synonyms.begin(), term.synonyms.end());
           return all;
         }()) {
      if (const std::string at = DefinedAt(*k, name); !at.empty()) {
        return Fail(Error::Code::kUsage,
                    "'" + name + "' is already " + at + ": change it there if it has changed");
      }
    }
    if (std::filesystem::exists(file, ec)) {
      std::ifstream in(file, std::ios::binary);
      std::ostringstream text;
      text << in.rdbuf();
      if (!in.good() && !in.eof()) return Fail(Error::Code::kData, "cannot read " + file.string());
      old = text.str();
    }
  } else {
    std::filesystem::create_directories(dir, ec);
    if (ec) return Fail(Error::Code::kData, "cannot create " + dir.string() + ": " + ec.message());
  }
  if (!old.empty() && old.back() != '\n') old += '\n';
  // The entry's indent is the existing terms' own; a file without terms gets them opened.
  int indent = 2;
  std::string head = old;
  size_t before = 0;  // terms in the file now
  try {
    const YAML::Node doc = YAML::Load(old);
    const YAML::Node terms = doc && doc.IsMap() ? doc["terms"] : YAML::Node();
    if (!terms || (terms.IsNull() && doc.IsNull())) {
      head += "terms:\n";
    } else if (terms.IsMap() && terms.Style() != YAML::EmitterStyle::Flow && terms.size() > 0) {
      indent = terms.begin()->first.Mark().column;
      before = terms.size();
    } else if (!terms.IsNull()) {
      indent = -1;  // a flow map, or no map: nothing can be appended
    }
  } catch (const YAML::Exception&) {
    indent = -1;
  }
  const std::string entry = TermEntry(term, comment, indent < 0 ? 2 : indent);
  const std::string text = head + entry;
  bool fits = indent >= 0;
  if (fits) {  // the file as it would be written must read back with the term, and all others
    try {
      const YAML::Node terms = YAML::Load(text)["terms"];
      fits = terms.IsMap() && terms.size() == before + 1 && terms[term.name] &&
             terms[term.name]["means"].as<std::string>() == term.means;
    } catch (const YAML::Exception&) {
      fits = false;
    }
  }
  if (!fits) {
    return Fail(Error::Code::kUsage, file.string() +
                                         " is not laid out so a term can be added after its "
                                         "terms: add these lines under terms: yourself:\n" +
                                         TermEntry(term, comment, 2));
  }
  if (auto w = ReplaceFile(file, text); !w) return std::unexpected(w.error());
  const int line =
      static_cast<int>(std::count(head.begin(), head.end(), '\n')) + (comment.empty() ? 1 : 2);
  return Origin{"glossary.yaml", line};
}

std::string QueryName(const std::string& question) {
  std::string out;
  const std::string words = engine::JoinWords(question) + " ";
  for (size_t start = 0, end; (end = words.find(' ', start)) != std::string::npos;
       start = end + 1) {
    const std::string word = words.substr(start, end - start);
    if (word.empty()) continue;
    if (out.size() + word.size() + 1 > 60) break;
    out += (out.empty() ? "" : "-") + word;
  }
  return out.empty() ? "query" : out;
}

std::string RenderVerifiedQuery(const VerifiedQuery& q) {
  std::string out = "---\nquestion: " + Quoted(q.question) + "\n";
  if (!q.verified_by.empty()) out += "verified_by: " + Quoted(q.verified_by) + "\n";
  if (!q.verified_at.empty()) out += "verified_at: " + Quoted(q.verified_at) + "\n";
  if (!q.tags.empty()) {
    out += "tags: [";
    for (size_t i = 0; i < q.tags.size(); ++i) out += (i ? ", " : "") + Quoted(q.tags[i]);
    out += "]\n";
  }
  if (q.result_rows) out += "result_rows: " + std::to_string(*q.result_rows) + "\n";
  if (!q.result_sha256.empty()) out += "result_sha256: " + q.result_sha256 + "\n";
  // A fence in the SQL would end the block early: such SQL cannot be kept in this format.
  return out + "---\n\n```sql\n" + q.sql + "\n```\n";
}

Result<std::filesystem::path> SaveVerifiedQuery(const std::filesystem::path& dir,
                                                const VerifiedQuery& q) {
  if (q.sql.find("```") != std::string::npos) {
    return Fail(Error::Code::kUsage, "the SQL holds ``` and cannot be kept in a ```sql block");
  }
  std::error_code ec;
  std::filesystem::create_directories(dir / "queries", ec);
  if (ec) {
    return Fail(Error::Code::kData,
                "cannot create " + (dir / "queries").string() + ": " + ec.message());
  }
  const std::filesystem::path path = dir / "queries" / (q.name + ".md");
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
  if (fd < 0) {
    if (errno == EEXIST) {
      return Fail(Error::Code::kUsage,
                  path.string() + " exists already: give another name with --name");
    }
    return Fail(Error::Code::kData, "cannot write " + path.string() + ": " + std::strerror(errno));
  }
  const std::string text = RenderVerifiedQuery(q);
  const bool written = ::write(fd, text.data(), text.size()) == static_cast<ssize_t>(text.size());
  const bool closed = ::close(fd) == 0;
  if (!written || !closed) {
    std::filesystem::remove(path, ec);
    return Fail(Error::Code::kData, "cannot write " + path.string());
  }
  return path;
}

}  // namespace quarry::knowledge
