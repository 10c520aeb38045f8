// ClickHouse over HTTP: the URL (clickhouse://, clickhouse+http://, clickhouse+https://) parsed
// and refused when it carries a password, the libcurl client that POSTs one query and streams
// its body, the TabSeparatedWithNamesAndTypes reader, and the server's error text parsed.
#include <curl/curl.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <memory>

#include "quarry/common/text.h"
#include "quarry/engine/clickhouse_internal.h"
#include "quarry/engine/sql_tokens_internal.h"

namespace quarry::engine::internal {
namespace {

constexpr const char* kUsage =
    "; give clickhouse://USER@HOST:PORT/DATABASE (HTTP, port 8123 by default) or "
    "clickhouse+https://USER@HOST:8443/DATABASE";

struct CurlCloser {
  void operator()(CURL* c) const { curl_easy_cleanup(c); }
};
struct MultiCloser {
  void operator()(CURLM* m) const { curl_multi_cleanup(m); }
};

std::string Shown(const ClickHouseSpec& s, const ServerUrl& url) {
  return url.scheme + "://" + ServerUrlAuthority(url) + "/" + UrlEncode(s.database);
}

struct Sink {
  const std::function<bool(std::string_view)>* on_body = nullptr;
  long status = 0;
  std::string error_body;
  bool refused = false;  // on_body asked to stop
  CURL* easy = nullptr;
};

size_t OnWrite(char* data, size_t size, size_t count, void* user) {
  auto* sink = static_cast<Sink*>(user);
  const size_t n = size * count;
  if (sink->status == 0) curl_easy_getinfo(sink->easy, CURLINFO_RESPONSE_CODE, &sink->status);
  if (sink->status != 200) {
    if (sink->error_body.size() < 64 * 1024) sink->error_body.append(data, n);
    return n;
  }
  if (sink->on_body && *sink->on_body && !(*sink->on_body)(std::string_view(data, n))) {
    sink->refused = true;
    return 0;  // libcurl ends the transfer with CURLE_WRITE_ERROR
  }
  return n;
}

// `composite`: an Array, Tuple or Map, which the server writes in its quoted form (elements
// quoted and escaped once), with no TSV escaping on top: kept as written.
std::optional<std::string> Field(std::string_view raw, bool composite) {
  if (raw == "\\N") return std::nullopt;
  if (composite) return std::string(raw);
  std::string out;
  out.reserve(raw.size());
  for (size_t i = 0; i < raw.size(); ++i) {
    if (raw[i] != '\\' || i + 1 == raw.size()) {
      out += raw[i];
      continue;
    }
    i += DecodeClickHouseEscape(raw, i + 1, out);
  }
  return out;
}

}  // namespace

bool IsClickHouseSpec(std::string_view spec) {
  const std::string scheme = UrlScheme(spec.substr(0, 24));
  return scheme == "clickhouse" || scheme == "clickhouse+http" || scheme == "clickhouse+https";
}

Result<ClickHouseSpec> ParseClickHouseSpec(std::string_view spec) {
  auto url = ParseServerUrl(spec, kUsage);
  if (!url) return std::unexpected(url.error());
  ClickHouseSpec out;
  out.tls = url->scheme == "clickhouse+https";
  if (url->password) {
    return Fail(Error::Code::kUsage,
                "the server URL " + url->scheme + "://" + UrlEncode(url->user) +
                    "@… holds a password: never put one in --data (it would show in process "
                    "lists and shell history); set CLICKHOUSE_PASSWORD");
  }
  for (const auto& [key, value] : url->params) {
    if (key == "password" || key == "pass" || key == "pwd") {
      return Fail(Error::Code::kUsage,
                  "the server URL holds a password: never put one in --data; set "
                  "CLICKHOUSE_PASSWORD");
    }
    return Fail(Error::Code::kUsage, UnknownUrlParameter(key, "it takes none"));
  }
  if (url->host.empty()) {
    return Fail(Error::Code::kUsage,
                "the server URL " + url->scheme + "://… names no host" + std::string(kUsage));
  }
  if (url->path.find('/') != std::string::npos) {
    return Fail(Error::Code::kUsage,
                "the server URL's path must be one database name" + std::string(kUsage));
  }
  out.host = url->host;
  out.port = url->port;
  out.database = url->path.empty() ? "default" : url->path;
  const char* env_user = std::getenv("CLICKHOUSE_USER");
  out.user = !url->user.empty() ? url->user : env_user && *env_user ? env_user : "default";
  if (const char* password = std::getenv("CLICKHOUSE_PASSWORD")) out.password = password;
  ServerUrl shown = *url;
  shown.user = out.user;
  out.shown = Shown(out, shown);
  const std::string host =
      out.host.find(':') != std::string::npos ? "[" + out.host + "]" : out.host;
  out.base_url = std::string(out.tls ? "https://" : "http://") + host + ":" +
                 std::to_string(out.port != 0 ? out.port
                                : out.tls     ? 8443
                                              : 8123) +
                 "/";
  return out;
}

std::string RedactClickHouseSpec(std::string_view spec) {
  auto parsed = ParseClickHouseSpec(spec);
  return parsed ? parsed->shown : UrlScheme(spec) + "://…";
}

ClickHouseError ParseClickHouseError(std::string_view body) {
  ClickHouseError out;
  std::string text(body);
  while (!text.empty() && (text.back() == '\n' || text.back() == '\r' || text.back() == ' ')) {
    text.pop_back();
  }
  if (const size_t at = text.find("Code: "); at != std::string::npos) {
    size_t i = at + 6;
    while (i < text.size() && std::isdigit(static_cast<unsigned char>(text[i]))) {
      out.code = out.code * 10 + (text[i] - '0');
      if (out.code > 1000000) break;
      ++i;
    }
    text = text.substr(i);
    while (!text.empty() && (text.front() == ',' || text.front() == '.' || text.front() == ' ')) {
      text.erase(0, 1);
    }
  }
  // 18.x: "e.displayText() = DB::Exception: MESSAGE, e.what() = DB::Exception"; current:
  // "DB::Exception: MESSAGE. (NAME) (version 23.8.1.1)".
  for (const char* noise : {"e.displayText() = ", "DB::Exception: "}) {
    if (const size_t at = text.find(noise); at != std::string::npos && at < 40) {
      text.erase(0, at + std::string_view(noise).size());
    }
  }
  if (const size_t at = text.rfind(", e.what() = "); at != std::string::npos) text.resize(at);
  if (const size_t at = text.rfind(" (version "); at != std::string::npos) text.resize(at);
  out.message = text;
  return out;
}

bool TsvReader::Feed(std::string_view chunk) {
  size_t start = 0;
  while (true) {
    const size_t nl = chunk.find('\n', start);
    if (nl == std::string_view::npos) break;
    bool more;
    if (pending_.empty()) {
      more = Line(chunk.substr(start, nl - start));
    } else {
      pending_.append(chunk.substr(start, nl - start));
      more = Line(pending_);
      pending_.clear();
    }
    start = nl + 1;
    if (!more) return false;
  }
  pending_.append(chunk.substr(start));
  return true;
}

bool TsvReader::Finish() {
  if (pending_.empty()) return true;
  std::string last;
  last.swap(pending_);
  return Line(last);
}

bool TsvReader::Line(std::string_view line) {
  std::vector<std::optional<std::string>> cells;
  size_t start = 0;
  while (true) {
    const size_t tab = line.find('\t', start);
    const size_t c = cells.size();
    cells.push_back(Field(line.substr(start, tab - start), c < composite_.size() && composite_[c]));
    if (tab == std::string_view::npos) break;
    start = tab + 1;
  }
  if (header_lines_ < 2) {
    std::vector<std::string> text;
    for (auto& c : cells) text.push_back(c.value_or(""));
    if (header_lines_++ == 0) {
      names_ = std::move(text);
    } else {
      for (const std::string& type : text) {
        const std::string_view base = ClickHouseBaseType(type);
        composite_.push_back(base.starts_with("Array(") || base.starts_with("Tuple(") ||
                             base.starts_with("Map(") || base.starts_with("Nested("));
      }
      if (on_header_) on_header_(std::move(names_), std::move(text));
    }
    return true;
  }
  return on_row_ ? on_row_(cells) : true;
}

ClickHouseReply ClickHouseClient::Post(
    std::string_view sql, const std::vector<std::pair<std::string, std::string>>& params,
    const std::function<bool(std::string_view)>& on_body, const StopToken& stop,
    int64_t deadline_ms) const {
  ClickHouseReply reply;
  std::unique_ptr<CURL, CurlCloser> easy(curl_easy_init());
  std::unique_ptr<CURLM, MultiCloser> multi(curl_multi_init());
  if (!easy || !multi) {
    reply.transport = "libcurl could not start a request";
    return reply;
  }
  std::string url = spec_.base_url;
  for (size_t i = 0; i < params.size(); ++i) {
    url += (i ? "&" : "?") + UrlEncode(params[i].first) + "=" + UrlEncode(params[i].second);
  }
  Sink sink;
  sink.on_body = &on_body;
  sink.easy = easy.get();
  CURL* e = easy.get();
  curl_easy_setopt(e, CURLOPT_URL, url.c_str());
  curl_easy_setopt(e, CURLOPT_POST, 1L);
  curl_easy_setopt(e, CURLOPT_POSTFIELDS, sql.data());
  curl_easy_setopt(e, CURLOPT_POSTFIELDSIZE_LARGE, static_cast<curl_off_t>(sql.size()));
  curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, OnWrite);
  curl_easy_setopt(e, CURLOPT_WRITEDATA, &sink);
  curl_easy_setopt(e, CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(e, CURLOPT_CONNECTTIMEOUT_MS, 10000L);
  // The SQL and the credentials go to the server named, never to a proxy from the environment.
  curl_easy_setopt(e, CURLOPT_PROXY, "");
  curl_easy_setopt(e, CURLOPT_FOLLOWLOCATION, 0L);
  curl_easy_setopt(e, CURLOPT_PROTOCOLS_STR, spec_.tls ? "https" : "http");
  curl_easy_setopt(e, CURLOPT_HTTPAUTH, CURLAUTH_BASIC);
  curl_easy_setopt(e, CURLOPT_USERNAME, spec_.user.c_str());
  curl_easy_setopt(e, CURLOPT_PASSWORD, spec_.password.c_str());
  curl_multi_add_handle(multi.get(), e);
  const auto start = std::chrono::steady_clock::now();
  int running = 1;
  while (running) {
    if (curl_multi_perform(multi.get(), &running) != CURLM_OK) break;
    if (!running) break;
    if (stop.stop_requested()) {
      reply.stopped = true;
      break;
    }
    if (deadline_ms > 0 &&
        std::chrono::steady_clock::now() - start >= std::chrono::milliseconds(deadline_ms)) {
      reply.stopped = reply.deadline = true;
      break;
    }
    curl_multi_poll(multi.get(), nullptr, 0, 50, nullptr);
  }
  CURLcode code = CURLE_OK;
  int left = 0;
  while (CURLMsg* msg = curl_multi_info_read(multi.get(), &left)) {
    if (msg->msg == CURLMSG_DONE) code = msg->data.result;
  }
  curl_easy_getinfo(e, CURLINFO_RESPONSE_CODE, &reply.status);
  curl_multi_remove_handle(multi.get(), e);
  if (!reply.stopped && code != CURLE_OK && !sink.refused) {
    reply.transport = curl_easy_strerror(code);
    reply.status = 0;
  }
  reply.body = std::move(sink.error_body);
  return reply;
}

Result<Rows> ClickHouseClient::Fetch(const std::string& sql) const {
  Rows rows;
  TsvReader reader(nullptr, [&](std::vector<std::optional<std::string>>& cells) {
    rows.push_back(std::move(cells));
    return true;
  });
  std::vector<std::pair<std::string, std::string>> params = {
      {"database", spec_.database}, {"default_format", "TabSeparatedWithNamesAndTypes"}};
  if (readonly_in_url_) params.emplace_back("readonly", "1");
  const ClickHouseReply reply = Post(
      sql, params, [&](std::string_view chunk) { return reader.Feed(chunk); }, {}, 60000);
  if (reply.status == 0) {
    return Fail(Error::Code::kData, "clickhouse: cannot reach " + spec_.shown + ": " +
                                        (reply.deadline ? "no answer in 60 s" : reply.transport));
  }
  if (reply.status != 200) {
    const ClickHouseError error = ParseClickHouseError(reply.body);
    return Fail(Error::Code::kData, "clickhouse: " + error.message);
  }
  reader.Finish();
  return rows;
}

std::string ClickHouseIdent(std::string_view name) {
  std::string out = "`";
  for (char c : name) {
    if (c == '`' || c == '\\') out += '\\';
    out += c;
  }
  return out + "`";
}

std::string ClickHouseString(std::string_view text) {
  std::string out = "'";
  for (char c : text) {
    if (c == '\'' || c == '\\') out += '\\';
    out += c;
  }
  return out + "'";
}

}  // namespace quarry::engine::internal
