// `quarry mcp` as a client meets it, line by line: the real binary reads a file of JSON-RPC
// messages on stdin and every line it writes to stdout is checked. Covers what an SDK client
// never sends (malformed JSON, batches, requests before initialize, unknown methods, a request
// cut off by EOF) and the tools' results; sdk_client_test.mjs drives it with the official SDK.
#include <algorithm>

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "support/provider_server.h"
#include "support/test_support.h"

namespace quarry {
namespace {

namespace fs = std::filesystem;
using json = nlohmann::ordered_json;
using quarry::testing::ProviderServer;
using quarry::testing::RunProcess;
using quarry::testing::ScriptedToolCall;
using quarry::testing::SourceDir;
using quarry::testing::TempDir;
using quarry::testing::ToolCallReply;

// No model settings leak in from the machine running the tests.
const std::vector<std::string> kModelEnv = {
    "QUARRY_BASE_URL", "QUARRY_MODEL",  "QUARRY_API_KEY",    "OPENROUTER_API_KEY",
    "QUARRY_FIXTURES", "QUARRY_PRICES", "ANTHROPIC_API_KEY", "QUARRY_PROVIDER"};

const char* kInitialize =
    R"({"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25",)"
    R"("capabilities":{},"clientInfo":{"name":"mcp_test","version":"1"}}})";
const char* kInitialized = R"({"jsonrpc":"2.0","method":"notifications/initialized"})";

struct Session {
  int exit_code = -1;
  std::vector<json> responses;  // stdout, one parsed message per line
  std::string out;
  std::string err;
};

class McpServerTest : public ::testing::Test {
 protected:
  // Runs `quarry mcp [flags] chinook.sqlite` with `input` as its whole stdin.
  Session Serve(const std::string& input, std::vector<std::string> flags = {},
                std::vector<std::string> env = {}) {
    const fs::path in = cwd_.Write("input-" + std::to_string(++sessions_) + ".jsonl", input);
    std::vector<std::string> argv = {
        "/bin/sh", "-c", "exec \"$@\" < \"$0\"", in.string(), testing::QuarryBinary().string(),
        "mcp"};
    argv.insert(argv.end(), flags.begin(), flags.end());
    argv.push_back("--runs-dir");
    argv.push_back(runs_dir().string());
    argv.push_back(data_.empty() ? (SourceDir() / "data" / "chinook.sqlite").string() : data_);
    const testing::ProcessResult r = RunProcess(argv, cwd_.path(), env, kModelEnv);
    Session s{r.exit_code, {}, r.out, r.err};
    // stdout holds protocol lines only: each one a compact JSON-RPC 2.0 message.
    EXPECT_TRUE(r.out.empty() || r.out.back() == '\n') << "stdout does not end a line: " << r.out;
    size_t start = 0;
    while (start < r.out.size()) {
      size_t end = r.out.find('\n', start);
      if (end == std::string::npos) end = r.out.size();
      const std::string line = r.out.substr(start, end - start);
      start = end + 1;
      const json message = json::parse(line, nullptr, false);
      EXPECT_FALSE(message.is_discarded()) << "not JSON on stdout: " << line;
      if (message.is_discarded()) continue;
      EXPECT_EQ(message.value("jsonrpc", ""), "2.0") << line;
      EXPECT_TRUE(message.contains("id")) << "a response needs an id: " << line;
      EXPECT_NE(message.contains("result"), message.contains("error")) << line;
      s.responses.push_back(message);
    }
    InRequestOrder(input, s.responses);
    return s;
  }
  // Tool calls run concurrently and are answered as they finish; the cases below read the
  // responses in the order of the requests. A response whose id no request line had (a parse
  // error's null) keeps its place after the one before it.
  static void InRequestOrder(const std::string& input, std::vector<json>& responses) {
    std::vector<std::pair<json, size_t>> order;
    size_t start = 0, index = 0;
    while (start < input.size()) {
      size_t end = input.find('\n', start);
      if (end == std::string::npos) end = input.size();
      const json m = json::parse(input.substr(start, end - start), nullptr, false);
      if (m.is_object() && m.contains("id") && m.contains("method"))
        order.emplace_back(m["id"], index);
      start = end + 1;
      ++index;
    }
    // Each response takes the first request of its id not yet taken (ids may repeat).
    std::vector<bool> taken(order.size(), false);
    std::vector<std::pair<size_t, json>> keyed;
    size_t key = 0;
    for (json& r : responses) {
      for (size_t i = 0; i < order.size(); ++i) {
        if (!taken[i] && r.contains("id") && r["id"] == order[i].first) {
          taken[i] = true;
          key = order[i].second;
          break;
        }
      }
      keyed.emplace_back(key, std::move(r));
    }
    std::stable_sort(keyed.begin(), keyed.end(),
                     [](const auto& a, const auto& b) { return a.first < b.first; });
    for (size_t i = 0; i < keyed.size(); ++i) responses[i] = std::move(keyed[i].second);
  }
  // initialize and its notification, then `lines`.
  Session Initialized(const std::vector<std::string>& lines, std::vector<std::string> flags = {},
                      std::vector<std::string> env = {}) {
    std::string input = std::string(kInitialize) + "\n" + kInitialized + "\n";
    for (const auto& l : lines) input += l + "\n";
    return Serve(input, std::move(flags), std::move(env));
  }
  static std::string Call(int id, const std::string& tool, const json& arguments) {
    return json{{"jsonrpc", "2.0"},
                {"id", id},
                {"method", "tools/call"},
                {"params", {{"name", tool}, {"arguments", arguments}}}}
        .dump();
  }
  static std::string Text(const json& result) {
    std::string text;
    for (const auto& block : result["content"]) {
      if (block["type"] == "text") text += block["text"].get<std::string>();
    }
    return text;
  }
  fs::path runs_dir() const { return cwd_.path() / "runs"; }

  TempDir cwd_;
  std::string data_;
  int sessions_ = 0;
};

TEST_F(McpServerTest, MalformedJsonIsAParseErrorWithNullIdAndServingGoesOn) {
  const Session s = Serve("{\"jsonrpc\": \"2.0\", \"id\": 1, \"method\": \n" +
                          std::string(R"({"jsonrpc":"2.0","id":2,"method":"ping"})") + "\n");
  EXPECT_EQ(s.exit_code, 0) << s.err;
  ASSERT_EQ(s.responses.size(), 2u) << s.out;
  EXPECT_TRUE(s.responses[0]["id"].is_null());
  EXPECT_EQ(s.responses[0]["error"]["code"], -32700);
  EXPECT_EQ(s.responses[1]["id"], 2);
  EXPECT_EQ(s.responses[1]["result"], json::object());
}

TEST_F(McpServerTest, DeeplyNestedJsonIsRefusedAndServingGoesOn) {
  // 60,000 nested arrays used to overflow the stack (SIGSEGV) when the value was copied.
  const std::string deep = R"({"jsonrpc":"2.0","id":2,"method":"ping","params":{"x":)" +
                           std::string(60000, '[') + std::string(60000, ']') + "}}";
  const Session s = Serve(deep + "\n" + R"({"jsonrpc":"2.0","id":3,"method":"ping"})" + "\n");
  EXPECT_EQ(s.exit_code, 0) << s.err;
  ASSERT_EQ(s.responses.size(), 2u) << s.out.substr(0, 500);
  EXPECT_EQ(s.responses[0]["error"]["code"], -32700);
  EXPECT_NE(s.responses[0]["error"]["message"].get<std::string>().find("nested"),
            std::string::npos);
  EXPECT_EQ(s.responses[1]["id"], 3);
  EXPECT_EQ(s.responses[1]["result"], json::object());
}

TEST_F(McpServerTest, AnOversizedLineIsAnInvalidRequestAndServingGoesOn) {
  // Issue 22: a line of any length was read whole (800 MB took the server to 3.2 GB). A valid
  // ping padded past the 4 MiB limit is refused unread; the lines before and after are served.
  const std::string big = R"({"jsonrpc":"2.0","id":2,"method":"ping","params":{"pad":")" +
                          std::string(5 * 1024 * 1024, 'x') + "\"}}";
  const Session s =
      Serve(std::string(R"({"jsonrpc":"2.0","id":1,"method":"ping"})") + "\n" + big + "\r\n" +
            R"({"jsonrpc":"2.0","id":3,"method":"ping"})" + "\n" + big);  // and one cut off by EOF
  EXPECT_EQ(s.exit_code, 0) << s.err;
  ASSERT_EQ(s.responses.size(), 4u) << s.out.substr(0, 500);
  EXPECT_EQ(s.responses[0]["id"], 1);
  EXPECT_EQ(s.responses[0]["result"], json::object());
  for (size_t i : {1u, 3u}) {
    EXPECT_TRUE(s.responses[i]["id"].is_null()) << s.responses[i];
    EXPECT_EQ(s.responses[i]["error"]["code"], -32600);
    EXPECT_NE(s.responses[i]["error"]["message"].get<std::string>().find("4 MiB"),
              std::string::npos);
  }
  EXPECT_EQ(s.responses[2]["id"], 3);
  EXPECT_EQ(s.responses[2]["result"], json::object());
  EXPECT_NE(s.err.find("skipped unread"), std::string::npos) << s.err;
}

TEST_F(McpServerTest, TheClientsTextIsLoggedEscaped) {
  // A notification's method and a client's name are logged on stderr, which may be a terminal.
  const json hello = {{"jsonrpc", "2.0"},
                      {"id", 0},
                      {"method", "initialize"},
                      {"params",
                       {{"protocolVersion", "2025-11-25"},
                        {"capabilities", json::object()},
                        {"clientInfo", {{"name", "\x1b]0;PWNED\x07"}, {"version", "1"}}}}}};
  const Session s = Initialized({R"({"jsonrpc":"2.0","method":"\u001b[2J\u009b31m"})"});
  const Session named = Serve(hello.dump() + "\n");
  for (const std::string& err : {s.err, named.err}) {
    EXPECT_EQ(err.find('\x1b'), std::string::npos) << err;
    EXPECT_EQ(err.find('\x07'), std::string::npos) << err;
    EXPECT_EQ(err.find("\xc2\x9b"), std::string::npos) << err;
  }
  EXPECT_NE(s.err.find("ignoring notification \\x1b[2J\\u009b31m"), std::string::npos) << s.err;
}

TEST_F(McpServerTest, RequestsBeforeInitializeAreRefusedButPingIsAnswered) {
  const Session s = Serve(R"({"jsonrpc":"2.0","id":"a","method":"tools/list"})"
                          "\n"
                          R"({"jsonrpc":"2.0","id":"b","method":"ping"})"
                          "\n" +
                          std::string(kInitialize) + "\n" +
                          R"({"jsonrpc":"2.0","id":"c","method":"tools/list"})"
                          "\n");
  ASSERT_EQ(s.responses.size(), 4u) << s.out;
  EXPECT_EQ(s.responses[0]["id"], "a");
  EXPECT_EQ(s.responses[0]["error"]["code"], -32600);
  EXPECT_NE(s.responses[0]["error"]["message"].get<std::string>().find("not initialized"),
            std::string::npos);
  EXPECT_EQ(s.responses[1]["id"], "b");
  EXPECT_EQ(s.responses[1]["result"], json::object());
  EXPECT_EQ(s.responses[3]["id"], "c");
  EXPECT_TRUE(s.responses[3]["result"]["tools"].is_array());
}

TEST_F(McpServerTest, ABatchIsAnInvalidRequest) {
  const Session s = Initialized({R"([{"jsonrpc":"2.0","id":1,"method":"ping"},)"
                                 R"({"jsonrpc":"2.0","id":2,"method":"ping"}])"});
  ASSERT_EQ(s.responses.size(), 2u) << s.out;  // initialize, then one error for the batch
  EXPECT_TRUE(s.responses[1]["id"].is_null());
  EXPECT_EQ(s.responses[1]["error"]["code"], -32600);
}

TEST_F(McpServerTest, UnknownMethodIsMethodNotFound) {
  const Session s = Initialized({R"({"jsonrpc":"2.0","id":7,"method":"resources/list"})"});
  ASSERT_EQ(s.responses.size(), 2u) << s.out;
  EXPECT_EQ(s.responses[1]["id"], 7);
  EXPECT_EQ(s.responses[1]["error"]["code"], -32601);
}

TEST_F(McpServerTest, NotificationsAreNeverAnswered) {
  const Session s = Initialized({R"({"jsonrpc":"2.0","method":"notifications/cancelled",)"
                                 R"("params":{"requestId":3}})",
                                 R"({"jsonrpc":"2.0","method":"no/such/notification"})",
                                 R"({"jsonrpc":"2.0","method":"tools/list"})",
                                 R"({"jsonrpc":"2.0","id":8,"method":"ping"})"});
  ASSERT_EQ(s.responses.size(), 2u) << s.out;
  EXPECT_EQ(s.responses[0]["id"], 0);
  EXPECT_EQ(s.responses[1]["id"], 8);
}

TEST_F(McpServerTest, MessagesThatAreNotJsonRpcRequestsAreInvalid) {
  const Session s = Initialized(
      {R"({"id":1,"method":"ping"})", R"({"jsonrpc":"1.0","id":2,"method":"ping"})",
       R"({"jsonrpc":"2.0","id":3,"method":42})",
       R"({"jsonrpc":"2.0","id":{"x":1},"method":"ping"})", R"("just a string")",
       R"({"jsonrpc":"2.0","id":4,"method":"ping","params":"x"})",
       R"({"jsonrpc":"2.0","id":5,"result":{}})", R"({"jsonrpc":"2.0","id":6,"method":"ping"})"});
  ASSERT_EQ(s.responses.size(), 8u) << s.out;  // the client's response (id 5) is not answered
  const std::vector<json> ids = {1, 2, 3, nullptr, nullptr, 4};
  for (size_t i = 0; i < ids.size(); ++i) {
    EXPECT_EQ(s.responses[i + 1]["id"], ids[i]) << s.responses[i + 1].dump();
    EXPECT_EQ(s.responses[i + 1]["error"]["code"], -32600) << s.responses[i + 1].dump();
  }
  EXPECT_EQ(s.responses[7]["id"], 6);
  EXPECT_EQ(s.responses[7]["result"], json::object());
}

TEST_F(McpServerTest, ARequestCompletedByEofIsAnsweredAndACutOneIsDropped) {
  Session s =
      Serve(std::string(kInitialize) + "\n" + R"({"jsonrpc":"2.0","id":5,"method":"ping"})");
  EXPECT_EQ(s.exit_code, 0) << s.err;
  ASSERT_EQ(s.responses.size(), 2u) << s.out;
  EXPECT_EQ(s.responses[1]["id"], 5);

  s = Serve(std::string(kInitialize) + "\n" + R"({"jsonrpc":"2.0","id":6,"method":"pi)");
  EXPECT_EQ(s.exit_code, 0) << s.err;
  ASSERT_EQ(s.responses.size(), 1u) << s.out;
  EXPECT_EQ(s.responses[0]["id"], 0);

  s = Serve("");
  EXPECT_EQ(s.exit_code, 0) << s.err;
  EXPECT_TRUE(s.out.empty());
}

TEST_F(McpServerTest, InitializeNegotiatesTheProtocolVersion) {
  const auto init = [](const std::string& version) {
    return R"({"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":")" +
           version +
           R"(","capabilities":{},"clientInfo":{"name":"t","version":"1"}}})"
           "\n" +
           R"({"jsonrpc":"2.0","id":2,"method":"tools/list"})"
           "\n";
  };
  for (const std::string v : {"2025-11-25", "2025-06-18", "2025-03-26"}) {
    const Session s = Serve(init(v));
    ASSERT_EQ(s.responses.size(), 2u) << s.out;
    EXPECT_EQ(s.responses[0]["result"]["protocolVersion"], v);
  }
  Session s = Serve(init("2024-11-05"));
  ASSERT_EQ(s.responses.size(), 2u) << s.out;
  const json& result = s.responses[0]["result"];
  EXPECT_EQ(result["protocolVersion"], "2025-11-25");
  EXPECT_EQ(result["serverInfo"]["name"], "quarry");
  EXPECT_EQ(result["serverInfo"]["version"], "0.1.0");
  EXPECT_EQ(result["capabilities"]["tools"]["listChanged"], false);
  EXPECT_NE(result["instructions"].get<std::string>().find("Genre"), std::string::npos);

  // 2025-03-26 knows neither tool titles nor outputSchema; its annotations carry the title.
  s = Serve(init("2025-03-26"));
  for (const auto& tool : s.responses[1]["result"]["tools"]) {
    EXPECT_FALSE(tool.contains("outputSchema")) << tool["name"];
    EXPECT_FALSE(tool.contains("title")) << tool["name"];
    EXPECT_TRUE(tool["annotations"]["title"].is_string()) << tool["name"];
  }

  // A second initialize in the same session is refused; the first negotiation stands.
  s = Serve(init("2025-06-18") + init("2025-11-25"));
  ASSERT_EQ(s.responses.size(), 4u) << s.out;
  EXPECT_EQ(s.responses[0]["result"]["protocolVersion"], "2025-06-18");
  EXPECT_EQ(s.responses[2]["error"]["code"], -32600);
  EXPECT_TRUE(s.responses[3]["result"]["tools"][0].contains("title"));
}

TEST_F(McpServerTest, ToolsAreReadOnlyButTheGlossaryOneAndRunPythonIsOptIn) {
  const auto names = [](const Session& s) {
    std::vector<std::string> out;
    for (const auto& tool : s.responses.at(1)["result"]["tools"]) {
      out.push_back(tool["name"]);
      // Only remember_clarification writes: the glossary, on the user's word, never the data.
      EXPECT_EQ(tool["annotations"]["readOnlyHint"], tool["name"] != "remember_clarification")
          << tool["name"];
      EXPECT_TRUE(tool["title"].is_string()) << tool["name"];
      EXPECT_EQ(tool["inputSchema"]["type"], "object") << tool["name"];
    }
    return out;
  };
  const std::string list = R"({"jsonrpc":"2.0","id":1,"method":"tools/list"})";
  EXPECT_EQ(names(Initialized({list})),
            (std::vector<std::string>{"describe_schema", "run_sql", "ask_database",
                                      "remember_clarification", "make_chart"}));
  EXPECT_EQ(names(Initialized({list}, {"--allow-python"})),
            (std::vector<std::string>{"describe_schema", "run_sql", "ask_database",
                                      "remember_clarification", "make_chart", "run_python"}));
  // With knowledge files off, nothing can be kept, and nothing is offered.
  EXPECT_EQ(names(Initialized({list}, {"--no-knowledge"})),
            (std::vector<std::string>{"describe_schema", "run_sql", "ask_database", "make_chart"}));
  // Without the opt-in, run_python is not a tool at all.
  const Session s = Initialized({Call(2, "run_python", {{"code", "print(1)"}})});
  EXPECT_EQ(s.responses.at(1)["error"]["code"], -32602);
}

TEST_F(McpServerTest, RunSqlReturnsUpToTheRowCapWithTheTrueCountAndNulls) {
  const Session s = Initialized({
      Call(1, "run_sql", {{"sql", "SELECT count(*) AS n FROM Genre"}}),
      Call(2, "run_sql", {{"sql", "SELECT TrackId, Composer FROM Track ORDER BY TrackId"}}),
      Call(3, "run_sql", {{"sql", "SELECT Name FROM Genre WHERE Name = 'Polka'"}}),
  });
  ASSERT_EQ(s.responses.size(), 4u) << s.out;
  const json& count = s.responses[1]["result"];
  EXPECT_EQ(count["isError"], false);
  EXPECT_EQ(count["structuredContent"]["columns"], json::array({"n"}));
  EXPECT_EQ(count["structuredContent"]["rows"], json::parse(R"([[25]])"));
  EXPECT_EQ(count["structuredContent"]["types"], json::array({"INTEGER"}));
  EXPECT_EQ(count["structuredContent"]["row_count"], 1);
  EXPECT_EQ(count["structuredContent"]["truncated"], false);
  EXPECT_NE(Text(count).find("25"), std::string::npos);

  const json& tracks = s.responses[2]["result"]["structuredContent"];
  EXPECT_EQ(tracks["row_count"], 3503);
  EXPECT_EQ(tracks["rows"].size(), 200u);  // engine::Limits::max_rows, not the model's 30
  EXPECT_EQ(tracks["truncated"], true);
  EXPECT_EQ(tracks["rows"][0], json::parse(R"([1, "Angus Young, Malcolm Young, Brian Johnson"])"));
  EXPECT_TRUE(tracks["rows"][62][1].is_null()) << tracks["rows"][62];  // track 63: no composer

  // No rows is an answer, not an error.
  const json& none = s.responses[3]["result"];
  EXPECT_EQ(none["isError"], false);
  EXPECT_EQ(none["structuredContent"]["row_count"], 0);
  EXPECT_EQ(none["structuredContent"]["rows"], json::array());
}

TEST_F(McpServerTest, BadArgumentsGuardRejectionsAndErrorsAreToolResults) {
  const fs::path db = SourceDir() / "data" / "chinook.sqlite";
  const std::string before = testing::Sha256File(db);
  const Session s = Initialized({
      Call(1, "run_sql", {{"sql", "DROP TABLE Genre"}}),
      Call(2, "run_sql", json::object()),
      Call(3, "run_sql", {{"sql", 5}}),
      Call(4, "run_sql", {{"sql", "SELECT 1"}, {"limit", 3}}),
      Call(5, "run_sql", {{"sql", "SELECT nope FROM Genre"}}),
      Call(6, "describe_schema", {{"table", "Nope"}}),
      R"({"jsonrpc":"2.0","id":7,"method":"tools/call",)"
      R"("params":{"name":"run_sql","arguments":"x"}})",
      Call(8, "no_such_tool", json::object()),
  });
  ASSERT_EQ(s.responses.size(), 9u) << s.out;
  const auto result = [&](int id) { return s.responses.at(static_cast<size_t>(id))["result"]; };
  for (int id = 1; id <= 7; ++id) {
    EXPECT_EQ(result(id)["isError"], true) << result(id).dump();
    EXPECT_FALSE(result(id).contains("structuredContent")) << id;
  }
  EXPECT_NE(Text(result(1)).find("guard"), std::string::npos) << Text(result(1));
  EXPECT_NE(Text(result(2)).find("missing required argument 'sql'"), std::string::npos);
  EXPECT_NE(Text(result(3)).find("'sql' must be"), std::string::npos) << Text(result(3));
  EXPECT_NE(Text(result(4)).find("unknown argument 'limit'"), std::string::npos);
  EXPECT_NE(Text(result(5)).find("nope"), std::string::npos) << Text(result(5));
  EXPECT_NE(Text(result(6)).find("Genre"), std::string::npos) << Text(result(6));
  EXPECT_NE(Text(result(7)).find("object"), std::string::npos) << Text(result(7));
  EXPECT_EQ(s.responses[8]["error"]["code"], -32602);
  EXPECT_NE(s.responses[8]["error"]["message"].get<std::string>().find("run_sql"),
            std::string::npos);
  EXPECT_EQ(testing::Sha256File(db), before);
}

TEST_F(McpServerTest, DescribeSchemaGivesTheCards) {
  const Session s = Initialized({Call(1, "describe_schema", json::object()),
                                 Call(2, "describe_schema", {{"table", "Genre"}})});
  ASSERT_EQ(s.responses.size(), 3u) << s.out;
  const std::string all = Text(s.responses[1]["result"]);
  for (const char* table : {"Album", "Artist", "Genre", "InvoiceLine", "Track"}) {
    EXPECT_NE(all.find(table), std::string::npos) << table;
  }
  const std::string one = Text(s.responses[2]["result"]);
  EXPECT_NE(one.find("Genre"), std::string::npos);
  EXPECT_EQ(one.find("InvoiceLine"), std::string::npos);
}

TEST_F(McpServerTest, NoSamplesAndTheSchemaBudgetReachDescribeSchema) {
  const Session s = Initialized({Call(1, "describe_schema", {{"table", "Customer"}}),
                                 Call(2, "describe_schema", json::object())},
                                {"--no-samples", "--schema-budget", "500"});
  ASSERT_EQ(s.responses.size(), 3u) << s.out << s.err;
  const std::string customer = Text(s.responses[1]["result"]);
  EXPECT_NE(customer.find("  Email NVARCHAR, unique\n"), std::string::npos) << customer;
  EXPECT_EQ(customer.find("@"), std::string::npos) << customer;
  // Over the 500-token budget, describe_schema without a table lists the tables.
  const std::string all = Text(s.responses[2]["result"]);
  EXPECT_TRUE(all.starts_with("11 tables")) << all;
  EXPECT_NE(all.find("  Track (3503 rows, 9 columns)\n"), std::string::npos) << all;
  const Session bad = Serve("", {"--schema-budget", "5"});
  EXPECT_EQ(bad.exit_code, 2);
}

// Tracks per genre, top five: a bar chart that passes the chart module's lint.
json GenreChart() {
  json spec = json::parse(R"({"mark": "bar",
      "encoding": {"x": {"field": "genre", "type": "nominal"},
                   "y": {"field": "tracks", "type": "quantitative"}}})");
  spec["data"]["sql"] =
      "SELECT g.Name AS genre, count(*) AS tracks FROM Track t JOIN Genre g USING (GenreId) "
      "GROUP BY 1 ORDER BY 2 DESC LIMIT 5";
  return spec;
}

int PngImages(const json& result) {
  int n = 0;
  for (const auto& block : result["content"]) {
    if (block["type"] != "image") continue;
    EXPECT_EQ(block["mimeType"], "image/png");
    // base64 of the PNG signature "\x89PNG\r\n\x1a\n"
    if (block["data"].get<std::string>().starts_with("iVBORw0KGgo")) ++n;
  }
  return n;
}

TEST_F(McpServerTest, MakeChartReturnsAPngAndRefusesABadSpec) {
  const Session s = Initialized({Call(1, "make_chart", {{"spec", GenreChart()}}),
                                 Call(2, "make_chart", {{"spec", {{"mark", "bar"}}}}),
                                 Call(3, "make_chart", {{"mark", "bar"}})});
  ASSERT_EQ(s.responses.size(), 4u) << s.out;
  const json& chart = s.responses[1]["result"];
  EXPECT_EQ(chart["isError"], false) << Text(chart);
  EXPECT_EQ(PngImages(chart), 1) << Text(chart);
  EXPECT_NE(Text(chart).find(runs_dir().string()), std::string::npos) << Text(chart);
  EXPECT_EQ(s.responses[2]["result"]["isError"], true);
  EXPECT_EQ(s.responses[3]["result"]["isError"], true);
  EXPECT_NE(Text(s.responses[3]["result"]).find("spec"), std::string::npos);
}

TEST_F(McpServerTest, RunPythonSeesTheLastSqlResultAndReturnsItsFigures) {
  const Session s =
      Initialized({Call(1, "run_sql", {{"sql", "SELECT Name FROM Genre ORDER BY GenreId LIMIT 3"}}),
                   Call(2, "run_python",
                        {{"code",
                          "print(len(last), last['Name'][0])\n"
                          "plt.bar(['a', 'b'], [1, 2])\nplt.savefig('bars.png')"}})},
                  {"--allow-python"});
  ASSERT_EQ(s.responses.size(), 3u) << s.out;
  const json& result = s.responses[2]["result"];
  if (result["isError"] == true && Text(result).find("isolation") != std::string::npos) {
    QUARRY_SKIP_WITHOUT_SANDBOX(std::optional<std::string>(Text(result)));
  }
  EXPECT_EQ(result["isError"], false) << Text(result);
  EXPECT_NE(Text(result).find("3 Rock"), std::string::npos) << Text(result);
  int images = 0;
  for (const auto& block : result["content"]) {
    if (block["type"] != "image") continue;
    ++images;
    EXPECT_TRUE(block["data"].get<std::string>().starts_with("iVBORw0KGgo"));
  }
  EXPECT_EQ(images, 1);
  // The sandbox worked inside runs/<id>/workdir.
  bool saved = false;
  for (const auto& e : fs::recursive_directory_iterator(runs_dir())) {
    saved = saved || e.path().filename() == "bars.png";
  }
  EXPECT_TRUE(saved);
}

TEST_F(McpServerTest, AskDatabaseWithoutAModelIsAToolError) {
  const Session s = Initialized({Call(1, "ask_database", {{"question", "How many genres?"}})});
  ASSERT_EQ(s.responses.size(), 2u) << s.out;
  EXPECT_EQ(s.responses[1]["result"]["isError"], true);
  EXPECT_NE(Text(s.responses[1]["result"]).find("QUARRY_MODEL"), std::string::npos);
}

TEST_F(McpServerTest, AskDatabaseFollowUpsInAThreadSeeTheEarlierAnswer) {
  ProviderServer provider;
  const auto sql = [](const std::string& id, const std::string& query) {
    return ToolCallReply({{id, "run_sql", json{{"sql", query}}.dump()}});
  };
  const auto answer = [](const std::string& id, const std::string& text, const std::string& value) {
    return ToolCallReply(
        {{id, "final_answer",
          json{{"answer", text}, {"supporting_values", json::array({value})}}.dump()}});
  };
  provider.Enqueue({200, {}, sql("c1", "SELECT count(*) AS n FROM Genre")});
  provider.Enqueue({200, {}, answer("c2", "There are 25 genres.", "25")});
  provider.Enqueue({200, {}, sql("c3", "SELECT count(*) AS n FROM MediaType")});
  provider.Enqueue({200, {}, answer("c4", "There are 5 media types.", "5")});
  const Session s = Initialized(
      {Call(1, "ask_database", {{"question", "How many genres are there?"}, {"thread", "t1"}}),
       Call(2, "ask_database", {{"question", "And media types?"}, {"thread", "t1"}})},
      {},
      {"QUARRY_BASE_URL=" + provider.base_url(), "QUARRY_MODEL=stand-in",
       "QUARRY_API_KEY=sk-test"});
  ASSERT_EQ(s.responses.size(), 3u) << s.out << s.err;
  EXPECT_EQ(s.responses[1]["result"]["isError"], false) << s.responses[1].dump();
  EXPECT_TRUE(Text(s.responses[1]["result"]).starts_with("There are 25 genres."));
  EXPECT_TRUE(Text(s.responses[2]["result"]).starts_with("There are 5 media types."));

  // The follow-up's first model request carries the thread's earlier question and answer as
  // prior turns, before the new question.
  const auto requests = provider.requests();
  ASSERT_EQ(requests.size(), 4u);
  const json follow_up = requests[2].Json();
  const json& messages = follow_up["messages"];
  ASSERT_GE(messages.size(), 4u);
  EXPECT_EQ(messages[1]["role"], "user");
  EXPECT_NE(messages[1]["content"].get<std::string>().find(
                "Earlier question: How many genres are there?"),
            std::string::npos)
      << messages[1];
  EXPECT_NE(messages[1]["content"].get<std::string>().find("answers are context, not evidence"),
            std::string::npos);
  EXPECT_EQ(messages[2]["role"], "assistant");
  EXPECT_NE(messages[2]["content"].get<std::string>().find("There are 25 genres."),
            std::string::npos);
  EXPECT_EQ(messages[3]["content"], "And media types?");

  // Each ask wrote its run, with the trace path in the result.
  const std::string text = Text(s.responses[2]["result"]);
  const size_t at = text.rfind("trace: ");
  ASSERT_NE(at, std::string::npos) << text;
  const fs::path trace_path = text.substr(at + 7);
  ASSERT_TRUE(fs::exists(trace_path)) << trace_path;
  EXPECT_EQ(trace_path.parent_path().parent_path(), runs_dir());
  const json trace = json::parse(testing::ReadFile(trace_path));
  EXPECT_EQ(trace["stop_reason"], "answered");
  EXPECT_EQ(trace["question"], "And media types?");  // the gate sees only this run's question
  EXPECT_NE(trace["notes"].dump().find("the model saw 1 earlier turn"), std::string::npos)
      << trace["notes"];
  EXPECT_EQ(trace["thread"], json::parse(R"({"name": "t1", "turn": 2})"));
}

TEST_F(McpServerTest, AskDatabaseReturnsTheChartItDrew) {
  ProviderServer provider;
  provider.Enqueue(
      {200, {}, ToolCallReply({{"c1", "make_chart", json{{"spec", GenreChart()}}.dump()}})});
  provider.Enqueue({200,
                    {},
                    ToolCallReply({{"c2", "final_answer",
                                    json{{"answer", "Rock has the most tracks: 1297."},
                                         {"supporting_values", json::array({"1297"})}}
                                        .dump()}})});
  const Session s = Initialized(
      {Call(1, "ask_database", {{"question", "Which genres have the most tracks? Chart it."}})}, {},
      {"QUARRY_BASE_URL=" + provider.base_url(), "QUARRY_MODEL=stand-in",
       "QUARRY_API_KEY=sk-test"});
  ASSERT_EQ(s.responses.size(), 2u) << s.out << s.err;
  const json& result = s.responses[1]["result"];
  EXPECT_EQ(result["isError"], false) << Text(result) << s.err;
  EXPECT_TRUE(Text(result).starts_with("Rock has the most tracks: 1297.")) << Text(result);
  EXPECT_EQ(PngImages(result), 1);
}

TEST_F(McpServerTest, DataErrorsEndBeforeServingWithNothingOnStdout) {
  data_ = (cwd_.path() / "missing.csv").string();
  const Session s = Serve(std::string(kInitialize) + "\n");
  EXPECT_EQ(s.exit_code, 3);
  EXPECT_TRUE(s.out.empty()) << s.out;
  EXPECT_NE(s.err.find("missing.csv"), std::string::npos) << s.err;
}

}  // namespace
}  // namespace quarry
