// MySQL-protocol connections: the URL (mysql:// or mariadb://) parsed, refused when it carries a
// password, redacted for display, and connected with quarry's session settings. Then
// OpenMySql: the engine, its source and its cards.
#include <cstdio>
#include <cstdlib>

#include "quarry/common/text.h"
#include "quarry/engine/mysql_internal.h"

namespace quarry::engine::internal {
namespace {

std::string Shown(const MySqlSpec& s, std::string_view scheme) {
  ServerUrl url;
  url.user = s.user;
  url.host = s.host;
  url.port = s.port;
  std::string out = std::string(scheme) + "://" + ServerUrlAuthority(url);
  out += "/" + UrlEncode(s.database);
  if (!s.socket.empty()) out += "?socket=" + UrlEncode(s.socket);
  return out;
}

// A LOAD DATA LOCAL that got past every other layer finds no file: the handler refuses.
int RefuseInit(void**, const char*, void*) { return 1; }
int RefuseRead(void*, char*, unsigned int) { return -1; }
void RefuseEnd(void*) {}
int RefuseError(void*, char* message, unsigned int length) {
  std::snprintf(message, length, "quarry reads no local files");
  return 2000;
}

}  // namespace

bool IsMySqlSpec(std::string_view spec) {
  const std::string scheme = UrlScheme(spec.substr(0, 16));
  return scheme == "mysql" || scheme == "mariadb";
}

Result<MySqlSpec> ParseMySqlSpec(std::string_view spec) {
  const std::string usage =
      "; give mysql://USER@HOST:PORT/DATABASE or mysql://USER@localhost/DATABASE?socket=PATH";
  auto url = ParseServerUrl(spec, usage);
  if (!url) return std::unexpected(url.error());
  const std::string& scheme = url->scheme;
  MySqlSpec out;
  out.user = url->user;
  if (url->password) {
    return Fail(Error::Code::kUsage,
                "the server URL " + scheme + "://" + UrlEncode(out.user) +
                    "@… holds a password: never put one in --data (it would show in process "
                    "lists and shell history); set MYSQL_PWD, or put it in the client's option "
                    "file (~/.my.cnf, [client] password=...)");
  }
  out.host = url->host;
  out.port = url->port;
  out.database = url->path;
  for (const auto& [key, value] : url->params) {
    if (key == "socket" || key == "unix_socket") {
      out.socket = value;
    } else if (key == "password" || key == "pass" || key == "pwd") {
      return Fail(Error::Code::kUsage,
                  "the server URL holds a password: never put one in --data; set MYSQL_PWD, or "
                  "put it in the client's option file (~/.my.cnf)");
    } else {
      return Fail(Error::Code::kUsage, UnknownUrlParameter(key, "it takes socket=PATH only"));
    }
  }
  if (out.database.empty() || out.database.find('/') != std::string::npos) {
    out.shown = Shown(out, scheme);
    return Fail(Error::Code::kUsage, "the server URL " + out.shown +
                                         " names no database: quarry reads one database" + usage);
  }
  out.shown = Shown(out, scheme);
  return out;
}

std::string RedactMySqlSpec(std::string_view spec) {
  auto parsed = ParseMySqlSpec(spec);
  return parsed ? parsed->shown : UrlScheme(spec) + "://…";
}

Result<std::unique_ptr<MySqlSession>> MySqlSession::Connect(const MySqlSpec& spec) {
  auto session = std::make_unique<MySqlSession>();
  session->spec_ = spec;
  session->conn_.reset(mysql_init(nullptr));
  MYSQL* m = session->conn_.get();
  if (!m) return Fail(Error::Code::kData, "cannot open " + spec.shown + ": out of memory");
  unsigned int connect_timeout = 10;
  mysql_options(m, MYSQL_OPT_CONNECT_TIMEOUT, &connect_timeout);
  // The user's option file ([client] in ~/.my.cnf) may hold the password and the socket.
  mysql_options(m, MYSQL_READ_DEFAULT_GROUP, "client");
  unsigned int no_local = 0;
  mysql_options(m, MYSQL_OPT_LOCAL_INFILE, &no_local);
  mysql_options(m, MYSQL_SET_CHARSET_NAME, "utf8mb4");
  const char* password = std::getenv("MYSQL_PWD");
  const bool local = spec.host.empty() || spec.host == "localhost";
  if (!mysql_real_connect(
          m, local && spec.socket.empty() && spec.host.empty() ? "localhost" : spec.host.c_str(),
          spec.user.empty() ? nullptr : spec.user.c_str(),
          password && *password ? password : nullptr, spec.database.c_str(), spec.port,
          spec.socket.empty() ? nullptr : spec.socket.c_str(), 0)) {
    std::string why = mysql_error(m);
    for (char& c : why) c = c == '\n' ? ' ' : c;
    std::string hint;
    if (mysql_errno(m) == 1045) {
      hint = "; the password comes from MYSQL_PWD or the option file (~/.my.cnf), never --data";
    }
    return Fail(Error::Code::kData, "cannot open " + spec.shown + ": " + why + hint);
  }
  // Options are read from the option file at connect time and could turn LOCAL INFILE back on;
  // a handler that refuses every file holds whatever they say.
  mysql_set_local_infile_handler(m, RefuseInit, RefuseRead, RefuseEnd, RefuseError, nullptr);
  const char* info = mysql_get_server_info(m);
  session->flavor_ = info && std::string_view(info).find("MariaDB") != std::string_view::npos
                         ? MySqlFlavor::kMariaDb
                         : MySqlFlavor::kMySql;
  auto mode = session->Fetch("SELECT @@SESSION.sql_mode");
  if (mode && !mode->empty() && !(*mode)[0].empty() && (*mode)[0][0]) {
    std::string kept;
    std::vector<std::string> parts(1);
    for (char c : *(*mode)[0][0]) {
      if (c == ',') {
        parts.emplace_back();
      } else {
        parts.back() += c;
      }
    }
    for (const auto& part : parts) {
      if (part.empty() || part == "ANSI_QUOTES" || part == "NO_BACKSLASH_ESCAPES" ||
          part == "ANSI" || part == "ORACLE" || part == "MSSQL" || part == "DB2" ||
          part == "POSTGRESQL" || part == "MAXDB") {
        continue;
      }
      kept += (kept.empty() ? "" : ",") + part;
    }
    session->sql_mode_ = kept;
  }
  std::string why;
  if (!session->Configure(&why)) {
    return Fail(Error::Code::kData, "cannot set up the session on " + spec.shown + ": " + why);
  }
  return session;
}

bool MySqlSession::Configure(std::string* why) {
  const char* read_only =
      flavor_ == MySqlFlavor::kMariaDb ? "tx_read_only" : "transaction_read_only";
  return Exec("SET SESSION time_zone = '+00:00', SESSION sql_mode = '" + sql_mode_ + "', SESSION " +
                  read_only + " = 1",
              why);
}

bool MySqlSession::Exec(const std::string& sql, std::string* why) {
  if (mysql_real_query(conn_.get(), sql.data(), sql.size()) != 0) {
    if (why) *why = mysql_error(conn_.get());
    return false;
  }
  if (MYSQL_RES* res = mysql_store_result(conn_.get())) mysql_free_result(res);
  return true;
}

Result<Rows> MySqlSession::Fetch(const std::string& sql) {
  MYSQL* m = conn_.get();
  if (mysql_real_query(m, sql.data(), sql.size()) != 0) {
    return Fail(Error::Code::kData, std::string("mysql: ") + mysql_error(m));
  }
  MYSQL_RES* res = mysql_store_result(m);
  if (!res) {
    if (mysql_field_count(m) == 0) return Rows{};
    return Fail(Error::Code::kData, std::string("mysql: ") + mysql_error(m));
  }
  Rows rows;
  const unsigned n = mysql_num_fields(res);
  while (MYSQL_ROW row = mysql_fetch_row(res)) {
    const unsigned long* lengths = mysql_fetch_lengths(res);
    std::vector<std::optional<std::string>> out;
    out.reserve(n);
    for (unsigned c = 0; c < n; ++c) {
      if (row[c]) {
        out.emplace_back(std::string(row[c], lengths[c]));
      } else {
        out.emplace_back(std::nullopt);
      }
    }
    rows.push_back(std::move(out));
  }
  mysql_free_result(res);
  return rows;
}

bool MySqlSession::Reset() {
  std::string why;
  if (conn_ && mysql_reset_connection(conn_.get()) == 0) {
    mysql_set_character_set(conn_.get(), "utf8mb4");
    if (Configure(&why)) return true;
  }
  // Lost, or a reset that failed on a live connection: a new one is the only clean state.
  auto fresh = Connect(spec_);
  if (!fresh) return false;
  conn_ = std::move((*fresh)->conn_);
  flavor_ = (*fresh)->flavor_;
  sql_mode_ = (*fresh)->sql_mode_;
  return true;
}

std::string MySqlIdent(std::string_view name) {
  std::string out = "`";
  for (char c : name) out += c == '`' ? std::string("``") : std::string(1, c);
  return out + "`";
}

Result<std::unique_ptr<Engine>> OpenMySql(const std::string& spec, const OpenOptions& options) {
  auto parsed = ParseMySqlSpec(spec);
  if (!parsed) return std::unexpected(parsed.error());
  auto session = MySqlSession::Connect(*parsed);
  if (!session) return std::unexpected(session.error());
  auto engine = std::make_unique<MySqlEngine>();
  engine->session_ = std::move(*session);
  if (auto built = BuildMySqlCards(*engine, options.profile); !built) {
    return Fail(Error::Code::kData, "cannot read " + parsed->shown + ": " + built.error().message);
  }
  if (engine->cards_.empty()) {
    return Fail(Error::Code::kData, parsed->shown +
                                        " has no table or view this user can read: "
                                        "the database is empty, or the user needs "
                                        "GRANT SELECT ON " +
                                        parsed->database + ".*");
  }
  Source source;
  source.path = parsed->shown;
  source.notes = engine->source_notes_;
  source.format = SourceFormat::kMySql;
  source.tables = engine->table_names_;
  engine->sources_.push_back(std::move(source));
  return engine;
}

}  // namespace quarry::engine::internal
