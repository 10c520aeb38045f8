// The test ClickHouse server's process, configuration and content (see clickhouse_server.h).
#include "support/clickhouse_server.h"

#include <curl/curl.h>
#include <signal.h>
#include <sqlite3.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <fstream>
#include <mutex>
#include <stdexcept>
#include <thread>

#include <gtest/gtest.h>

#include "support/server_process.h"
#include "support/test_support.h"

namespace quarry::test {
namespace {
namespace fs = std::filesystem;
using namespace std::chrono_literals;
using internal::Euid;
using internal::LogTail;
using internal::ServerUser;

constexpr std::string_view kWhat = "test ClickHouse server";
constexpr const char* kServer = "/usr/sbin/clickhouse-server";

[[noreturn]] void Fail(const std::string& message) { internal::FailServer(kWhat, message); }

size_t Append(char* data, size_t size, size_t count, void* out) {
  static_cast<std::string*>(out)->append(data, size * count);
  return size * count;
}

// One POST as `default`; the status (0: no answer) and the body.
std::pair<long, std::string> Post(int port, std::string_view path_and_query,
                                  std::string_view body) {
  std::string out;
  CURL* curl = curl_easy_init();
  if (!curl) return {0, "no curl"};
  const std::string url = "http://127.0.0.1:" + std::to_string(port) + std::string(path_and_query);
  curl_easy_setopt(curl, CURLOPT_URL, url.c_str());
  curl_easy_setopt(curl, CURLOPT_PROXY, "");
  curl_easy_setopt(curl, CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(curl, CURLOPT_TIMEOUT, 60L);
  curl_easy_setopt(curl, CURLOPT_WRITEFUNCTION, Append);
  curl_easy_setopt(curl, CURLOPT_WRITEDATA, &out);
  if (!body.empty()) {
    curl_easy_setopt(curl, CURLOPT_POSTFIELDS, body.data());
    curl_easy_setopt(curl, CURLOPT_POSTFIELDSIZE_LARGE, static_cast<curl_off_t>(body.size()));
  }
  long status = 0;
  if (curl_easy_perform(curl) == CURLE_OK) curl_easy_getinfo(curl, CURLINFO_RESPONSE_CODE, &status);
  curl_easy_cleanup(curl);
  return {status, out};
}

std::string UrlEncoded(std::string_view text) { return internal::PercentEncode(text); }

void Run(int port, std::string_view sql, std::string_view data = {}) {
  const auto [status, body] =
      data.empty() ? Post(port, "/", sql) : Post(port, "/?query=" + UrlEncoded(sql), data);
  if (status != 200)
    Fail("setup statement failed (" + std::string(sql.substr(0, 200)) + "): " + body);
}

std::string TsvEscape(std::string_view text) {
  std::string out;
  for (char c : text) {
    switch (c) {
      case '\t':
        out += "\\t";
        break;
      case '\n':
        out += "\\n";
        break;
      case '\\':
        out += "\\\\";
        break;
      default:
        out += c;
    }
  }
  return out;
}

struct Column {
  std::string name;
  std::string type;  // ClickHouse's
};

// Reads one SQLite table: its ClickHouse columns (see clickhouse_server.h) and its rows as TSV.
std::pair<std::vector<Column>, std::string> ReadTable(sqlite3* db, const std::string& table) {
  std::vector<Column> columns;
  std::vector<std::string> declared;
  sqlite3_stmt* st = nullptr;
  sqlite3_prepare_v2(db, ("PRAGMA table_info(\"" + table + "\")").c_str(), -1, &st, nullptr);
  while (sqlite3_step(st) == SQLITE_ROW) {
    columns.push_back({reinterpret_cast<const char*>(sqlite3_column_text(st, 1)), ""});
    declared.push_back(reinterpret_cast<const char*>(sqlite3_column_text(st, 2)));
  }
  sqlite3_finalize(st);
  std::vector<bool> has_null(columns.size()), before_1970(columns.size());
  std::string tsv;
  sqlite3_prepare_v2(db, ("SELECT * FROM \"" + table + "\"").c_str(), -1, &st, nullptr);
  while (sqlite3_step(st) == SQLITE_ROW) {
    for (size_t c = 0; c < columns.size(); ++c) {
      if (c) tsv += '\t';
      if (sqlite3_column_type(st, static_cast<int>(c)) == SQLITE_NULL) {
        has_null[c] = true;
        tsv += "\\N";
        continue;
      }
      const std::string v =
          reinterpret_cast<const char*>(sqlite3_column_text(st, static_cast<int>(c)));
      if (declared[c] == "DATETIME" && v < "1970-01-02") before_1970[c] = true;
      tsv += TsvEscape(v);
    }
    tsv += '\n';
  }
  sqlite3_finalize(st);
  for (size_t c = 0; c < columns.size(); ++c) {
    std::string t = declared[c].starts_with("NUMERIC") ? "Decimal(10, 2)"
                    : declared[c] == "INTEGER"         ? "Int64"
                    : declared[c] == "DATETIME"        ? (before_1970[c] ? "String" : "DateTime")
                                                       : "String";
    columns[c].type = has_null[c] ? "Nullable(" + t + ")" : t;
  }
  return {columns, tsv};
}

std::string CreateSql(const std::string& qualified, const std::vector<Column>& columns,
                      const std::string& engine) {
  std::string sql = "CREATE TABLE " + qualified + " (";
  for (size_t c = 0; c < columns.size(); ++c) {
    sql += (c ? ", `" : "`") + columns[c].name + "` " + columns[c].type;
  }
  return sql + ") ENGINE = " + engine;
}

void LoadChinook(int port) {
  sqlite3* db = nullptr;
  const std::string path = (fs::path(QUARRY_SOURCE_DIR) / "data" / "chinook.sqlite").string();
  if (sqlite3_open_v2(path.c_str(), &db, SQLITE_OPEN_READONLY, nullptr) != SQLITE_OK) {
    Fail("cannot open " + path);
  }
  std::vector<std::string> tables;
  sqlite3_stmt* st = nullptr;
  sqlite3_prepare_v2(db,
                     "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE "
                     "'sqlite_%' ORDER BY name",
                     -1, &st, nullptr);
  while (sqlite3_step(st) == SQLITE_ROW) {
    tables.emplace_back(reinterpret_cast<const char*>(sqlite3_column_text(st, 0)));
  }
  sqlite3_finalize(st);
  for (const char* name : {"Chinook", "ChinookSharded", "shard1", "shard2"}) {
    Run(port, std::string("CREATE DATABASE ") + name);
  }
  for (const std::string& table : tables) {
    auto [columns, tsv] = ReadTable(db, table);
    const std::string merge_tree = "MergeTree ORDER BY `" + columns[0].name + "`";
    Run(port, CreateSql("Chinook.`" + table + "`", columns, merge_tree));
    Run(port, "INSERT INTO Chinook.`" + table + "` FORMAT TabSeparated", tsv);
    if (table != "InvoiceLine") {
      Run(port, CreateSql("ChinookSharded.`" + table + "`", columns, merge_tree));
      Run(port, "INSERT INTO ChinookSharded.`" + table + "` SELECT * FROM Chinook.`" + table + "`");
      continue;
    }
    for (const char* shard : {"shard1", "shard2"}) {
      Run(port, CreateSql(std::string(shard) + ".InvoiceLine", columns, merge_tree));
    }
    Run(port,
        "INSERT INTO shard1.InvoiceLine SELECT * FROM Chinook.InvoiceLine WHERE InvoiceId <= 200");
    Run(port,
        "INSERT INTO shard2.InvoiceLine SELECT * FROM Chinook.InvoiceLine WHERE InvoiceId > 200");
    Run(port, CreateSql("ChinookSharded.InvoiceLine", columns,
                        "Distributed(quarry_shards, '', InvoiceLine)"));
  }
  sqlite3_close(db);
  Run(port, "CREATE DATABASE quarry_types");
  Run(port,
      "CREATE TABLE quarry_types.measures (id UInt32, label String, amount Nullable(Decimal(38, "
      "10)), big Nullable(UInt64), neg Nullable(Int64), ratio Nullable(Float64), taken "
      "Nullable(DateTime), born Nullable(Date), code FixedString(4), size Enum8('S' = 1, 'M' = "
      "2, 'L' = 3), tags Array(String), note String) ENGINE = MergeTree ORDER BY id");
  // TSV: the Decimal as text, \N for NULL, \x escapes for bytes that are not UTF-8.
  Run(port, "INSERT INTO quarry_types.measures FORMAT TabSeparated",
      "1\texact\t1234567890123456789012345678.0123456789\t18446744073709551615\t"
      "-9223372036854775808\t0.1\t2024-03-01 12:34:56\t2024-02-29\tab\tM\t['a','b\\'c']\t"
      "caf\u00e9 \u2615\n"
      "2\todd\t0.0000000001\t0\t0\tinf\t1970-01-02 00:00:00\t1970-01-02\tabcd\tS\t[]\t"
      "tab\\there\\nline\\\\end\n"
      "3\tnulls\t\\N\t\\N\t\\N\t\\N\t\\N\t\\N\t\tL\t[]\t\\xff\\xfe\n"
      "4\tnan\t-0.5\t1\t1\tnan\t\\N\t\\N\tx\tM\t['x']\t\n");
}

std::string UsersXml() {
  auto user = [](const char* name, const char* password, const char* profile) {
    return std::string("<") + name + "><password>" + password +
           "</password><networks><ip>127.0.0.1</ip></networks><profile>" + profile +
           "</profile><quota>default</quota></" + name + ">";
  };
  return "<?xml version=\"1.0\"?>\n<yandex><profiles><default><max_memory_usage>1000000000"
         "</max_memory_usage></default><reader><readonly>1</readonly><max_execution_time>300"
         "</max_execution_time></reader><bare><readonly>1</readonly></bare><two><readonly>2"
         "</readonly></two></profiles><users>" +
         user("default", "", "default") + user("reader", "", "reader") +
         user("bareuser", "", "bare") + user("twouser", "", "two") +
         user("pwuser", "ch-test-secret", "reader") +
         "</users><quotas><default><interval><duration>3600</duration><queries>0</queries>"
         "<errors>0</errors><result_rows>0</result_rows><read_rows>0</read_rows>"
         "<execution_time>0</execution_time></interval></default></quotas></yandex>\n";
}

std::string ConfigXml(const fs::path& dir, int http, int tcp) {
  const std::string d = dir.string() + "/";
  auto shard = [&](const char* db) {
    return "<shard><replica><host>127.0.0.1</host><port>" + std::to_string(tcp) +
           "</port><default_database>" + db + "</default_database></replica></shard>";
  };
  return "<?xml version=\"1.0\"?>\n<yandex><logger><level>warning</level><log>" + d +
         "server.log</log><errorlog>" + d + "server.err.log</errorlog></logger><http_port>" +
         std::to_string(http) + "</http_port><tcp_port>" + std::to_string(tcp) +
         "</tcp_port><listen_host>127.0.0.1</listen_host><path>" + d + "data/</path><tmp_path>" +
         d + "tmp/</tmp_path><user_files_path>" + d + "user_files/</user_files_path>" +
         "<format_schema_path>" + d + "format_schemas/</format_schema_path><users_config>" + d +
         "users.xml</users_config><default_profile>default</default_profile>" +
         "<default_database>default</default_database><timezone>UTC</timezone>" +
         "<mark_cache_size>67108864</mark_cache_size><uncompressed_cache_size>67108864" +
         "</uncompressed_cache_size><max_concurrent_queries>50</max_concurrent_queries>" +
         "<remote_servers><quarry_shards>" + shard("shard1") + shard("shard2") +
         "</quarry_shards></remote_servers></yandex>\n";
}

class OwnedClickHouseServer {
 public:
  OwnedClickHouseServer() : owner_(::getpid()) {
    static std::atomic<int> counter{0};
    if (::access(kServer, X_OK) != 0) {
      Fail(std::string("no ") + kServer +
           "; run scripts/setup.sh --tests, which installs Debian's clickhouse-server");
    }
    const ServerUser user = internal::PickServerUser(
        kWhat, {"clickhouse", "nobody"},
        "run scripts/setup.sh --tests (Debian's clickhouse-server creates the clickhouse user)");
    internal::SweepStaleRuns("quarry-ch-" + Euid() + "-run-");
    dir_ = fs::temp_directory_path() / ("quarry-ch-" + Euid() + "-run-" + std::to_string(owner_) +
                                        "-" + std::to_string(counter++));
    fs::remove_all(dir_);
    fs::create_directory(dir_);
    fs::permissions(dir_, fs::perms::owner_all);
    for (const char* sub : {"data", "tmp", "user_files", "format_schemas"}) {
      fs::create_directory(dir_ / sub);
    }
    server_.http_port = internal::FreeLoopbackPort(kWhat);
    do {
      server_.tcp_port = internal::FreeLoopbackPort(kWhat);
    } while (server_.tcp_port == server_.http_port);
    std::ofstream(dir_ / "config.xml") << ConfigXml(dir_, server_.http_port, server_.tcp_port);
    std::ofstream(dir_ / "users.xml") << UsersXml();
    internal::ChownTree(kWhat, dir_, user);
    pid_ = internal::Spawn(kWhat, {kServer, "--config-file=" + (dir_ / "config.xml").string()},
                           dir_, dir_ / "stdout.log", user);
    const auto deadline = std::chrono::steady_clock::now() + 60s;
    while (true) {
      if (Post(server_.http_port, "/ping", "").first == 200) break;
      if (internal::WaitFor(pid_, 0ms) || std::chrono::steady_clock::now() > deadline) {
        const std::string log = LogTail(dir_ / "server.err.log") + LogTail(dir_ / "stdout.log");
        Stop();
        Fail("the server did not start: " + log);
      }
      std::this_thread::sleep_for(50ms);
    }
    try {
      LoadChinook(server_.http_port);
    } catch (...) {
      Stop();
      throw;
    }
  }
  ~OwnedClickHouseServer() {
    if (::getpid() == owner_) Stop();
  }
  const ClickHouseServer& server() const { return server_; }

 private:
  void Stop() {
    internal::StopServer(pid_, SIGKILL);  // thrown away: no clean shutdown needed
    std::error_code ignored;
    fs::remove_all(dir_, ignored);
  }
  ClickHouseServer server_;
  pid_t pid_ = -1;
  pid_t owner_ = -1;
  fs::path dir_;
};

std::mutex g_mutex;
OwnedClickHouseServer* g_shared = nullptr;
std::string g_error;

void StopShared() {
  delete g_shared;
  g_shared = nullptr;
}

}  // namespace

std::string ClickHouseServer::Url(std::string_view db, std::string_view user) const {
  return "clickhouse://" + std::string(user) + "@127.0.0.1:" + std::to_string(http_port) + "/" +
         std::string(db);
}

void ClickHouseServer::Exec(std::string_view sql) const {
  const auto [status, body] = Post(http_port, "/", sql);
  if (status != 200) ADD_FAILURE() << "clickhouse setup: " << sql << ": " << body;
}

std::vector<std::vector<std::optional<std::string>>> ClickHouseServer::Rows(
    std::string_view sql) const {
  std::vector<std::vector<std::optional<std::string>>> rows;
  const auto [status, body] = Post(http_port, "/?default_format=TabSeparated", sql);
  if (status != 200) {
    ADD_FAILURE() << "clickhouse setup: " << sql << ": " << body;
    return rows;
  }
  size_t start = 0;
  while (start < body.size()) {
    const size_t nl = body.find('\n', start);
    const std::string line = body.substr(start, nl - start);
    start = nl == std::string::npos ? body.size() : nl + 1;
    std::vector<std::optional<std::string>> row;
    size_t from = 0;
    while (true) {
      const size_t tab = line.find('\t', from);
      const std::string cell = line.substr(from, tab - from);
      if (cell == "\\N") {
        row.emplace_back(std::nullopt);
      } else {
        row.emplace_back(cell);
      }
      if (tab == std::string::npos) break;
      from = tab + 1;
    }
    rows.push_back(std::move(row));
  }
  return rows;
}

std::map<std::string, std::string> ClickHouseServer::TableChecksums(std::string_view db) const {
  std::map<std::string, std::string> sums;
  const std::string quoted_db = "'" + std::string(db) + "'";
  for (const auto& row :
       Rows("SELECT name FROM system.tables WHERE database = " + quoted_db + " ORDER BY name")) {
    if (row.empty() || !row[0]) continue;
    std::string columns;
    for (const auto& col : Rows("SELECT name FROM system.columns WHERE database = " + quoted_db +
                                " AND table = '" + *row[0] + "'")) {
      columns += (columns.empty() ? "toString(`" : ", toString(`") + col[0].value_or("") + "`)";
    }
    const auto sum = Rows("SELECT count(), groupBitXor(cityHash64(" + columns + ")) FROM `" +
                          std::string(db) + "`.`" + *row[0] + "`");
    if (sum.size() == 1 && sum[0].size() == 2) {
      sums[*row[0]] = sum[0][0].value_or("") + ":" + sum[0][1].value_or("");
    }
  }
  return sums;
}

const ClickHouseServer& SharedClickHouseServer() {
  std::lock_guard lock(g_mutex);
  if (g_shared) return g_shared->server();
  if (!g_error.empty()) throw std::runtime_error(g_error);
  try {
    g_shared = new OwnedClickHouseServer();
  } catch (const std::exception& e) {
    g_error = e.what();
    throw;
  }
  std::atexit(StopShared);
  return g_shared->server();
}

}  // namespace quarry::test
