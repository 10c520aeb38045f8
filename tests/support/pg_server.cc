// The test PostgreSQL server's processes and files (see pg_server.h): finding Debian's
// binaries, building the cached template cluster under a lock, starting a private copy as a
// non-root child that dies with us, and the superuser helpers tests use for setup.
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

namespace quarry::test {
namespace {
namespace fs = std::filesystem;
using namespace std::chrono_literals;

// Bump when the template's content (pg_template.cc) or settings change: a new cache key.
constexpr int kSchemaVersion = 3;
constexpr const char* kAdmin = "quarry_admin";
constexpr auto kReadyTimeout = 60s;

[[noreturn]] void Fail(const std::string& what) {
  throw std::runtime_error("test PostgreSQL server: " + what);
}

struct Binaries {
  std::string version;  // the directory name under /usr/lib/postgresql, e.g. "15"
  std::string initdb;
  std::string postgres;
  std::string pg_controldata;
};

Binaries FindBinaries() {
  const fs::path root = "/usr/lib/postgresql";
  Binaries best;
  int best_major = -1;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(root, ec)) {
    const std::string name = entry.path().filename().string();
    int major = std::atoi(name.c_str());
    fs::path bin = entry.path() / "bin";
    if (major > best_major && ::access((bin / "initdb").c_str(), X_OK) == 0 &&
        ::access((bin / "postgres").c_str(), X_OK) == 0) {
      best_major = major;
      best = {name, (bin / "initdb").string(), (bin / "postgres").string(),
              (bin / "pg_controldata").string()};
    }
  }
  if (best_major < 0) {
    Fail(
        "no PostgreSQL server binaries in /usr/lib/postgresql/<version>/bin (initdb, "
        "postgres); run scripts/setup.sh --tests, which installs Debian's postgresql package");
  }
  return best;
}

// As root, the server runs as `postgres` (or `nobody`): PostgreSQL refuses to run as root.
struct ServerUser {
  bool drop = false;
  uid_t uid = 0;
  gid_t gid = 0;
};

ServerUser PickServerUser() {
  if (::geteuid() != 0) return {};
  for (const char* name : {"postgres", "nobody"}) {
    if (const passwd* pw = ::getpwnam(name)) return {true, pw->pw_uid, pw->pw_gid};
  }
  Fail(
      "running as root, but there is no 'postgres' or 'nobody' user to run the server as; "
      "run scripts/setup.sh --tests (Debian's postgresql package creates the postgres user)");
}

void ChownTree(const fs::path& dir, const ServerUser& user) {
  if (!user.drop) return;
  if (::lchown(dir.c_str(), user.uid, user.gid) != 0) {
    Fail("cannot chown " + dir.string() + ": " + std::strerror(errno));
  }
  for (const auto& entry : fs::recursive_directory_iterator(dir)) {
    if (::lchown(entry.path().c_str(), user.uid, user.gid) != 0) {
      Fail("cannot chown " + entry.path().string() + ": " + std::strerror(errno));
    }
  }
}

std::string LogTail(const fs::path& log) {
  std::ifstream in(log, std::ios::binary);
  std::ostringstream text;
  text << in.rdbuf();
  std::string all = text.str();
  constexpr size_t kTail = 3000;
  return all.size() > kTail ? "..." + all.substr(all.size() - kTail) : all;
}

void WriteChildError(const char* what) {
  ssize_t ignored = ::write(2, what, std::strlen(what));
  (void)ignored;
}

// Runs argv as a direct child (as the server user when we are root), its output appended to
// `log`. The child gets SIGQUIT when this thread dies (PR_SET_PDEATHSIG, set after setuid
// because a credential change clears it), so a crashed test process takes its server along.
pid_t Spawn(const std::vector<std::string>& argv, const fs::path& cwd, const fs::path& log,
            const ServerUser& user) {
  std::vector<char*> args;
  for (const auto& arg : argv) args.push_back(const_cast<char*>(arg.c_str()));
  args.push_back(nullptr);
  static const char* const kEnv[] = {"LC_ALL=C", "TZ=UTC", "PATH=/usr/bin:/bin", nullptr};
  const std::string cwd_text = cwd.string();
  int log_fd = ::open(log.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  if (log_fd < 0) Fail("cannot open " + log.string() + ": " + std::strerror(errno));
  int null_fd = ::open("/dev/null", O_RDONLY | O_CLOEXEC);
  const pid_t parent = ::getpid();
  const pid_t pid = ::fork();
  if (pid == 0) {
    // Only async-signal-safe calls from here on: the test process may have threads.
    ::setpgid(0, 0);
    if (null_fd < 0 || ::dup2(null_fd, 0) < 0 || ::dup2(log_fd, 1) < 0 || ::dup2(log_fd, 2) < 0) {
      ::_exit(126);
    }
    ::syscall(SYS_close_range, 3U, ~0U, 0U);
    if (user.drop &&
        (::setgroups(0, nullptr) != 0 || ::setgid(user.gid) != 0 || ::setuid(user.uid) != 0)) {
      WriteChildError("test PostgreSQL server: cannot switch to the server user\n");
      ::_exit(126);
    }
    if (::prctl(PR_SET_PDEATHSIG, SIGQUIT) != 0 || ::getppid() != parent) ::_exit(126);
    if (::chdir(cwd_text.c_str()) != 0) {
      WriteChildError("test PostgreSQL server: the server user cannot enter its directory\n");
      ::_exit(126);
    }
    sigset_t none;
    ::sigemptyset(&none);
    ::sigprocmask(SIG_SETMASK, &none, nullptr);
    ::execve(args[0], args.data(), const_cast<char* const*>(kEnv));
    WriteChildError("test PostgreSQL server: exec failed\n");
    ::_exit(127);
  }
  const int fork_errno = errno;
  ::close(log_fd);
  if (null_fd >= 0) ::close(null_fd);
  if (pid < 0) Fail(std::string("fork failed: ") + std::strerror(fork_errno));
  return pid;
}

// Waits up to `timeout` for `pid`; returns its wait status, or nullopt if it still runs.
std::optional<int> WaitFor(pid_t pid, std::chrono::milliseconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  for (;;) {
    int status = 0;
    pid_t got = ::waitpid(pid, &status, WNOHANG);
    if (got == pid) return status;
    if (got < 0 && errno != EINTR) return -1;  // not our child any more: treat as gone
    if (std::chrono::steady_clock::now() >= deadline) return std::nullopt;
    std::this_thread::sleep_for(10ms);
  }
}

void StopServer(pid_t pid, int signal) {
  if (pid <= 0) return;
  ::kill(pid, signal);
  if (!WaitFor(pid, 20s)) {
    ::kill(pid, SIGKILL);
    WaitFor(pid, 5s);
  }
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

uint64_t Fnv1a(std::string_view text) {
  uint64_t hash = 1469598103934665603ULL;
  for (unsigned char c : text) hash = (hash ^ c) * 1099511628211ULL;
  return hash;
}

// The cache key: the script's size and mtime, the server version and kSchemaVersion.
std::string CacheKey(const Binaries& bin) {
  const std::string script = QUARRY_SOURCE_DIR "/data/chinook_postgresql.sql";
  struct stat st {};
  if (::stat(script.c_str(), &st) != 0) Fail("cannot read " + script + " (the Chinook script)");
  std::string key = "schema=" + std::to_string(kSchemaVersion) + ";pg=" + bin.version +
                    ";size=" + std::to_string(st.st_size) +
                    ";mtime=" + std::to_string(st.st_mtim.tv_sec) + "." +
                    std::to_string(st.st_mtim.tv_nsec);
  char hex[17];
  std::snprintf(hex, sizeof hex, "%016llx", static_cast<unsigned long long>(Fnv1a(key)));
  return hex;
}

// A directory in the shared temp dir that must be ours (a predictable name another user
// could have planted).
void EnsureOwnDir(const fs::path& dir, mode_t mode) {
  if (::mkdir(dir.c_str(), mode) != 0 && errno != EEXIST) {
    Fail("cannot create " + dir.string() + ": " + std::strerror(errno));
  }
  struct stat st {};
  if (::lstat(dir.c_str(), &st) != 0 || !S_ISDIR(st.st_mode) || st.st_uid != ::geteuid()) {
    Fail(dir.string() + " is not a directory owned by this user; remove it and run again");
  }
}

std::string Euid() { return std::to_string(::geteuid()); }

class FileLock {
 public:
  explicit FileLock(const fs::path& path)
      : fd_(::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600)) {
    if (fd_ < 0) Fail("cannot open the lock " + path.string() + ": " + std::strerror(errno));
    while (::flock(fd_, LOCK_EX) != 0) {
      if (errno != EINTR) Fail("cannot lock " + path.string() + ": " + std::strerror(errno));
    }
  }
  ~FileLock() { ::close(fd_); }
  FileLock(const FileLock&) = delete;
  FileLock& operator=(const FileLock&) = delete;

 private:
  int fd_;
};

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
void DropSpareWal(const Binaries& bin, const fs::path& data, const fs::path& build,
                  const ServerUser& user) {
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

// The template data directory, built if missing. Several test processes start at once: the
// first builds under the lock into a scratch dir and renames it into place, so a half-built
// template is never seen; the others wait on the lock and then reuse it.
fs::path EnsureTemplate(const Binaries& bin, const ServerUser& user) {
  const fs::path root = fs::temp_directory_path() / ("quarry-pg-" + Euid() + "-" + CacheKey(bin));
  EnsureOwnDir(root, 0755);  // the server user must traverse it
  const fs::path tmpl = root / "template";
  if (fs::exists(tmpl / "PG_VERSION")) return tmpl;
  FileLock lock(root / "lock");
  if (fs::exists(tmpl / "PG_VERSION")) return tmpl;

  // Under the lock nobody else builds: scratch dirs of builders that died go.
  for (const auto& entry : fs::directory_iterator(root)) {
    if (entry.path().filename().string().rfind("build-", 0) == 0) fs::remove_all(entry.path());
  }
  const fs::path build = root / ("build-" + std::to_string(::getpid()));
  fs::create_directory(build);
  fs::permissions(build, fs::perms::owner_all);
  ChownTree(build, user);
  const fs::path data = build / "data";
  const fs::path log = build / "build.log";
  pid_t initdb = Spawn({bin.initdb, "-D", data.string(), "-U", kAdmin, "-A", "trust", "-E", "UTF8",
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
  // Small WAL segments keep the template (copied for every test process) small.
  AppendTo(data / "postgresql.conf",
           "\ntimezone = 'UTC'\nlog_timezone = 'UTC'\nmin_wal_size = '4MB'\n", false);

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
  ::sync();  // the server ran with fsync off; the template outlives it
  fs::rename(data, tmpl);
  std::error_code ignored;
  fs::remove_all(build, ignored);
  return tmpl;
}

// Private dirs of test processes that died (their servers died with them) are removed.
void SweepStaleRuns() {
  const std::string prefix = "quarry-pg-" + Euid() + "-run-";
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(fs::temp_directory_path(), ec)) {
    const std::string name = entry.path().filename().string();
    if (name.rfind(prefix, 0) != 0) continue;
    pid_t pid = std::atoi(name.c_str() + prefix.size());
    if (pid > 0 && ::kill(pid, 0) != 0 && errno == ESRCH) {
      std::error_code ignored;
      fs::remove_all(entry.path(), ignored);
    }
  }
}

int FreeLoopbackPort() {
  int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) Fail(std::string("socket failed: ") + std::strerror(errno));
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof addr;
  int port = -1;
  if (::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0 &&
      ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) == 0) {
    port = ntohs(addr.sin_port);
  }
  ::close(fd);
  if (port < 0) Fail("no free port on 127.0.0.1");
  return port;
}

std::string PercentEncode(std::string_view text) {
  std::string out;
  for (unsigned char c : text) {
    if (std::isalnum(c) || c == '-' || c == '_' || c == '.' || c == '~') {
      out += static_cast<char>(c);
    } else {
      char hex[4];
      std::snprintf(hex, sizeof hex, "%%%02X", c);
      out += hex;
    }
  }
  return out;
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
  const Binaries bin = FindBinaries();
  const ServerUser user = PickServerUser();
  const fs::path tmpl = EnsureTemplate(bin, user);
  SweepStaleRuns();
  dir_ = fs::temp_directory_path() / ("quarry-pg-" + Euid() + "-run-" + std::to_string(owner_) +
                                      "-" + std::to_string(counter++));
  fs::remove_all(dir_);
  fs::create_directory(dir_);
  fs::permissions(dir_, fs::perms::owner_all);
  fs::copy(tmpl, dir_ / "data", fs::copy_options::recursive);
  fs::permissions(dir_ / "data", fs::perms::owner_all);
  fs::create_directory(dir_ / "sock");
  fs::permissions(dir_ / "sock", fs::perms::owner_all);
  ChownTree(dir_, user);
  server_.socket_dir = (dir_ / "sock").string();
  server_.port = loopback_tcp ? FreeLoopbackPort() : 50000 + owner_ % 10000;
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
