// The event-stream parser (sse.h), following the standard's steps line by line.
#include "quarry/llm/sse.h"

#include <algorithm>

namespace quarry::llm::internal {

bool SseParser::Feed(std::string_view bytes, const OnEvent& on_event) {
  if (overflowed_) return false;
  if (!skipped_bom_) {
    // The BOM may itself arrive split; hold back until three bytes have been seen.
    static constexpr std::string_view kBom = "\xEF\xBB\xBF";
    std::string head = line_ + std::string(bytes.substr(0, 3));
    if (head.size() < 3 && kBom.starts_with(head)) {
      line_ = head;
      return true;
    }
    skipped_bom_ = true;
    if (head.starts_with(kBom)) {
      const size_t held = line_.size();
      line_.clear();
      bytes.remove_prefix(3 - held);
    }
  }
  size_t start = 0;
  for (size_t i = 0; i < bytes.size(); ++i) {
    const char c = bytes[i];
    if (c != '\r' && c != '\n') {
      after_cr_ = false;
      continue;
    }
    if (c == '\n' && after_cr_ && i == start) {  // the LF of a CRLF split across two feeds
      after_cr_ = false;
      start = i + 1;
      continue;
    }
    line_.append(bytes.substr(start, i - start));
    Line(line_, on_event);
    line_.clear();
    if (overflowed_) return false;
    after_cr_ = c == '\r';
    if (c == '\r' && i + 1 < bytes.size() && bytes[i + 1] == '\n') {
      ++i;
      after_cr_ = false;
    }
    start = i + 1;
  }
  line_.append(bytes.substr(start));
  if (line_.size() + data_.size() > max_event_bytes_) {
    overflowed_ = true;
    return false;
  }
  return true;
}

void SseParser::Line(std::string_view line, const OnEvent& on_event) {
  if (line.empty()) {
    if (has_data_) {
      SseEvent event{type_.empty() ? "message" : type_, data_, id_};
      if (!event.data.empty() && event.data.back() == '\n') event.data.pop_back();
      on_event(event);
    }
    type_.clear();
    data_.clear();
    has_data_ = false;
    return;
  }
  if (line.front() == ':') return;  // a comment: servers send them as keep-alives
  std::string_view field = line;
  std::string_view value;
  if (const size_t colon = line.find(':'); colon != std::string_view::npos) {
    field = line.substr(0, colon);
    value = line.substr(colon + 1);
    if (value.starts_with(' ')) value.remove_prefix(1);
  }
  if (field == "event") {
    type_ = value;
  } else if (field == "data") {
    data_.append(value);
    data_.push_back('\n');
    has_data_ = true;
    if (data_.size() > max_event_bytes_) overflowed_ = true;
  } else if (field == "id") {
    if (value.find('\0') == std::string_view::npos) id_ = value;
  } else if (field == "retry") {
    if (!value.empty() && value.size() <= 15 &&
        std::all_of(value.begin(), value.end(), [](char d) { return d >= '0' && d <= '9'; })) {
      retry_ms_ = std::stoll(std::string(value));
    }
  }
}

}  // namespace quarry::llm::internal
