// PostgreSQL connections: the spec (a URL or "service=NAME") parsed by libpq itself, refused
// when it carries a password, redacted for display, and connected with quarry's session
// settings. Then OpenPostgres: the engine, its source and its cards.
#include <cstdio>

#include "quarry/engine/postgres_internal.h"

namespace quarry::engine::internal {
namespace {

// Keywords whose values are secrets: never accepted in a spec, never shown.
constexpr const char* kSecretKeywords[] = {"password", "sslpassword"};

// libpq quotes the offending piece of a malformed spec in its message, which may be part of a
// password: quoted pieces are dropped, except the name of an unknown URL parameter (lower-case
// letters and '_' only), which says what to fix.
std::string Unquoted(std::string_view message) {
  std::string out;
  bool quoted = false;
  std::string piece;
  for (char c : message) {
    if (c == '"') {
      if (quoted) {
        const bool name =
            message.starts_with("invalid URI query parameter") && !piece.empty() &&
            piece.size() <= 40 &&
            piece.find_first_not_of("abcdefghijklmnopqrstuvwxyz_") == std::string::npos;
        out += "\"" + (name ? piece : "…") + "\"";
        piece.clear();
      }
      quoted = !quoted;
    } else if (quoted) {
      piece += c;
    } else if (c != '\n') {
      out += c;
    }
  }
  while (!out.empty() && (out.back() == ' ' || out.back() == '.')) out.pop_back();
  return out;
}

std::string PercentEncode(std::string_view text) {
  std::string out;
  for (unsigned char c : text) {
    if (std::isalnum(c) || c == '-' || c == '.' || c == '_' || c == '~') {
      out += static_cast<char>(c);
    } else {
      char buf[4];
      std::snprintf(buf, sizeof buf, "%%%02X", c);
      out += buf;
    }
  }
  return out;
}

struct Parsed {
  std::map<std::string, std::string> values;
  std::string error;
};

// libpq reads only a lower-case scheme; POSTGRESQL:// means the same.
std::string LowerScheme(std::string_view spec) {
  std::string out(spec);
  const size_t colon = out.find("://");
  if (colon != std::string::npos && colon <= 10) {
    for (size_t i = 0; i < colon; ++i) {
      out[i] = static_cast<char>(std::tolower(static_cast<unsigned char>(out[i])));
    }
  }
  return out;
}

Parsed Parse(std::string_view given) {
  Parsed parsed;
  char* err = nullptr;
  PQconninfoOption* options = PQconninfoParse(LowerScheme(given).c_str(), &err);
  if (!options) {
    parsed.error = err ? Unquoted(err) : "out of memory";
    PQfreemem(err);
    return parsed;
  }
  for (PQconninfoOption* o = options; o->keyword; ++o) {
    if (o->val) parsed.values[o->keyword] = o->val;
  }
  PQconninfoFree(options);
  return parsed;
}

std::string Shown(std::string_view spec, const std::map<std::string, std::string>& values) {
  auto get = [&](const char* key) {
    const auto it = values.find(key);
    return it == values.end() ? std::string() : it->second;
  };
  // A bare service name stays one; everything else is shown as the URL it amounts to.
  const std::string scheme = LowerScheme(spec.substr(0, 14));
  const bool url = scheme.starts_with("postgresql://") || scheme.starts_with("postgres://");
  if (!url && !get("service").empty() && get("host").empty() && get("user").empty() &&
      get("dbname").empty() && get("port").empty()) {
    return "service=" + get("service");
  }
  std::string out = "postgresql://";
  if (!get("user").empty()) out += PercentEncode(get("user")) + "@";
  const std::string host = get("host");
  const std::string port = get("port");
  // A socket directory or several hosts cannot sit in the authority: they go in the query.
  const bool in_query = host.find_first_of("/,") != std::string::npos;
  if (!in_query) {
    out += host.find(':') != std::string::npos ? "[" + host + "]" : PercentEncode(host);
    if (!port.empty()) out += ":" + PercentEncode(port);
  }
  out += "/" + PercentEncode(get("dbname"));
  if (in_query) {
    out += "?host=" + PercentEncode(host);
    if (!port.empty()) out += "&port=" + PercentEncode(port);
  }
  if (!get("service").empty())
    out += std::string(in_query ? "&" : "?") + "service=" + get("service");
  return out;
}

}  // namespace

std::string RedactServerSpec(std::string_view spec) {
  if (IsMySqlSpec(spec)) return RedactMySqlSpec(spec);
  if (IsClickHouseSpec(spec)) return RedactClickHouseSpec(spec);
  const Parsed parsed = Parse(spec);
  if (!parsed.error.empty()) {
    return LowerScheme(spec).find("://") == std::string::npos ? "(a libpq connection string)"
                                                              : "postgresql://…";
  }
  return Shown(spec, parsed.values);
}

Result<PgSpec> ParsePgSpec(std::string_view spec) {
  const Parsed parsed = Parse(spec);
  if (!parsed.error.empty()) {
    return Fail(Error::Code::kUsage,
                "cannot read the server spec " + RedactServerSpec(spec) + ": " + parsed.error +
                    "; give postgresql://USER@HOST:PORT/DATABASE or service=NAME");
  }
  for (const char* secret : kSecretKeywords) {
    if (parsed.values.contains(secret)) {
      return Fail(Error::Code::kUsage,
                  "the server spec " + Shown(spec, parsed.values) + " holds a " + secret +
                      ": never put one in --data (it would show in process lists and shell "
                      "history); set PGPASSWORD, or put it in ~/.pgpass or the service file "
                      "(~/.pg_service.conf)");
    }
  }
  PgSpec out;
  out.shown = Shown(spec, parsed.values);
  for (const auto& [key, value] : parsed.values) {
    if (key == "client_encoding") continue;
    out.params.emplace_back(key, value);
  }
  if (!parsed.values.contains("application_name"))
    out.params.emplace_back("application_name", "quarry");
  if (!parsed.values.contains("connect_timeout")) out.params.emplace_back("connect_timeout", "10");
  out.params.emplace_back("client_encoding", "UTF8");
  return out;
}

Result<PgConnPtr> ConnectPg(const PgSpec& spec) {
  std::vector<const char*> keys;
  std::vector<const char*> values;
  for (const auto& [k, v] : spec.params) {
    keys.push_back(k.c_str());
    values.push_back(v.c_str());
  }
  keys.push_back(nullptr);
  values.push_back(nullptr);
  PgConnPtr conn(PQconnectdbParams(keys.data(), values.data(), 0));
  if (!conn) return Fail(Error::Code::kData, "cannot open " + spec.shown + ": out of memory");
  if (PQstatus(conn.get()) != CONNECTION_OK) {
    std::string why = PQerrorMessage(conn.get());
    while (!why.empty() && (why.back() == '\n' || why.back() == ' ')) why.pop_back();
    for (char& c : why) c = c == '\n' ? ' ' : c;
    std::string hint;
    if (why.find("password") != std::string::npos) {
      hint = "; the password comes from PGPASSWORD, ~/.pgpass or the service file, never --data";
    }
    return Fail(Error::Code::kData, "cannot open " + spec.shown + ": " + why + hint);
  }
  // Server notices (NOTICE, WARNING) would go to stderr by default, in the middle of output.
  PQsetNoticeProcessor(
      conn.get(), [](void*, const char*) {}, nullptr);
  // Results the same whatever the server's defaults: ISO dates, hex bytea, exact floats.
  // default_transaction_read_only is one more layer under the explicit BEGIN READ ONLY. A
  // setting a Postgres-wire engine lacks is skipped: the query path does not depend on it.
  for (const char* set :
       {"SET DateStyle = 'ISO, YMD'", "SET IntervalStyle = 'postgres'", "SET bytea_output = 'hex'",
        "SET extra_float_digits = 3",
        // The guard reads '...' without backslash escapes, as this says.
        "SET standard_conforming_strings = on", "SET default_transaction_read_only = on"}) {
    PgResultPtr res(PQexec(conn.get(), set));
    (void)res;
  }
  return conn;
}

Result<Rows> PgRows(PGconn* conn, const std::string& sql) {
  PgResultPtr res(PQexecParams(conn, sql.c_str(), 0, nullptr, nullptr, nullptr, nullptr, 0));
  const ExecStatusType status = res ? PQresultStatus(res.get()) : PGRES_FATAL_ERROR;
  if (status != PGRES_TUPLES_OK && status != PGRES_COMMAND_OK) {
    const char* primary = res ? PQresultErrorField(res.get(), PG_DIAG_MESSAGE_PRIMARY) : nullptr;
    return Fail(Error::Code::kData,
                std::string("postgresql: ") + (primary ? primary : PQerrorMessage(conn)));
  }
  Rows rows;
  const int n = PQntuples(res.get());
  const int cols = PQnfields(res.get());
  rows.reserve(static_cast<size_t>(n));
  for (int r = 0; r < n; ++r) {
    std::vector<std::optional<std::string>> row;
    for (int c = 0; c < cols; ++c) {
      if (PQgetisnull(res.get(), r, c)) {
        row.emplace_back(std::nullopt);
      } else {
        row.emplace_back(std::string(PQgetvalue(res.get(), r, c),
                                     static_cast<size_t>(PQgetlength(res.get(), r, c))));
      }
    }
    rows.push_back(std::move(row));
  }
  return rows;
}

Result<Rows> PgRowsSaved(PGconn* conn, const std::string& sql) {
  PgResultPtr save(PQexec(conn, "SAVEPOINT quarry_card"));
  auto rows = PgRows(conn, sql);
  PgResultPtr end(
      PQexec(conn, rows ? "RELEASE SAVEPOINT quarry_card" : "ROLLBACK TO SAVEPOINT quarry_card"));
  return rows;
}

Result<std::unique_ptr<Engine>> OpenPostgres(const std::string& spec, const OpenOptions& options) {
  auto parsed = ParsePgSpec(spec);
  if (!parsed) return std::unexpected(parsed.error());
  auto conn = ConnectPg(*parsed);
  if (!conn) return std::unexpected(conn.error());
  auto engine = std::make_unique<PostgresEngine>();
  engine->spec_ = std::move(*parsed);
  engine->conn_ = std::move(*conn);
  if (auto built = BuildPgCards(*engine, options.profile, options.timeout_ms); !built) {
    return Fail(Error::Code::kData,
                "cannot read " + engine->spec_.shown + ": " + built.error().message);
  }
  if (engine->cards_.empty()) {
    return Fail(Error::Code::kData, engine->spec_.shown +
                                        " has no table or view this role can read: grant it "
                                        "pg_read_all_data or SELECT on the tables to ask about");
  }
  Source source;
  source.path = engine->spec_.shown;
  source.notes = engine->source_notes_;
  source.format = SourceFormat::kPostgreSql;
  source.tables = engine->table_names_;
  engine->sources_.push_back(std::move(source));
  return engine;
}

}  // namespace quarry::engine::internal
