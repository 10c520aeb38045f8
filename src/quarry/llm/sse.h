// Server-sent events (the WHATWG HTML standard, section 9.2 "Server-sent events", "Parsing an
// event stream"): the framing both live clients' streamed replies arrive in. Debian ships no
// C or C++ parser for it, and the rules fit in one small class. Included only by llm/ and its
// tests.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>

namespace quarry::llm::internal {

// One dispatched event. `type` is the "event:" field, "message" when the event had none;
// `data` the "data:" lines joined by "\n"; `id` the last event id seen so far.
struct SseEvent {
  std::string type;
  std::string data;
  std::string id;
};

// Feeds arbitrary slices of the byte stream (a line or an event may be split anywhere, also
// between the CR and LF of one line ending) and hands out each complete event in order.
// Lines end in CRLF, LF or CR; a leading UTF-8 byte order mark is skipped; ":" lines are
// comments (keep-alives); an event with no data is not dispatched; unknown fields are ignored.
// An event larger than `max_event_bytes` makes Feed return false and the parser refuses
// further input (a hostile server cannot make it hold unbounded memory).
class SseParser {
 public:
  using OnEvent = std::function<void(const SseEvent& event)>;
  explicit SseParser(size_t max_event_bytes = 8u << 20) : max_event_bytes_(max_event_bytes) {}

  // Returns false once an event has exceeded the size limit (nothing more is dispatched).
  bool Feed(std::string_view bytes, const OnEvent& on_event);
  // True when bytes of an event that was never completed are held: a stream that ends now
  // ended mid-event (the standard discards such an event).
  bool pending() const { return !line_.empty() || !data_.empty() || has_data_; }
  // The "retry:" field's reconnection time, when one was sent.
  std::optional<int64_t> retry_ms() const { return retry_ms_; }
  bool overflowed() const { return overflowed_; }

 private:
  void Line(std::string_view line, const OnEvent& on_event);

  size_t max_event_bytes_;
  std::string line_;  // the current line, not yet ended
  std::string type_;
  std::string data_;
  bool has_data_ = false;
  std::string id_;
  std::optional<int64_t> retry_ms_;
  bool skipped_bom_ = false;
  bool after_cr_ = false;  // the last byte was a CR: an LF next ends nothing new
  bool overflowed_ = false;
};

}  // namespace quarry::llm::internal
