// How every engine renders a REAL and a BLOB cell (engine.h, CellKind), so results read the same
// whichever engine produced them.
#include <charconv>
#include <cmath>

#include "quarry/engine/engine_internal.h"

namespace quarry::engine::internal {
namespace {

template <typename F>
std::string ShortestText(F value) {
  if (std::isnan(value)) return "nan";
  if (std::isinf(value)) return value < 0 ? "-inf" : "inf";
  char buf[64];
  const auto [end, ec] = std::to_chars(buf, buf + sizeof buf, value);
  std::string out(buf, ec == std::errc() ? end : buf);
  if (out.find_first_of(".e") == std::string::npos) out += ".0";
  return out;
}

}  // namespace

std::string RealText(double value) { return ShortestText(value); }
std::string RealText(float value) { return ShortestText(value); }

std::string BlobText(std::string_view bytes) {
  static constexpr char kHex[] = "0123456789ABCDEF";
  std::string out;
  for (const char ch : bytes) {
    const auto b = static_cast<unsigned char>(ch);
    if (b >= 32 && b <= 126 && ch != '\\' && ch != '\'' && ch != '"') {
      out += ch;
    } else {
      out += "\\x";
      out += kHex[b >> 4];
      out += kHex[b & 15];
    }
  }
  return out;
}

}  // namespace quarry::engine::internal
