// Benchmark: what running queries in a child process costs (engine/isolated_query.h). From one
// run, the median wall time of Engine::Query (the query process already forked by a first
// query; the SQL and the result over a socket) against the same SQL run by DuckDB alone, in
// process, over the same CSV read by the same SELECT; printed as the ratio and the added
// milliseconds, for a small and a large file. Not a test: machines here are noisy.
// Usage: build/bench/query_isolation_bench [runs]
#include <duckdb.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <string>
#include <vector>

#include "quarry/engine/engine.h"

namespace {

using Clock = std::chrono::steady_clock;

double MedianMs(int runs, const std::function<void()>& f) {
  std::vector<double> ms;
  for (int i = 0; i < runs; ++i) {
    const auto start = Clock::now();
    f();
    ms.push_back(std::chrono::duration<double, std::milli>(Clock::now() - start).count());
  }
  std::sort(ms.begin(), ms.end());
  return ms[ms.size() / 2];
}

std::filesystem::path SalesCsv(const std::filesystem::path& dir, int rows) {
  std::filesystem::create_directories(dir / std::to_string(rows));
  const auto path = dir / std::to_string(rows) / "sales.csv";  // the table is named by the stem
  std::ofstream out(path);
  out << "id,region,units,revenue\n";
  const char* regions[] = {"North", "South", "East", "West", "Central"};
  for (int i = 0; i < rows; ++i) {
    out << i << ',' << regions[i % 5] << ',' << (i % 17) << ',' << (i % 1000) * 1.25 << '\n';
  }
  return path;
}

}  // namespace

int main(int argc, char** argv) {
  const int runs = argc > 1 ? std::max(1, std::atoi(argv[1])) : 15;
  const auto dir = std::filesystem::temp_directory_path() / "quarry-isolation-bench";
  std::filesystem::create_directories(dir);
  std::printf("%-9s %-44s %10s %10s %7s %9s\n", "rows", "query", "peer ms", "quarry ms", "ratio",
              "added ms");
  for (int rows : {1000, 2000000}) {
    const auto csv = SalesCsv(dir, rows);
    quarry::engine::OpenOptions options;
    options.fingerprint = false;
    options.use_cache = false;
    auto engine = quarry::engine::Open({csv}, options);
    if (!engine) {
      std::fprintf(stderr, "open failed: %s\n", engine.error().message.c_str());
      return 1;
    }
    duckdb_database db;
    duckdb_connection conn;
    duckdb_open(nullptr, &db);
    duckdb_connect(db, &conn);
    // The peer reads the file exactly as quarry's engine does: its loader's SELECT.
    const std::string view = "CREATE VIEW sales AS " + (*engine)->sources().at(0).select;
    duckdb_query(conn, view.c_str(), nullptr);
    for (const char* sql : {"SELECT count(*) FROM sales",
                            "SELECT region, sum(revenue) FROM sales GROUP BY 1 ORDER BY 1",
                            "SELECT * FROM sales ORDER BY revenue DESC LIMIT 100"}) {
      const double peer = MedianMs(runs, [&] {
        duckdb_result r;
        duckdb_query(conn, sql, &r);
        duckdb_destroy_result(&r);
      });
      if (auto check = (*engine)->Query(sql, {}); !check) {
        std::fprintf(stderr, "quarry's query failed: %s\n", check.error().message.c_str());
        return 1;
      }
      const double ours = MedianMs(runs, [&] { (void)(*engine)->Query(sql, {}); });
      std::printf("%-9d %-44.44s %10.1f %10.1f %6.2fx %9.1f\n", rows, sql, peer, ours, ours / peer,
                  ours - peer);
    }
    duckdb_disconnect(&conn);
    duckdb_close(&db);
  }
  std::filesystem::remove_all(dir);
  return 0;
}
