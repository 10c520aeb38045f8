// `quarry serve` through the real binary and a real HTTP client on 127.0.0.1: who may talk to it
// (token, Host, origin), the headers on every answer, what can be reached (only the sources, by
// id), the live events against the run's events.jsonl, stopping a run, threads, and load (slow
// clients, fifty questions at once) with a stand-in model provider.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <httplib.h>

#include <atomic>
#include <regex>
#include <thread>

#include <gtest/gtest.h>

#include "serve/served.h"
#include "support/clickhouse_server.h"
#include "support/mariadb_server.h"
#include "quarry/common/text.h"

namespace quarry::testing {
namespace {

using json = nlohmann::ordered_json;
using mcp_live::LiveServer;
using std::chrono::milliseconds;
namespace fs = std::filesystem;

TEST(ServeTest, PrintsOneUrlWithATokenThatIsSwappedForAStrictCookie) {
  ProviderServer provider;
  Served s(provider);
  ASSERT_GT(s.port(), 0);
  auto r = s.Client().Get("/?token=" + s.token());
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 303);
  EXPECT_EQ(r->get_header_value("Location"), "/");
  EXPECT_EQ(r->get_header_value("Set-Cookie"), s.cookie() + "; HttpOnly; SameSite=Strict; Path=/");
  // The cookie alone opens the page and the API.
  auto page = s.Client().Get("/", {{"Cookie", s.cookie()}});
  ASSERT_TRUE(page);
  EXPECT_EQ(page->status, 200);
  // Its scripts, each served from the binary.
  for (const char* script : {"/page.js", "/outcome.js", "/app.js"}) {
    EXPECT_NE(page->body.find(script), std::string::npos) << script;
    auto js = s.Client().Get(script, {{"Cookie", s.cookie()}});
    ASSERT_TRUE(js);
    EXPECT_EQ(js->status, 200) << script;
    EXPECT_EQ(js->get_header_value("Content-Type"), "text/javascript; charset=utf-8");
    EXPECT_GT(js->body.size(), 1000u) << script;
  }
  json info = s.Get("/api/info");
  EXPECT_EQ(info["dialect"], "duckdb");
  EXPECT_EQ(info["model"], "stand-in via openai-compatible");
  EXPECT_EQ(info["sources"][0]["name"], "sales.csv");
  EXPECT_EQ(info["sources"][0]["tables"][0], "sales");
  // The page never learns the key.
  EXPECT_EQ(info.dump().find("sk-test"), std::string::npos);
}

TEST(ServeTest, EveryRequestWithoutTheTokenIsRefusedWith401) {
  ProviderServer provider;
  Served s(provider);
  ASSERT_GT(s.port(), 0);
  auto c = s.Client();
  for (const char* path :
       {"/", "/app.js", "/page.js", "/outcome.js", "/app.css", "/api/info", "/api/threads",
        "/api/schema", "/runs/20261203-000000-abcdef/view", "/favicon.ico"}) {
    auto r = c.Get(path);
    ASSERT_TRUE(r) << path;
    EXPECT_EQ(r->status, 401) << path;
    auto wrong = c.Get(path, {{"Authorization", "Bearer " + std::string(64, '0')}});
    EXPECT_EQ(wrong->status, 401) << path;
    auto cookie = c.Get(path, {{"Cookie", s.cookie().substr(1)}});
    EXPECT_EQ(cookie->status, 401) << path;
  }
  auto bad_link = c.Get("/?token=" + std::string(64, 'a'));
  EXPECT_EQ(bad_link->status, 401);
  EXPECT_FALSE(bad_link->has_header("Set-Cookie"));
  auto post = c.Post("/api/ask", json({{"question", "x"}}).dump(), "application/json");
  EXPECT_EQ(post->status, 401);
  auto mcp = c.Post("/mcp", R"({"jsonrpc":"2.0","id":1,"method":"ping"})", "application/json");
  EXPECT_EQ(mcp->status, 401);
  EXPECT_EQ(provider.requests().size(), 0u);
}

TEST(ServeTest, AHostHeaderThatIsNotThisServerIsRefusedWith403) {
  ProviderServer provider;
  Served s(provider, {"--allow-host", "quarry.test"});
  ASSERT_GT(s.port(), 0);
  const std::string port = std::to_string(s.port());
  auto with_host = [&](const std::string& host) {
    httplib::Headers h = s.Bearer();
    h.emplace("Host", host);
    auto r = s.Client().Get("/api/info", h);
    return r ? r->status : -1;
  };
  // DNS rebinding: the attacker's name resolving to 127.0.0.1 arrives as its own Host.
  EXPECT_EQ(with_host("evil.example:" + port), 403);
  EXPECT_EQ(with_host("evil.example"), 403);
  EXPECT_EQ(with_host("127.0.0.1:1"), 403);
  EXPECT_EQ(with_host("127.0.0.1.evil.example:" + port), 403);
  EXPECT_EQ(with_host(""), 403);
  EXPECT_EQ(with_host("127.0.0.1:" + port), 200);
  EXPECT_EQ(with_host("LOCALHOST:" + port), 200);
  EXPECT_EQ(with_host("[::1]:" + port), 200);
  EXPECT_EQ(with_host("quarry.test:" + port), 200);
  EXPECT_EQ(with_host("quarry.test"), 200);
}

TEST(ServeTest, AStateChangingRequestFromAnotherSiteIsRefusedWith403) {
  ProviderServer provider;
  Served s(provider);
  ASSERT_GT(s.port(), 0);
  const std::string cookie = s.cookie();
  const std::string body = json({{"sql", "SELECT 1 AS one"}}).dump();
  auto post = [&](httplib::Headers h) {
    auto r = s.Client().Post("/api/sql", h, body, "application/json");
    return r ? r->status : -1;
  };
  EXPECT_EQ(post({{"Cookie", cookie}, {"Origin", "http://evil.example"}}), 403);
  EXPECT_EQ(post({{"Cookie", cookie}, {"Sec-Fetch-Site", "cross-site"}}), 403);
  EXPECT_EQ(post({{"Cookie", cookie},
                  {"Origin", "http://evil.example"},
                  {"Sec-Fetch-Site", "cross-site"}}),
            403);
  // localhost on another port is the same site but not the same origin.
  EXPECT_EQ(post({{"Cookie", cookie}, {"Sec-Fetch-Site", "same-site"}}), 403);
  EXPECT_EQ(post({{"Cookie", cookie}, {"Origin", "http://localhost:1"}}), 403);
  EXPECT_EQ(post({{"Cookie", cookie}, {"Origin", "null"}}), 403);
  EXPECT_EQ(post({{"Cookie", cookie}}), 403);  // a browser always says where it comes from
  EXPECT_EQ(post({{"Authorization", "Bearer " + s.token()}, {"Origin", "http://evil.example"}}),
            403);
  EXPECT_EQ(post({{"Cookie", cookie}, {"Sec-Fetch-Site", "same-origin"}}), 200);
  EXPECT_EQ(post({{"Cookie", cookie}, {"Origin", s.origin()}}), 200);
  EXPECT_EQ(post({{"Authorization", "Bearer " + s.token()}}), 200);  // a program, not a page
  // Deleting and renaming are guarded the same way.
  auto del =
      s.Client().Delete("/api/threads/t", {{"Cookie", cookie}, {"Origin", "http://evil.example"}});
  EXPECT_EQ(del->status, 403);
  auto patch =
      s.Client().Patch("/api/threads/t", {{"Cookie", cookie}, {"Sec-Fetch-Site", "cross-site"}},
                       R"({"name":"u"})", "application/json");
  EXPECT_EQ(patch->status, 403);
}

TEST(ServeTest, EveryAnswerCarriesTheSecurityHeadersAndNoCorsHeader) {
  ProviderServer provider;
  Served s(provider);
  ASSERT_GT(s.port(), 0);
  httplib::Headers from_elsewhere = s.Bearer();
  from_elsewhere.emplace("Origin", "http://evil.example");
  auto c = s.Client();
  std::vector<httplib::Result> answers;
  answers.push_back(c.Get("/"));
  answers.push_back(c.Get("/", from_elsewhere));
  answers.push_back(c.Get("/app.js", from_elsewhere));
  answers.push_back(c.Get("/api/info", from_elsewhere));
  answers.push_back(c.Get("/nowhere", from_elsewhere));
  answers.push_back(c.Options(
      "/api/ask", {{"Origin", "http://evil.example"}, {"Access-Control-Request-Method", "POST"}}));
  answers.push_back(c.Post("/api/ask", from_elsewhere, "{}", "application/json"));
  for (auto& r : answers) {
    ASSERT_TRUE(r);
    for (const auto& [name, value] : r->headers) {
      EXPECT_FALSE(Lower(name).starts_with("access-control-")) << name << ": " << value;
    }
    const std::string csp = r->get_header_value("Content-Security-Policy");
    EXPECT_NE(csp.find("default-src 'none'"), std::string::npos) << r->status;
    EXPECT_NE(csp.find("script-src 'self'"), std::string::npos);
    EXPECT_NE(csp.find("connect-src 'self'"), std::string::npos);
    EXPECT_NE(csp.find("frame-ancestors 'none'"), std::string::npos);
    EXPECT_EQ(csp.find("unsafe"), std::string::npos);
    EXPECT_EQ(r->get_header_value("X-Content-Type-Options"), "nosniff");
    EXPECT_EQ(r->get_header_value("Referrer-Policy"), "no-referrer");
  }
  // The page itself has no inline script and loads nothing from elsewhere.
  auto page = c.Get("/", s.Bearer());
  EXPECT_EQ(page->body.find("<script>"), std::string::npos);
  EXPECT_EQ(page->body.find("http"), std::string::npos);
  EXPECT_EQ(page->get_header_value("Content-Type"), "text/html; charset=utf-8");
}

// A database server is served as a file is: the schema, the SQL box, and a write refused.
TEST(ServeTest, MariaDbAndClickHouseServersAreServedLikeAFile) {
  const std::vector<std::pair<std::string, std::string>> servers = {
      {test::SharedMariaDbServer().Url(), "UPDATE Track SET UnitPrice = 0"},
      {test::SharedClickHouseServer().Url(), "ALTER TABLE Track UPDATE UnitPrice = 0 WHERE 1"}};
  for (const auto& [url, write] : servers) {
    SCOPED_TRACE(url);
    ProviderServer provider;
    Served s(provider, {}, url);
    ASSERT_GT(s.port(), 0) << s.process().Err();
    int status = 0;
    const json schema = s.Get("/api/schema", &status);
    EXPECT_EQ(status, 200);
    EXPECT_NE(schema.dump().find("InvoiceLine"), std::string::npos) << schema.dump().substr(0, 400);
    json r = s.Post("/api/sql", {{"sql", "SELECT count(*) AS n FROM Track"}}, &status);
    EXPECT_EQ(status, 200) << r.dump();
    EXPECT_EQ(r["rows"], json::parse("[[3503]]"));
    r = s.Post("/api/sql", {{"sql", write}}, &status);
    EXPECT_EQ(status, 400) << r.dump();
    EXPECT_EQ(r["failure_class"], "guard_violation");
  }
}

TEST(ServeTest, OnlyTheSourcesCanBeReachedAndOnlyByIds) {
  ProviderServer provider;
  Served s(provider);
  ASSERT_GT(s.port(), 0);
  int status = 0;
  json ok = s.Post("/api/sql", {{"sql", "SELECT count(*) AS n FROM sales"}}, &status);
  EXPECT_EQ(status, 200);
  EXPECT_EQ(ok["columns"][0]["name"], "n");
  EXPECT_EQ(ok["rows"][0][0], 2065);
  for (const std::string sql :
       {"SELECT * FROM read_csv('/etc/passwd')", "SELECT * FROM '/etc/passwd'",
        "ATTACH '/tmp/x.db' AS x", "COPY sales TO '/tmp/out.csv'", "DROP TABLE sales",
        "SELECT 1; SELECT 2", "INSTALL httpfs"}) {
    json refused = s.Post("/api/sql", {{"sql", sql}}, &status);
    EXPECT_EQ(status, 400) << sql;
    EXPECT_TRUE(refused.contains("error")) << sql;
  }
  EXPECT_FALSE(fs::exists("/tmp/out.csv") &&
               fs::last_write_time("/tmp/out.csv") >
                   fs::file_time_type::clock::now() - std::chrono::minutes(1));
  auto c = s.Client();
  for (const char* path :
       {"/api/runs/../../etc/passwd", "/api/runs/%2e%2e%2f%2e%2e%2fetc%2fpasswd",
        "/runs/..%2f..%2fetc/view", "/api/runs/20261203-000000-abcdef/figures/..%2ftrace.json",
        "/api/runs/20261203-000000-abcdef/figures/chart-1.svg", "/api/runs/20261203-000000-abcdef",
        "/etc/passwd", "/app.js/../../etc/passwd", "/api/threads/..%2f..%2fthreads.sqlite3"}) {
    auto r = c.Get(path, s.Bearer());
    ASSERT_TRUE(r) << path;
    EXPECT_TRUE(r->status == 404 || r->status == 400) << path << " -> " << r->status;
    EXPECT_EQ(r->body.find("root:"), std::string::npos) << path;
  }
  // A body larger than the limit is refused, not read.
  auto big = c.Post("/api/sql", s.Bearer(), std::string(5 * 1024 * 1024, ' '), "application/json");
  ASSERT_TRUE(big);
  EXPECT_EQ(big->status, 413);
  // Bad bodies get a message, and the server goes on.
  json bad = s.Post("/api/ask", json::array({1, 2}), &status);
  EXPECT_EQ(status, 400);
  auto not_json = c.Post("/api/ask", s.Bearer(), "{\"question\": \"\xff\xfe", "application/json");
  EXPECT_EQ(not_json->status, 400);
  auto wrong_type =
      c.Post("/api/ask", s.Bearer(), "question=x", "application/x-www-form-urlencoded");
  EXPECT_EQ(wrong_type->status, 415);
  EXPECT_FALSE(s.process().Wait(milliseconds(0)).has_value());
}

// The events a page receives are events.jsonl's, line for line, then the outcome.
TEST(ServeTest, AQuestionStreamsItsTraceEventsLiveThenItsOutcome) {
  ProviderServer provider;
  provider.Enqueue({200,
                    {},
                    Sql("SELECT region, round(sum(revenue), 2) AS revenue FROM sales "
                        "GROUP BY region ORDER BY revenue DESC LIMIT 1")});
  provider.Enqueue({200, {}, Answer("North leads with revenue of 141794.14.", {"141794.14"})});
  Served s(provider);
  ASSERT_GT(s.port(), 0);
  int status = 0;
  json asked = s.Post("/api/ask", {{"question", "Which region has the most revenue?"}}, &status);
  ASSERT_EQ(status, 202) << asked.dump();
  const std::string id = asked["run_id"];
  EXPECT_TRUE(asked["thread"].get<std::string>().starts_with("Which region has the most revenue?"));

  std::string stream;
  auto r =
      s.Client().Get("/api/runs/" + id + "/events", s.Bearer(), [&](const char* data, size_t n) {
        stream.append(data, n);
        return true;
      });
  ASSERT_TRUE(r);
  EXPECT_EQ(r->get_header_value("Content-Type"), "text/event-stream");
  std::vector<std::string> traced;
  json outcome;
  std::regex event(R"(event: (\w+)\ndata: (.*)\n)");
  for (auto it = std::sregex_iterator(stream.begin(), stream.end(), event);
       it != std::sregex_iterator(); ++it) {
    if ((*it)[1] == "trace") traced.push_back((*it)[2]);
    if ((*it)[1] == "outcome") outcome = json::parse((*it)[2].str());
  }
  std::vector<std::string> recorded;
  std::istringstream lines(ReadFile(s.dir() / "runs" / id / "events.jsonl"));
  for (std::string line; std::getline(lines, line);) recorded.push_back(line);
  ASSERT_GE(recorded.size(), 4u);
  ASSERT_EQ(traced.size(), recorded.size());
  for (size_t i = 0; i < recorded.size(); ++i) {
    EXPECT_EQ(json::parse(traced[i]), json::parse(recorded[i])) << i;
  }
  EXPECT_EQ(json::parse(traced.front())["event"], "start");
  EXPECT_EQ(json::parse(traced.back())["event"], "end");
  EXPECT_EQ(outcome["stop_reason"], "answered");
  EXPECT_EQ(outcome["run_id"], id);
  EXPECT_EQ(outcome["answer"], "North leads with revenue of 141794.14.");
  EXPECT_TRUE(outcome["grounded"].get<bool>());
  EXPECT_NE(outcome["text"].get<std::string>().find("SQL:"), std::string::npos);

  // The thread is the store's: listed, shown, renamed, and deleted.
  json threads = s.Get("/api/threads");
  ASSERT_EQ(threads["threads"].size(), 1u);
  const std::string name = threads["threads"][0]["name"];
  EXPECT_EQ(threads["threads"][0]["status"], "answered");
  json shown = s.Get("/api/threads/" + httplib::detail::encode_query_param(name));
  EXPECT_EQ(shown["turns"][0]["answer"], "North leads with revenue of 141794.14.");
  auto renamed = s.Client().Patch("/api/threads/" + httplib::detail::encode_query_param(name),
                                  s.Page(), R"({"name":"regions"})", "application/json");
  EXPECT_EQ(renamed->status, 200) << renamed->body;
  EXPECT_EQ(s.Get("/api/threads")["threads"][0]["name"], "regions");
  auto deleted = s.Client().Delete("/api/threads/regions", s.Page());
  EXPECT_EQ(deleted->status, 200);
  EXPECT_EQ(s.Get("/api/threads")["threads"].size(), 0u);

  // The trace page is served with its one style allowed by hash, and no script.
  auto view = s.Client().Get("/runs/" + id + "/view", s.Bearer());
  ASSERT_EQ(view->status, 200);
  const std::string csp = view->get_header_value("Content-Security-Policy");
  EXPECT_NE(csp.find("style-src 'sha256-"), std::string::npos) << csp;
  EXPECT_EQ(csp.find("script-src"), std::string::npos);
  EXPECT_NE(view->body.find("Which region has the most revenue?"), std::string::npos);
}

TEST(ServeTest, TheStopButtonEndsARunawayQuestionAsInterrupted) {
  ProviderServer provider;
  provider.Enqueue({200, {}, Answer("never", {}), milliseconds(60000)});
  Served s(provider);
  ASSERT_GT(s.port(), 0);
  int status = 0;
  json asked = s.Post("/api/ask", {{"question", "How many orders?"}}, &status);
  ASSERT_EQ(status, 202);
  const std::string id = asked["run_id"];
  std::this_thread::sleep_for(milliseconds(500));
  const auto start = std::chrono::steady_clock::now();
  json stopped = s.Post("/api/runs/" + id + "/stop", json::object(), &status);
  EXPECT_EQ(status, 202);
  EXPECT_EQ(stopped, json::parse(R"({"stopping":true})"));
  json outcome = s.Outcome(id, milliseconds(15000));
  ASSERT_TRUE(outcome.is_object());
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(10));
  EXPECT_EQ(outcome["stop_reason"], "interrupted");
  EXPECT_EQ(outcome["answer"], "");
  EXPECT_TRUE(fs::exists(s.dir() / "runs" / id / "trace.json"));
}

// A client that opens connections and never finishes its request holds no one else up.
TEST(ServeTest, SlowClientsAreDroppedAndOthersAreServedMeanwhile) {
  ProviderServer provider;
  Served s(provider);
  ASSERT_GT(s.port(), 0);
  std::vector<int> slow;
  for (int i = 0; i < 60; ++i) {
    const int fd = socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_port = htons(static_cast<uint16_t>(s.port()));
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    ASSERT_EQ(connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0);
    const std::string part = "GET /api/info HTTP/1.1\r\nHost: " + s.host() + "\r\nX-Slow: ";
    ASSERT_GT(write(fd, part.data(), part.size()), 0);
    slow.push_back(fd);
  }
  const auto start = std::chrono::steady_clock::now();
  json info = s.Get("/api/info");
  EXPECT_EQ(info["dialect"], "duckdb");
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(12));
  // Each slow connection is refused and closed by the server once its read times out.
  for (int fd : slow) {
    timeval tv{20, 0};
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    std::string got;
    char b[4096];
    for (ssize_t n; (n = read(fd, b, sizeof b)) > 0;) got.append(b, static_cast<size_t>(n));
    EXPECT_TRUE(got.empty() || got.starts_with("HTTP/1.1 4")) << got;
    EXPECT_EQ(got.find("\"dialect\""), std::string::npos) << "a half-sent request was answered";
    close(fd);
  }
  EXPECT_FALSE(s.process().Wait(milliseconds(0)).has_value());
}

// Fifty questions at once with room for five: each is either taken and answered, or told
// "busy" at once; none is lost.
TEST(ServeTest, FiftyQuestionsAtOnceAreAnsweredOrToldBusyAndNoneIsLost) {
  ProviderServer provider;
  for (int i = 0; i < 50; ++i) {
    provider.Enqueue({200, {}, CountAndAnswer(), milliseconds(200)});
  }
  Served s(provider, {"--max-running", "2", "--max-queued", "3", "--questions-per-minute", "1000"});
  ASSERT_GT(s.port(), 0);
  std::mutex mu;
  std::vector<std::string> accepted;
  std::atomic<int> busy = 0, other = 0;
  std::vector<std::thread> clients;
  for (int i = 0; i < 50; ++i) {
    clients.emplace_back([&, i] {
      int status = 0;
      json r = s.Post("/api/ask", {{"question", "Question " + std::to_string(i)}}, &status);
      if (status == 202) {
        std::lock_guard lock(mu);
        accepted.push_back(r["run_id"]);
      } else if (status == 503 && r.value("error", "").starts_with("busy")) {
        ++busy;
      } else {
        ++other;
        std::lock_guard lock(mu);
        ADD_FAILURE() << "status " << status << ": " << r.dump();
      }
    });
  }
  for (auto& t : clients) t.join();
  EXPECT_EQ(other, 0);
  EXPECT_EQ(accepted.size() + static_cast<size_t>(busy.load()), 50u);
  EXPECT_GE(accepted.size(), 5u);
  EXPECT_GT(busy, 0);
  for (const auto& id : accepted) {
    json outcome = s.Outcome(id, milliseconds(60000));
    ASSERT_TRUE(outcome.is_object()) << id;
    EXPECT_EQ(outcome["stop_reason"], "answered") << outcome.dump();
  }
  EXPECT_EQ(provider.requests().size(), accepted.size());
}

TEST(ServeTest, QuestionsPastTheRateLimitAreRefusedWith429) {
  ProviderServer provider;
  for (int i = 0; i < 3; ++i) provider.Enqueue({200, {}, CountAndAnswer()});
  Served s(provider, {"--questions-per-minute", "3"});
  ASSERT_GT(s.port(), 0);
  std::vector<int> statuses;
  for (int i = 0; i < 5; ++i) {
    int status = 0;
    s.Post("/api/ask", {{"question", "Q" + std::to_string(i)}}, &status);
    statuses.push_back(status);
  }
  EXPECT_EQ(statuses, (std::vector<int>{202, 202, 202, 429, 429}));
}

// Requests that are malformed in the ways a client slips answered at once with what is wrong:
// no Content-Length (the library would wait for the client to close, then answer an empty 400),
// a header the checks read sent twice, a body that is not JSON or not UTF-8, a row cap out of
// range, and the methods /mcp does not serve.
TEST(ServeTest, MalformedRequestsAreAnsweredAtOnceWithWhatIsWrong) {
  ProviderServer provider;
  Served s(provider);
  ASSERT_GT(s.port(), 0);
  const std::string head =
      "Host: " + s.host() + "\r\nAuthorization: Bearer " + s.token() + "\r\nConnection: close\r\n";
  for (const std::string& request :
       {"POST /api/runs/20260101-000000-abcdef/stop HTTP/1.1\r\n" + head + "\r\n",
        "PATCH /api/threads/a HTTP/1.1\r\n" + head + "Content-Type: application/json\r\n\r\n",
        "POST /api/sql HTTP/1.1\r\n" + head + "Content-Type: application/json\r\n\r\n"}) {
    const std::string got = Raw(s.port(), request);
    EXPECT_EQ(StatusOf(got), 411) << got;
    EXPECT_NE(got.find("no Content-Length"), std::string::npos) << got;
  }
  // Two Host headers (the second not this server), two tokens, two origins.
  for (const std::string& twice :
       {std::string("Host: evil.example\r\n"), "Authorization: Bearer " + s.token() + "\r\n",
        std::string("Origin: http://evil.example\r\n")}) {
    const std::string got = Raw(s.port(), "GET /api/info HTTP/1.1\r\n" + head + twice +
                                              "Origin: " + s.origin() + "\r\n\r\n");
    EXPECT_EQ(StatusOf(got), 400) << twice << got;
    EXPECT_NE(got.find("more than one"), std::string::npos) << got;
    EXPECT_EQ(got.find("\"dialect\""), std::string::npos) << got;
  }
  // RFC 9110: the scheme's name is case-insensitive.
  {
    httplib::Headers lower = {{"Authorization", "bearer " + s.token()}};
    auto r = s.Client().Get("/api/info", lower);
    ASSERT_TRUE(r);
    EXPECT_EQ(r->status, 200) << r->body;
  }
  struct Bad {
    std::string body;
    std::string error;
  };
  for (const Bad& bad : std::vector<Bad>{
           {"", "the body is empty: send a JSON object"},
           {"{\"sql\": \"\xff\"}",
            "the body is not valid JSON at byte 10: invalid string: ill-formed UTF-8 byte"},
           {"{\"sql\": ",
            "the body is not valid JSON at byte 9: unexpected end of input; expected '[', '{', or "
            "a literal"},
           {"[1]", "the body is JSON but not an object: send {\"name\": value, ...}"},
           {R"({"sql": "SELECT 1", "max_rows": 0})",
            "\"max_rows\" must be a whole number from 1 to 10000"},
           {R"({"sql": "SELECT 1", "max_rows": -5})",
            "\"max_rows\" must be a whole number from 1 to 10000"},
           {R"({"sql": "SELECT 1", "max_rows": 10001})",
            "\"max_rows\" must be a whole number from 1 to 10000"},
           {R"({"sql": "SELECT 1", "max_rows": 1e3})",
            "\"max_rows\" must be a whole number from 1 to 10000"},
       }) {
    auto r = s.Client().Post("/api/sql", s.Bearer(), bad.body, "application/json");
    ASSERT_TRUE(r);
    EXPECT_EQ(r->status, 400) << bad.body;
    EXPECT_EQ(json::parse(r->body, nullptr, false).value("error", ""), bad.error) << bad.body;
  }
  // max_rows null is max_rows absent.
  {
    auto r = s.Client().Post("/api/sql", s.Bearer(),
                             R"({"sql": "SELECT 1 AS a", "max_rows": null})", "application/json");
    ASSERT_TRUE(r);
    EXPECT_EQ(r->status, 200) << r->body;
  }
  // The library's own refusals say what happened, as JSON.
  {
    auto r = s.Client().Get("/api/nothing", s.Bearer());
    ASSERT_TRUE(r);
    EXPECT_EQ(r->status, 404);
    EXPECT_EQ(json::parse(r->body, nullptr, false).value("error", ""), "not found: /api/nothing");
    auto big =
        s.Client().Post("/api/sql", s.Bearer(), std::string(5 << 20, ' '), "application/json");
    ASSERT_TRUE(big);
    EXPECT_EQ(big->status, 413);
    EXPECT_TRUE(json::parse(big->body, nullptr, false)
                    .value("error", "")
                    .starts_with("the body is too large: JSON bodies up to 4 MiB"))
        << big->body;
  }
  auto head_mcp = s.Client().Head("/mcp", s.Bearer());
  ASSERT_TRUE(head_mcp);
  EXPECT_EQ(head_mcp->status, 405);
  auto delete_mcp = s.Client().Delete("/mcp", s.Bearer(), "", "application/json");
  ASSERT_TRUE(delete_mcp);
  EXPECT_EQ(delete_mcp->status, 400) << delete_mcp->body;
  EXPECT_NE(delete_mcp->body.find("no Mcp-Session-Id header"), std::string::npos);
  EXPECT_FALSE(s.process().Wait(milliseconds(0)).has_value()) << s.process().Err();
}

// The engines read a statement up to its first NUL: the SQL box refuses one, so what runs is
// always what the guard read.
TEST(ServeTest, TheSqlBoxRefusesANulThatWouldHideTheRestOfTheQuery) {
  ProviderServer provider;
  Served s(provider);
  ASSERT_GT(s.port(), 0);
  int status = 0;
  using namespace std::string_literals;
  json r = s.Post("/api/sql", {{"sql", "SELECT count(*) AS n FROM sales\0 garbage"s}}, &status);
  EXPECT_EQ(status, 400) << r.dump();
  EXPECT_EQ(r["failure_class"], "guard_violation");
  EXPECT_NE(r.value("error", "").find("NUL character"), std::string::npos) << r.dump();
  r = s.Post("/api/sql", {{"sql", "SELECT count(*) AS n FROM sales"}}, &status);
  EXPECT_EQ(status, 200);
  EXPECT_EQ(r["rows"], json::parse(R"([[2065]])"));
}

// --timeout-ms bounds every query the server runs; the SQL box's runaway join is interrupted.
TEST(ServeTest, TimeoutMsBoundsTheQueriesItRuns) {
  ProviderServer provider;
  Served s(provider, {"--timeout-ms", "300"});
  ASSERT_GT(s.port(), 0);
  int status = 0;
  json r = s.Post("/api/sql",
                  {{"sql", "SELECT sum(a.range * b.range) FROM range(100000) a, range(100000) b"}},
                  &status);
  EXPECT_EQ(status, 400);
  EXPECT_EQ(r["failure_class"], "timeout");
  EXPECT_EQ(r["error"],
            "the query was interrupted after 300 ms: simplify it, filter earlier, or aggregate "
            "before joining");
}

// The SQL box's answer stays within its byte cap however wide the rows: rows past it are left
// out, and the answer says the result was cut and where.
TEST(ServeTest, TheSqlBoxCutsAResultPastItsByteCap) {
  ProviderServer provider;
  Served s(provider);
  ASSERT_GT(s.port(), 0);
  int status = 0;
  json r = s.Post(
      "/api/sql",
      {{"sql", "SELECT repeat('x', 99999) AS big FROM range(200)"}, {"max_rows", 10000}}, &status);
  ASSERT_EQ(status, 200) << r.dump().substr(0, 300);
  EXPECT_EQ(r["row_count"], 200);
  EXPECT_EQ(r["truncated"], true);
  EXPECT_EQ(r["cut_at_bytes"], 8 * 1024 * 1024);
  // Each row is 100,004 bytes as JSON (["x...x"] and a separator): 83 fit in 8 MiB.
  EXPECT_EQ(r["rows"].size(), 83u);
  r = s.Post("/api/sql", {{"sql", "SELECT 1 AS a"}}, &status);
  EXPECT_EQ(r["cut_at_bytes"], nullptr);
  EXPECT_EQ(r["truncated"], false);
}

// A question whose text holds characters a thread name may not (an emoji joined with ZWJ,
// Persian's zero-width non-joiner, a BOM, a right-to-left override) runs, in a thread named
// from what is left of it.
TEST(ServeTest, AnyQuestionTextStartsARun) {
  ProviderServer provider;
  for (int i = 0; i < 2; ++i) provider.Enqueue({200, {}, CountAndAnswer()});
  Served s(provider);
  ASSERT_GT(s.port(), 0);
  for (const std::string& question : std::vector<std::string>{
           "How many orders per family \U0001F468\u200D\U0001F469\u200D\U0001F467?",
           "\uFEFF\u202Eorders\u200C count?"}) {
    int status = 0;
    json asked = s.Post("/api/ask", {{"question", question}}, &status);
    ASSERT_EQ(status, 202) << asked.dump();
    json outcome = s.Outcome(asked["run_id"]);
    EXPECT_EQ(outcome["stop_reason"], "answered") << outcome.dump();
    std::string path = "/api/threads/";
    for (unsigned char c : asked["thread"].get<std::string>()) {
      char hex[4];
      std::snprintf(hex, sizeof hex, "%%%02X", c);
      path += std::isalnum(c) ? std::string(1, static_cast<char>(c)) : std::string(hex);
    }
    EXPECT_EQ(s.Get(path)["turns"][0]["question"], question) << path;
  }
}

// A queued question stopped is dropped at once, not when a worker frees.
TEST(ServeTest, StoppingAQueuedQuestionDropsItAtOnce) {
  ProviderServer provider;
  provider.Enqueue({200, {}, Answer("never", {}), milliseconds(60000)});
  Served s(provider, {"--max-running", "1"});
  ASSERT_GT(s.port(), 0);
  int status = 0;
  json running = s.Post("/api/ask", {{"question", "first"}}, &status);
  ASSERT_EQ(status, 202);
  // The first is running (its model call has arrived) before the second is asked, so the second
  // waits behind it and the first is stopped as a running question.
  for (int i = 0; i < 600 && provider.requests().empty(); ++i) {
    std::this_thread::sleep_for(milliseconds(50));
  }
  ASSERT_EQ(provider.requests().size(), 1u);
  json queued = s.Post("/api/ask", {{"question", "second"}}, &status);
  ASSERT_EQ(status, 202);
  json stopped =
      s.Post("/api/runs/" + queued["run_id"].get<std::string>() + "/stop", json::object(), &status);
  EXPECT_EQ(status, 200) << stopped.dump();
  json outcome = s.Outcome(queued["run_id"], milliseconds(5000));
  ASSERT_TRUE(outcome.is_object()) << "the queued question waited for the running one";
  EXPECT_EQ(outcome["stop_reason"], "interrupted");
  EXPECT_EQ(outcome["heading"], "Stopped by you");
  json first = s.Get("/api/runs/" + running["run_id"].get<std::string>());
  EXPECT_EQ(first["running"], true);
  s.Post("/api/runs/" + running["run_id"].get<std::string>() + "/stop", json::object(), &status);
  EXPECT_EQ(status, 202);
}

// Stop says what happened: 202 while the run goes on, 409 once it has finished, 404 for a run
// that never was. Thread routes answer 404 for a missing thread, and no answer names the file
// the threads live in.
TEST(ServeTest, StopAndThreadRoutesAnswerWhatIsTrueOfTheRunOrThread) {
  ProviderServer provider;
  provider.Enqueue({200, {}, CountAndAnswer()});
  provider.Enqueue({200, {}, CountAndAnswer()});
  Served s(provider);
  ASSERT_GT(s.port(), 0);
  int status = 0;
  json asked = s.Post("/api/ask", {{"question", "How many orders?"}, {"thread", "first"}}, &status);
  ASSERT_EQ(status, 202);
  const std::string id = asked["run_id"];
  ASSERT_EQ(s.Outcome(id)["stop_reason"], "answered");
  json stopped = s.Post("/api/runs/" + id + "/stop", json::object(), &status);
  EXPECT_EQ(status, 409);
  EXPECT_EQ(stopped["error"], "run " + id + " has already finished: nothing to stop");
  s.Post("/api/runs/20260101-000000-abcdef/stop", json::object(), &status);
  EXPECT_EQ(status, 404);

  s.Post("/api/ask", {{"question", "How many orders?"}, {"thread", "second"}}, &status);
  ASSERT_EQ(status, 202);
  const std::string dir = s.dir().string();
  for (const char* method : {"GET", "PATCH", "DELETE"}) {
    auto r = s.Send(method, "/api/threads/missing", R"({"name":"other"})");
    ASSERT_TRUE(r);
    EXPECT_EQ(r->status, 404) << method << " " << r->body;
    EXPECT_EQ(json::parse(r->body)["error"], "no thread named \"missing\"");
  }
  // Renaming onto a name that is taken: refused, and the message names no path.
  for (int i = 0; i < 200 && s.Get("/api/threads")["threads"].size() < 2; ++i) {
    std::this_thread::sleep_for(milliseconds(50));
  }
  auto r = s.Send("PATCH", "/api/threads/first", R"({"name":"second"})");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 400) << r->body;
  EXPECT_NE(r->body.find("second"), std::string::npos) << r->body;
  EXPECT_EQ(r->body.find(dir), std::string::npos) << r->body;
  // The list carries each thread's first question and last status, read in one query.
  json threads = s.Get("/api/threads")["threads"];
  ASSERT_EQ(threads.size(), 2u);
  for (const auto& t : threads) {
    EXPECT_EQ(t["question"], "How many orders?") << t.dump();
    EXPECT_FALSE(t.contains("sources")) << t.dump();
  }
}

// MCP over HTTP: a notifications/cancelled for the session's running ask_database stops it, and
// Ctrl-C stops a running call too; either way the run's trace is written, ending "interrupted".
TEST(ServeTest, AnMcpCallOverHttpStopsOnCancelAndOnCtrlC) {
  ProviderServer provider;
  provider.Enqueue({200, {}, Answer("never", {}), milliseconds(60000)});
  provider.Enqueue({200, {}, Answer("never", {}), milliseconds(60000)});
  Served s(provider);
  ASSERT_GT(s.port(), 0);
  auto post = [&](const json& message, const std::string& session) {
    httplib::Headers h = s.Bearer();
    h.emplace("Accept", "application/json, text/event-stream");
    if (!session.empty()) h.emplace("Mcp-Session-Id", session);
    auto c = s.Client();
    c.set_read_timeout(std::chrono::seconds(60));
    return c.Post("/mcp", h, message.dump(), "application/json");
  };
  auto init = post({{"jsonrpc", "2.0"},
                    {"id", 1},
                    {"method", "initialize"},
                    {"params",
                     {{"protocolVersion", "2025-11-25"},
                      {"capabilities", json::object()},
                      {"clientInfo", {{"name", "t"}, {"version", "1"}}}}}},
                   "");
  ASSERT_TRUE(init);
  const std::string session = init->get_header_value("Mcp-Session-Id");
  ASSERT_FALSE(session.empty()) << init->body;
  post({{"jsonrpc", "2.0"}, {"method", "notifications/initialized"}}, session);
  auto call = [&](int id) {
    return json{
        {"jsonrpc", "2.0"},
        {"id", id},
        {"method", "tools/call"},
        {"params", {{"name", "ask_database"}, {"arguments", {{"question", "How many orders?"}}}}}};
  };
  auto runs_ended = [&](size_t n) {
    size_t interrupted = 0;
    if (!fs::exists(s.dir() / "runs")) return false;
    for (const auto& e : fs::directory_iterator(s.dir() / "runs")) {
      if (!fs::exists(e.path() / "trace.json")) continue;  // threads.sqlite3, a run still going
      auto text = ReadFile(e.path() / "trace.json");
      interrupted += text.find("\"stop_reason\": \"interrupted\"") != std::string::npos ||
                     text.find("\"stop_reason\":\"interrupted\"") != std::string::npos;
    }
    return interrupted == n;
  };

  auto asked = [&](size_t n) {
    for (int i = 0; i < 600 && provider.requests().size() < n; ++i) {
      std::this_thread::sleep_for(milliseconds(50));
    }
    return provider.requests().size() >= n;
  };
  std::optional<httplib::Result> first;
  std::thread caller([&] { first.emplace(post(call(2), session)); });
  ASSERT_TRUE(asked(1));
  auto cancelled = post({{"jsonrpc", "2.0"},
                         {"method", "notifications/cancelled"},
                         {"params", {{"requestId", 2}, {"reason", "user"}}}},
                        session);
  ASSERT_TRUE(cancelled);
  EXPECT_EQ(cancelled->status, 202);
  caller.join();
  ASSERT_TRUE(first && *first);
  EXPECT_EQ((*first)->status, 200);
  EXPECT_TRUE(runs_ended(1)) << (*first)->body;

  std::thread second([&] { (void)post(call(3), session); });
  ASSERT_TRUE(asked(2));
  s.process().Signal(SIGINT);
  const auto code = s.process().Wait(milliseconds(20000));
  second.join();
  ASSERT_TRUE(code.has_value()) << s.process().Err();
  EXPECT_EQ(*code, 6) << s.process().Err();
  EXPECT_TRUE(runs_ended(2)) << s.process().Err();
}

// A loopback address other than 127.0.0.1 needs no --allow-remote and draws no warning; the
// printed URL names it, and it is a Host the server answers to.
TEST(ServeTest, AnotherLoopbackAddressIsPrintedAndAnsweredTo) {
  ProviderServer provider;
  TempDir dir;
  LiveServer server({"--data", (SourceDir() / "data" / "sales.csv").string(), "--host", "127.0.0.2",
                     "--port", "0", "--no-cache"},
                    dir.path(), {"HOME=" + dir.path().string()}, "serve");
  const std::string url = server.FirstLine(milliseconds(60000));
  std::smatch m;
  ASSERT_TRUE(std::regex_match(url, m, std::regex(R"(http://127\.0\.0\.2:(\d+)/\?token=(\w+))")))
      << url << server.Err();
  const int port = std::stoi(m[1]);
  httplib::Client c("127.0.0.2", port);
  auto r = c.Get("/api/info", {{"Authorization", "Bearer " + m[2].str()}});
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 200) << r->body;
  EXPECT_EQ(server.Err().find("reachable from other machines"), std::string::npos) << server.Err();
}

// Behind a TLS reverse proxy (its name given with --allow-host) the page's origin is https://:
// accepted for that name, and a foreign https:// origin still is not.
TEST(ServeTest, AnHttpsOriginOfAnAllowedHostIsThePagesOwn) {
  ProviderServer provider;
  Served s(provider, {"--allow-host", "quarry.test"});
  ASSERT_GT(s.port(), 0);
  auto post = [&](const std::string& origin) {
    httplib::Headers h = {{"Host", "quarry.test"},
                          {"Cookie", s.cookie()},
                          {"Origin", origin},
                          {"Sec-Fetch-Site", "same-origin"}};
    auto r = s.Client().Post("/api/sql", h, R"({"sql":"SELECT 1 AS one"})", "application/json");
    return r ? r->status : -1;
  };
  EXPECT_EQ(post("https://quarry.test"), 200);
  EXPECT_EQ(post("http://quarry.test"), 200);
  EXPECT_EQ(post("https://evil.example"), 403);
  EXPECT_EQ(post("ftp://quarry.test"), 403);
  EXPECT_EQ(post("https://quarry.test.evil.example"), 403);
}

// Two servers on one machine: a browser keeps one cookie jar for all ports of 127.0.0.1, so each
// server's cookie has its own name and signing in to one does not sign out of the other.
TEST(ServeTest, TwoServersKeepTheirOwnCookies) {
  ProviderServer provider;
  Served a(provider), b(provider);
  ASSERT_GT(a.port(), 0);
  ASSERT_GT(b.port(), 0);
  auto first = a.Client().Get("/?token=" + a.token());
  auto second = b.Client().Get("/?token=" + b.token());
  ASSERT_TRUE(first && second);
  const std::string ca = first->get_header_value("Set-Cookie");
  const std::string cb = second->get_header_value("Set-Cookie");
  EXPECT_NE(ca.substr(0, ca.find('=')), cb.substr(0, cb.find('=')));
  // The jar holds both; each server finds its own.
  const std::string jar = a.cookie() + "; " + b.cookie();
  for (const Served* s : {&a, &b}) {
    auto r = s->Client().Get("/api/info", {{"Cookie", jar}});
    ASSERT_TRUE(r);
    EXPECT_EQ(r->status, 200);
  }
}

// --open starts the browser on a file that redirects to the URL: the token never stands in a
// process's arguments, which every user can list. The file is this user's alone, and gone when
// the server stops.
TEST(ServeTest, OpenKeepsTheTokenOutOfTheProcessList) {
  TempDir dir;
  const fs::path bin = dir.path() / "bin";
  fs::create_directories(bin);
  // A stand-in xdg-open: records its arguments, the file's mode and the file.
  dir.Write("bin/xdg-open", "#!/bin/sh\nprintf '%s\\n' \"$@\" > \"" +
                                (dir.path() / "argv").string() + "\"\nstat -c %a \"$1\" > \"" +
                                (dir.path() / "mode").string() + "\"\ncp \"$1\" \"" +
                                (dir.path() / "page.html").string() + "\"\n");
  fs::permissions(bin / "xdg-open", fs::perms::owner_all);
  LiveServer server(
      {"--data", (SourceDir() / "data" / "sales.csv").string(), "--port", "0", "--open",
       "--no-cache"},
      dir.path(),
      {"HOME=" + dir.path().string(), "PATH=" + bin.string() + ":" + std::string(getenv("PATH"))},
      "serve");
  const std::string url = server.FirstLine(milliseconds(60000));
  ASSERT_TRUE(url.find("?token=") != std::string::npos) << url << server.Err();
  for (int i = 0; i < 200 && !fs::exists(dir.path() / "page.html"); ++i) {
    std::this_thread::sleep_for(milliseconds(50));
  }
  const std::string token = url.substr(url.find("?token=") + 7);
  const std::string argv = ReadFile(dir.path() / "argv");
  EXPECT_EQ(argv.find(token), std::string::npos) << argv;
  EXPECT_TRUE(argv.ends_with("/open.html\n")) << argv;
  EXPECT_EQ(ReadFile(dir.path() / "mode"), "600\n");
  const std::string page = ReadFile(dir.path() / "page.html");
  EXPECT_NE(page.find("<meta http-equiv=\"refresh\" content=\"0;url=" + url + "\">"),
            std::string::npos)
      << page;
  const fs::path opened = argv.substr(0, argv.size() - 1);
  EXPECT_TRUE(fs::exists(opened));
  server.Signal(SIGINT);
  EXPECT_EQ(server.Wait(milliseconds(20000)), 6) << server.Err();
  EXPECT_FALSE(fs::exists(opened.parent_path())) << "the redirect file outlived the server";
}

TEST(ServeTest, ARemoteAddressNeedsAllowRemote) {
  TempDir dir;
  auto r = RunProcess(
      {QuarryBinary().string(), "serve", "--data", (SourceDir() / "data" / "sales.csv").string(),
       "--host", "0.0.0.0", "--port", "0"},
      dir.path());
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("--allow-remote"), std::string::npos) << r.err;
  EXPECT_EQ(r.out, "");
}

TEST(ServeTest, NoDataIsAUsageErrorThatSaysWhatToGive) {
  TempDir dir;
  auto r = RunProcess({QuarryBinary().string(), "serve"}, dir.path());
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.err,
            "quarry serve: no data: give files, a folder or a server URL (quarry serve --data "
            "sales.csv)\n");
  EXPECT_EQ(r.out, "");
}

}  // namespace
}  // namespace quarry::testing
