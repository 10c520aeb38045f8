// Writing a verified query file (knowledge.h, SaveVerifiedQuery): what `quarry learn` saves
// after the user has seen it. The only file this module writes, and never over another.
#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

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

}  // namespace

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
