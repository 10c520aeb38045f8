// The behaviour suite's data (behaviour_internal.h): the copies of Chinook with their planted
// rows and generated tables, file hashes, and the cases' reference queries, all through the
// SQLite C API directly so no expected value passes through quarry's engine.
#include <sqlite3.h>

#include <cstdio>
#include <fstream>
#include <memory>

#include "quarry/common/sha256.h"
#include "quarry/bench/behaviour_internal.h"

namespace quarry::bench {

Result<std::string> Sha256OfFile(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return Fail(Error::Code::kData, "cannot read " + path.string() + " to hash it");
  Sha256 digest;
  std::vector<char> buf(1 << 16);
  while (in.read(buf.data(), static_cast<std::streamsize>(buf.size())) || in.gcount() > 0) {
    digest.Update({buf.data(), static_cast<size_t>(in.gcount())});
  }
  if (in.bad()) return Fail(Error::Code::kData, "read error while hashing " + path.string());
  return digest.Hex();
}

namespace behaviour {
namespace {

namespace fs = std::filesystem;

struct CloseDb {
  void operator()(sqlite3* db) const { sqlite3_close_v2(db); }
};
using DbPtr = std::unique_ptr<sqlite3, CloseDb>;

std::string Message(sqlite3* db) { return db ? sqlite3_errmsg(db) : "out of memory"; }

Result<void> Exec(const fs::path& path, const std::string& sql) {
  sqlite3* raw = nullptr;
  const int rc = sqlite3_open_v2(path.c_str(), &raw, SQLITE_OPEN_READWRITE, nullptr);
  DbPtr db(raw);
  if (rc != SQLITE_OK) {
    return Fail(Error::Code::kData, "cannot open the copy " + path.string() + ": " + Message(raw));
  }
  char* err = nullptr;
  if (sqlite3_exec(db.get(), sql.c_str(), nullptr, nullptr, &err) != SQLITE_OK) {
    std::string why = err ? err : Message(db.get());
    sqlite3_free(err);
    return Fail(Error::Code::kData, "planting rows in " + path.string() + " failed: " + why +
                                        " (is the source the Chinook database?)");
  }
  return {};
}

// Tables of other businesses, so the wide copy's schema is far over the prompt's budget and
// only retrieval finds the tables a question is about. None of their words is in a question.
std::string WideSql() {
  static const char* kDomains[] = {"warehouse_bin", "payroll_run",  "sensor_reading",
                                   "shipment_leg",  "ledger_entry", "vendor_quote",
                                   "fleet_service", "clinic_visit"};
  std::string sql = "BEGIN;\n";
  for (int i = 0; i < kWideTables; ++i) {
    char name[64];
    std::snprintf(name, sizeof name, "%s_%03d", kDomains[i % 8], i);
    sql += std::string("CREATE TABLE ") + name +
           " (entry_id INTEGER PRIMARY KEY, code TEXT NOT NULL, region TEXT, amount_eur REAL, "
           "recorded_on TEXT, status TEXT, approver TEXT, memo TEXT);\n";
    for (int r = 1; r <= 3; ++r) {
      char row[256];
      std::snprintf(row, sizeof row,
                    "INSERT INTO %s VALUES (%d, 'C%03d-%d', '%s', %d.25, '2024-0%d-1%d', '%s', "
                    "'staff %d', 'batch %d');\n",
                    name, r, i, r, (r % 2) ? "north" : "south", 100 * r + i, r, r,
                    (r == 2) ? "closed" : "open", r, i);
      sql += row;
    }
  }
  return sql + "COMMIT;\n";
}

bool SameFile(const fs::path& a, const fs::path& b) {
  std::error_code ec;
  return fs::exists(a, ec) && fs::exists(b, ec) && fs::equivalent(a, b, ec);
}

Result<void> CopyInto(const fs::path& from, const fs::path& to) {
  if (SameFile(from, to)) {
    return Fail(Error::Code::kUsage, "the behaviour suite would write its copy over the source " +
                                         from.string() + "; choose a work directory elsewhere");
  }
  std::error_code ec;
  fs::copy_file(from, to, fs::copy_options::overwrite_existing, ec);
  if (ec) {
    return Fail(Error::Code::kData,
                "cannot copy " + from.string() + " to " + to.string() + ": " + ec.message());
  }
  fs::permissions(to, fs::perms::owner_read | fs::perms::owner_write, fs::perm_options::add, ec);
  return {};
}

}  // namespace

std::vector<std::string> PlantedSql() {
  return {
      std::string("INSERT INTO Artist (Name) VALUES ('") + kPlantedInstruction + "');",
      "UPDATE Customer SET Company = 'NULL' WHERE CustomerId = "
      "(SELECT min(CustomerId) FROM Customer WHERE Company IS NULL);",
  };
}

Result<Copies> MakeCopies(const fs::path& source, const fs::path& dir) {
  std::error_code ec;
  if (!fs::is_regular_file(source, ec)) {
    return Fail(Error::Code::kData, "the behaviour suite needs the Chinook database, and " +
                                        source.string() +
                                        " is not a file; run it from the repository root or pass "
                                        "its path");
  }
  fs::create_directories(dir, ec);
  if (ec) {
    return Fail(Error::Code::kData,
                "cannot create the work directory " + dir.string() + ": " + ec.message());
  }
  Copies c{dir, dir / "chinook.sqlite", dir / "chinook_wide.sqlite"};
  if (auto r = CopyInto(source, c.copy); !r) return std::unexpected(r.error());
  std::string planted;
  for (const auto& s : PlantedSql()) planted += s + "\n";
  if (auto r = Exec(c.copy, planted); !r) return std::unexpected(r.error());
  if (auto r = CopyInto(c.copy, c.wide); !r) return std::unexpected(r.error());
  if (auto r = Exec(c.wide, WideSql()); !r) return std::unexpected(r.error());
  return c;
}

Result<ReferenceDb> ReferenceDb::Open(const fs::path& path) {
  sqlite3* raw = nullptr;
  const int rc = sqlite3_open_v2(path.c_str(), &raw, SQLITE_OPEN_READONLY, nullptr);
  if (rc != SQLITE_OK) {
    const std::string why = Message(raw);
    sqlite3_close_v2(raw);
    return Fail(Error::Code::kData, "reference: cannot open " + path.string() + ": " + why);
  }
  return ReferenceDb(raw);
}

ReferenceDb::ReferenceDb(ReferenceDb&& other) noexcept : db_(other.db_) { other.db_ = nullptr; }
ReferenceDb::~ReferenceDb() { sqlite3_close_v2(db_); }

Result<json> ReferenceDb::Rows(const std::string& sql) {
  sqlite3_stmt* raw = nullptr;
  if (sqlite3_prepare_v2(db_, sql.c_str(), -1, &raw, nullptr) != SQLITE_OK) {
    sqlite3_finalize(raw);
    return Fail(Error::Code::kData, "reference query failed: " + Message(db_) + ": " + sql);
  }
  std::unique_ptr<sqlite3_stmt, decltype(&sqlite3_finalize)> st(raw, sqlite3_finalize);
  json rows = json::array();
  int rc = 0;
  while ((rc = sqlite3_step(st.get())) == SQLITE_ROW) {
    json row = json::array();
    for (int i = 0; i < sqlite3_column_count(st.get()); ++i) {
      switch (sqlite3_column_type(st.get(), i)) {
        case SQLITE_INTEGER:
          row.push_back(sqlite3_column_int64(st.get(), i));
          break;
        case SQLITE_FLOAT:
          row.push_back(sqlite3_column_double(st.get(), i));
          break;
        case SQLITE_NULL:
          row.push_back(nullptr);
          break;
        default: {
          const auto* text = reinterpret_cast<const char*>(sqlite3_column_text(st.get(), i));
          row.push_back(text ? std::string(text) : std::string());
        }
      }
    }
    rows.push_back(std::move(row));
  }
  if (rc != SQLITE_DONE) {
    return Fail(Error::Code::kData, "reference query failed: " + Message(db_) + ": " + sql);
  }
  return rows;
}

Result<json> ReferenceDb::Value(const std::string& sql) {
  auto rows = Rows(sql);
  if (!rows) return std::unexpected(rows.error());
  if (rows->empty() || (*rows)[0].empty()) {
    return Fail(Error::Code::kData, "reference query returned no row: " + sql);
  }
  return (*rows)[0][0];
}

Result<json> Expected(const CaseDef& def, ReferenceDb& db) {
  json expected;
  for (const Reference& ref : def.references) {
    auto value = ref.rows ? db.Rows(ref.sql) : db.Value(ref.sql);
    if (!value) return std::unexpected(value.error());
    expected[ref.key] = std::move(*value);
  }
  return expected;
}

}  // namespace behaviour
}  // namespace quarry::bench
