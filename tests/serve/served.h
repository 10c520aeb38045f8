// What the serve tests share: `quarry serve` on a free port over data/sales.csv with the
// stand-in provider as its model (Served), a raw HTTP/1.1 exchange, and scripted model turns.
#pragma once

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <httplib.h>

#include <memory>
#include <regex>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "mcp/live_server.h"
#include "support/provider_server.h"
#include "support/test_support.h"

namespace quarry::testing {

using mcp_live::LiveServer;
using json = nlohmann::ordered_json;

inline std::string Answer(const std::string& text, const std::vector<std::string>& values) {
  return ToolCallReply(
      {{"call_a", "final_answer", json({{"answer", text}, {"supporting_values", values}}).dump()}});
}

// One model turn that queries and answers from what the query returns.
inline std::string CountAndAnswer() {
  return ToolCallReply(
      {{"call_s", "run_sql", json({{"sql", "SELECT count(*) AS n FROM sales"}}).dump()},
       {"call_a", "final_answer",
        json({{"answer", "There are 2065 orders."}, {"supporting_values", {"2065"}}}).dump()}});
}

inline std::string Sql(const std::string& sql) {
  return ToolCallReply({{"call_s", "run_sql", json({{"sql", sql}}).dump()}});
}

// One raw HTTP/1.1 exchange on a fresh connection (the request as written, "Connection: close"
// expected in it): the whole response, or what came before the server stopped answering.
inline std::string Raw(int port, const std::string& request, int timeout_s = 20) {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(port));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
    close(fd);
    return "";
  }
  timeval tv{timeout_s, 0};
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  if (write(fd, request.data(), request.size()) != static_cast<ssize_t>(request.size())) {
    close(fd);
    return "";
  }
  std::string got;
  char b[4096];
  for (ssize_t n; (n = read(fd, b, sizeof b)) > 0;) got.append(b, static_cast<size_t>(n));
  close(fd);
  return got;
}

// The status of a raw response ("HTTP/1.1 411 Length Required" is 411), or 0.
inline int StatusOf(const std::string& response) {
  std::smatch m;
  return std::regex_search(response, m, std::regex(R"(^HTTP/1\.1 (\d{3}))")) ? std::stoi(m[1]) : 0;
}

// One `quarry serve` on a free port over data/sales.csv, its model the stand-in provider.
class Served {
 public:
  // `data`: what --data names (a file or a server URL); data/sales.csv when empty.
  explicit Served(ProviderServer& provider, std::vector<std::string> extra = {},
                  std::string data = "") {
    if (data.empty()) data = (SourceDir() / "data" / "sales.csv").string();
    std::vector<std::string> args = {"--data",     data,
                                     "--port",     "0",
                                     "--runs-dir", (dir_.path() / "runs").string(),
                                     "--base-url", provider.base_url(),
                                     "--model",    "stand-in",
                                     "--no-cache"};
    args.insert(args.end(), extra.begin(), extra.end());
    server_ = std::make_unique<LiveServer>(
        args, dir_.path(),
        std::vector<std::string>{"HOME=" + dir_.path().string(), "QUARRY_API_KEY=sk-test"},
        "serve");
    url_ = server_->FirstLine(std::chrono::milliseconds(60000));
    std::smatch m;
    if (!std::regex_match(url_, m,
                          std::regex(R"(http://127\.0\.0\.1:(\d+)/\?token=([0-9a-f]{64}))"))) {
      ADD_FAILURE() << "no URL on stdout: '" << url_ << "'; stderr: " << server_->Err();
      return;
    }
    port_ = std::stoi(m[1].str());
    token_ = m[2].str();
  }
  int port() const { return port_; }
  const std::string& token() const { return token_; }
  std::string cookie() const { return "quarry_token_" + std::to_string(port_) + "=" + token_; }
  const std::string& url() const { return url_; }
  std::string host() const { return "127.0.0.1:" + std::to_string(port_); }
  std::string origin() const { return "http://" + host(); }
  const std::filesystem::path& dir() const { return dir_.path(); }
  LiveServer& process() { return *server_; }

  httplib::Client Client() const {
    httplib::Client c("127.0.0.1", port_);
    c.set_read_timeout(std::chrono::seconds(30));
    return c;
  }
  httplib::Headers Bearer() const { return {{"Authorization", "Bearer " + token_}}; }
  // What the page sends: the cookie and the browser's own-origin headers.
  httplib::Headers Page() const {
    return {{"Cookie", "quarry_token_" + std::to_string(port_) + "=" + token_},
            {"Origin", origin()},
            {"Sec-Fetch-Site", "same-origin"}};
  }
  json Post(const std::string& path, const json& body, int* status = nullptr) const {
    auto r = Client().Post(path, Page(), body.dump(), "application/json");
    if (!r) return json(httplib::to_string(r.error()));
    if (status) *status = r->status;
    return json::parse(r->body, nullptr, false);
  }
  // Any method with the page's headers and a JSON body.
  httplib::Result Send(const std::string& method, const std::string& path,
                       const std::string& body) const {
    httplib::Request req;
    req.method = method;
    req.path = path;
    req.headers = Page();
    req.body = body;
    req.set_header("Content-Type", "application/json");
    return Client().send(req);
  }
  json Get(const std::string& path, int* status = nullptr) const {
    auto r = Client().Get(path, Bearer());
    if (!r) return json();
    if (status) *status = r->status;
    return json::parse(r->body, nullptr, false);
  }
  // The run's outcome once it has finished (polled), or null after `timeout`.
  json Outcome(const std::string& run_id,
               std::chrono::milliseconds timeout = std::chrono::milliseconds(30000)) const {
    const auto until = std::chrono::steady_clock::now() + timeout;
    while (std::chrono::steady_clock::now() < until) {
      json run = Get("/api/runs/" + run_id);
      if (run.is_object() && !run.value("running", true)) return run["outcome"];
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    return nullptr;
  }

 private:
  TempDir dir_;
  std::unique_ptr<LiveServer> server_;
  std::string url_;
  int port_ = 0;
  std::string token_;
};

}  // namespace quarry::testing
