// Who may talk to the web app (serve_internal.h, Gate): the token, the Host header against DNS
// rebinding, the origin of state-changing requests against CSRF, and the headers that keep the
// page from being framed, sniffed or made to load anything from elsewhere.
#include <httplib.h>

#include <algorithm>

#include "quarry/common/random.h"
#include "quarry/common/text.h"
#include "quarry/serve/serve_internal.h"

namespace quarry::serve::internal {

namespace {

// The value of one cookie in a Cookie header ("a=1; quarry_token=abc"), or "".
std::string CookieValue(std::string_view header, std::string_view name) {
  while (!header.empty()) {
    const size_t end = std::min(header.find(';'), header.size());
    std::string_view pair = header.substr(0, end);
    header.remove_prefix(std::min(end + 1, header.size()));
    while (!pair.empty() && pair.front() == ' ') pair.remove_prefix(1);
    const size_t eq = pair.find('=');
    if (eq != std::string_view::npos && pair.substr(0, eq) == name) {
      return std::string(pair.substr(eq + 1));
    }
  }
  return "";
}

}  // namespace

Gate::Gate(std::string token, int port, std::vector<std::string> allow_hosts)
    : token_(std::move(token)), port_(port), cookie_name_(kCookiePrefix + std::to_string(port)) {
  const std::string p = ":" + std::to_string(port);
  for (std::string h : {"127.0.0.1", "localhost", "[::1]"}) {
    hosts_.push_back(h + p);
    if (port == 80) hosts_.push_back(h);
  }
  for (const auto& h : allow_hosts) {
    const std::string lower = Lower(h);
    hosts_.push_back(lower);
    hosts_.push_back(lower + p);
  }
}

bool Gate::HostAllowed(std::string_view host) const {
  const std::string lower = Lower(host);
  return std::ranges::find(hosts_, lower) != hosts_.end();
}

bool Gate::SameOrigin(const httplib::Request& request) const {
  const bool bearer = Authenticate(request) == Auth::kBearer;
  const std::string site = request.get_header_value("Sec-Fetch-Site");
  const bool has_origin = request.has_header("Origin");
  if (has_origin) {
    // "http://127.0.0.1:8765", or "https://quarry.example" through a TLS proxy: a scheme, then
    // a host this server answers to (a rebinding page's name never is one).
    const std::string origin = Lower(request.get_header_value("Origin"));
    const size_t after = origin.starts_with("http://") ? 7 : origin.starts_with("https://") ? 8 : 0;
    if (after == 0 || !HostAllowed(origin.substr(after))) return false;
  }
  if (!site.empty()) return site == "same-origin" || (bearer && site == "none");
  return has_origin || bearer;
}

Gate::Auth Gate::Authenticate(const httplib::Request& request) const {
  // RFC 9110 11.1: the scheme's name is case-insensitive ("bearer" is Bearer).
  const std::string authorization = request.get_header_value("Authorization");
  if (Lower(std::string_view(authorization).substr(0, 7)) == "bearer " &&
      ConstantTimeEqual(Trim(std::string_view(authorization).substr(7)), token_)) {
    return Auth::kBearer;
  }
  if (ConstantTimeEqual(CookieValue(request.get_header_value("Cookie"), cookie_name_), token_)) {
    return Auth::kCookie;
  }
  return Auth::kNone;
}

std::string Gate::Cookie() const {
  return cookie_name_ + "=" + token_ + "; HttpOnly; SameSite=Strict; Path=/";
}

void SecurityHeaders(httplib::Response& response) {
  // The page is three files of our own: nothing inline, nothing from elsewhere. Figures are
  // SVG/PNG files shown with <img> (a script in an SVG does not run there); downloads are
  // blob: URLs the page builds.
  response.set_header("Content-Security-Policy",
                      "default-src 'none'; script-src 'self'; style-src 'self'; "
                      "img-src 'self' blob: data:; connect-src 'self'; form-action 'self'; "
                      "base-uri 'none'; frame-ancestors 'none'");
  response.set_header("X-Content-Type-Options", "nosniff");
  response.set_header("Referrer-Policy", "no-referrer");
  response.set_header("X-Frame-Options", "DENY");
  response.set_header("Cross-Origin-Opener-Policy", "same-origin");
  response.set_header("Cross-Origin-Resource-Policy", "same-origin");
  response.set_header("Cache-Control", "no-store");
}

bool RateLimit::Take(const std::string& client) {
  const auto now = std::chrono::steady_clock::now();
  std::lock_guard lock(mu_);
  auto& times = seen_[client];
  while (!times.empty() && now - times.front() > std::chrono::minutes(1)) times.pop_front();
  if (static_cast<int>(times.size()) >= per_minute_) return false;
  times.push_back(now);
  return true;
}

}  // namespace quarry::serve::internal
