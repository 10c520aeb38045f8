// The DuckDB peer of the load benchmark (bench/load_bench.py): DuckDB alone, through its C API,
// with no quarry code in between. It also generates the benchmark's sales CSV, since DuckDB
// writes a gigabyte of deterministic rows far faster than a Python writer could.
//
//   duckdb_peer generate OUT.csv ROWS SEED        writes the sales CSV (atomically: OUT.tmp,
//   rename) duckdb_peer scan SQL                          one query straight from the file
//   (read_csv in SQL) duckdb_peer load FILE TABLE SQL...            CREATE TABLE TABLE from FILE,
//   then each SQL duckdb_peer store FILE DB                     CREATE TABLE data from FILE in
//   database file DB
//                                                 (what a parse-cache entry is, without quarry)
//   common options: --threads N (default 2)
//
// Each prints one JSON object on stdout: {"seconds": ..., "queries": [{"seconds", "columns",
// "rows"}]} with every cell rendered by DuckDB as text (null for SQL NULL). Errors go to stderr
// with exit status 1. Timings are in-process wall clock (steady_clock), in seconds.
#include <duckdb.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace {

using json = nlohmann::ordered_json;
using Clock = std::chrono::steady_clock;

double SecondsSince(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

std::string QuoteLiteral(std::string_view text) {
  std::string out = "'";
  for (char c : text) out += c == '\'' ? std::string("''") : std::string(1, c);
  return out + "'";
}

// Owns a DuckDB handle whose destroy function takes a pointer to it.
template <typename H, void (*Destroy)(H*)>
class Owned {
 public:
  Owned() = default;
  ~Owned() {
    if (h_) Destroy(&h_);
  }
  Owned(const Owned&) = delete;
  Owned& operator=(const Owned&) = delete;
  H* out() { return &h_; }
  H get() const { return h_; }

 private:
  H h_ = nullptr;
};

// duckdb_destroy_result must run even after a failed query, so the result is owned up front.
class QueryResult {
 public:
  QueryResult() = default;
  ~QueryResult() { duckdb_destroy_result(&result_); }
  QueryResult(const QueryResult&) = delete;
  QueryResult& operator=(const QueryResult&) = delete;
  duckdb_result* get() { return &result_; }

 private:
  duckdb_result result_{};
};

class Peer {
 public:
  // Empty string on success, else what went wrong.
  std::string Open(int threads) {
    Owned<duckdb_config, duckdb_destroy_config> config;
    if (duckdb_create_config(config.out()) == DuckDBError) return "duckdb config failed";
    duckdb_set_config(config.get(), "threads", std::to_string(threads).c_str());
    // Same rule as quarry: nothing is fetched or loaded behind the user's back.
    duckdb_set_config(config.get(), "autoinstall_known_extensions", "false");
    duckdb_set_config(config.get(), "autoload_known_extensions", "false");
    char* err = nullptr;
    if (duckdb_open_ext(nullptr, db_.out(), config.get(), &err) == DuckDBError) {
      std::string msg = err ? err : "unknown error";
      duckdb_free(err);
      return "duckdb open failed: " + msg;
    }
    if (duckdb_connect(db_.get(), conn_.out()) == DuckDBError) return "duckdb connect failed";
    return "";
  }

  // Runs `sql` and returns {"seconds", "columns", "rows"}, or the error text.
  std::optional<json> Run(const std::string& sql, std::string* error) {
    QueryResult result;
    const auto start = Clock::now();
    if (duckdb_query(conn_.get(), sql.c_str(), result.get()) == DuckDBError) {
      const char* e = duckdb_result_error(result.get());
      *error = std::string(e ? e : "query failed") + "\n  in: " + sql;
      return std::nullopt;
    }
    const double seconds = SecondsSince(start);
    json columns = json::array();
    json rows = json::array();
    const idx_t cols = duckdb_column_count(result.get());
    for (idx_t c = 0; c < cols; ++c) columns.push_back(duckdb_column_name(result.get(), c));
    for (idx_t r = 0; r < duckdb_row_count(result.get()); ++r) {
      json row = json::array();
      for (idx_t c = 0; c < cols; ++c) {
        if (duckdb_value_is_null(result.get(), c, r)) {
          row.push_back(nullptr);
          continue;
        }
        char* v = duckdb_value_varchar(result.get(), c, r);
        row.push_back(v ? std::string(v) : std::string());
        duckdb_free(v);
      }
      rows.push_back(std::move(row));
    }
    return json{{"seconds", seconds}, {"columns", columns}, {"rows", rows}};
  }

 private:
  Owned<duckdb_database, duckdb_close> db_;
  Owned<duckdb_connection, duckdb_disconnect> conn_;
};

// The sales table: ids in order, everything else from a hash of (row, seed, field), so a given
// seed always yields the same bytes (with the pinned DuckDB), whatever the thread count.
// About 55 bytes a row: 17.2 M rows make roughly 1 GB.
std::string GenerateSql(const std::string& out, long long rows, long long seed) {
  const std::string s = std::to_string(seed);
  auto h = [&](int field) { return "hash(i, " + s + ", " + std::to_string(field) + ")"; };
  return "COPY (SELECT i + 1 AS order_id, "
         "DATE '2022-01-01' + CAST(" +
         h(1) +
         " % 1096 AS INTEGER) AS order_date, "
         "['North', 'South', 'East', 'West', 'Central'][CAST(" +
         h(2) +
         " % 5 AS INTEGER) + 1] "
         "AS region, "
         "'PRD-' || lpad(CAST(p AS VARCHAR), 4, '0') AS product, "
         "['Books', 'Toys', 'Garden', 'Kitchen', 'Sports', 'Beauty', 'Office', 'Music', 'Games', "
         "'Tools', 'Outdoor', 'Pets'][p % 12 + 1] AS category, "
         "CAST(" +
         h(4) +
         " % 2000000 AS BIGINT) + 1000000 AS customer_id, "
         "q AS quantity, "
         "round(q * (1.99 + ((p * 37) % 500) / 10.0) * (0.9 + (" +
         h(6) +
         " % 21) / 100.0), 2) "
         "AS revenue "
         "FROM (SELECT i, CAST(" +
         h(3) +
         " % 1000 AS INTEGER) AS p, "
         "CAST(" +
         h(5) + " % 9 AS INTEGER) + 1 AS q FROM range(" + std::to_string(rows) + ") r(i))) TO " +
         QuoteLiteral(out) + " (FORMAT csv, HEADER true)";
}

int Usage() {
  std::cerr << "usage: duckdb_peer generate OUT.csv ROWS SEED [--threads N]\n"
               "       duckdb_peer scan SQL [--threads N]\n"
               "       duckdb_peer load FILE TABLE SQL... [--threads N]\n"
               "       duckdb_peer store FILE DB [--threads N]\n";
  return 2;
}

int Fail(const std::string& message) {
  std::cerr << "duckdb_peer: " << message << "\n";
  return 1;
}

int Main(std::vector<std::string> args) {
  int threads = 2;
  for (size_t i = 0; i + 1 < args.size(); ++i) {
    if (args[i] != "--threads") continue;
    try {
      threads = std::stoi(args[i + 1]);
    } catch (const std::exception&) {
      return Usage();
    }
    args.erase(args.begin() + static_cast<std::ptrdiff_t>(i),
               args.begin() + static_cast<std::ptrdiff_t>(i) + 2);
    break;
  }
  if (args.empty() || threads < 1) return Usage();
  Peer peer;
  if (auto e = peer.Open(threads); !e.empty()) return Fail(e);
  std::string error;
  const std::string& verb = args[0];
  json out = {{"threads", threads}};
  if (verb == "generate" && args.size() == 4) {
    long long rows = 0, seed = 0;
    try {
      rows = std::stoll(args[2]);
      seed = std::stoll(args[3]);
    } catch (const std::exception&) {
      return Usage();
    }
    if (rows < 1) return Usage();
    const std::string tmp = args[1] + ".tmp";
    const auto start = Clock::now();
    if (!peer.Run(GenerateSql(tmp, rows, seed), &error)) return Fail(error);
    std::error_code ec;
    std::filesystem::rename(tmp, args[1], ec);
    if (ec) return Fail("cannot rename " + tmp + ": " + ec.message());
    out["seconds"] = SecondsSince(start);
    out["bytes"] = std::filesystem::file_size(args[1], ec);
  } else if (verb == "scan" && args.size() == 2) {
    auto q = peer.Run(args[1], &error);
    if (!q) return Fail(error);
    out["seconds"] = (*q)["seconds"];
    out["queries"] = json::array({*q});
  } else if (verb == "load" && args.size() >= 3) {
    const std::string create =
        "CREATE TABLE \"" + args[2] + "\" AS SELECT * FROM read_csv(" + QuoteLiteral(args[1]) + ")";
    auto load = peer.Run(create, &error);
    if (!load) return Fail(error);
    out["load_seconds"] = (*load)["seconds"];
    out["queries"] = json::array();
    double total = (*load)["seconds"].get<double>();
    for (size_t i = 3; i < args.size(); ++i) {
      auto q = peer.Run(args[i], &error);
      if (!q) return Fail(error);
      total += (*q)["seconds"].get<double>();
      out["queries"].push_back(std::move(*q));
    }
    out["seconds"] = total;
  } else if (verb == "store" && args.size() == 3) {
    const auto start = Clock::now();
    for (const std::string& sql :
         {"ATTACH " + QuoteLiteral(args[2]) + " AS store",
          "CREATE TABLE store.data AS SELECT * FROM read_csv(" + QuoteLiteral(args[1]) + ")",
          std::string("DETACH store")}) {
      if (!peer.Run(sql, &error)) return Fail(error);
    }
    out["seconds"] = SecondsSince(start);
  } else {
    return Usage();
  }
  std::cout << out.dump(-1, ' ', false, json::error_handler_t::replace) << "\n";
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    return Main(std::vector<std::string>(argv + 1, argv + argc));
  } catch (const std::exception& e) {
    return Fail(std::string("internal error: ") + e.what());
  }
}
