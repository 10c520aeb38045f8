// Secrets and ids nobody can guess: the kernel's CSPRNG (getrandom(2)), for the web app's
// token and the MCP HTTP sessions.
#pragma once

#include <sys/random.h>

#include <cerrno>
#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include "quarry/common/common.h"

namespace quarry {

// `bytes` random bytes as lowercase hex (2 * bytes characters). Errors: kInternal when the
// kernel gives no randomness (never expected on Linux >= 3.17).
inline Result<std::string> RandomHex(size_t bytes) {
  std::vector<unsigned char> raw(bytes);
  size_t done = 0;
  while (done < bytes) {
    const ssize_t n = getrandom(raw.data() + done, bytes - done, 0);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0)
      return Fail(Error::Code::kInternal, "getrandom failed: no random bytes for a token");
    done += static_cast<size_t>(n);
  }
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out;
  out.reserve(bytes * 2);
  for (unsigned char c : raw) {
    out += kHex[c >> 4];
    out += kHex[c & 15];
  }
  return out;
}

// Equal strings, compared in time that depends only on their lengths, so a token cannot be
// guessed a byte at a time from how long a refusal takes.
inline bool ConstantTimeEqual(std::string_view a, std::string_view b) {
  unsigned char diff = a.size() == b.size() ? 0 : 1;
  const size_t n = a.size() < b.size() ? a.size() : b.size();
  for (size_t i = 0; i < n; ++i) diff |= static_cast<unsigned char>(a[i] ^ b[i]);
  return diff == 0;
}

}  // namespace quarry
