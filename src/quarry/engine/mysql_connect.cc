// MySQL-protocol connections: the URL (mysql:// or mariadb://) parsed, refused when it carries a
// password, redacted for display, and connected with quarry's session settings. Then
// OpenMySql: the engine, its source and its cards.
#include <cstdio>
#include <cstdlib>

#include "quarry/common/text.h"
#include "quarry/engine/mysql_internal.h"

namespace quarry::engine::internal {
namespace {

std::string Decode(std::string_view text, bool* ok) {
  std::string out;
  for (size_t i = 0; i < text.size(); ++i) {
    if (text[i] == '%') {
      if (i + 2 >= text.size() || !std::isxdigit(static_cast<unsigned char>(text[i + 1])) ||
          !std::isxdigit(static_cast<unsigned char>(text[i + 2]))) {
        *ok = false;
        return out;
      }
      out += static_cast<char>(std::stoi(std::string(text.substr(i + 1, 2)), nullptr, 16));
      i += 2;
    } else {
      out += text[i];
    }
  }
  return out;
}

std::string Encode(std::string_view text) {
  std::string out;
  for (unsigned char c : text) {
    if (std::isalnum(c) || c == '-' || c == '.' || c == '_' || c == '~' || c == '/') {
      out += static_cast<char>(c);
    } else {
      char buf[4];
      std::snprintf(buf, sizeof buf, "%%%02X", c);
      out += buf;
    }
  }
  return out;
}

std::string SchemeOf(std::string_view spec) {
  const size_t colon = spec.find("://");
  return colon == std::string_view::npos ? "" : Lower(std::string(spec.substr(0, colon)));
}

std::string Shown(const MySqlSpec& s, std::string_view scheme) {
  std::string out = std::string(scheme) + "://";
  if (!s.user.empty()) out += Encode(s.user) + "@";
  out += s.host.find(':') != std::string::npos ? "[" + s.host + "]" : Encode(s.host);
  if (s.port != 0) out += ":" + std::to_string(s.port);
  out += "/" + Encode(s.database);
  if (!s.socket.empty()) out += "?socket=" + Encode(s.socket);
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
  const std::string scheme = SchemeOf(spec.substr(0, 16));
  return scheme == "mysql" || scheme == "mariadb";
}

Result<MySqlSpec> ParseMySqlSpec(std::string_view spec) {
  const std::string scheme = SchemeOf(spec);
  const std::string usage =
      "; give mysql://USER@HOST:PORT/DATABASE or mysql://USER@localhost/DATABASE?socket=PATH";
  std::string_view rest = spec.substr(spec.find("://") + 3);
  MySqlSpec out;
  const size_t slash = rest.find_first_of("/?");
  std::string_view authority = rest.substr(0, slash);
  std::string_view path = slash == std::string_view::npos ? "" : rest.substr(slash);
  bool ok = true;
  if (const size_t at = authority.rfind('@'); at != std::string_view::npos) {
    const std::string_view userinfo = authority.substr(0, at);
    if (userinfo.find(':') != std::string_view::npos) {
      out.user = Decode(userinfo.substr(0, userinfo.find(':')), &ok);
      out.host = "…";
      return Fail(Error::Code::kUsage,
                  "the server URL " + scheme + "://" + Encode(out.user) +
                      "@… holds a password: never put one in --data (it would show in process "
                      "lists and shell history); set MYSQL_PWD, or put it in the client's option "
                      "file (~/.my.cnf, [client] password=...)");
    }
    out.user = Decode(userinfo, &ok);
    authority = authority.substr(at + 1);
  }
  std::string_view host = authority;
  if (host.starts_with('[')) {
    const size_t close = host.find(']');
    if (close == std::string_view::npos) {
      return Fail(Error::Code::kUsage, "cannot read the server URL " + scheme +
                                           "://…: an IPv6 "
                                           "host opens '[' and never closes it" +
                                           usage);
    }
    out.host = std::string(host.substr(1, close - 1));
    host = host.substr(close + 1);
    if (!host.empty() && host.front() != ':') ok = false;
    host = host.empty() ? host : host.substr(1);
  } else {
    const size_t colon = host.rfind(':');
    out.host = Decode(host.substr(0, colon), &ok);
    host = colon == std::string_view::npos ? std::string_view() : host.substr(colon + 1);
  }
  if (!host.empty()) {
    const std::string digits(host);  // strtol's end points into it: it must outlive the check
    char* end = nullptr;
    const long port = std::strtol(digits.c_str(), &end, 10);
    if (*end != '\0' || port <= 0 || port > 65535) {
      return Fail(Error::Code::kUsage, "cannot read the server URL " + scheme +
                                           "://…: the port must be a number from 1 to 65535" +
                                           usage);
    }
    out.port = static_cast<unsigned>(port);
  }
  std::string_view query;
  if (const size_t q = path.find('?'); q != std::string_view::npos) {
    query = path.substr(q + 1);
    path = path.substr(0, q);
  }
  if (path.starts_with('/')) out.database = Decode(path.substr(1), &ok);
  while (!query.empty()) {
    const size_t amp = query.find('&');
    const std::string_view pair = query.substr(0, amp);
    query = amp == std::string_view::npos ? std::string_view() : query.substr(amp + 1);
    const size_t eq = pair.find('=');
    const std::string key = Lower(std::string(pair.substr(0, eq)));
    const std::string value = eq == std::string_view::npos ? "" : Decode(pair.substr(eq + 1), &ok);
    if (key == "socket" || key == "unix_socket") {
      out.socket = value;
    } else if (key == "password" || key == "pass" || key == "pwd") {
      return Fail(Error::Code::kUsage,
                  "the server URL holds a password: never put one in --data; set MYSQL_PWD, or "
                  "put it in the client's option file (~/.my.cnf)");
    } else {
      const bool name = !key.empty() && key.size() <= 40 &&
                        key.find_first_not_of("abcdefghijklmnopqrstuvwxyz_-") == std::string::npos;
      return Fail(Error::Code::kUsage, "the server URL has the parameter " +
                                           (name ? "'" + key + "'" : std::string("…")) +
                                           " quarry does not know; it takes socket=PATH only");
    }
  }
  if (!ok) {
    return Fail(Error::Code::kUsage, "cannot read the server URL " + scheme +
                                         "://…: a '%' is not followed by two hex "
                                         "digits" +
                                         usage);
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
  return parsed ? parsed->shown : SchemeOf(spec) + "://…";
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
                                        " has no table or view this user can read: GRANT "
                                        "SELECT ON " +
                                        parsed->database + ".* to the user quarry connects as");
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
