// The quarry binary as a user runs it: the offline asks on the bundled data (answers checked
// against figures computed here from the files), the data commands, bad input with its exit
// codes and one-line errors, and nothing written next to the user's data.
#include <sys/stat.h>

#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <map>
#include <regex>
#include <sstream>

#include <nlohmann/json.hpp>

#include "support/test_support.h"

namespace quarry {
namespace {

namespace fs = std::filesystem;
using json = nlohmann::ordered_json;
using quarry::testing::RunProcess;
using quarry::testing::SourceDir;
using quarry::testing::TempDir;

// No model settings leak in from the machine running the tests.
const std::vector<std::string> kModelEnv = {
    "QUARRY_BASE_URL", "QUARRY_MODEL",  "QUARRY_API_KEY",    "OPENROUTER_API_KEY",
    "QUARRY_FIXTURES", "QUARRY_PRICES", "ANTHROPIC_API_KEY", "QUARRY_PROVIDER"};

class CliTest : public ::testing::Test {
 protected:
  testing::ProcessResult Quarry(std::vector<std::string> args, std::vector<std::string> env = {}) {
    args.insert(args.begin(), quarry::testing::QuarryBinary().string());
    return RunProcess(args, cwd_.path(), env, kModelEnv);
  }
  std::string Data(const std::string& name) { return (SourceDir() / "data" / name).string(); }
  TempDir cwd_;  // the user's working directory: runs/ goes here
};

// Region totals of data/sales.csv computed straight from the file, in cents.
std::map<std::string, long long> RegionTotalsInCents() {
  std::ifstream in(SourceDir() / "data" / "sales.csv");
  std::string line;
  std::getline(in, line);
  std::vector<std::string> header;
  std::stringstream hs(line);
  for (std::string f; std::getline(hs, f, ',');) header.push_back(f);
  const auto col = [&](const std::string& name) {
    return std::find(header.begin(), header.end(), name) - header.begin();
  };
  const auto region_col = col("region"), revenue_col = col("revenue");
  std::map<std::string, long long> totals;
  while (std::getline(in, line)) {
    std::vector<std::string> f;
    std::stringstream ls(line);
    for (std::string x; std::getline(ls, x, ',');) f.push_back(x);
    totals[f[region_col]] += std::llround(std::stod(f[revenue_col]) * 100);
  }
  return totals;
}

std::vector<long long> MoneyInCents(const std::string& text) {
  std::vector<long long> out;
  std::regex money(R"(\$([0-9,]+\.[0-9]{2}))");
  for (std::sregex_iterator it(text.begin(), text.end(), money), end; it != end; ++it) {
    std::string digits = (*it)[1];
    digits.erase(std::remove(digits.begin(), digits.end(), ','), digits.end());
    out.push_back(std::llround(std::stod(digits) * 100));
  }
  return out;
}

TEST_F(CliTest, OfflineSalesAskIsGroundedAndRight) {
  const auto before = quarry::testing::DirectoryFingerprint(SourceDir() / "data");
  auto r = Quarry({"ask", "--offline", "--data", Data("sales.csv"),
                   "Which region has the highest total revenue, and by how much does it beat the "
                   "runner-up?"});
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("grounded yes"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("repairs 1/2"), std::string::npos) << r.out;
  // Progress went to stderr, step by step: the failure, the schema lookup, the repair.
  EXPECT_NE(r.err.find("runtime_error"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("inspect_schema"), std::string::npos);

  auto totals = RegionTotalsInCents();
  std::vector<std::pair<long long, std::string>> ranked;
  for (const auto& [region, cents] : totals) ranked.emplace_back(cents, region);
  std::sort(ranked.rbegin(), ranked.rend());
  const std::string answer = r.out.substr(0, r.out.find("SQL:"));
  EXPECT_NE(answer.find(ranked[0].second), std::string::npos) << answer;
  EXPECT_NE(answer.find(ranked[1].second), std::string::npos) << answer;
  EXPECT_EQ(MoneyInCents(answer), (std::vector<long long>{ranked[0].first, ranked[1].first,
                                                          ranked[0].first - ranked[1].first}));
  EXPECT_EQ(quarry::testing::DirectoryFingerprint(SourceDir() / "data"), before);

  // The trace on disk agrees, and `quarry trace latest` summarises it.
  std::smatch m;
  ASSERT_TRUE(std::regex_search(r.out, m, std::regex(R"(trace: (\S+))")));
  const json t = json::parse(quarry::testing::ReadFile(cwd_.path() / m[1].str()));
  EXPECT_EQ(t["stop_reason"], "answered");
  EXPECT_EQ(t["verify"]["grounded"], true);
  EXPECT_EQ(t["totals"]["repair_attempts"], 2);
  EXPECT_EQ(t["sources"][0]["sha256"], quarry::testing::Sha256File(Data("sales.csv")));
  EXPECT_TRUE(fs::exists(cwd_.path() / fs::path(m[1].str()).parent_path() / "events.jsonl"));
  auto summary = Quarry({"trace", "latest"});
  ASSERT_EQ(summary.exit_code, 0) << summary.err;
  EXPECT_NE(summary.out.find("run_sql"), std::string::npos);
  EXPECT_NE(summary.out.find("stop:     answered"), std::string::npos) << summary.out;
}

// Issue 23: the gate's send-back is no repair, and a run with one printed "repairs 0/0" as if
// nothing had happened. The scenario sent_back_then_grounded replayed: its first answer holds
// a figure no result showed, the gate returns it, the model computes it and the answer passes.
TEST_F(CliTest, AskCountsASendBackBesideRepairs) {
  fs::create_directories(cwd_.path() / "fx");
  fs::copy_file(
      SourceDir() / "tests" / "agent" / "scenarios" / "sent_back_then_grounded" / "scenario.json",
      cwd_.path() / "fx" / "sent_back.json");
  const std::string question = "Which region has the highest total revenue?";
  auto r = Quarry({"ask", "--offline", "--fixtures", "fx", "--data", Data("sales.csv"), question});
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("repairs 0/0 · send-backs 1 · grounded yes"), std::string::npos) << r.out;
  EXPECT_NE(r.err.find("rejected"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("send-back"), std::string::npos) << r.err;

  auto j = Quarry({"ask", "--offline", "--fixtures", "fx", "--format", "json", "--data",
                   Data("sales.csv"), question});
  ASSERT_EQ(j.exit_code, 0) << j.err;
  const json out = json::parse(j.out);
  EXPECT_EQ(out["totals"]["send_backs"], 1);
  EXPECT_EQ(out["totals"]["repair_attempts"], 0);

  auto summary = Quarry({"trace", "latest"});
  ASSERT_EQ(summary.exit_code, 0) << summary.err;
  EXPECT_NE(summary.out.find("(send-back)"), std::string::npos) << summary.out;
  EXPECT_NE(summary.out.find("send-backs 1"), std::string::npos) << summary.out;

  auto report = Quarry({"report", "runs"});
  ASSERT_EQ(report.exit_code, 0) << report.err;
  EXPECT_NE(report.out.find("repairs 0/0 (succeeded/attempted), send-backs 2 (in 2 of 2 runs)"),
            std::string::npos)
      << report.out;
}

TEST_F(CliTest, OfflineChinookAndSensors) {
  auto chinook = Quarry({"ask", "--offline", "--format", "json", "--data", Data("chinook.sqlite"),
                         "Which 3 genres have the most tracks?"});
  ASSERT_EQ(chinook.exit_code, 0) << chinook.out << chinook.err;
  const json c = json::parse(chinook.out);
  EXPECT_EQ(c["grounded"], true);
  EXPECT_EQ(c["supporting_values"], json::parse(R"(["Rock","1297","Latin","579","Metal","374"])"));
  EXPECT_EQ(c["figures"], json::array());

  auto sensors = Quarry({"ask", "--offline", "--data", Data("sensors.csv"),
                         "Which station has the highest average temperature in Celsius?"});
  ASSERT_EQ(sensors.exit_code, 0) << sensors.out << sensors.err;
  EXPECT_NE(sensors.out.find("ST-05"), std::string::npos);
  EXPECT_NE(sensors.out.find("grounded yes"), std::string::npos);
  EXPECT_NE(sensors.out.find("repairs 1/1"), std::string::npos) << sensors.out;
  EXPECT_NE(sensors.err.find("runtime_error"), std::string::npos);  // the text-cast failure
}

TEST_F(CliTest, OfflineClarificationIsContinuedByTheRecordingOfItsReply) {
  const std::string runs = (cwd_.path() / "runs").string();
  auto asked = Quarry({"ask", "--offline", "--runs-dir", runs, "--data", Data("chinook.sqlite"),
                       "Who is the top customer?"});
  ASSERT_EQ(asked.exit_code, 7) << asked.out << asked.err;
  const std::regex continue_line(
      "continue with: quarry ask --thread (\\S+) --runs-dir \\S+ "
      "--offline --data \\S+ \"<your reply>\"");
  std::smatch m;
  ASSERT_TRUE(std::regex_search(asked.out, m, continue_line)) << asked.out;
  const std::string thread = m[1].str();
  // A number that is no choice is refused; the turn still waits.
  auto slip = Quarry({"ask", "--offline", "--runs-dir", runs, "--thread", thread, "--data",
                      Data("chinook.sqlite"), "7"});
  EXPECT_EQ(slip.exit_code, 2) << slip.err;
  EXPECT_NE(slip.err.find("7 is not one of the choices (1 to 3)"), std::string::npos) << slip.err;
  // No recording continues with "by tracks bought": the error says which one was looked for.
  auto unrecorded = Quarry({"ask", "--offline", "--runs-dir", runs, "--thread", thread, "--data",
                            Data("chinook.sqlite"), "3"});
  EXPECT_EQ(unrecorded.exit_code, 2);
  EXPECT_NE(unrecorded.err.find("the continuation of \"Who is the top customer?\" with the reply "
                                "\"by tracks bought\""),
            std::string::npos)
      << unrecorded.err;
  auto replied = Quarry({"ask", "--offline", "--runs-dir", runs, "--thread", thread, "--format",
                         "json", "--data", Data("chinook.sqlite"), "1"});
  ASSERT_EQ(replied.exit_code, 0) << replied.out << replied.err;
  const json r = json::parse(replied.out);
  EXPECT_EQ(r["grounded"], true);
  EXPECT_EQ(r["supporting_values"], json::parse(R"(["Helena Holý","49.62","47.62"])"));
  EXPECT_EQ(r["assumptions"], json::parse(R"J(["top customer = by revenue (the user's reply)"])J"));
  EXPECT_EQ(r["turn"], 1);
}

TEST_F(CliTest, SchemaAndSqlForScripts) {
  auto schema = Quarry({"schema", "--format", "json", Data("passengers.csv")});
  ASSERT_EQ(schema.exit_code, 0) << schema.err;
  const json s = json::parse(schema.out);
  EXPECT_EQ(s["tables"][0]["name"], "passengers");
  EXPECT_EQ(s["tables"][0]["row_count"], 340);

  auto sql = Quarry(
      {"sql", "--format", "json", Data("chinook.sqlite"), "SELECT count(*) AS n FROM Genre"});
  ASSERT_EQ(sql.exit_code, 0) << sql.err;
  EXPECT_EQ(json::parse(sql.out)["rows"][0][0], 25);

  auto write = Quarry({"sql", Data("chinook.sqlite"), "DROP TABLE Genre"});
  EXPECT_EQ(write.exit_code, 3);
  EXPECT_NE(write.err.find("guard_violation (read_only)"), std::string::npos) << write.err;
}

TEST_F(CliTest, HelpOnEverySubcommand) {
  for (const char* sub : {"ask", "schema", "sql", "trace"}) {
    auto r = Quarry({sub, "--help"});
    EXPECT_EQ(r.exit_code, 0) << sub;
    EXPECT_NE(r.out.find("Usage"), std::string::npos) << sub;
  }
  auto none = Quarry({});
  EXPECT_EQ(none.exit_code, 2);
  auto bad_flag = Quarry({"ask", "--no-such-flag", "q"});
  EXPECT_EQ(bad_flag.exit_code, 2);
}

struct BadInput {
  std::string name;
  std::string file;
  std::string content;
  std::string fragment;
};

TEST_F(CliTest, BadInputGetsOneLineAndAnExitCode) {
  TempDir data;
  const std::vector<BadInput> cases = {
      {"missing", "nope.csv", "", "not found"},
      {"extension", "table.ods", "x", "unsupported file type"},
      {"empty", "empty.csv", "", "is empty"},
      {"header only", "header.csv", "a,b\n", "header but no rows"},
      {"not sqlite", "fake.db", "hello, I am text\n", "not a SQLite database"},
  };
  for (const auto& c : cases) {
    if (c.name != "missing") data.Write(c.file, c.content);
    const auto before = quarry::testing::DirectoryFingerprint(data.path());
    auto r =
        Quarry({"ask", "--offline", "--data", (data.path() / c.file).string(), "How many rows?"});
    EXPECT_EQ(r.exit_code, 3) << c.name << ": " << r.err;
    EXPECT_NE(r.err.find(c.fragment), std::string::npos) << c.name << ": " << r.err;
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << c.name << ": " << r.err;
    EXPECT_EQ(quarry::testing::DirectoryFingerprint(data.path()), before) << c.name;
  }
}

TEST_F(CliTest, NoModelConfiguredSaysWhatToSet) {
  auto r = Quarry({"ask", "--data", Data("sales.csv"), "Which region sells most?"});
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_NE(r.err.find("QUARRY_MODEL"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("--offline"), std::string::npos) << r.err;
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;

  auto unrecorded = Quarry({"ask", "--offline", "--data", Data("sales.csv"), "What is love?"});
  EXPECT_EQ(unrecorded.exit_code, 2);
  EXPECT_NE(unrecorded.err.find("no recorded model turns"), std::string::npos);
}

// A provider flag is checked when it is read, by every command that takes one: `mcp` makes its
// client only at the first ask_database call, and an empty name is no name.
TEST_F(CliTest, AnUnknownOrEmptyProviderIsAUsageErrorAtOnce) {
  const std::vector<std::vector<std::string>> commands = {
      {"ask", "--provider", "claude", "--data", Data("sales.csv"), "How many rows?"},
      {"ask", "--provider", "", "--data", Data("sales.csv"), "How many rows?"},
      {"mcp", "--provider", "claude", Data("sales.csv")},
      {"doctor", "--provider", "replay"},
  };
  for (const auto& args : commands) {
    auto r = Quarry(args);
    EXPECT_EQ(r.exit_code, 2) << args[0] << ": " << r.err;
    EXPECT_NE(r.err.find("unknown provider"), std::string::npos) << args[0] << ": " << r.err;
    EXPECT_NE(r.err.find("openai-compatible, openrouter or anthropic"), std::string::npos) << r.err;
  }
  auto fine = Quarry({"ask", "--offline", "--provider", "anthropic", "--data", Data("sales.csv"),
                      "How many sales are there?"});
  EXPECT_EQ(fine.err.find("unknown provider"), std::string::npos) << fine.err;
}

TEST_F(CliTest, AskTakesOptionsAfterTheQuestion) {
  TempDir runs;
  const std::string question =
      "Which region has the highest total revenue, and by how much does it beat the runner-up?";
  auto r = Quarry({"ask", "--offline", "--data", Data("sales.csv"), question, "--runs-dir",
                   runs.path().string(), "--format", "json"});
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_TRUE(json::parse(r.out).contains("answer")) << r.out;
  size_t traces = 0;
  for (const auto& entry : std::filesystem::directory_iterator(runs.path())) {
    traces += std::filesystem::exists(entry.path() / "trace.json") ? 1 : 0;
  }
  EXPECT_EQ(traces, 1u) << r.out;
  EXPECT_FALSE(std::filesystem::exists(cwd_.path() / "runs"));

  // Several files before the question still parse: the last value that is no file is the
  // question (no model is configured, so the run stops after opening both files).
  auto two =
      Quarry({"ask", "--data", Data("sales.csv"), Data("sensors.csv"), "Which region sells most?"});
  EXPECT_EQ(two.exit_code, 2) << two.err;
  EXPECT_NE(two.err.find("QUARRY_MODEL"), std::string::npos) << two.err;
  auto missing = Quarry({"ask", "--data", Data("sales.csv"), "nosuch.csv",
                         "Which region sells most?", "--max-steps", "3"});
  EXPECT_NE(missing.exit_code, 0);
  EXPECT_NE(missing.err.find("nosuch.csv"), std::string::npos) << missing.err;
  EXPECT_EQ(missing.err.find("Which region"), std::string::npos) << missing.err;
  auto none = Quarry({"ask", "--data", Data("sales.csv")});
  EXPECT_EQ(none.exit_code, 2);
  EXPECT_NE(none.err.find("ask needs a question"), std::string::npos) << none.err;
}

// A quote-aware split of one CSV line (names hold commas inside quotes).
std::vector<std::string> SplitCsvLine(const std::string& line) {
  std::vector<std::string> fields(1);
  bool quoted = false;
  for (size_t i = 0; i < line.size(); ++i) {
    const char c = line[i];
    if (c == '"' && quoted && i + 1 < line.size() && line[i + 1] == '"') {
      fields.back() += '"';
      ++i;
    } else if (c == '"') {
      quoted = !quoted;
    } else if (c == ',' && !quoted) {
      fields.emplace_back();
    } else {
      fields.back() += c;
    }
  }
  return fields;
}

TEST_F(CliTest, OfflinePassengersRepairsAGuardViolationInPython) {
  auto r = Quarry({"ask", "--offline", "--data", Data("passengers.csv"),
                   "Did women survive more often than men, and by how much?"});
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_NE(r.err.find("guard_violation"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("import_allowlist"), std::string::npos) << r.err;
  EXPECT_NE(r.out.find("grounded yes"), std::string::npos);
  EXPECT_NE(r.out.find("repairs 1/1"), std::string::npos) << r.out;

  std::ifstream in(SourceDir() / "data" / "passengers.csv");
  std::string line;
  std::getline(in, line);
  const auto header = SplitCsvLine(line);
  const auto col = [&](const std::string& n) {
    return std::find(header.begin(), header.end(), n) - header.begin();
  };
  std::map<std::string, std::pair<int, int>> by_sex;  // survived, total
  while (std::getline(in, line)) {
    const auto f = SplitCsvLine(line);
    auto& [survived, total] = by_sex[f[col("Sex")]];
    survived += f[col("Survived")] == "1";
    ++total;
  }
  auto percent = [](std::pair<int, int> p) {
    char buf[16];
    std::snprintf(buf, sizeof buf, "%.2f%%", 100.0 * p.first / p.second);
    return std::string(buf);
  };
  EXPECT_NE(r.out.find(percent(by_sex["female"]) + " of women"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find(percent(by_sex["male"]) + " of men"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("(" + std::to_string(by_sex["female"].second) + " passengers)"),
            std::string::npos);
}

TEST_F(CliTest, PythonScriptsRunInTheSandbox) {
  auto script = cwd_.Write("plot.py",
                           "import matplotlib.pyplot as plt\n"
                           "totals = df.groupby('region')['revenue'].sum()\n"
                           "print(round(totals.max(), 2))\n"
                           "totals.plot.bar()\nplt.savefig('regions.png')\n");
  auto r = Quarry({"python", Data("sales.csv"), script.string()});
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_EQ(r.out, "141794.14\n");
  std::smatch m;
  ASSERT_TRUE(std::regex_search(r.err, m, std::regex(R"(figure: (\S+regions\.png))"))) << r.err;
  const fs::path figure = cwd_.path() / m[1].str();
  ASSERT_TRUE(fs::exists(figure));
  EXPECT_EQ(quarry::testing::ReadFile(figure).substr(1, 3), "PNG");

  auto bad = cwd_.Write("bad.py", "import os\nos.system('id')\n");
  auto refused = Quarry({"python", Data("sales.csv"), bad.string()});
  EXPECT_EQ(refused.exit_code, 3);
  EXPECT_NE(refused.err.find("guard_violation (import_allowlist)"), std::string::npos)
      << refused.err;
  EXPECT_EQ(refused.out, "");
}

// Issue 22: names from data or a script reached the terminal raw. A figure saved as
// '\x1b]0;PWNED\x07.png' set the terminal's title; a cached file's name likewise.
TEST_F(CliTest, FigureAndCachedFileNamesReachTheTerminalEscaped) {
  const std::string evil = "\x1b]0;PWNED\x07";
  auto script = cwd_.Write("fig.py",
                           "import matplotlib.pyplot as plt\nplt.plot([1, 2])\n"
                           "plt.savefig('\\x1b]0;PWNED\\x07.png')\nprint('ok')\n");
  auto r = Quarry({"python", Data("sales.csv"), script.string()});
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_EQ(r.out, "ok\n");
  EXPECT_EQ(r.err.find('\x1b'), std::string::npos) << r.err;
  EXPECT_EQ(r.err.find('\x07'), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("\\x1b]0;PWNED\\x07.png"), std::string::npos) << r.err;

  const fs::path data = cwd_.Write(evil + "\xc2\x9b" + ".csv", "a,b\n1,2\n");
  const std::string cache = (cwd_.path() / "cache").string();
  auto built = Quarry({"cache", "build", data.string(), "--cache-dir", cache});
  ASSERT_EQ(built.exit_code, 0) << built.err;
  auto list = Quarry({"cache", "list", "--cache-dir", cache});
  ASSERT_EQ(list.exit_code, 0) << list.err;
  for (const std::string& out : {built.out, list.out}) {
    EXPECT_EQ(out.find('\x1b'), std::string::npos) << out;
    EXPECT_EQ(out.find("\xc2\x9b"), std::string::npos) << out;
    EXPECT_NE(out.find("\\x1b]0;PWNED\\x07\\u009b.csv"), std::string::npos) << out;
  }
  // JSON: the same string back for a reader, escaped for a terminal (C1 as \u009b too).
  auto j = Quarry({"cache", "list", "--cache-dir", cache, "--format", "json"});
  ASSERT_EQ(j.exit_code, 0) << j.err;
  EXPECT_EQ(j.out.find('\x1b'), std::string::npos) << j.out;
  EXPECT_EQ(j.out.find("\xc2\x9b"), std::string::npos) << j.out;
  const json parsed = json::parse(j.out, nullptr, false);
  ASSERT_TRUE(parsed.is_object()) << j.out;
  EXPECT_EQ(parsed["entries"][0]["source"].get<std::string>().find(evil + "\xc2\x9b.csv") !=
                std::string::npos,
            true);
}

// Issue 22: a .env in the working directory (maybe one that came with the data) can name any
// endpoint; where the schema and results would go is said on stderr.
TEST_F(CliTest, AnEndpointFromDotEnvIsNamedOnStderr) {
  cwd_.Write(".env", "QUARRY_BASE_URL=http://127.0.0.1:9/v1\nQUARRY_MODEL=m\n");
  auto r = Quarry({"ask", "--no-python", "--data", Data("sales.csv"), "How many orders?"});
  EXPECT_NE(r.err.find("the model endpoint http://127.0.0.1:9/v1 comes from ./.env "
                       "(QUARRY_BASE_URL in .env)"),
            std::string::npos)
      << r.err;
  // The environment's own setting is the user's: nothing to warn about.
  auto env = Quarry({"ask", "--no-python", "--data", Data("sales.csv"), "How many orders?"},
                    {"QUARRY_BASE_URL=http://127.0.0.1:9/v1", "QUARRY_MODEL=m"});
  EXPECT_EQ(env.err.find("comes from ./.env"), std::string::npos) << env.err;
}

TEST_F(CliTest, OfflineChartIsALineChartOfTheQuery) {
  auto r =
      Quarry({"ask", "--offline", "--data", Data("sales.csv"), "Plot monthly revenue for 2025"});
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  std::smatch m;
  ASSERT_TRUE(std::regex_search(r.out, m, std::regex(R"(figure: (\S+chart-1\.png))"))) << r.out;
  const std::string png = quarry::testing::ReadFile(cwd_.path() / m[1].str());
  ASSERT_GT(png.size(), 24u);
  EXPECT_EQ(png.substr(1, 3), "PNG");
  auto be32 = [&](size_t at) {
    return (static_cast<unsigned char>(png[at]) << 24) |
           (static_cast<unsigned char>(png[at + 1]) << 16) |
           (static_cast<unsigned char>(png[at + 2]) << 8) | static_cast<unsigned char>(png[at + 3]);
  };
  EXPECT_EQ(be32(16), 800u);
  EXPECT_EQ(be32(20), 500u);
  fs::path svg = cwd_.path() / m[1].str();
  svg.replace_extension(".svg");
  const std::string text = quarry::testing::ReadFile(svg);
  EXPECT_NE(text.find("Monthly revenue, 2025"), std::string::npos);
  EXPECT_NE(text.find("Jan 2025"), std::string::npos);
  EXPECT_NE(text.find("35,000"), std::string::npos);

  // The trace keeps the spec, the rows and the files with the step, and the viewer inlines them.
  ASSERT_TRUE(std::regex_search(r.out, m, std::regex(R"(trace: (\S+))")));
  const json t = json::parse(quarry::testing::ReadFile(cwd_.path() / m[1].str()));
  // Step 0 is opening the data; then the model turn and its make_chart call.
  EXPECT_EQ(t["steps"][0]["tool"], "open_data");
  EXPECT_EQ(t["totals"]["load_ms"], t["steps"][0]["duration_ms"]);
  const json& step = t["steps"][2];
  EXPECT_EQ(step["tool"], "make_chart");
  EXPECT_EQ(step["detail"]["spec"]["mark"], "line");
  EXPECT_EQ(step["detail"]["row_count"], 12);
  EXPECT_EQ(step["detail"]["rows"][11][1], 34327.9);
  EXPECT_EQ(t["artifacts"].size(), 2u);
  auto view = Quarry({"view", "latest"});
  ASSERT_EQ(view.exit_code, 0) << view.err;
  const std::string html =
      quarry::testing::ReadFile(cwd_.path() / view.out.substr(0, view.out.size() - 1));
  EXPECT_NE(html.find("data:image/svg+xml;base64,"), std::string::npos);
}

// Issue 8: with several files, the error names the one that failed (and its line), never the
// first one given.
TEST_F(CliTest, SchemaErrorNamesTheFileThatFailed) {
  const auto good = cwd_.Write("good.csv", "a,b\n1,2\n");
  std::string text = "name,v\n";
  for (int i = 0; i < 30000; ++i) text += "n" + std::to_string(i) + "," + std::to_string(i) + "\n";
  text += "Jos\xe9,1\n";  // line 30002: Latin-1, while the file is declared UTF-8
  const auto bad = cwd_.Write("bad.csv", text);
  auto r = Quarry({"schema", good.string(), bad.string() + "?encoding=utf-8"});
  EXPECT_EQ(r.exit_code, 3);
  EXPECT_NE(r.err.find("cannot load " + bad.string()), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("30002"), std::string::npos) << r.err;
  EXPECT_EQ(r.err.find("good.csv"), std::string::npos) << r.err;
  // Without the wrong option the loader retries as Latin-1 and says so.
  auto ok = Quarry({"schema", good.string(), bad.string()});
  EXPECT_EQ(ok.exit_code, 0) << ok.err;
  EXPECT_NE(ok.out.find("read as Latin-1"), std::string::npos) << ok.out;
}

// The cards are the model's: they say what the loader decided. Advice that names an option
// the model cannot pass is the user's, on stderr (issue 23).
TEST_F(CliTest, AdviceOnOptionsGoesToStderrWhileTheCardsSayWhatWasDecided) {
  const auto file = cwd_.Write("umsatz.csv",
                               "Datum,Umsatz\n01.03.2024,10\n15.03.2024,20\n"
                               "28.03.2024,30\n02.04.2024,40\n");
  auto r = Quarry({"schema", "--no-cache", file.string()});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("  note: dates read in the format %d.%m.%Y (as the sniffer found it)\n"),
            std::string::npos)
      << r.out;
  EXPECT_EQ(r.out.find("types="), std::string::npos) << r.out;
  EXPECT_NE(r.err.find("quarry: warning: " + file.string() +
                       ": dates were read in the format %d.%m.%Y; to keep a column as written, "
                       "give FILE?types=COLUMN:VARCHAR\n"),
            std::string::npos)
      << r.err;
}

// Files handed to quarry (a trace to view or summarise, a replay file, a price file) that are
// too deep, of the wrong types or not JSON: each exits 3 with a message naming the file and
// the problem, never an internal error or a crash.
TEST_F(CliTest, HostileFilesExitThreeNamingTheProblem) {
  const std::string deep = "{\"format_version\": 1, \"notes\": " + std::string(100000, '[') +
                           std::string(100000, ']') + "}";
  const auto deep_trace = cwd_.Write("deep.json", deep);
  for (const char* command : {"view", "trace"}) {
    auto r = Quarry({command, deep_trace.string()});
    EXPECT_EQ(r.exit_code, 3) << command << ": " << r.err;
    EXPECT_NE(r.err.find("deep.json: JSON nested more than 256 levels deep"), std::string::npos)
        << r.err;
  }
  const auto typed = cwd_.Write(
      "typed.json", R"({"format_version": 1, "question": "q", "totals": {"cost_usd": "free"}})");
  auto wrong = Quarry({"trace", typed.string()});
  EXPECT_EQ(wrong.exit_code, 3) << wrong.err;
  EXPECT_NE(wrong.err.find("field 'totals.cost_usd' should be a number, found a string"),
            std::string::npos)
      << wrong.err;

  auto replay = Quarry({"ask", "--replay", deep_trace.string(), "--data", Data("sales.csv"), "q"});
  EXPECT_EQ(replay.exit_code, 3) << replay.err;
  EXPECT_NE(replay.err.find("nested more than 256 levels"), std::string::npos) << replay.err;

  const auto prices = cwd_.Write("prices.json", std::string(5000, '[') + std::string(5000, ']'));
  auto priced = Quarry({"ask", "--data", Data("sales.csv"), "q"},
                       {"QUARRY_BASE_URL=http://127.0.0.1:9/v1", "QUARRY_MODEL=m",
                        "QUARRY_PRICES=" + prices.string()});
  EXPECT_EQ(priced.exit_code, 3) << priced.err;
  EXPECT_NE(priced.err.find("prices.json"), std::string::npos) << priced.err;
}

// A fresh-user trial (issue 23): a directory or a missing file where a file belongs gave an
// internal error or "unreadable"; an unknown option was reported as a missing --data; the same
// file given twice became two tables (sales, sales_2).
TEST_F(CliTest, PathsThatAreNoFileAndRepeatedDataAreNamedAsSuch) {
  const std::string dir = cwd_.path().string();
  struct Case {
    std::vector<std::string> args;
    int exit_code;
    std::string fragment;
  };
  const std::vector<Case> cases = {
      {{"ask", "--replay", dir, "--data", Data("sales.csv"), "q"},
       3,
       "--replay " + dir + " is a directory, not a file"},
      {{"ask", "--replay", dir + "/nope.json", "--data", Data("sales.csv"), "q"},
       3,
       "--replay " + dir + "/nope.json not found"},
      {{"trace", dir}, 3, "has neither trace.json nor events.jsonl"},  // a run's folder
      {{"view", dir + "/nope.json"}, 2, "no run " + dir + "/nope.json"},
      {{"python", Data("sales.csv"), dir}, 2, "the script " + dir + " is a directory, not a file"},
      {{"ask", "--bogus"}, 2, "not expected: --bogus"},
      {{"ask", "q"}, 2, "--data is required"},
      {{"schema", Data("sales.csv"), Data("../data/sales.csv")},
       2,
       "is given twice (also as " + Data("sales.csv") + "): pass it once"},
      {{"frobnicate"}, 2, "unknown command 'frobnicate'; the commands are ask, chat"},
      {{"ask", "--offline", "--runs-dir", Data("sales.csv"), "--data", Data("sales.csv"),
        "Which region has the highest total revenue, and by how much does it beat the "
        "runner-up?"},
       2,
       "pass --runs-dir with a directory"},
  };
  for (const Case& c : cases) {
    auto r = Quarry(c.args);
    EXPECT_EQ(r.exit_code, c.exit_code) << c.args[0] << " " << c.args[1] << ": " << r.err;
    EXPECT_NE(r.err.find(c.fragment), std::string::npos) << r.err;
    EXPECT_EQ(r.err.find("internal error"), std::string::npos) << r.err;
  }
  // A directory where `view --out` writes its page is refused, and leaves no NAME.tmp beside it.
  auto asked = Quarry({"ask", "--offline", "--data", Data("sales.csv"),
                       "Which region has the highest total revenue, and by how much does it beat "
                       "the runner-up?"});
  ASSERT_EQ(asked.exit_code, 0) << asked.err;
  fs::create_directory(cwd_.path() / "page");
  auto view = Quarry({"view", "latest", "--out", (cwd_.path() / "page").string()});
  EXPECT_NE(view.exit_code, 0);
  EXPECT_LT(view.exit_code, 128);
  EXPECT_FALSE(fs::exists(cwd_.path() / "page.tmp"));
  // A named pipe as data is refused at once: reading it would block the loader (a trial's
  // `mkfifo fifo.csv` hung and Ctrl-C did not stop it).
  const std::string fifo = dir + "/fifo.csv";
  ASSERT_EQ(mkfifo(fifo.c_str(), 0600), 0);
  auto piped = Quarry({"schema", fifo});
  EXPECT_EQ(piped.exit_code, 3) << piped.err;
  EXPECT_NE(piped.err.find(fifo + " is a named pipe (FIFO), not a file"), std::string::npos)
      << piped.err;
  // The same file with other reading options is another reading of it, and both load.
  auto two = Quarry({"schema", Data("sales.csv"), Data("sales.csv") + "?delim=,"});
  EXPECT_EQ(two.exit_code, 0) << two.err;
  EXPECT_NE(two.out.find("table sales_2"), std::string::npos) << two.out;
}

}  // namespace
}  // namespace quarry
