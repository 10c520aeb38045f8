// Server URLs (mysql://, clickhouse://): the authority, path and parameters read the same way
// for every engine that takes one; each engine then checks what it accepts.
#include <cstdio>
#include <cstdlib>

#include "quarry/common/text.h"
#include "quarry/engine/engine_internal.h"

namespace quarry::engine::internal {
namespace {

std::string Decode(std::string_view text, bool* ok) {
  std::string out;
  for (size_t i = 0; i < text.size(); ++i) {
    if (text[i] == '%') {
      if (i + 2 >= text.size() || !std::isxdigit(static_cast<unsigned char>(text[i + 1])) ||
          !std::isxdigit(static_cast<unsigned char>(text[i + 2]))) {
        *ok = false;
        return out;
      }
      out += static_cast<char>(std::stoi(std::string(text.substr(i + 1, 2)), nullptr, 16));
      i += 2;
    } else {
      out += text[i];
    }
  }
  return out;
}

}  // namespace

std::string UrlEncode(std::string_view text) {
  std::string out;
  for (unsigned char c : text) {
    if (std::isalnum(c) || c == '-' || c == '.' || c == '_' || c == '~' || c == '/') {
      out += static_cast<char>(c);
    } else {
      char buf[4];
      std::snprintf(buf, sizeof buf, "%%%02X", c);
      out += buf;
    }
  }
  return out;
}

std::string UrlScheme(std::string_view spec) {
  const size_t colon = spec.find("://");
  return colon == std::string_view::npos ? "" : Lower(std::string(spec.substr(0, colon)));
}

std::string ServerUrlAuthority(const ServerUrl& url) {
  std::string out;
  if (!url.user.empty()) out += UrlEncode(url.user) + "@";
  out += url.host.find(':') != std::string::npos ? "[" + url.host + "]" : UrlEncode(url.host);
  if (url.port != 0) out += ":" + std::to_string(url.port);
  return out;
}

Result<ServerUrl> ParseServerUrl(std::string_view spec, std::string_view usage) {
  ServerUrl out;
  out.scheme = UrlScheme(spec);
  const size_t sep = spec.find("://");
  std::string_view rest = sep == std::string_view::npos ? spec : spec.substr(sep + 3);
  const std::string unread = "cannot read the server URL " + out.scheme + "://…: ";
  // A fragment is no part of a server URL; what follows '#' (a password, by mistake?) is not
  // repeated.
  if (rest.find('#') != std::string_view::npos) {
    return Fail(Error::Code::kUsage,
                unread + "it holds a '#'; write %23 where a name holds one" + std::string(usage));
  }
  const size_t slash = rest.find_first_of("/?");
  std::string_view authority = rest.substr(0, slash);
  std::string_view path = slash == std::string_view::npos ? "" : rest.substr(slash);
  bool ok = true;
  if (const size_t at = authority.rfind('@'); at != std::string_view::npos) {
    const std::string_view userinfo = authority.substr(0, at);
    if (userinfo.find(':') != std::string_view::npos) {
      // Nothing after the password is read: the caller refuses the URL unrepeated.
      out.user = Decode(userinfo.substr(0, userinfo.find(':')), &ok);
      out.password = true;
      return out;
    }
    out.user = Decode(userinfo, &ok);
    authority = authority.substr(at + 1);
  }
  std::string_view host = authority;
  if (host.starts_with('[')) {
    const size_t close = host.find(']');
    if (close == std::string_view::npos) {
      return Fail(Error::Code::kUsage,
                  unread + "an IPv6 host opens '[' and never closes it" + std::string(usage));
    }
    out.host = std::string(host.substr(1, close - 1));
    host = host.substr(close + 1);
    if (!host.empty() && host.front() != ':') ok = false;
    host = host.empty() ? host : host.substr(1);
  } else {
    const size_t colon = host.rfind(':');
    out.host = Decode(host.substr(0, colon), &ok);
    host = colon == std::string_view::npos ? std::string_view() : host.substr(colon + 1);
  }
  if (!host.empty()) {
    const std::string digits(host);  // strtol's end points into it: it must outlive the check
    char* end = nullptr;
    const long port = std::strtol(digits.c_str(), &end, 10);
    if (*end != '\0' || port <= 0 || port > 65535) {
      return Fail(Error::Code::kUsage,
                  unread + "the port must be a number from 1 to 65535" + std::string(usage));
    }
    out.port = static_cast<unsigned>(port);
  }
  std::string_view query;
  if (const size_t q = path.find('?'); q != std::string_view::npos) {
    query = path.substr(q + 1);
    path = path.substr(0, q);
  }
  if (path.starts_with('/')) out.path = Decode(path.substr(1), &ok);
  while (!query.empty()) {
    const size_t amp = query.find('&');
    const std::string_view pair = query.substr(0, amp);
    query = amp == std::string_view::npos ? std::string_view() : query.substr(amp + 1);
    const size_t eq = pair.find('=');
    std::string key = Lower(std::string(pair.substr(0, eq)));
    for (const auto& [seen, value] : out.params) {
      if (seen == key) {
        return Fail(Error::Code::kUsage,
                    unread + "the parameter '" + key + "' is given twice" + std::string(usage));
      }
    }
    out.params.emplace_back(std::move(key),
                            eq == std::string_view::npos ? "" : Decode(pair.substr(eq + 1), &ok));
  }
  if (!ok) {
    return Fail(Error::Code::kUsage,
                unread + "a '%' is not followed by two hex digits" + std::string(usage));
  }
  return out;
}

std::string UnknownUrlParameter(const std::string& key, std::string_view takes) {
  const bool name = !key.empty() && key.size() <= 40 &&
                    key.find_first_not_of("abcdefghijklmnopqrstuvwxyz_-") == std::string::npos;
  return "the server URL has the parameter " + (name ? "'" + key + "'" : std::string("…")) +
         " quarry does not know; " + std::string(takes);
}

}  // namespace quarry::engine::internal
