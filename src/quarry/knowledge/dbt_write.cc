// Writing what a dbt manifest gave (dbt.h, RenderDbtImport, PlanDbtImport and
// WriteKnowledgeFiles): YAML through yaml-cpp's emitter, in the shapes Load reads, and files
// created only where none exists. The emitter quotes any text that would read back as something
// else; text over several lines is double-quoted with \n, since a literal block ("|") would
// read back with a newline added at its end.
#include <fcntl.h>
#include <unistd.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstring>
#include <optional>
#include <set>

#include "quarry/common/text.h"
#include "quarry/knowledge/dbt.h"

namespace quarry::knowledge {

namespace {

namespace fs = std::filesystem;

// Longer names are cut: a file name has at most 255 bytes, and the table: key keeps the name.
constexpr size_t kMaxStemBytes = 100;

// The largest knowledge file Load reads (load.cc): a larger one would be written only to be
// refused.
constexpr size_t kMaxFileBytes = 1 << 20;

std::string Plural(size_t n, const std::string& one, const std::string& many) {
  return std::to_string(n) + " " + (n == 1 ? one : many);
}

// A file stem for `table`: the table's own name when it is safe in a path (letters, digits and
// bytes of UTF-8 letters, '_', '-', '.'), else with '_' for the rest; never hidden, never a path.
std::string Stem(const std::string& table) {
  std::string out = table.substr(0, Utf8Prefix(table, kMaxStemBytes));
  for (char& c : out) {
    const auto u = static_cast<unsigned char>(c);
    if (!(std::isalnum(u) || u >= 0x80 || c == '_' || c == '-' || c == '.')) c = '_';
  }
  if (out.empty()) return "table";
  if (out[0] == '.') out[0] = '_';
  return out;
}

// yaml-cpp writes a comment's text as given: a line break in a path must not end the comment.
std::string OneLine(const std::string& text) {
  std::string out = text;
  std::ranges::replace_if(
      out, [](char c) { return static_cast<unsigned char>(c) < 0x20; }, '?');
  return out;
}

Result<std::string> Emitted(const YAML::Emitter& out, const std::string& what) {
  if (!out.good()) {
    return Fail(Error::Code::kInternal, "cannot write " + what + ": " + out.GetLastError());
  }
  return std::string(out.c_str()) + "\n";
}

std::string Header(const std::string& source, const std::string& node) {
  return OneLine("From the dbt manifest " + source + (node.empty() ? "" : " (" + node + ")") +
                 " by quarry knowledge import dbt; docs/knowledge.md");
}

Result<std::string> TableYaml(const TableDoc& t, const std::string& stem,
                              const std::string& source) {
  YAML::Emitter out;
  out << YAML::Comment(Header(source, t.origin.file)) << YAML::Newline << YAML::BeginMap;
  if (t.table != stem) out << YAML::Key << "table" << YAML::Value << t.table;
  if (!t.description.empty()) {
    out << YAML::Key << "description" << YAML::Value << t.description;
  }
  if (!t.columns.empty()) {
    out << YAML::Key << "columns" << YAML::Value << YAML::BeginMap;
    for (const ColumnDoc& c : t.columns) {
      out << YAML::Key << c.name << YAML::Value;
      if (c.values.empty() && !c.personal) {
        out << c.meaning;
        continue;
      }
      out << YAML::BeginMap;
      if (!c.meaning.empty()) {
        out << YAML::Key << "meaning" << YAML::Value << c.meaning;
      }
      if (!c.values.empty()) {
        out << YAML::Key << "values" << YAML::Value << YAML::Flow << YAML::BeginSeq;
        for (const auto& [value, meaning] : c.values) out << value;
        out << YAML::EndSeq;
      }
      if (c.personal) out << YAML::Key << "personal" << YAML::Value << true;
      out << YAML::EndMap;
    }
    out << YAML::EndMap;
  }
  out << YAML::EndMap;
  return Emitted(out, "tables/" + stem + ".yaml");
}

Result<std::string> RelationshipsYaml(const std::vector<Relationship>& list,
                                      const std::string& source) {
  YAML::Emitter out;
  out << YAML::Comment(Header(source, "")) << YAML::Newline << YAML::BeginMap;
  out << YAML::Key << "relationships" << YAML::Value << YAML::BeginSeq;
  for (const Relationship& r : list) {
    out << YAML::BeginMap << YAML::Key << "from" << YAML::Value << r.from << YAML::Key << "to"
        << YAML::Value << r.to << YAML::Key << "cardinality" << YAML::Value << r.cardinality;
    if (!r.note.empty()) out << YAML::Key << "note" << YAML::Value << r.note;
    out << YAML::EndMap;
  }
  out << YAML::EndSeq << YAML::EndMap;
  return Emitted(out, "relationships.yaml");
}

Result<std::string> MetricsYaml(const std::vector<Metric>& list, const std::string& source) {
  YAML::Emitter out;
  out << YAML::Comment(Header(source, "")) << YAML::Newline << YAML::BeginMap;
  out << YAML::Key << "metrics" << YAML::Value << YAML::BeginMap;
  for (const Metric& m : list) {
    out << YAML::Key << m.name << YAML::Value << YAML::BeginMap;
    out << YAML::Key << "sql" << YAML::Value << m.sql;
    out << YAML::Key << "table" << YAML::Value << m.table;
    if (!m.filter.empty()) out << YAML::Key << "filter" << YAML::Value << m.filter;
    if (!m.time.empty()) out << YAML::Key << "time" << YAML::Value << m.time;
    if (!m.description.empty()) {
      out << YAML::Key << "description" << YAML::Value << m.description;
    }
    if (!m.synonyms.empty()) {
      out << YAML::Key << "synonyms" << YAML::Value << YAML::Flow << m.synonyms;
    }
    out << YAML::EndMap;
  }
  out << YAML::EndMap << YAML::EndMap;
  return Emitted(out, "metrics.yaml");
}

// Writes all of `text` to a new file at `path`; false with errno set when it cannot.
bool WriteNew(const fs::path& path, const std::string& text, bool& existed) {
  existed = false;
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0644);
  if (fd < 0) {
    existed = errno == EEXIST;
    return false;
  }
  size_t done = 0;
  int problem = 0;
  while (done < text.size() && problem == 0) {
    const ssize_t n = ::write(fd, text.data() + done, text.size() - done);
    if (n > 0) {
      done += static_cast<size_t>(n);
    } else if (n < 0 && errno != EINTR) {
      problem = errno;
    } else if (n == 0) {
      problem = EIO;
    }
  }
  if (::close(fd) != 0 && problem == 0) problem = errno;
  if (problem == 0) return true;
  std::error_code ec;
  fs::remove(path, ec);  // half a file would be read as a wrong one
  errno = problem;
  return false;
}

}  // namespace

Result<std::vector<KnowledgeFile>> RenderDbtImport(const DbtImport& import,
                                                   const std::string& source) {
  std::vector<KnowledgeFile> files;
  std::set<std::string> stems;  // lower case: two names must not share a file on any disk
  for (const TableDoc& t : import.tables) {
    const std::string base = Stem(t.table);
    std::string stem = base;
    for (int n = 2; stems.contains(Lower(stem)); ++n) stem = base + "-" + std::to_string(n);
    stems.insert(Lower(stem));
    auto text = TableYaml(t, stem, source);
    if (!text) return std::unexpected(text.error());
    files.push_back({"tables/" + stem + ".yaml", *text, "table " + t.table, t.table, 1});
  }
  if (!import.relationships.empty()) {
    auto text = RelationshipsYaml(import.relationships, source);
    if (!text) return std::unexpected(text.error());
    const size_t n = import.relationships.size();
    files.push_back(
        {"relationships.yaml", *text, Plural(n, "relationship", "relationships"), "", n});
  }
  if (!import.metrics.empty()) {
    auto text = MetricsYaml(import.metrics, source);
    if (!text) return std::unexpected(text.error());
    const size_t n = import.metrics.size();
    files.push_back({"metrics.yaml", *text, Plural(n, "metric", "metrics"), "", n});
  }
  return files;
}

ImportPlan PlanDbtImport(const fs::path& dir, std::vector<KnowledgeFile> files) {
  ImportPlan plan;
  std::error_code ec;
  std::optional<Knowledge> existing;
  if (fs::is_directory(dir, ec)) {
    if (auto k = Load(dir)) {
      existing = std::move(*k);
    } else {
      plan.existing_problem = k.error().message;
    }
  }
  for (KnowledgeFile& f : files) {
    const fs::file_status st = fs::symlink_status(dir / f.path, ec);
    if (fs::exists(st) || fs::is_symlink(st)) {
      plan.kept.push_back(f.path + " (it exists)");
      continue;
    }
    if (f.text.size() > kMaxFileBytes) {
      plan.kept.push_back(f.path + " (" + std::to_string(f.text.size() >> 10) +
                          " KiB: more than the 1 MiB a knowledge file may hold)");
      continue;
    }
    const TableDoc* other = nullptr;
    if (existing && !f.table.empty()) {
      const auto it = std::ranges::find_if(
          existing->tables, [&](const TableDoc& t) { return Lower(t.table) == Lower(f.table); });
      if (it != existing->tables.end()) other = &*it;
    }
    if (other) {
      plan.kept.push_back(f.path + " (table " + f.table + " is described in " + other->origin.file +
                          ")");
      continue;
    }
    plan.write.push_back(std::move(f));
  }
  return plan;
}

Result<WriteOutcome> WriteKnowledgeFiles(const fs::path& dir,
                                         const std::vector<KnowledgeFile>& files) {
  WriteOutcome outcome;
  auto failed = [&](const std::string& problem) {
    std::string written;
    for (const auto& w : outcome.written) written += (written.empty() ? "" : ", ") + w;
    return Fail(Error::Code::kData,
                problem + (written.empty() ? "" : " (written before it: " + written + ")"));
  };
  for (const KnowledgeFile& f : files) {
    const fs::path path = dir / f.path;
    const fs::path parent = path.parent_path();
    std::error_code ec;
    // Load refuses a linked tables/: writing through one would put the files elsewhere.
    if (fs::is_symlink(fs::symlink_status(parent, ec))) {
      return failed("cannot write " + path.string() + ": " + parent.string() +
                    " is a symbolic link; make it a folder");
    }
    fs::create_directories(parent, ec);
    if (ec) return failed("cannot create " + parent.string() + ": " + ec.message());
    bool existed = false;
    if (WriteNew(path, f.text, existed)) {
      outcome.written.push_back(f.path);
    } else if (existed) {
      outcome.kept.push_back(f.path + " (it exists)");
    } else {
      return failed("cannot write " + path.string() + ": " + std::strerror(errno));
    }
  }
  return outcome;
}

}  // namespace quarry::knowledge
