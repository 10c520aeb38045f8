// The transport under the model clients: a libcurl POST (or GET) with explicit timeouts, and
// the backoff arithmetic used between attempts (see http_internal.h).
#include <algorithm>
#include <cctype>
#include <charconv>
#include <chrono>
#include <mutex>

#include "quarry/common/text.h"
#include "quarry/llm/http_internal.h"

namespace quarry::llm::internal {
namespace {

struct SlistDeleter {
  void operator()(curl_slist* list) const { curl_slist_free_all(list); }
};
using SlistPtr = std::unique_ptr<curl_slist, SlistDeleter>;

void GlobalInitOnce() {
  static std::once_flag once;
  std::call_once(once, [] { curl_global_init(CURL_GLOBAL_DEFAULT); });
}

// What the callbacks of one exchange share.
struct Exchange {
  CURL* curl = nullptr;
  const HttpPost* post = nullptr;
  HttpReply* reply = nullptr;
  std::chrono::steady_clock::time_point start;
  int64_t reported_s = 0;  // whole seconds already passed to on_wait
};

// A streamed reply: a 2xx whose Content-Type is text/event-stream, when the caller reads one.
bool Streams(const Exchange& exchange) {
  if (!exchange.post->on_body) return false;
  long status = 0;
  curl_easy_getinfo(exchange.curl, CURLINFO_RESPONSE_CODE, &status);
  return status >= 200 && status < 300 &&
         exchange.reply->content_type.starts_with("text/event-stream");
}

size_t OnBody(char* data, size_t size, size_t count, void* user) {
  auto* exchange = static_cast<Exchange*>(user);
  if (Streams(*exchange)) {
    HttpReply& reply = *exchange->reply;
    if (reply.streamed_bytes + size * count > exchange->post->max_reply_bytes) {
      reply.too_large = true;
      return 0;
    }
    reply.streamed_bytes += size * count;
    if (!exchange->post->on_body(std::string_view(data, size * count))) {
      reply.aborted = true;
      return 0;
    }
    return size * count;
  }
  std::string& body = exchange->reply->body;
  if (body.size() + size * count > exchange->post->max_reply_bytes) {
    exchange->reply->too_large = true;
    return 0;  // CURLE_WRITE_ERROR: a runaway reply is not held in memory
  }
  body.append(data, size * count);
  return size * count;
}

// libcurl calls this at least once a second, also while no byte moves, which bounds how long a
// stop request waits.
int OnProgress(void* user, curl_off_t, curl_off_t, curl_off_t, curl_off_t) {
  auto* exchange = static_cast<Exchange*>(user);
  if (exchange->post->stop.stop_requested()) {
    exchange->reply->cancelled = true;
    return 1;  // CURLE_ABORTED_BY_CALLBACK
  }
  if (exchange->post->on_wait) {
    const int64_t ms = std::chrono::duration_cast<std::chrono::milliseconds>(
                           std::chrono::steady_clock::now() - exchange->start)
                           .count();
    if (ms / 1000 > exchange->reported_s) {
      exchange->reported_s = ms / 1000;
      exchange->post->on_wait(ms);
    }
  }
  return 0;
}

bool NameIs(std::string_view name, std::string_view wanted) {
  return name.size() == wanted.size() &&
         std::equal(name.begin(), name.end(), wanted.begin(), [](char a, char b) {
           return std::tolower(static_cast<unsigned char>(a)) == b;
         });
}

size_t OnHeader(char* data, size_t size, size_t count, void* user) {
  auto* reply = static_cast<HttpReply*>(user);
  std::string_view line(data, size * count);
  // A new status line starts a new header block (after "100 Continue" or a redirect); only
  // the final reply's headers count.
  if (line.starts_with("HTTP/")) {
    reply->retry_after.clear();
    reply->retry_after_ms.clear();
    reply->content_type.clear();
    return size * count;
  }
  size_t colon = line.find(':');
  if (colon == std::string_view::npos) return size * count;
  std::string_view name = Trim(line.substr(0, colon));
  std::string_view value = Trim(line.substr(colon + 1));
  if (NameIs(name, "retry-after")) reply->retry_after = value;
  if (NameIs(name, "retry-after-ms")) reply->retry_after_ms = value;
  if (NameIs(name, "content-type")) {
    reply->content_type = value;
    for (char& c : reply->content_type)
      c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  }
  return size * count;
}

std::optional<int64_t> ParseNonNegative(std::string_view s) {
  int64_t value = 0;
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), value);
  if (ec != std::errc() || end != s.data() + s.size() || value < 0) return std::nullopt;
  return value;
}

}  // namespace

HttpSession::HttpSession() {
  GlobalInitOnce();
  curl_.reset(curl_easy_init());
}

HttpReply HttpSession::Post(const HttpPost& post) { return Send(post, false); }

HttpReply HttpSession::Get(const HttpPost& request) { return Send(request, true); }

HttpReply HttpSession::Send(const HttpPost& post, bool get) {
  HttpReply reply;
  CURL* curl = curl_.get();
  if (curl == nullptr) {
    reply.network_error = "curl_easy_init failed";
    return reply;
  }
  curl_easy_reset(curl);

  SlistPtr headers;
  for (const std::string& h : post.headers) {
    curl_slist* appended = curl_slist_append(headers.get(), h.c_str());
    if (appended == nullptr) {
      reply.network_error = "out of memory building request headers";
      return reply;
    }
    if (!headers) headers.reset(appended);  // later appends return the same head
  }

  char error_buffer[CURL_ERROR_SIZE] = {0};
  Exchange exchange{curl, &post, &reply, std::chrono::steady_clock::now(), 0};
  curl_easy_setopt(curl, CURLOPT_URL, post.url.c_str());
  curl_easy_setopt(curl, CURLOPT_HTTPHEADER, headers.get());
  if (get) {
    curl_easy_setopt(curl, CURLOPT_HTTPGET, 1L);
  } else {
    curl_easy_setopt(curl, CURLOPT_POST, 1L);
    curl_easy_setopt(curl, CURLOPT_POSTFIELDS, post.body.data());
    curl_easy_setopt(curl, CURLOPT_POSTFIELDSIZE_LARGE, static_cast<curl_off_t>(post.body.size()));
  }
  curl_easy_setopt(curl, CURLOPT_WRITEFUNCTION, &OnBody);
  curl_easy_setopt(curl, CURLOPT_WRITEDATA, &exchange);
  curl_easy_setopt(curl, CURLOPT_XFERINFOFUNCTION, &OnProgress);
  curl_easy_setopt(curl, CURLOPT_XFERINFODATA, &exchange);
  curl_easy_setopt(curl, CURLOPT_NOPROGRESS, 0L);
  curl_easy_setopt(curl, CURLOPT_HEADERFUNCTION, &OnHeader);
  curl_easy_setopt(curl, CURLOPT_HEADERDATA, &reply);
  curl_easy_setopt(curl, CURLOPT_ERRORBUFFER, error_buffer);
  curl_easy_setopt(curl, CURLOPT_TIMEOUT_MS, static_cast<long>(post.timeout_ms));
  curl_easy_setopt(curl, CURLOPT_CONNECTTIMEOUT_MS, static_cast<long>(post.connect_timeout_ms));
  // Timeouts must not use SIGALRM: the agent runs other threads and children.
  curl_easy_setopt(curl, CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(curl, CURLOPT_ACCEPT_ENCODING, "");
  curl_easy_setopt(curl, CURLOPT_USERAGENT, "quarry/0.1");
  // A redirected POST would silently become a GET or resend the credential elsewhere.
  curl_easy_setopt(curl, CURLOPT_FOLLOWLOCATION, 0L);

  CURLcode code = curl_easy_perform(curl);
  curl_easy_setopt(curl, CURLOPT_ERRORBUFFER, nullptr);
  if (reply.cancelled && code == CURLE_OK) reply.cancelled = false;  // finished first
  if (code != CURLE_OK) {
    reply.status = 0;
    reply.timed_out = code == CURLE_OPERATION_TIMEDOUT;
    reply.network_error = error_buffer[0] != '\0' ? error_buffer : curl_easy_strerror(code);
    return reply;
  }
  long status = 0;
  curl_easy_getinfo(curl, CURLINFO_RESPONSE_CODE, &status);
  reply.status = status;
  return reply;
}

bool IsRetryableStatus(long status) { return status == 429 || (status >= 500 && status < 600); }

std::optional<int64_t> ServerRetryDelayMs(std::string_view retry_after,
                                          std::string_view retry_after_ms, std::time_t now) {
  if (auto ms = ParseNonNegative(Trim(retry_after_ms))) return ms;
  retry_after = Trim(retry_after);
  if (retry_after.empty()) return std::nullopt;
  if (auto seconds = ParseNonNegative(retry_after)) {
    if (*seconds > INT64_MAX / 1000) return INT64_MAX;
    return *seconds * 1000;
  }
  std::string date(retry_after);
  std::time_t when = curl_getdate(date.c_str(), nullptr);
  if (when == -1) return std::nullopt;
  return when <= now ? 0 : static_cast<int64_t>(when - now) * 1000;
}

int64_t BackoffDelayMs(const RetryPolicy& policy, int retry, std::mt19937_64& rng) {
  int64_t ceiling = std::max<int64_t>(policy.base_delay_ms, 0);
  for (int i = 1; i < retry && ceiling < policy.max_delay_ms; ++i) ceiling *= 2;
  ceiling = std::min(ceiling, policy.max_delay_ms);
  if (ceiling <= 0) return 0;
  return std::uniform_int_distribution<int64_t>(0, ceiling)(rng);
}

}  // namespace quarry::llm::internal
