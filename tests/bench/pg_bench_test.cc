// `quarry bench --postgres URL` as a child process against the real test server: the suite's
// Chinook tasks (data/chinook.sqlite) run on PostgreSQL with tasks/fixtures/postgres/ replayed,
// graded with the same tasks/truth.json, every run naming its engine, and the results kept
// apart from the SQLite ones; the suite loader's rules for PostgreSQL fixtures; and the
// flag's refusals (not a server, an unreachable database) without a password in any output.
#include <gtest/gtest.h>

#include <map>
#include <set>

#include "quarry/bench/suite.h"
#include "quarry/common/json.h"
#include "support/mariadb_server.h"
#include "support/pg_server.h"
#include "support/test_support.h"

namespace quarry::testing {
namespace {

namespace fs = std::filesystem;
using json = nlohmann::ordered_json;

const std::vector<std::string> kUnsetModel = {"QUARRY_MODEL",
                                              "QUARRY_API_KEY",
                                              "OPENROUTER_API_KEY",
                                              "QUARRY_BASE_URL",
                                              "QUARRY_EMBEDDINGS_URL",
                                              "ANTHROPIC_API_KEY",
                                              "QUARRY_PROVIDER",
                                              "PGPASSWORD",
                                              "PGSERVICE"};

json ReadJson(const fs::path& path) { return ParseJson(ReadFile(path)); }

ProcessResult Bench(const TempDir& dir, std::vector<std::string> args) {
  std::vector<std::string> argv = {
      QuarryBinary().string(),          "bench", "--no-python", "--no-cache", "--tasks",
      (SourceDir() / "tasks").string(), "--out", "out"};
  argv.insert(argv.end(), args.begin(), args.end());
  return RunProcess(argv, dir.path(), {}, kUnsetModel);
}

// The tasks of the real suite whose data is data/chinook.sqlite.
std::set<std::string> ChinookTasks() {
  std::set<std::string> ids;
  const json suite = ReadJson(SourceDir() / "tasks" / "suite.json");
  for (const json& t : suite["tasks"]) {
    if (t["data"] == json::array({std::string(bench::kServerStandIn)})) ids.insert(t["id"]);
  }
  return ids;
}

TEST(PgBench, OfflineChinookTasksRunOnPostgresWithTheSameTruthAndSayTheirEngine) {
  const std::string url = test::SharedPgServer().Url();
  TempDir dir;
  // First the usual bench on the files, then the PostgreSQL one into the same --out.
  const ProcessResult files = Bench(dir, {"--offline", "--runs-dir", "runs-files"});
  ASSERT_EQ(files.exit_code, 0) << files.err << files.out;
  const ProcessResult p =
      Bench(dir, {"--offline", "--postgres", url, "--runs-dir", "runs-pg", "-v"});
  ASSERT_EQ(p.exit_code, 0) << p.err << p.out;
  EXPECT_NE(p.out.find("on PostgreSQL: data/chinook.sqlite served by postgresql://"),
            std::string::npos)
      << p.out;
  EXPECT_NE(p.err.find("[on ] chinook_rock_revenue #1 pass"), std::string::npos) << p.err;
  EXPECT_NE(p.err.find(" ms  on postgresql"), std::string::npos) << p.err;

  const json r = ReadJson(dir.path() / "out" / "postgresql" / "offline" / "bench_results.json");
  ASSERT_FALSE(r.is_discarded());
  EXPECT_EQ(ReadJson(dir.path() / "out" / "bench_results.json"), r);  // the latest run
  EXPECT_EQ(r["mode"], "offline");
  EXPECT_EQ(r["source"], "scripted");
  EXPECT_EQ(r["engines"], json::array({"postgresql"}));
  EXPECT_EQ(r["postgres"]["replaces"], "data/chinook.sqlite");
  const std::string server = r["postgres"]["server"].get<std::string>();
  EXPECT_TRUE(server.starts_with("postgresql://reader@")) << server;

  // Exactly the eight Chinook tasks, each in both arms, each run on the server.
  const std::set<std::string> chinook = ChinookTasks();
  ASSERT_EQ(chinook.size(), 8u);
  EXPECT_EQ(r["tasks_selected"], 8);
  ASSERT_EQ(r["runs"].size(), 16u);
  std::map<std::string, std::string> grades;
  for (const json& run : r["runs"]) {
    const std::string task = run["task"];
    EXPECT_TRUE(chinook.contains(task)) << task;
    EXPECT_EQ(run["engine"], "postgresql") << task;
    EXPECT_EQ(run["data"], server) << task;
    grades[task + "/" + run["arm"].get<std::string>()] = run["status"];
    if (run["status"] == "pass") {
      EXPECT_TRUE(run["metrics"]["grounded"].get<bool>()) << task;
      EXPECT_TRUE(fs::exists(dir.path() / run["trace"].get<std::string>())) << task;
    }
  }
  // With self-correction every task passes its truth; without it, the two fixtures whose first
  // query is SQLite's (CamelCase names, strftime) stop at the server's real error.
  for (const std::string& task : chinook) {
    EXPECT_EQ(grades[task + "/on"], "pass") << task;
    const bool repair = task == "chinook_rock_revenue" || task == "chinook_metal_revenue_2024";
    EXPECT_EQ(grades[task + "/off"], repair ? "fail" : "pass") << task;
  }
  EXPECT_EQ(r["arms"][0]["passed"], 8);
  EXPECT_EQ(r["arms"][0]["repair_successes"], 2);
  EXPECT_EQ(r["arms"][1]["passed"], 6);
  EXPECT_EQ(r["arms"][1]["failed"], 2);

  // The trace of a repaired run holds the server's own error for the CamelCase query.
  for (const json& run : r["runs"]) {
    if (run["task"] != "chinook_rock_revenue" || run["arm"] != "on") continue;
    const std::string trace = ReadFile(dir.path() / run["trace"].get<std::string>());
    EXPECT_NE(trace.find("invoiceline"), std::string::npos);
    EXPECT_NE(trace.find("826.65"), std::string::npos);
  }

  // The files' results are untouched and say sqlite; RESULTS.md shows both, in their own
  // sections, each run with its engine.
  const json f = ReadJson(dir.path() / "out" / "offline" / "bench_results.json");
  EXPECT_EQ(f["postgres"], nullptr);
  EXPECT_EQ(f["tasks_selected"], 43);
  for (const json& run : f["runs"]) {
    if (run["task"] == "chinook_rock_revenue") {
      EXPECT_EQ(run["engine"], "sqlite");
    }
    EXPECT_NE(run["engine"], "postgresql");
  }
  const std::string md = ReadFile(dir.path() / "out" / "RESULTS.md");
  const size_t pg_section = md.find("## On PostgreSQL");
  ASSERT_NE(pg_section, std::string::npos) << md;
  const size_t sqlite_row = md.find("| chinook_rock_revenue | numeric | on | 1 | pass | sqlite |");
  const size_t pg_row = md.find("| chinook_rock_revenue | numeric | on | 1 | pass | postgresql |");
  EXPECT_LT(sqlite_row, pg_section) << md;
  EXPECT_NE(pg_row, std::string::npos) << md;
  EXPECT_GT(pg_row, pg_section) << md;
  EXPECT_NE(md.find("engine: postgresql (data/chinook.sqlite served by postgresql://reader@"),
            std::string::npos)
      << md;
  EXPECT_NE(md.find("No live run on PostgreSQL yet: every figure is pending."), std::string::npos)
      << md;

  // Refusals, before any run: a value that is no server; a URL with a password (which no
  // output repeats); a database the server does not have.
  const ProcessResult bad = Bench(dir, {"--offline", "--postgres", "localhost:5432"});
  EXPECT_EQ(bad.exit_code, 2) << bad.err;
  EXPECT_NE(bad.err.find("--postgres takes a PostgreSQL server"), std::string::npos) << bad.err;
  std::string missing = url;
  missing.replace(missing.find("/chinook"), 8, "/no_such_db");
  const ProcessResult gone = Bench(dir, {"--offline", "--postgres", missing});
  EXPECT_NE(gone.exit_code, 0);
  EXPECT_NE(gone.err.find("--postgres: "), std::string::npos) << gone.err;
  EXPECT_NE(gone.err.find("no_such_db"), std::string::npos) << gone.err;
  std::string secret = url;
  secret.replace(secret.find("reader@"), 7, "reader:hunter2-secret@");
  const ProcessResult pw = Bench(dir, {"--offline", "--postgres", secret});
  EXPECT_NE(pw.exit_code, 0);
  EXPECT_NE(pw.err.find("--postgres: "), std::string::npos) << pw.err;
  EXPECT_EQ((pw.err + pw.out).find("hunter2"), std::string::npos) << pw.err;
  // Nothing ran, so the earlier results stand.
  EXPECT_EQ(ReadJson(dir.path() / "out" / "postgresql" / "offline" / "bench_results.json"), r);
}

// The Chinook tasks on MariaDB: the same truth, the MySQL fixtures, results of their own.
TEST(MySqlBench, OfflineChinookTasksRunOnMariaDbWithTheSameTruth) {
  const std::string url = test::SharedMariaDbServer().Url();
  TempDir dir;
  const ProcessResult m = Bench(dir, {"--offline", "--mysql", url, "--runs-dir", "runs-my"});
  ASSERT_EQ(m.exit_code, 0) << m.err << m.out;
  EXPECT_NE(m.out.find("on MySQL: data/chinook.sqlite served by mysql://reader@localhost/"),
            std::string::npos)
      << m.out;
  const json r = ReadJson(dir.path() / "out" / "mysql" / "offline" / "bench_results.json");
  ASSERT_FALSE(r.is_discarded());
  EXPECT_EQ(r["engines"], json::array({"mysql"}));
  EXPECT_EQ(r["mysql"]["engine"], "mysql");
  EXPECT_EQ(r["mysql"]["replaces"], "data/chinook.sqlite");
  EXPECT_EQ(r["postgres"], nullptr);
  EXPECT_EQ(r["tasks_selected"], 8);
  ASSERT_EQ(r["runs"].size(), 16u);
  for (const json& run : r["runs"]) {
    EXPECT_EQ(run["engine"], "mysql") << run["task"];
    EXPECT_EQ(run["status"], "pass") << run["task"] << ": " << run["reason"];
  }
  const std::string md = ReadFile(dir.path() / "out" / "RESULTS.md");
  const size_t section = md.find("## On MariaDB (MySQL protocol)");
  ASSERT_NE(section, std::string::npos) << md;
  EXPECT_GT(md.find("| chinook_rock_revenue | numeric | on | 1 | pass | mysql |"), section) << md;
  EXPECT_NE(md.find("No live run on PostgreSQL yet"), std::string::npos);
  const ProcessResult both = Bench(dir, {"--offline", "--mysql", url, "--postgres", url});
  EXPECT_EQ(both.exit_code, 2) << both.err;
  const ProcessResult wrong = Bench(dir, {"--offline", "--mysql", "postgresql://r@h/db"});
  EXPECT_EQ(wrong.exit_code, 2) << wrong.err;
  EXPECT_NE(wrong.err.find("--mysql takes a MariaDB or MySQL server"), std::string::npos);
}

// The loader's rules for fixtures/postgres/ (no server needed).
TEST(PgBench, PostgresFixturesAreLoadedOnlyForChinookTasksAndMustSayTheirEngine) {
  auto suite = bench::LoadSuite(SourceDir() / "tasks", SourceDir());
  ASSERT_TRUE(suite) << suite.error().message;
  int with_pg = 0;
  for (const bench::Task& t : suite->tasks) {
    for (const char* engine : {"postgresql", "mysql"}) {
      EXPECT_EQ(t.server_fixtures.contains(engine), bench::RunsOnServer(t)) << t.id;
      if (!t.server_fixtures.contains(engine)) continue;
      with_pg += engine == std::string("postgresql") ? 1 : 0;
      EXPECT_EQ(t.server_fixtures.at(engine)["source"], "scripted");
      EXPECT_EQ(t.server_fixtures.at(engine)["engine"], engine);
      EXPECT_EQ(t.server_fixture_paths.at(engine).filename(), t.id + ".json");
    }
  }
  EXPECT_EQ(with_pg, 8);

  TempDir dir;
  fs::create_directories(dir.path() / "data");
  fs::copy_file(SourceDir() / "data" / "chinook.sqlite", dir.path() / "data" / "chinook.sqlite");
  fs::copy_file(SourceDir() / "data" / "sales.csv", dir.path() / "data" / "sales.csv");
  const json tasks = {{"version", 1},
                      {"tasks",
                       {{{"id", "c"},
                         {"question", "How many customers?"},
                         {"data", {"data/chinook.sqlite"}},
                         {"difficulty", "easy"},
                         {"tags", {"aggregation"}},
                         {"grader", "numeric"},
                         {"tolerance", {{"abs", 0}}}},
                        {{"id", "s"},
                         {"question", "How many orders?"},
                         {"data", {"data/sales.csv"}},
                         {"difficulty", "easy"},
                         {"tags", {"aggregation"}},
                         {"grader", "numeric"},
                         {"tolerance", {{"abs", 0}}}}}}};
  dir.Write("tasks/suite.json", tasks.dump());
  dir.Write("tasks/truth.json",
            json({{"tasks", {{"c", {{"values", {59}}}}, {"s", {{"values", {1}}}}}}}).dump());
  auto fixture = [](const std::string& q, const std::string& data, bool engine) {
    json f = {{"source", "scripted"},
              {"question", q},
              {"data", {data}},
              {"turns", json::array({{{"content", "done"}}})}};
    if (engine) f["engine"] = "postgresql";
    return f.dump();
  };
  // Without "engine": "postgresql": refused, naming the file and the field.
  dir.Write("tasks/fixtures/postgres/c.json",
            fixture("How many customers?", "data/chinook.sqlite", false));
  auto loaded = bench::LoadSuite(dir.path() / "tasks", dir.path());
  ASSERT_FALSE(loaded);
  EXPECT_NE(loaded.error().message.find("postgres/c.json"), std::string::npos);
  EXPECT_NE(loaded.error().message.find("\"engine\": \"postgresql\""), std::string::npos)
      << loaded.error().message;
  dir.Write("tasks/fixtures/postgres/c.json",
            fixture("How many customers?", "data/chinook.sqlite", true));
  loaded = bench::LoadSuite(dir.path() / "tasks", dir.path());
  ASSERT_TRUE(loaded) << loaded.error().message;
  EXPECT_TRUE(loaded->tasks[0].server_fixtures.contains("postgresql"));
  EXPECT_FALSE(loaded->tasks[0].fixture.has_value());
  // A task over other data cannot run on the server.
  dir.Write("tasks/fixtures/postgres/s.json", fixture("How many orders?", "data/sales.csv", true));
  loaded = bench::LoadSuite(dir.path() / "tasks", dir.path());
  ASSERT_FALSE(loaded);
  EXPECT_NE(loaded.error().message.find("only tasks whose data is data/chinook.sqlite"),
            std::string::npos)
      << loaded.error().message;
}

}  // namespace
}  // namespace quarry::testing
