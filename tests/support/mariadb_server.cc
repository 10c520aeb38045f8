// The test MariaDB server's processes, files and content (see mariadb_server.h).
#include "support/mariadb_server.h"

#include <mysql.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <memory>
#include <mutex>
#include <sstream>
#include <stdexcept>
#include <thread>

#include <gtest/gtest.h>

#include "support/server_process.h"

namespace quarry::test {
namespace {
namespace fs = std::filesystem;
using namespace std::chrono_literals;
using internal::Euid;
using internal::LogTail;
using internal::PercentEncode;
using internal::ServerUser;
using internal::StopServer;
using internal::WaitFor;

// Bump when the template's content or settings change: a new cache key.
constexpr int kSchemaVersion = 2;
constexpr std::string_view kWhat = "test MariaDB server";
constexpr const char* kServer = "/usr/sbin/mariadbd";
constexpr const char* kInstallDb = "/usr/bin/mariadb-install-db";

[[noreturn]] void Fail(const std::string& message) { internal::FailServer(kWhat, message); }

// Users, grants and the typed table (mariadb_server.h). The zero dates need a sql_mode
// without NO_ZERO_DATE and NO_ZERO_IN_DATE, which the server's is.
constexpr const char* kPopulate = R"sql(
CREATE DATABASE quarry_types CHARACTER SET utf8mb4;
CREATE TABLE quarry_types.measures (
  id INT PRIMARY KEY, label VARCHAR(20) NOT NULL, amount DECIMAL(30,10),
  big BIGINT UNSIGNED, ratio DOUBLE, taken DATETIME(6), stamped TIMESTAMP(3) NULL,
  flags BIT(8), doc JSON, size ENUM('S','M','L'), tags SET('red','green','blue'),
  raw VARBINARY(16), born DATE, note TEXT);
INSERT INTO quarry_types.measures VALUES
  (1, 'exact', 12345678901234567890.0123456789, 18446744073709551615, 0.1,
   '2024-03-01 12:34:56.789012', '2024-03-01 12:34:56.789', b'10100101',
   '{"k": [1, 2.5, "x"]}', 'M', 'red,blue', X'DEADBEEF', '2024-02-29', 'café ☕'),
  (2, 'zero', 0.0000000001, 0, -1.5e300, '0000-00-00 00:00:00', NULL, b'00000000', 'null',
   'S', '', X'', '0000-00-00', ''),
  (3, 'nulls', NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL),
  (4, 'partial', -0.5, 9223372036854775808, 1e-7, '2024-00-00 00:00:00', NULL, b'1', '[]',
   'L', 'green', X'00', '2024-05-00', 'line one\nline two');
CREATE USER reader@localhost;
GRANT SELECT, SHOW VIEW ON Chinook.* TO reader@localhost;
GRANT SELECT, SHOW VIEW ON quarry_types.* TO reader@localhost;
CREATE USER writer@localhost;
GRANT SELECT, SHOW VIEW, INSERT, UPDATE, DELETE ON Chinook.* TO writer@localhost;
GRANT SELECT, SHOW VIEW ON quarry_types.* TO writer@localhost;
CREATE USER pwuser@localhost IDENTIFIED BY 'my-test-secret';
GRANT SELECT, SHOW VIEW ON Chinook.* TO pwuser@localhost;
CREATE TABLE quarry_types.analyzed (id INT PRIMARY KEY, grp INT NOT NULL, amount DECIMAL(10,2),
  label VARCHAR(10), KEY (grp));
SET SESSION max_recursive_iterations = 100000;
INSERT INTO quarry_types.analyzed SELECT i, i % 7, CASE WHEN i % 10 = 0 THEN NULL ELSE i / 100 END,
  CONCAT('L', i % 50) FROM (WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n
  WHERE i < 20000) SELECT i FROM n) AS x;
ANALYZE TABLE quarry_types.analyzed PERSISTENT FOR ALL;
CREATE TABLE quarry_types.unanalyzed LIKE quarry_types.analyzed;
INSERT INTO quarry_types.unanalyzed SELECT * FROM quarry_types.analyzed;
ANALYZE TABLE quarry_types.unanalyzed;
GRANT SELECT ON mysql.column_stats TO reader@localhost;
ANALYZE TABLE Chinook.Album, Chinook.Artist, Chinook.Customer, Chinook.Employee, Chinook.Genre,
  Chinook.Invoice, Chinook.InvoiceLine, Chinook.MediaType, Chinook.Playlist,
  Chinook.PlaylistTrack, Chinook.Track;
)sql";

struct MysqlCloser {
  void operator()(MYSQL* m) const { mysql_close(m); }
};
using Conn = std::unique_ptr<MYSQL, MysqlCloser>;

// A root connection on the socket with multi-statements on (test setup only), or null with
// the client's message in `why`.
Conn RootConnect(const std::string& socket, std::string_view db, std::string* why) {
  Conn conn(mysql_init(nullptr));
  if (!conn) {
    *why = "out of memory";
    return nullptr;
  }
  unsigned int timeout = 10;
  mysql_options(conn.get(), MYSQL_OPT_CONNECT_TIMEOUT, &timeout);
  mysql_options(conn.get(), MYSQL_SET_CHARSET_NAME, "utf8mb4");
  const std::string database(db);
  if (!mysql_real_connect(conn.get(), nullptr, "root", nullptr,
                          database.empty() ? nullptr : database.c_str(), 0, socket.c_str(),
                          CLIENT_MULTI_STATEMENTS)) {
    *why = mysql_error(conn.get());
    return nullptr;
  }
  return conn;
}

using RowList = std::vector<std::vector<std::optional<std::string>>>;

// Runs every statement of `sql`; the rows of the last one that returned any. Errors: the
// server's message, in `why`.
bool RunAll(MYSQL* conn, std::string_view sql, RowList* rows, std::string* why) {
  if (mysql_real_query(conn, sql.data(), sql.size()) != 0) {
    *why = mysql_error(conn);
    return false;
  }
  for (;;) {
    if (MYSQL_RES* res = mysql_store_result(conn)) {
      if (rows) rows->clear();
      const unsigned n = mysql_num_fields(res);
      while (MYSQL_ROW row = mysql_fetch_row(res)) {
        const unsigned long* lengths = mysql_fetch_lengths(res);
        std::vector<std::optional<std::string>> out;
        for (unsigned c = 0; c < n; ++c) {
          if (row[c]) {
            out.emplace_back(std::string(row[c], lengths[c]));
          } else {
            out.emplace_back(std::nullopt);
          }
        }
        if (rows) rows->push_back(std::move(out));
      }
      mysql_free_result(res);
    } else if (mysql_field_count(conn) != 0) {
      *why = mysql_error(conn);
      return false;
    }
    const int next = mysql_next_result(conn);
    if (next > 0) {
      *why = mysql_error(conn);
      return false;
    }
    if (next < 0) return true;
  }
}

std::vector<std::string> ServerArgs(const fs::path& data, const std::string& socket, int tcp_port,
                                    const fs::path& dir, const std::vector<std::string>& plugins) {
  std::vector<std::string> argv = {kServer,
                                   "--no-defaults",
                                   "--datadir=" + data.string(),
                                   "--socket=" + socket,
                                   "--pid-file=" + (dir / "server.pid").string(),
                                   "--log-error=" + (dir / "server.log").string(),
                                   "--plugin-dir=/usr/lib/mysql/plugin",
                                   "--innodb-buffer-pool-size=32M",
                                   "--innodb-log-file-size=8M",
                                   "--innodb-flush-log-at-trx-commit=0",
                                   "--innodb-doublewrite=0",
                                   "--performance-schema=OFF",
                                   "--skip-log-bin",
                                   "--skip-name-resolve",
                                   "--max-connections=60",
                                   "--character-set-server=utf8mb4",
                                   "--collation-server=utf8mb4_general_ci",
                                   "--default-time-zone=+00:00",
                                   "--sql-mode=STRICT_TRANS_TABLES,ERROR_FOR_DIVISION_BY_ZERO,"
                                   "NO_ENGINE_SUBSTITUTION"};
  if (tcp_port > 0) {
    argv.push_back("--bind-address=127.0.0.1");
    argv.push_back("--port=" + std::to_string(tcp_port));
  } else {
    argv.push_back("--skip-networking");
  }
  for (const auto& p : plugins) argv.push_back("--plugin-load-add=" + p + ".so");
  return argv;
}

// Starts mariadbd and waits until root can connect on the socket.
pid_t StartMariaDb(const fs::path& data, const std::string& socket, int tcp_port,
                   const fs::path& dir, const ServerUser& user,
                   const std::vector<std::string>& plugins) {
  const fs::path log = dir / "server.log";
  pid_t pid = internal::Spawn(kWhat, ServerArgs(data, socket, tcp_port, dir, plugins), dir,
                              dir / "stdout.log", user);
  const auto deadline = std::chrono::steady_clock::now() + 60s;
  std::string why;
  for (;;) {
    if (RootConnect(socket, "", &why)) return pid;
    if (WaitFor(pid, 0ms)) {
      Fail("mariadbd exited before accepting connections; its log (" + log.string() + "):\n" +
           LogTail(log));
    }
    if (std::chrono::steady_clock::now() >= deadline) {
      StopServer(pid, SIGKILL);
      Fail("mariadbd did not accept connections within 60 s (" + why + "); its log:\n" +
           LogTail(log));
    }
    std::this_thread::sleep_for(20ms);
  }
}

std::string ReadFile(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) Fail("cannot read " + path.string());
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

fs::path EnsureMariaDbTemplate(const ServerUser& user) {
  const fs::path script = QUARRY_SOURCE_DIR "/data/chinook_mysql.sql";
  struct stat st {};
  if (::stat(script.c_str(), &st) != 0) Fail("cannot read " + script.string());
  const std::string key = "schema=" + std::to_string(kSchemaVersion) +
                          ";size=" + std::to_string(st.st_size) + ";populate=" + kPopulate;
  char hex[17];
  std::snprintf(hex, sizeof hex, "%016llx", static_cast<unsigned long long>(internal::Fnv1a(key)));
  const fs::path root = fs::temp_directory_path() / ("quarry-my-" + Euid() + "-" + hex);
  return internal::EnsureTemplate(kWhat, root, "Chinook", user, [&](const fs::path& build) {
    const fs::path data = build / "data";
    const fs::path log = build / "install.log";
    pid_t install = internal::Spawn(
        kWhat,
        {kInstallDb, "--no-defaults", "--datadir=" + data.string(),
         "--auth-root-authentication-method=normal", "--skip-test-db", "--skip-name-resolve",
         "--innodb-log-file-size=8M", "--innodb-buffer-pool-size=32M"},
        build, log, user);
    std::optional<int> status = WaitFor(install, 120s);
    if (!status || !WIFEXITED(*status) || WEXITSTATUS(*status) != 0) {
      if (!status) StopServer(install, SIGKILL);
      Fail("mariadb-install-db failed; its output (" + log.string() + "):\n" + LogTail(log));
    }
    const std::string socket = (build / "sock").string();
    pid_t server = StartMariaDb(data, socket, 0, build, user, {});
    std::string why;
    Conn conn = RootConnect(socket, "", &why);
    if (!conn || !RunAll(conn.get(), ReadFile(script), nullptr, &why) ||
        !RunAll(conn.get(), kPopulate, nullptr, &why)) {
      StopServer(server, SIGKILL);
      Fail("cannot fill the template: " + why + "\nserver log:\n" + LogTail(build / "server.log"));
    }
    conn.reset();
    ::kill(server, SIGTERM);  // a clean shutdown: the copies start without recovery
    status = WaitFor(server, 60s);
    if (!status || !WIFEXITED(*status) || WEXITSTATUS(*status) != 0) {
      if (!status) StopServer(server, SIGKILL);
      Fail("the template server did not shut down cleanly; its log:\n" +
           LogTail(build / "server.log"));
    }
  });
}

std::mutex g_shared_mutex;
OwnedMariaDbServer* g_shared = nullptr;
std::string g_shared_error;

void StopShared() {
  std::lock_guard lock(g_shared_mutex);
  delete g_shared;
  g_shared = nullptr;
}

Conn AdminConnect(const MariaDbServer& server, std::string_view db) {
  std::string why;
  Conn conn = RootConnect(server.socket, db, &why);
  if (!conn) ADD_FAILURE() << "test MariaDB server: cannot connect to " << db << ": " << why;
  return conn;
}

}  // namespace

std::string MariaDbServer::Url(std::string_view db, std::string_view user) const {
  return "mysql://" + PercentEncode(user) + "@localhost/" + PercentEncode(db) +
         "?socket=" + PercentEncode(socket);
}

std::string MariaDbServer::TcpUrl(std::string_view db, std::string_view user) const {
  return "mysql://" + PercentEncode(user) + "@127.0.0.1:" + std::to_string(tcp_port) + "/" +
         PercentEncode(db);
}

void MariaDbServer::Exec(std::string_view db, std::string_view sql) const {
  Conn conn = AdminConnect(*this, db);
  std::string why;
  if (conn && !RunAll(conn.get(), sql, nullptr, &why)) {
    ADD_FAILURE() << "test MariaDB server (" << db << "): " << why << " in: " << sql.substr(0, 300);
  }
}

std::vector<std::vector<std::optional<std::string>>> MariaDbServer::Rows(
    std::string_view db, std::string_view sql) const {
  RowList rows;
  Conn conn = AdminConnect(*this, db);
  std::string why;
  if (conn && !RunAll(conn.get(), sql, &rows, &why)) {
    ADD_FAILURE() << "test MariaDB server (" << db << "): " << why << " in: " << sql.substr(0, 300);
    rows.clear();
  }
  return rows;
}

std::map<std::string, std::string> MariaDbServer::TableChecksums(std::string_view db) const {
  std::map<std::string, std::string> sums;
  const std::string schema(db);
  for (const auto& row : Rows(db,
                              "SELECT TABLE_NAME FROM information_schema.TABLES WHERE "
                              "TABLE_SCHEMA = DATABASE() AND TABLE_TYPE = 'BASE TABLE'")) {
    if (!row[0]) continue;
    std::string name = *row[0];
    std::string quoted = "`";
    for (char c : name) quoted += c == '`' ? std::string("``") : std::string(1, c);
    quoted += "`";
    const auto sum = Rows(db, "CHECKSUM TABLE " + quoted + " EXTENDED");
    if (sum.size() == 1 && sum[0].size() == 2) sums[name] = sum[0][1].value_or("NULL");
  }
  return sums;
}

OwnedMariaDbServer::OwnedMariaDbServer(bool loopback_tcp, std::vector<std::string> plugins)
    : owner_(::getpid()) {
  static std::atomic<int> counter{0};
  if (::access(kServer, X_OK) != 0 || ::access(kInstallDb, X_OK) != 0) {
    Fail(std::string("no ") + kServer + " or " + kInstallDb +
         "; run scripts/setup.sh --tests, which installs Debian's mariadb-server");
  }
  const ServerUser user = internal::PickServerUser(
      kWhat, {"mysql", "nobody"},
      "run scripts/setup.sh --tests (Debian's mariadb-server creates the mysql user)");
  const fs::path tmpl = EnsureMariaDbTemplate(user);
  internal::SweepStaleRuns("quarry-my-" + Euid() + "-run-");
  dir_ = fs::temp_directory_path() / ("quarry-my-" + Euid() + "-run-" + std::to_string(owner_) +
                                      "-" + std::to_string(counter++));
  fs::remove_all(dir_);
  fs::create_directory(dir_);
  fs::permissions(dir_, fs::perms::owner_all);
  fs::copy(tmpl, dir_ / "data", fs::copy_options::recursive);
  internal::ChownTree(kWhat, dir_, user);
  server_.socket = (dir_ / "sock").string();
  server_.tcp_port = loopback_tcp ? internal::FreeLoopbackPort(kWhat) : 0;
  try {
    pid_ = StartMariaDb(dir_ / "data", server_.socket, server_.tcp_port, dir_, user, plugins);
  } catch (...) {
    std::error_code ignored;
    fs::remove_all(dir_, ignored);
    throw;
  }
}

OwnedMariaDbServer::~OwnedMariaDbServer() {
  if (::getpid() != owner_) return;  // a forked child: the server is its parent's
  StopServer(pid_, SIGKILL);         // the copy is thrown away: no clean shutdown needed
  std::error_code ignored;
  fs::remove_all(dir_, ignored);
}

const MariaDbServer& SharedMariaDbServer() {
  std::lock_guard lock(g_shared_mutex);
  if (g_shared) return g_shared->server();
  if (!g_shared_error.empty()) throw std::runtime_error(g_shared_error);
  try {
    g_shared = new OwnedMariaDbServer();
  } catch (const std::exception& e) {
    g_shared_error = e.what();
    throw;
  }
  std::atexit(StopShared);
  return g_shared->server();
}

}  // namespace quarry::test
