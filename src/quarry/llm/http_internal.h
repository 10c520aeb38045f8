// Internals of the OpenAI-compatible client: one libcurl POST per call on a reused handle, and
// the retry arithmetic (which replies are retried, how long to wait). Included only by llm/
// and its tests.
#pragma once

#include <curl/curl.h>

#include <cstdint>
#include <ctime>
#include <functional>
#include <memory>
#include <optional>
#include <random>
#include <string>
#include <string_view>
#include <vector>

#include "quarry/llm/llm.h"

namespace quarry::llm::internal {

struct HttpPost {
  std::string url;
  std::vector<std::string> headers;  // "Name: value"; holds the credential, never logged
  std::string body;
  int64_t timeout_ms = 0;
  int64_t connect_timeout_ms = 0;
  // A stop request aborts the exchange within about a second (libcurl's progress callback).
  StopToken stop{};
  // Called about once a second while the exchange runs, with the milliseconds since it began.
  std::function<void(int64_t elapsed_ms)> on_wait{};
  // A reply body past this many bytes is not read: the exchange fails with too_large.
  size_t max_reply_bytes = 8u << 20;
  // When set, the body of a 2xx reply whose Content-Type is text/event-stream goes here piece
  // by piece as it arrives, instead of into HttpReply::body (any other reply is collected as
  // usual). Returning false aborts the exchange (HttpReply::aborted). max_reply_bytes bounds
  // the streamed total as well.
  std::function<bool(std::string_view piece)> on_body{};
};

// What one attempt produced: an HTTP reply (status > 0) or a transport failure (status 0).
struct HttpReply {
  long status = 0;
  std::string body;
  std::string retry_after;     // the Retry-After header of the final reply, "" when absent
  std::string retry_after_ms;  // OpenAI's millisecond variant "retry-after-ms"
  bool timed_out = false;      // transport failure was a timeout
  bool cancelled = false;      // HttpPost::stop was requested; the exchange was aborted
  bool too_large = false;      // the body passed HttpPost::max_reply_bytes; reading stopped
  bool aborted = false;        // HttpPost::on_body returned false; the exchange was ended
  std::string content_type;    // the final reply's Content-Type, lower-cased ("" when absent)
  size_t streamed_bytes = 0;   // bytes handed to HttpPost::on_body
  std::string network_error;   // curl's description when status == 0
};

// One CURL easy handle, reset between calls so its connection cache survives (keep-alive to
// the provider). Not thread safe. Runs curl_global_init once per process.
class HttpSession {
 public:
  HttpSession();
  HttpReply Post(const HttpPost& post);
  // The same exchange as a GET (a model list): `request.body` is not sent.
  HttpReply Get(const HttpPost& request);

 private:
  HttpReply Send(const HttpPost& post, bool get);
  struct CurlDeleter {
    void operator()(CURL* curl) const { curl_easy_cleanup(curl); }
  };
  std::unique_ptr<CURL, CurlDeleter> curl_;
};

// 429 and 5xx. Every other 4xx is the caller's fault and repeats identically if retried.
bool IsRetryableStatus(long status);

// The wait the server asked for, from "retry-after-ms" or Retry-After (delta-seconds or an
// HTTP-date, RFC 9110 section 10.2.3); a date in the past means 0. nullopt when both are
// absent or unparseable.
std::optional<int64_t> ServerRetryDelayMs(std::string_view retry_after,
                                          std::string_view retry_after_ms, std::time_t now);

// Exponential backoff with full jitter (AWS Architecture Blog, "Exponential Backoff And
// Jitter", 2015): uniform in [0, min(max_delay_ms, base_delay_ms * 2^(retry - 1))], retry >= 1.
int64_t BackoffDelayMs(const RetryPolicy& policy, int retry, std::mt19937_64& rng);

}  // namespace quarry::llm::internal
