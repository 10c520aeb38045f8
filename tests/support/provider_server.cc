// The provider stand-in (see provider_server.h): cpp-httplib on a background thread, serving
// scripted replies and recording what the client sent.
#include "support/provider_server.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <stdexcept>

// The CPPHTTPLIB_*_SUPPORT defines Debian's library was built with come from pkg-config
// (tests/CMakeLists.txt); the header must see the same ones as the library.
#include <httplib.h>

namespace quarry::testing {
namespace {

using json = nlohmann::ordered_json;

bool EqualsIgnoreCase(std::string_view a, std::string_view b) {
  return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) {
           return std::tolower(static_cast<unsigned char>(x)) ==
                  std::tolower(static_cast<unsigned char>(y));
         });
}

std::string LoopbackUrl(int port) { return "http://127.0.0.1:" + std::to_string(port) + "/v1"; }

}  // namespace

std::string RecordedRequest::Header(std::string_view name) const {
  for (const auto& [key, value] : headers) {
    if (EqualsIgnoreCase(key, name)) return value;
  }
  return "";
}

nlohmann::ordered_json RecordedRequest::Json() const {
  return nlohmann::ordered_json::parse(body, nullptr, false);
}

namespace {

RecordedRequest Record(const httplib::Request& req) {
  RecordedRequest recorded;
  recorded.method = req.method;
  recorded.path = req.path;
  for (const auto& [key, value] : req.headers) recorded.headers.emplace_back(key, value);
  recorded.body = req.body;
  return recorded;
}

}  // namespace

ProviderServer::ProviderServer() : server_(std::make_unique<httplib::Server>()) {
  server_->Post(".*", [this](const httplib::Request& req, httplib::Response& res) {
    ScriptedResponse reply = Serve(Record(req));
    res.status = reply.status;
    for (const auto& [key, value] : reply.headers) res.set_header(key, value);
    if (!reply.chunks.empty()) {
      const std::string type =
          reply.content_type.empty() ? "text/event-stream" : reply.content_type;
      res.set_chunked_content_provider(
          type, [this, chunks = std::move(reply.chunks), delay = reply.chunk_delay,
                 drop = reply.drop_after_chunks](size_t, httplib::DataSink& sink) {
            for (size_t i = 0; i < chunks.size(); ++i) {
              if (drop && i >= *drop) return false;  // httplib closes the connection mid-body
              if (i > 0 && delay.count() > 0 && !Pause(delay)) return false;
              if (!sink.write(chunks[i].data(), chunks[i].size())) return false;
            }
            if (drop && *drop >= chunks.size()) return false;
            sink.done();
            return true;
          });
      return;
    }
    const std::string type = reply.content_type.empty() ? "application/json" : reply.content_type;
    if (reply.drop_after_bytes) {
      const size_t size = reply.body.size();
      const size_t sent = std::min(*reply.drop_after_bytes, size);
      res.set_content_provider(
          size, type,
          [body = std::move(reply.body), sent](size_t offset, size_t, httplib::DataSink& sink) {
            if (offset < sent) sink.write(body.data() + offset, sent - offset);
            return false;  // httplib closes the connection mid-body
          });
      return;
    }
    res.set_content(reply.body, type);
  });
  server_->Get(".*", [this](const httplib::Request& req, httplib::Response& res) {
    std::lock_guard<std::mutex> lock(mu_);
    requests_.push_back(Record(req));
    if (req.path == "/v1/models" && models_body_) {
      res.status = models_status_;
      res.set_content(*models_body_, "application/json");
      return;
    }
    res.status = 404;
    res.set_content(ErrorBody("provider stand-in: no route for GET " + req.path, 404),
                    "application/json");
  });
  // One request per connection: httplib's stop() otherwise waits out the keep-alive timeout
  // (5 s) of any client still holding a connection when the server is destroyed.
  server_->set_keep_alive_max_count(1);
  port_ = server_->bind_to_any_port("127.0.0.1");
  if (port_ <= 0) throw std::runtime_error("provider stand-in: cannot bind 127.0.0.1");
  thread_ = std::thread([this] { server_->listen_after_bind(); });
  // stop() is a no-op until the listen loop runs, so wait for it before returning; requests
  // sent before then would queue in the backlog anyway.
  while (!server_->is_running()) std::this_thread::sleep_for(std::chrono::milliseconds(1));
}

ProviderServer::~ProviderServer() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
  }
  stopping_cv_.notify_all();
  server_->stop();
  thread_.join();
}

bool ProviderServer::Pause(std::chrono::milliseconds delay) {
  std::unique_lock<std::mutex> lock(mu_);
  return !stopping_cv_.wait_for(lock, delay, [this] { return stopping_; });
}

ScriptedResponse ProviderServer::Serve(RecordedRequest request) {
  std::unique_lock<std::mutex> lock(mu_);
  ScriptedResponse reply;
  const bool chat = request.path == "/v1/chat/completions" || request.path == "/v1/messages";
  if (request.path == "/v1/embeddings" && vector_of_) {
    requests_.push_back(request);
    reply.status = embeddings_status_;
    if (reply.status != 200) {
      reply.body = ErrorBody("provider stand-in: embeddings scripted to fail", reply.status);
      return reply;
    }
    const json doc = request.Json();
    json inputs = doc.is_object() && doc.contains("input") ? doc["input"] : json::array();
    if (inputs.is_string()) inputs = json::array({inputs});
    json data = json::array();
    for (size_t i = 0; i < inputs.size(); ++i) {
      const std::string text =
          inputs[i].is_string() ? inputs[i].get<std::string>() : inputs[i].dump();
      data.push_back({{"object", "embedding"}, {"index", i}, {"embedding", vector_of_(text)}});
    }
    reply.body = json{{"object", "list"},
                      {"data", data},
                      {"model", doc.value("model", "")},
                      {"usage", {{"prompt_tokens", 0}, {"total_tokens", 0}}}}
                     .dump();
    return reply;
  }
  requests_.push_back(std::move(request));
  if (!chat) {
    reply.status = 404;
    reply.body = ErrorBody("provider stand-in: no route for " + requests_.back().path, 404);
    return reply;
  }
  if (queue_.empty()) {
    reply.status = 400;
    reply.body = ErrorBody("provider stand-in: no scripted response left", 400);
    return reply;
  }
  reply = std::move(queue_.front());
  queue_.pop_front();
  if (reply.delay.count() > 0) {
    stopping_cv_.wait_for(lock, reply.delay, [this] { return stopping_; });
  }
  return reply;
}

void ProviderServer::ServeModels(std::string body, int status) {
  std::lock_guard<std::mutex> lock(mu_);
  models_body_ = std::move(body);
  models_status_ = status;
}

void ProviderServer::ServeEmbeddings(VectorOf vector_of, int status) {
  std::lock_guard<std::mutex> lock(mu_);
  vector_of_ = std::move(vector_of);
  embeddings_status_ = status;
}

void ProviderServer::Enqueue(ScriptedResponse response) {
  std::lock_guard<std::mutex> lock(mu_);
  queue_.push_back(std::move(response));
}

std::string ProviderServer::base_url() const { return LoopbackUrl(port_); }

std::vector<RecordedRequest> ProviderServer::requests() const {
  std::lock_guard<std::mutex> lock(mu_);
  return requests_;
}

size_t ProviderServer::pending() const {
  std::lock_guard<std::mutex> lock(mu_);
  return queue_.size();
}

ClosedPort::ClosedPort() {
  fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd_ < 0) throw std::runtime_error("ClosedPort: socket failed");
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = 0;
  socklen_t len = sizeof(addr);
  if (::bind(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0 ||
      ::getsockname(fd_, reinterpret_cast<sockaddr*>(&addr), &len) != 0) {
    ::close(fd_);
    throw std::runtime_error("ClosedPort: bind failed");
  }
  port_ = ntohs(addr.sin_port);
}

ClosedPort::~ClosedPort() { ::close(fd_); }

std::string ClosedPort::base_url() const { return LoopbackUrl(port_); }

std::string CompletionBody(const ScriptedCompletion& completion) {
  json message = json::object();
  message["role"] = "assistant";
  message["content"] = completion.content.empty() && !completion.tool_calls.empty()
                           ? json(nullptr)
                           : json(completion.content);
  if (!completion.tool_calls.empty()) {
    json calls = json::array();
    for (const ScriptedToolCall& call : completion.tool_calls) {
      calls.push_back(json{{"id", call.id},
                           {"type", "function"},
                           {"function", {{"name", call.name}, {"arguments", call.arguments}}}});
    }
    message["tool_calls"] = std::move(calls);
  }
  std::string finish = completion.finish_reason;
  if (finish.empty()) finish = completion.tool_calls.empty() ? "stop" : "tool_calls";

  json usage = json::object();
  usage["prompt_tokens"] = completion.prompt_tokens;
  usage["completion_tokens"] = completion.completion_tokens;
  usage["total_tokens"] = completion.prompt_tokens + completion.completion_tokens;
  usage["prompt_tokens_details"] = json{{"cached_tokens", completion.cached_tokens}};
  if (completion.cost_usd) usage["cost"] = *completion.cost_usd;

  json doc = json::object();
  doc["id"] = "chatcmpl-stand-in";
  doc["object"] = "chat.completion";
  doc["created"] = 1700000000;
  doc["model"] = completion.model;
  doc["choices"] =
      json::array({json{{"index", 0}, {"message", std::move(message)}, {"finish_reason", finish}}});
  doc["usage"] = std::move(usage);
  return doc.dump(-1, ' ', false, json::error_handler_t::replace);
}

std::string TextReply(const std::string& content, int64_t prompt_tokens,
                      int64_t completion_tokens) {
  ScriptedCompletion completion;
  completion.content = content;
  completion.prompt_tokens = prompt_tokens;
  completion.completion_tokens = completion_tokens;
  return CompletionBody(completion);
}

std::string ToolCallReply(std::vector<ScriptedToolCall> tool_calls, int64_t prompt_tokens,
                          int64_t completion_tokens) {
  ScriptedCompletion completion;
  completion.tool_calls = std::move(tool_calls);
  completion.prompt_tokens = prompt_tokens;
  completion.completion_tokens = completion_tokens;
  return CompletionBody(completion);
}

std::string ErrorBody(const std::string& message, int code) {
  json error = json::object();
  error["message"] = message;
  error["type"] = "invalid_request_error";
  if (code != 0) error["code"] = code;
  return json{{"error", std::move(error)}}.dump(-1, ' ', false, json::error_handler_t::replace);
}

}  // namespace quarry::testing
