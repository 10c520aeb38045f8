// The trace viewer: one standalone HTML page per trace (see RenderHtml in trace.h). Static
// markup and CSS only; <details> does the expanding, so the page needs no script at all.
#include <fcntl.h>
#include <openssl/evp.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>

#include <fstream>
#include <sstream>

#include "quarry/common/text.h"
#include "quarry/trace/trace.h"

namespace quarry::trace {
namespace {

namespace fs = std::filesystem;
using json = nlohmann::ordered_json;

std::string Money(double usd) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "$%.4f", usd);
  return buf;
}

std::string CellText(const json& v) {
  if (v.is_null()) return "NULL";
  return v.is_string() ? v.get<std::string>()
                       : v.dump(-1, ' ', false, json::error_handler_t::replace);
}

std::string ResultTableHtml(const json& detail) {
  if (!detail.is_object() || !detail.contains("columns") || !detail.contains("rows")) return "";
  std::string out = "<table class=\"rows\"><thead><tr>";
  for (const auto& c : detail["columns"]) out += "<th>" + EscapeMarkup(CellText(c)) + "</th>";
  out += "</tr></thead><tbody>";
  for (const auto& row : detail["rows"]) {
    out += "<tr>";
    for (const auto& cell : row) {
      // NULL is marked apart from the text 'NULL' and from the empty string.
      if (cell.is_null()) {
        out += "<td class=\"null\">NULL</td>";
      } else if (cell.is_string() &&
                 (cell.get<std::string>().empty() || CellText(cell) == "NULL")) {
        out += "<td>&quot;" + EscapeMarkup(CellText(cell)) + "&quot;</td>";
      } else {
        out += "<td>" + EscapeMarkup(CellText(cell)) + "</td>";
      }
    }
    out += "</tr>";
  }
  out += "</tbody></table>";
  const int64_t count = detail.value("row_count", int64_t{0});
  out += "<p class=\"muted\">" + std::to_string(count) + (count == 1 ? " row" : " rows");
  if (count > static_cast<int64_t>(detail["rows"].size())) {
    out += ", first " + std::to_string(detail["rows"].size()) + " shown";
  }
  return out + "</p>";
}

// An artifact's bytes from the run's own directory: `name` (a plain file name) in `trace_dir`
// or in its workdir/, where quarry writes charts and the sandbox leaves figures. Never the path
// the trace names: a trace someone sent could name any local file. Opened under directory fds
// with O_NOFOLLOW at every step, so a link (to a file or as workdir/) cannot lead out.
std::optional<std::string> ReadRunArtifact(const fs::path& trace_dir, const std::string& name) {
  constexpr size_t kMaxBytes = 16u << 20;
  const UniqueFd dir(open(trace_dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (!dir.valid()) return std::nullopt;
  if (auto bytes = ReadArtifactAt(dir.get(), name, kMaxBytes)) return std::move(*bytes);
  const UniqueFd workdir(
      openat(dir.get(), "workdir", O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
  if (!workdir.valid()) return std::nullopt;
  if (auto bytes = ReadArtifactAt(workdir.get(), name, kMaxBytes)) return std::move(*bytes);
  return std::nullopt;
}

// An artifact as an <img>: an SVG or PNG of the run, found by its file name (ReadRunArtifact).
std::string ImageHtml(const std::string& artifact, const fs::path& trace_dir) {
  const std::string name = fs::path(artifact).filename().string();
  if (name.empty() || name == "." || name == "..") return "";
  const std::string ext = fs::path(name).extension().string();
  const char* mime = ext == ".svg" ? "image/svg+xml" : ext == ".png" ? "image/png" : nullptr;
  if (!mime) return "";
  auto bytes = ReadRunArtifact(trace_dir, name);
  if (!bytes) return "";
  return "<figure><img alt=\"" + EscapeMarkup(name) + "\" src=\"data:" + mime + ";base64," +
         Base64(*bytes) + "\"><figcaption>" + EscapeMarkup(name) + "</figcaption></figure>";
}

bool IsExplanation(const Step& s) {
  return s.detail.is_object() && s.detail.value("purpose", json()) == "explanation";
}

// The model's questions to the user (ask_user) with their choices and the replies.
std::string ClarificationsHtml(const Trace& t) {
  if (t.clarifications.empty()) return "";
  std::string h =
      "<h2>Clarifications</h2><div class=\"card\"><table><thead><tr><th>step</th>"
      "<th>question</th><th>choices</th><th>reply</th></tr></thead><tbody>";
  for (const auto& c : t.clarifications) {
    std::string choices;
    for (const auto& x : c.choices) choices += "<li>" + EscapeMarkup(x) + "</li>";
    h += "<tr><td>" +
         (c.step > 0 ? "<a href=\"#step-" + std::to_string(c.step) + "\">" +
                           std::to_string(c.step) + "</a>"
                     : std::string("earlier run")) +
         "</td><td>" + EscapeMarkup(c.question) + "</td><td>" +
         (choices.empty() ? "" : "<ul>" + choices + "</ul>") + "</td><td>" +
         (c.reply.empty() ? "<span class=\"badge waiting\">waiting for the reply</span>"
                          : EscapeMarkup(c.reply)) +
         "</td></tr>";
  }
  return h + "</tbody></table></div>";
}

// Text in the data that read like instructions, as quarry marked it for the model.
std::string InjectionHtml(const Trace& t) {
  if (t.injection_suspected.empty()) return "";
  std::string h =
      "<h2>Injection warnings</h2><div class=\"card warn\"><p class=\"muted\">Text in "
      "the data that reads like instructions. The model was shown it as data, with a "
      "reminder that it is not the user's.</p><table><thead><tr><th>step</th>"
      "<th>where</th><th>pattern</th><th>excerpt</th></tr></thead><tbody>";
  for (const auto& i : t.injection_suspected) {
    h += "<tr><td>" +
         (i.step > 0 ? "<a href=\"#step-" + std::to_string(i.step) + "\">" +
                           std::to_string(i.step) + "</a>"
                     : std::string("prompt")) +
         "</td><td>" + EscapeMarkup(i.where) + "</td><td>" + EscapeMarkup(i.pattern) +
         "</td><td><code>" + EscapeMarkup(i.excerpt) + "</code></td></tr>";
  }
  return h + "</tbody></table></div>";
}

constexpr const char* kStyle = R"(
body{font:15px/1.45 system-ui,-apple-system,"DejaVu Sans",sans-serif;margin:0;color:#1d232b;background:#f6f7f9}
main{max-width:1080px;margin:0 auto;padding:24px}
h1{font-size:22px;margin:0 0 4px} h2{font-size:17px;margin:28px 0 8px}
.card{background:#fff;border:1px solid #dde2e8;border-radius:8px;padding:16px 18px;margin:12px 0}
.answer{font-size:17px} .muted{color:#5f6b7a;font-size:13px}
.badge{display:inline-block;padding:1px 8px;border-radius:10px;font-size:12px;font-weight:600}
.ok{background:#d9f2e3;color:#125c33} .failed{background:#fde2e1;color:#8a1c14}
.rejected{background:#fff1cc;color:#6b4e00} .model{background:#e6eefc;color:#1f3f7a}
table{border-collapse:collapse;width:100%;font-size:13px} th,td{border-bottom:1px solid #e6e9ee;padding:4px 8px;text-align:left;vertical-align:top}
th{background:#f1f3f6} pre{background:#0f1720;color:#e6edf3;padding:10px 12px;border-radius:6px;overflow:auto;white-space:pre-wrap;font-size:12.5px}
details{margin:6px 0} summary{cursor:pointer} .rows{max-height:420px;overflow:auto;display:block}
figure{margin:10px 0} figure img{max-width:100%;border:1px solid #e6e9ee;background:#fff}
.totals td{font-variant-numeric:tabular-nums}
td.null{color:#8a94a3;font-style:italic}
blockquote.reply{margin:8px 0;padding:8px 12px;border-left:3px solid #e0b000;background:#fffaf0;white-space:pre-wrap}
.waiting{background:#fff1cc;color:#6b4e00} .warn{border-color:#e0b000;background:#fffaf0}
)";

}  // namespace

Result<std::string> ReadArtifact(const fs::path& path, size_t max_bytes) {
  return ReadArtifactAt(AT_FDCWD, path, max_bytes);
}

Result<std::string> ReadArtifactAt(int dir_fd, const fs::path& path, size_t max_bytes) {
  const UniqueFd fd(openat(dir_fd, path.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK));
  if (!fd.valid()) {
    return Fail(Error::Code::kUsage, "cannot open " + path.string() + " (missing or a link)");
  }
  struct stat st {};
  std::string bytes;
  if (fstat(fd.get(), &st) != 0 || !S_ISREG(st.st_mode) ||
      static_cast<size_t>(st.st_size) > max_bytes) {
    return Fail(Error::Code::kUsage, path.string() + " is not a regular file of at most " +
                                         std::to_string(max_bytes) + " bytes");
  }
  bytes.resize(static_cast<size_t>(st.st_size));
  size_t done = 0;
  while (done < bytes.size()) {
    const ssize_t n = read(fd.get(), bytes.data() + done, bytes.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    done += static_cast<size_t>(n);
  }
  bytes.resize(done);
  return bytes;
}

std::string Base64(std::string_view bytes) {
  std::string out(4 * ((bytes.size() + 2) / 3), '\0');
  const int n = EVP_EncodeBlock(reinterpret_cast<unsigned char*>(out.data()),
                                reinterpret_cast<const unsigned char*>(bytes.data()),
                                static_cast<int>(bytes.size()));
  out.resize(static_cast<size_t>(n));
  return out;
}

std::string RenderHtml(const Trace& t, const fs::path& trace_dir) {
  const auto e = [](std::string_view s) { return EscapeMarkup(s); };
  std::string h =
      "<!DOCTYPE html><html lang=\"en\"><head><meta charset=\"utf-8\">"
      "<meta name=\"viewport\" content=\"width=device-width,initial-scale=1\">"
      "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; "
      "img-src data:; style-src 'unsafe-inline'\">"
      "<title>quarry trace " +
      e(t.id) + "</title><style>" + kStyle + "</style></head><body><main>";
  h += "<h1>" + e(t.question) + "</h1><p class=\"muted\">run " + e(t.id) + " · " + e(t.created_at) +
       " · " + e(t.model) + " via " + e(t.provider) +
       (t.turns_source.empty() ? std::string() : " (" + e(t.turns_source) + " turns)") + " · " +
       e(t.dialect) + "</p>";

  h += "<div class=\"card\">";
  if (t.incomplete) {
    h += "<p><span class=\"badge failed\">incomplete</span> <span class=\"muted\">rebuilt from "
         "events.jsonl: the run was killed before it wrote trace.json</span></p>";
  }
  if (t.stop_reason == StopReason::kAnswered) {
    h += "<p class=\"answer\">" + e(t.answer) + "</p>";
  } else if (!t.declined.empty()) {
    h += "<p class=\"muted\"><b>Declined, not an answer:</b> the model declined the question "
         "(checked to state no figure it was not shown):</p><blockquote class=\"reply "
         "declined\">" +
         e(t.declined) + "</blockquote>";
  } else {
    h += "<p class=\"answer\">No answer: " + e(std::string(StopReasonName(t.stop_reason))) + "</p>";
    if (!t.reply.empty()) {
      h += "<p class=\"muted\">The model replied without a tool call (not verified):</p>"
           "<blockquote class=\"reply\">" +
           e(t.reply) + "</blockquote>";
    }
  }
  if (!t.explanation.empty()) {
    h += "<p class=\"muted\"><b>Not an answer:</b> the model's explanation of why the run "
         "stopped (made without tools, not verified):</p><blockquote class=\"reply explanation\">" +
         e(t.explanation) + "</blockquote>";
  }
  h += std::string("<p><span class=\"badge ") +
       (t.grounded ? "ok\">grounded" : "failed\">not grounded") +
       "</span> <span class=\"muted\">stop reason: " +
       e(std::string(StopReasonName(t.stop_reason))) + "</span></p>";
  if (!t.assumptions.empty()) {
    h += "<p><b>Assumptions</b></p><ul>";
    for (const auto& a : t.assumptions) h += "<li>" + e(a) + "</li>";
    h += "</ul>";
  }
  if (!t.rests_on.empty()) {
    h += "<p><b>Rests on (knowledge files)</b></p><ul>";
    for (const auto& r : t.rests_on) h += "<li>" + e(r) + "</li>";
    h += "</ul>";
  }
  if (!t.answer_queries.empty()) {
    for (const auto& q : t.answer_queries) {
      h += "<p class=\"muted\">" + e(q.tool) + ", <a href=\"#step-" + std::to_string(q.step) +
           "\">step " + std::to_string(q.step) + "</a></p><pre>" + e(q.query) + "</pre>";
    }
  } else if (!t.answer_sql.empty()) {
    h += "<pre>" + e(t.answer_sql) + "</pre>";
  }
  if (!t.verify.empty()) {
    h += "<h2>Verify report</h2><table><thead><tr><th>value</th><th>from</th><th>rule</th>"
         "<th>matched</th><th>evidence</th></tr></thead><tbody>";
    for (const auto& c : t.verify) {
      std::string where;
      if (c.step > 0) {
        where = "<a href=\"#step-" + std::to_string(c.step) + "\">step " + std::to_string(c.step) +
                "</a> " + e(c.tool) +
                (c.column.empty() ? "" : ", column <code>" + e(c.column) + "</code>");
      }
      if (!c.reason.empty()) where += (where.empty() ? "" : "<br>") + e(c.reason);
      h += "<tr><td>" + e(c.value) + "</td><td>" + e(c.origin) + "</td><td><span class=\"badge " +
           (c.grounded ? "ok" : "failed") + "\">" + e(c.rule) + "</span></td><td>" + e(c.matched) +
           "</td><td>" + where + "</td></tr>";
    }
    h += "</tbody></table>";
  }
  for (const auto& a : t.artifacts) h += ImageHtml(a, trace_dir);
  for (const auto& n : t.notes) h += "<p class=\"muted\">note: " + e(n) + "</p>";
  h += "</div>";

  h += ClarificationsHtml(t) + InjectionHtml(t);
  h += "<h2>Sources</h2><div class=\"card\"><table><thead><tr><th>path</th><th>format</th>"
       "<th>bytes</th><th>sha256</th><th>tables</th></tr></thead><tbody>";
  for (const auto& s : t.sources) {
    std::string tables;
    for (const auto& n : s.tables) tables += (tables.empty() ? "" : ", ") + n;
    h += "<tr><td>" + e(s.path) + "</td><td>" + e(s.format) + "</td><td>" +
         std::to_string(s.size_bytes) + "</td><td><code>" + e(s.sha256.substr(0, 16)) +
         "…</code></td><td>" + e(tables) + "</td></tr>";
  }
  h += "</tbody></table></div>";

  h += "<h2>Timeline</h2><div class=\"card\"><table><thead><tr><th>#</th><th>step</th>"
       "<th>status</th><th>failure</th><th>ms</th><th>tokens in+out</th><th>cached</th>"
       "<th>cache written</th><th>cost</th></tr></thead><tbody>";
  for (const auto& s : t.steps) {
    const bool model = s.kind == StepKind::kModel;
    const std::string status = model ? "model" : std::string(StepStatusName(s.status));
    h += "<tr><td><a href=\"#step-" + std::to_string(s.index) + "\">" + std::to_string(s.index) +
         "</a></td><td>" +
         e(model ? (IsExplanation(s) ? "explanation (no tools)" : "model turn") : s.tool) +
         (s.repair ? " <span class=\"muted\">repair</span>" : "") +
         "</td><td><span class=\"badge " + e(status) + "\">" + e(status) + "</span></td><td>" +
         e(model || s.failure_class == "none"
               ? ""
               : s.failure_class + (s.rule.empty() ? "" : " (" + s.rule + ")")) +
         "</td><td>" + std::to_string(s.duration_ms) + "</td><td>" +
         (model ? std::to_string(s.input_tokens) + "+" + std::to_string(s.output_tokens) : "") +
         "</td><td>" + (model ? std::to_string(s.cached_tokens) : "") + "</td><td>" +
         (model ? std::to_string(s.cache_write_tokens) : "") + "</td><td>" +
         (model ? Money(s.cost_usd) : "") + "</td></tr>";
  }
  h += "</tbody></table></div>";

  h += "<h2>Steps</h2>";
  for (const auto& s : t.steps) {
    h += "<div class=\"card\" id=\"step-" + std::to_string(s.index) + "\">";
    if (s.kind == StepKind::kModel) {
      h += "<p><span class=\"badge model\">" +
           std::string(IsExplanation(s) ? "explanation, not an answer: step " : "model turn ") +
           std::to_string(s.index) + "</span> <span class=\"muted\">" +
           std::to_string(s.input_tokens) + " in (" + std::to_string(s.cached_tokens) +
           " cached, " + std::to_string(s.cache_write_tokens) + " written to the cache) + " +
           std::to_string(s.output_tokens) + " out · " + Money(s.cost_usd) + " · " +
           std::to_string(s.duration_ms) + " ms</span></p>";
      if (!s.content.empty()) h += "<p>" + e(s.content) + "</p>";
      for (const auto& c : s.tool_calls) h += "<p class=\"muted\">calls " + e(c.name) + "</p>";
    } else {
      const std::string status(StepStatusName(s.status));
      h += "<p><span class=\"badge " + e(status) + "\">" + e(status) + "</span> <strong>" +
           e(s.tool) + "</strong> <span class=\"muted\">" +
           e(s.failure_class == "none" ? "" : s.failure_class) + " · " +
           std::to_string(s.duration_ms) + " ms" + (s.repair ? " · repair" : "") + "</span></p>";
      const json& d = s.detail;
      if (d.is_object() && d.contains("sql")) h += "<pre>" + e(CellText(d["sql"])) + "</pre>";
      if (d.is_object() && d.contains("code")) h += "<pre>" + e(CellText(d["code"])) + "</pre>";
      if (!(d.is_object() && (d.contains("sql") || d.contains("code")))) {
        h += "<pre>" + e(s.arguments) + "</pre>";
      }
      h += ResultTableHtml(d);
      if (d.is_object() && d.contains("artifacts")) {
        for (const auto& a : d["artifacts"]) h += ImageHtml(CellText(a), trace_dir);
      }
      h += "<details><summary>observation as the model saw it</summary><pre>" + e(s.observation) +
           "</pre></details>";
    }
    h += "</div>";
  }

  const Totals& x = t.totals;
  h += "<h2>Totals</h2><div class=\"card\"><table class=\"totals\"><tbody>"
       "<tr><td>model turns</td><td>" +
       std::to_string(x.model_turns) +
       "</td></tr>"
       "<tr><td>tool calls</td><td>" +
       std::to_string(x.tool_calls) +
       "</td></tr>"
       "<tr><td>repairs (succeeded / attempted)</td><td>" +
       std::to_string(x.repair_successes) + " / " + std::to_string(x.repair_attempts) +
       "</td></tr>"
       "<tr><td>send-backs (answers the verify gate returned to ground)</td><td>" +
       std::to_string(x.send_backs) +
       "</td></tr>"
       "<tr><td>tokens (in + out, cached)</td><td>" +
       std::to_string(x.input_tokens) + " + " + std::to_string(x.output_tokens) + ", " +
       std::to_string(x.cached_tokens) + " cached, " + std::to_string(x.cache_write_tokens) +
       " written to the cache</td></tr>"
       "<tr><td>cost</td><td>" +
       Money(x.cost_usd) +
       "</td></tr>"
       "<tr><td>saved by caching</td><td>" +
       Money(x.cache_saved_usd) +
       "</td></tr>"
       "<tr><td>wall time</td><td>" +
       std::to_string(x.wall_ms) +
       " ms</td></tr>"
       "</tbody></table></div>";
  h += "<p class=\"muted\">Rendered by quarry view from trace format " +
       std::to_string(t.format_version) + ".</p></main></body></html>\n";
  return h;
}

}  // namespace quarry::trace
