// `quarry serve` (serve.h): opens the data once, then serves the page, the API and /mcp on
// cpp-httplib until a stop request. Where it listens and who it answers are decided here.
#include <arpa/inet.h>
#include <httplib.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <iostream>

#include "quarry/agent/threads.h"
#include "quarry/common/exit_codes.h"
#include "quarry/common/random.h"
#include "quarry/mcp/mcp.h"
#include "quarry/serve/serve_internal.h"

namespace quarry::serve {

namespace {

// Threads serving connections: each open event stream holds one (at most kMaxStreams), and the
// rest answer the page and the API. Connections past them wait in the pool's queue.
constexpr size_t kServerThreads = internal::kMaxStreams + 16;

// 127.0.0.0/8, ::1 and localhost: only this machine reaches them.
bool Loopback(const std::string& host) {
  in_addr v4{};
  if (inet_pton(AF_INET, host.c_str(), &v4) == 1) return (ntohl(v4.s_addr) >> 24) == 127;
  return host == "::1" || host == "localhost";
}

void Say(const std::string& line) { std::cerr << "quarry serve: " << line << "\n"; }

bool Wildcard(const std::string& host) { return host == "0.0.0.0" || host == "::"; }

// A host as a URL and a Host header write it: an IPv6 address in brackets.
std::string UrlHost(const std::string& host) {
  return host.find(':') != std::string::npos ? "[" + host + "]" : host;
}

// The names other machines reach this one by, when it listens on every address: its interfaces'
// addresses (IPv4 first; no loopback, no link-local IPv6, which needs a zone) and its host name.
std::vector<std::string> NamesOfThisMachine() {
  std::vector<std::string> v4, v6;
  ifaddrs* list = nullptr;
  if (getifaddrs(&list) == 0) {
    for (ifaddrs* a = list; a; a = a->ifa_next) {
      if (!a->ifa_addr || (a->ifa_flags & IFF_LOOPBACK) || !(a->ifa_flags & IFF_UP)) continue;
      char text[INET6_ADDRSTRLEN] = {};
      if (a->ifa_addr->sa_family == AF_INET) {
        const auto* in = reinterpret_cast<const sockaddr_in*>(a->ifa_addr);
        if (inet_ntop(AF_INET, &in->sin_addr, text, sizeof text)) v4.emplace_back(text);
      } else if (a->ifa_addr->sa_family == AF_INET6) {
        const auto* in = reinterpret_cast<const sockaddr_in6*>(a->ifa_addr);
        if (IN6_IS_ADDR_LINKLOCAL(&in->sin6_addr)) continue;
        if (inet_ntop(AF_INET6, &in->sin6_addr, text, sizeof text)) v6.push_back(UrlHost(text));
      }
    }
    freeifaddrs(list);
  }
  v4.insert(v4.end(), v6.begin(), v6.end());
  char name[256] = {};
  if (gethostname(name, sizeof name - 1) == 0 && name[0] != '\0') v4.emplace_back(name);
  return v4;
}

}  // namespace

int Serve(const ServeOptions& options) {
  if (!Loopback(options.host) && !options.allow_remote) {
    Say("refusing to listen on " + options.host +
        ": only 127.0.0.1, ::1 and localhost are served unless --allow-remote is given (anyone "
        "who can reach the port and has the token could query the data)");
    return kExitUsage;
  }
  auto opened = engine::Open(options.data, options.open);
  if (options.stop.stop_requested()) {
    Say("interrupted while opening the data");
    return kExitInterrupted;
  }
  if (!opened) {
    const std::string message = opened.error().message;
    Say(message.substr(0, message.find('\n')));
    return opened.error().code == Error::Code::kUsage ? kExitUsage : kExitData;
  }
  if (options.on_open) options.on_open(**opened);
  engine::SharedEngine shared(**opened);
  // Questions keep their threads there: a store that cannot be opened is said now, not at the
  // first question (the schema and the SQL box still work).
  if (!options.threads_path.empty()) {
    if (auto store = agent::ThreadStore::Open(options.threads_path); !store) {
      Say("warning: questions will fail: " + store.error().message);
    }
  }

  auto token = RandomHex(32);
  if (!token) {
    Say(token.error().message);
    return kExitInternal;
  }
  mcp::ServerOptions tools;
  tools.data = options.data;
  tools.runs_dir = options.runs_dir.string();
  tools.threads_path = options.threads_path;
  tools.allow_python = options.allow_python;
  tools.config = options.config;
  tools.open = options.open;
  tools.make_client = options.make_client;
  mcp::HttpEndpoint mcp_endpoint(tools, shared);

  httplib::Server server;
  server.new_task_queue = [] { return new httplib::ThreadPool(kServerThreads); };
  server.set_payload_max_length(internal::kMaxBodyBytes);
  // Headers and body go out as separate writes: without this, Nagle holds the body back for the
  // client's delayed ACK, 40 ms on every keep-alive request (the page load took 130 ms).
  server.set_tcp_nodelay(true);
  // A client that stops sending (slow loris) is dropped after these.
  server.set_read_timeout(std::chrono::seconds(5));
  server.set_write_timeout(std::chrono::seconds(10));
  server.set_keep_alive_timeout(5);
  // The library's own refusals (413 too large, 404 no route, 414, 400 unreadable) come with no
  // body: each says what happened, as JSON like every other answer.
  server.set_error_handler([](const httplib::Request& req, httplib::Response& res) {
    if (!res.body.empty()) return;
    internal::SecurityHeaders(res);
    std::string message;
    switch (res.status) {
      case 404:
        message = "not found: " + req.path;
        break;
      case 413:
        message =
            "the body is too large: JSON bodies up to 4 MiB (send Content-Type: application/json)";
        break;
      case 414:
        message = "the URL is too long";
        break;
      case 405:
        message = req.method + " is not allowed here";
        break;
      default:
        message = "the request was refused (HTTP " + std::to_string(res.status) + ")";
    }
    res.set_content(nlohmann::json{{"error", message}}.dump(
                        -1, ' ', false, nlohmann::json::error_handler_t::replace),
                    "application/json; charset=utf-8");
  });
  server.set_exception_handler(
      [](const httplib::Request& req, httplib::Response& res, std::exception_ptr error) {
        std::string what = "unknown exception";
        try {
          if (error) std::rethrow_exception(error);
        } catch (const std::exception& e) {
          what = e.what();
        } catch (...) {
        }
        Say("internal error answering " + req.method + " " + req.path + ": " + what);
        internal::SecurityHeaders(res);
        res.status = 500;
        res.set_content(R"({"error":"internal error: the server's log says more"})",
                        "application/json");
      });

  // The library listens with a backlog of 5 (CPPHTTPLIB_LISTEN_BACKLOG, fixed in Debian's build):
  // past five connections arriving at once, Linux drops handshakes and a client's request is
  // lost. The listening socket is kept here and listened on again with a larger backlog.
  int listening = -1;
  server.set_socket_options([&listening](socket_t sock) {
    int yes = 1;
    setsockopt(sock, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof yes);
    listening = sock;
  });
  int port = options.port;
  if (port == 0) {
    port = server.bind_to_any_port(options.host);
  } else if (!server.bind_to_port(options.host, port)) {
    port = -1;
  }
  if (port <= 0) {
    Say("cannot listen on " + options.host + ":" + std::to_string(options.port) +
        " (in use, or not an address of this machine): choose another with --port, or --port 0");
    return kExitUsage;
  }
  if (listening >= 0) ::listen(listening, SOMAXCONN);
  // Off loopback, the names the server is reached by are its own: the address it listens on,
  // or, on every address, each of this machine's. A browser on another machine sends one of
  // them as Host; a rebound DNS name is still refused.
  std::vector<std::string> hosts = options.allow_hosts;
  std::vector<std::string> reached_by;
  if (Wildcard(options.host)) {
    reached_by = NamesOfThisMachine();
  } else if (options.host != "127.0.0.1" && options.host != "::1" && options.host != "localhost") {
    reached_by = {UrlHost(options.host)};  // 192.168.1.20, or a loopback one like 127.0.0.2
  }
  hosts.insert(hosts.end(), reached_by.begin(), reached_by.end());
  internal::Gate gate(*token, port, hosts);
  internal::Runs runs(options, shared);
  internal::RateLimit rate(options.questions_per_minute);
  internal::App app{options, shared, gate, runs, rate, mcp_endpoint};
  internal::Route(server, app);

  // The URL printed is one a browser can open: never the wildcard address itself.
  std::string host = UrlHost(options.host);
  if (Wildcard(options.host)) host = reached_by.empty() ? "127.0.0.1" : reached_by.front();
  const std::string base = "http://" + host + ":" + std::to_string(port);
  if (!Loopback(options.host)) {
    std::string names;
    for (const auto& n : reached_by) names += (names.empty() ? "" : ", ") + n;
    Say("warning: listening on " + options.host +
        ", reachable from other machines; traffic is not encrypted, and anyone with the token "
        "can query the data. Answering to 127.0.0.1, localhost" +
        (names.empty() ? "" : ", " + names) +
        " and the names given with --allow-host (another name is refused as DNS rebinding)");
  }
  Say("serving " + std::to_string(shared.describe().size()) + " table(s) at " + base + " (MCP at " +
      base + "/mcp); Ctrl-C stops");
  if (options.on_listening) options.on_listening(base + "/?token=" + *token);

  const std::stop_callback on_stop(options.stop, [&] {
    runs.StopAll();
    mcp_endpoint.StopAll();
    // The stopped runs write their traces and outcomes first, so pages following them get the
    // outcome before the connections close (a stopped run ends within about a second).
    runs.WaitIdle(std::chrono::milliseconds(2000));
    server.stop();
  });
  if (!options.stop.stop_requested()) server.listen_after_bind();
  runs.StopAll();
  mcp_endpoint.StopAll();
  Say("stopped");
  return kExitInterrupted;
}

}  // namespace quarry::serve
