// PostgreSQL schema cards from the catalogs, never from scans (tables may be huge): a fixed
// number of catalog queries whatever the number of tables (relations, columns, keys,
// statistics), row counts from pg_class.reltuples, column statistics from pg_stats, and a
// capped TABLESAMPLE only for small tables the statistics know nothing about.
#include <cstdlib>
#include <set>
#include <unordered_map>

#include "quarry/engine/postgres_internal.h"

namespace quarry::engine::internal {
namespace {

// Relations the role may SELECT, outside the system schemas; partitions are read through their
// parent. `in_path`: the schema is on the search path, so the bare name reaches it.
constexpr const char* kRelationsSql = R"(
SELECT c.oid, n.nspname, c.relname, c.relkind, c.reltuples::bigint,
       pg_catalog.pg_relation_size(c.oid) / 8192,
       pg_catalog.obj_description(c.oid, 'pg_class'),
       coalesce(array_position(pg_catalog.current_schemas(false), n.nspname), 0),
       pg_catalog.quote_ident(n.nspname), pg_catalog.quote_ident(c.relname)
FROM pg_catalog.pg_class c JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace
WHERE c.relkind IN ('r', 'v', 'm', 'f', 'p') AND NOT c.relispartition
  AND n.nspname NOT IN ('pg_catalog', 'information_schema')
  AND n.nspname NOT LIKE 'pg\_toast%' AND n.nspname NOT LIKE 'pg\_temp\_%'
  AND pg_catalog.has_table_privilege(c.oid, 'SELECT')
ORDER BY coalesce(array_position(pg_catalog.current_schemas(false), n.nspname), 1000000),
         n.nspname, c.relname)";

// Every column of every such relation in one query, with NOT NULL and its comment.
constexpr const char* kColumnsSql = R"(
SELECT a.attrelid, a.attname, pg_catalog.format_type(a.atttypid, a.atttypmod), a.attnotnull,
       pg_catalog.col_description(a.attrelid, a.attnum), pg_catalog.quote_ident(a.attname)
FROM pg_catalog.pg_attribute a JOIN pg_catalog.pg_class c ON c.oid = a.attrelid
JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace
WHERE a.attnum > 0 AND NOT a.attisdropped AND c.relkind IN ('r', 'v', 'm', 'f', 'p')
  AND NOT c.relispartition AND n.nspname NOT IN ('pg_catalog', 'information_schema')
  AND n.nspname NOT LIKE 'pg\_toast%' AND n.nspname NOT LIKE 'pg\_temp\_%'
  AND pg_catalog.has_table_privilege(c.oid, 'SELECT')
ORDER BY a.attrelid, a.attnum)";

// Primary keys and single-column foreign keys (a composite key is listed column by column).
constexpr const char* kKeysSql = R"(
SELECT k.conrelid, k.contype, a.attname, k.confrelid, fa.attname
FROM pg_catalog.pg_constraint k
CROSS JOIN LATERAL unnest(k.conkey, coalesce(k.confkey, k.conkey)) AS u(col, fcol)
JOIN pg_catalog.pg_attribute a ON a.attrelid = k.conrelid AND a.attnum = u.col
LEFT JOIN pg_catalog.pg_attribute fa ON fa.attrelid = k.confrelid AND fa.attnum = u.fcol
WHERE k.contype IN ('p', 'f') AND pg_catalog.has_table_privilege(k.conrelid, 'SELECT')
ORDER BY k.conrelid, k.conname, a.attnum)";

struct Relation {
  Oid oid = 0;
  std::string schema;
  std::string name;
  char kind = 'r';
  int64_t reltuples = -1;
  int64_t relpages = 0;
  std::string comment;
  bool in_path = false;
  std::string quoted;  // as SQL must write it: quote_ident of the schema (off the path) and name
  std::vector<std::string> quoted_columns;  // the column names that need double quotes, quoted
};

// PostgreSQL folds unquoted names to lower case, so `Order Items`, `AlbumId` or a column named
// `user` (a keyword) must be written in double quotes: said once per table that has any.
std::string QuotingNote(const std::string& card_name, const Relation& r) {
  constexpr size_t kMaxListed = 12;
  std::string list = r.quoted != card_name ? r.quoted : "";
  for (size_t i = 0; i < r.quoted_columns.size() && i < kMaxListed; ++i) {
    list += (list.empty() ? "" : ", ") + r.quoted_columns[i];
  }
  if (list.empty()) return "";
  if (r.quoted_columns.size() > kMaxListed) list += ", …";
  return "PostgreSQL needs these names in double quotes, as written here: " + list;
}

std::string Text(const std::optional<std::string>& v) { return v.value_or(""); }
int64_t Int(const std::optional<std::string>& v) { return v ? std::atoll(v->c_str()) : 0; }

// The role can change data: superuser, or INSERT/UPDATE/DELETE/TRUNCATE on a table, or CREATE
// in a schema, outside the system schemas; or, from PostgreSQL 17 on, MAINTAIN on a table
// (pg_maintain grants it on all): no write privilege, but its ANALYZE rewrites
// pg_class.reltuples in place even in a READ ONLY transaction that is rolled back (seen on
// 18.4), and on 18 pg_restore_relation_stats writes statistics. "" when it cannot.
Result<std::string> WriteRoleNote(PGconn* conn) {
  constexpr const char* kTables = R"(
  (SELECT count(*) FROM pg_catalog.pg_class c JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace
   WHERE c.relkind IN ('r', 'p', 'v', 'm', 'f') AND n.nspname NOT IN ('pg_catalog', 'information_schema')
     AND n.nspname NOT LIKE 'pg\_%'
     AND pg_catalog.has_table_privilege(c.oid, )";
  // PostgreSQL 15 and 16 do not know the word MAINTAIN: has_table_privilege would fail.
  const bool has_maintain = PQserverVersion(conn) >= 170000;
  std::string sql =
      "SELECT current_user, (SELECT rolsuper FROM pg_catalog.pg_roles WHERE rolname = "
      "current_user),";
  sql.append(kTables).append("'INSERT, UPDATE, DELETE, TRUNCATE')),");
  sql.append(R"(
  (SELECT string_agg(n.nspname, ', ' ORDER BY n.nspname) FROM pg_catalog.pg_namespace n
   WHERE n.nspname NOT IN ('pg_catalog', 'information_schema') AND n.nspname NOT LIKE 'pg\_%'
     AND pg_catalog.has_schema_privilege(n.oid, 'CREATE')),)");
  if (has_maintain) {
    sql.append(kTables).append("'MAINTAIN'))");
  } else {
    sql.append(" 0");
  }
  auto rows = PgRows(conn, sql);
  if (!rows) return std::unexpected(rows.error());
  if (rows->empty() || (*rows)[0].size() < 5) return std::string();
  const auto& r = (*rows)[0];
  std::string what;
  if (Text(r[1]) == "t") {
    what = "is a superuser";
  } else if (Int(r[2]) > 0) {
    what = "can write to " + std::to_string(Int(r[2])) +
           " tables (INSERT, UPDATE, DELETE or TRUNCATE)";
  } else if (r[3] && !r[3]->empty()) {
    what = "can create tables in schema " + *r[3];
  } else if (Int(r[4]) > 0) {
    what = "can maintain " + std::to_string(Int(r[4])) +
           " tables (MAINTAIN: ANALYZE rewrites their statistics even in a read-only transaction)";
  } else {
    return std::string();
  }
  return "the role " + Text(r[0]) + " " + what +
         "; quarry only reads, but use a role with only pg_read_all_data (README)";
}

}  // namespace

Result<void> BuildPgCards(PostgresEngine& engine, bool profile, int64_t timeout_ms) {
  PGconn* conn = engine.conn_.get();
  // One snapshot for every catalog read, read-only like everything else.
  // Catalog reads are quick; the statistics' count(*) and samples are bounded by size, and by
  // this timeout (OpenOptions::timeout_ms, else 30 s) should the server be slow.
  const std::string timeout = std::to_string(timeout_ms > 0 ? timeout_ms : 30000);
  PgResultPtr begin(PQexec(conn, ("BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY; "
                                  "SET LOCAL statement_timeout = " +
                                  timeout)
                                     .c_str()));
  struct Rollback {
    PGconn* conn;
    ~Rollback() { PgResultPtr r(PQexec(conn, "ROLLBACK")); }
  } rollback{conn};
  auto relations = PgRows(conn, kRelationsSql);
  if (!relations) return std::unexpected(relations.error());
  std::vector<Relation> rels;
  std::unordered_map<Oid, size_t> index;
  std::set<std::string> bare_taken;
  for (const auto& row : *relations) {
    Relation r;
    r.oid = static_cast<Oid>(Int(row[0]));
    r.schema = Text(row[1]);
    r.name = Text(row[2]);
    r.kind = Text(row[3]).empty() ? 'r' : Text(row[3])[0];
    r.reltuples = row[4] ? Int(row[4]) : -1;
    r.relpages = Int(row[5]);
    r.comment = Text(row[6]);
    // Only the first schema on the path that has the name is reached by the bare name.
    r.in_path = Int(row[7]) > 0 && bare_taken.insert(r.name).second;
    r.quoted = r.in_path ? Text(row[9]) : Text(row[8]) + "." + Text(row[9]);
    index[r.oid] = rels.size();
    rels.push_back(std::move(r));
  }
  std::vector<TableCard> cards(rels.size());
  for (size_t i = 0; i < rels.size(); ++i) {
    const Relation& r = rels[i];
    TableCard& card = cards[i];
    // Outside the search path the card names the table schema-qualified, as queries must.
    card.name = r.in_path ? r.name : r.schema + "." + r.name;
    card.source = engine.spec_.shown;
    if (r.kind == 'v') card.notes.push_back("a view");
    if (r.kind == 'm') card.notes.push_back("a materialized view (as of its last refresh)");
    if (r.kind == 'f') card.notes.push_back("a foreign table (read from another server)");
    if (!r.comment.empty()) card.notes.push_back("comment: " + r.comment);
  }
  auto columns = PgRows(conn, kColumnsSql);
  if (!columns) return std::unexpected(columns.error());
  for (const auto& row : *columns) {
    const auto it = index.find(static_cast<Oid>(Int(row[0])));
    if (it == index.end()) continue;
    ColumnCard col;
    col.name = Text(row[1]);
    col.type = Text(row[2]);
    // In the type, as SQL writes it, rather than as a note: the CLI prints every note.
    if (Text(row[3]) == "t") col.type += " NOT NULL";
    if (row[4] && !row[4]->empty()) col.notes.push_back("comment: " + *row[4]);
    if (Text(row[5]) != col.name) rels[it->second].quoted_columns.push_back(Text(row[5]));
    cards[it->second].columns.push_back(std::move(col));
  }
  for (size_t i = 0; i < rels.size(); ++i) {
    if (auto note = QuotingNote(cards[i].name, rels[i]); !note.empty())
      cards[i].notes.push_back(note);
  }
  auto keys = PgRows(conn, kKeysSql);
  if (!keys) return std::unexpected(keys.error());
  // A key of several columns is unique only as a whole: its columns keep NOT NULL, and the
  // table gets a note naming the key.
  std::unordered_map<size_t, std::vector<std::string>> primary;
  for (const auto& row : *keys) {
    const auto it = index.find(static_cast<Oid>(Int(row[0])));
    if (it != index.end() && Text(row[1]) == "p") primary[it->second].push_back(Text(row[2]));
  }
  for (const auto& [table, key] : primary) {
    if (key.size() < 2) continue;
    std::string list;
    for (const auto& c : key) list += (list.empty() ? "" : ", ") + c;
    cards[table].notes.push_back("primary key (" + list +
                                 "): unique as a combination, not each "
                                 "column alone");
  }
  for (const auto& row : *keys) {
    const auto it = index.find(static_cast<Oid>(Int(row[0])));
    if (it == index.end()) continue;
    TableCard& card = cards[it->second];
    const std::string column = Text(row[2]);
    if (Text(row[1]) == "p") {
      if (primary[it->second].size() > 1) continue;
      for (ColumnCard& c : card.columns) {
        if (c.name != column || c.type.ends_with(" PRIMARY KEY")) continue;
        if (c.type.ends_with(" NOT NULL")) c.type.resize(c.type.size() - 9);
        c.type += " PRIMARY KEY";
      }
      continue;
    }
    const auto ref = index.find(static_cast<Oid>(Int(row[3])));
    // A key to a table the role cannot read is no use to a query.
    if (ref == index.end()) continue;
    card.foreign_keys.push_back({column, cards[ref->second].name, Text(row[4])});
  }
  if (profile) {
    // Built in postgres_stats.cc: row counts and column statistics.
    if (auto done = ProfilePgCards(engine, rels.size(), cards,
                                   [&](size_t i) {
                                     const Relation& r = rels[i];
                                     return PgRelationFacts{
                                         r.oid, QuoteIdent(r.schema) + "." + QuoteIdent(r.name),
                                         r.kind, r.reltuples, r.relpages};
                                   });
        !done) {
      return done;
    }
  }
  if (auto note = WriteRoleNote(conn); note && !note->empty()) {
    engine.source_notes_.push_back(*note);
  }
  for (size_t i = 0; i < cards.size(); ++i) {
    TableCard& card = cards[i];
    engine.sql_names_.push_back(QuoteIdent(rels[i].schema) + "." + QuoteIdent(rels[i].name));
    engine.table_names_.push_back(card.name);
    engine.cards_.push_back(std::move(card));
  }
  return {};
}

}  // namespace quarry::engine::internal
