// 8-bit encodings DuckDB cannot read itself. A CSV saved by Excel on Windows is Windows-1252:
// its 0x80-0x9F bytes are letters and signs (0x96 an en dash, 0x92 a right quote, 0x80 the euro)
// where Latin-1 has control codes, and DuckDB's Latin-1 reader refuses the file. Such a file is
// transcoded to UTF-8 with glibc's iconv into a private copy that DuckDB reads instead; the
// user's file is never written.
#include <iconv.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <memory>

#include "quarry/engine/engine_internal.h"

namespace quarry::engine::internal {
namespace {

// How much of a file the detection reads: enough for any real header and many rows; a file
// whose first non-UTF-8 byte lies further in is left to DuckDB's own check (and its Latin-1
// retry), as before.
constexpr size_t kDetectBytes = 64u << 20;

// The bytes Windows-1252 leaves undefined (iconv refuses them): a file holding one is not it.
bool UndefinedInCp1252(unsigned char b) {
  return b == 0x81 || b == 0x8D || b == 0x8F || b == 0x90 || b == 0x9D;
}

// The length of the UTF-8 sequence starting at `p` (at most `n` bytes left), 0 when invalid:
// no overlong forms, no surrogates, nothing past U+10FFFF (RFC 3629).
size_t Utf8Length(const unsigned char* p, size_t n) {
  const unsigned char b = p[0];
  if (b < 0x80) return 1;
  size_t len = 0;
  unsigned char lo = 0x80, hi = 0xBF;
  if (b >= 0xC2 && b <= 0xDF) {
    len = 2;
  } else if (b >= 0xE0 && b <= 0xEF) {
    len = 3;
    if (b == 0xE0) lo = 0xA0;
    if (b == 0xED) hi = 0x9F;
  } else if (b >= 0xF0 && b <= 0xF4) {
    len = 4;
    if (b == 0xF0) lo = 0x90;
    if (b == 0xF4) hi = 0x8F;
  } else {
    return 0;
  }
  if (n < len) return n == 0 ? 0 : len;  // cut by the end of the read: not judged here
  if (p[1] < lo || p[1] > hi) return 0;
  for (size_t i = 2; i < len; ++i) {
    if (p[i] < 0x80 || p[i] > 0xBF) return 0;
  }
  return len;
}

}  // namespace

std::optional<std::string> DetectWindows1252(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return std::nullopt;
  std::string bytes(kDetectBytes, '\0');
  in.read(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  bytes.resize(static_cast<size_t>(in.gcount()));
  const auto* p = reinterpret_cast<const unsigned char*>(bytes.data());
  const size_t n = bytes.size();
  // A UTF-16 byte-order mark: the CSV loader's own check reads it.
  if (n >= 2 && ((p[0] == 0xFF && p[1] == 0xFE) || (p[0] == 0xFE && p[1] == 0xFF))) {
    return std::nullopt;
  }
  bool valid = true;
  for (size_t i = 0; i < n;) {
    const size_t len = Utf8Length(p + i, n - i);
    if (len == 0) {
      valid = false;
      break;
    }
    i += len;
  }
  if (valid) return std::nullopt;
  bool windows = false;
  for (size_t i = 0; i < n; ++i) {
    if (p[i] >= 0x80 && p[i] <= 0x9F) {
      if (UndefinedInCp1252(p[i])) return std::nullopt;
      windows = true;
    }
  }
  return windows ? std::optional<std::string>("CP1252") : std::nullopt;
}

std::optional<std::string> IconvEncoding(std::string_view name) {
  std::string e(name);
  for (char& c : e) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  if (e == "cp1252" || e == "windows-1252" || e == "win1252") return "CP1252";
  if (e == "iso-8859-15" || e == "latin-9" || e == "latin9") return "ISO-8859-15";
  return std::nullopt;
}

std::string EncodingName(const std::string& iconv_name) {
  return iconv_name == "CP1252" ? "Windows-1252 (cp1252)" : iconv_name;
}

std::string TranscodedNote(const std::string& iconv_name, bool named) {
  return "the file is " + EncodingName(iconv_name) + ", not UTF-8 (" +
         (named ? std::string("as ?encoding= says") : "its bytes 0x80-0x9F say so") +
         "): read through a UTF-8 copy made with iconv; the file is unchanged";
}

Result<void> TranscodeToUtf8(const std::filesystem::path& from, const std::filesystem::path& to,
                             const std::string& encoding) {
  const iconv_t cd = ::iconv_open("UTF-8", encoding.c_str());
  if (cd == reinterpret_cast<iconv_t>(-1)) {
    return Fail(Error::Code::kData, "iconv cannot read " + encoding + ": " + std::strerror(errno));
  }
  const std::unique_ptr<void, int (*)(iconv_t)> closer(cd, &::iconv_close);
  std::ifstream in(from, std::ios::binary);
  if (!in) return Fail(Error::Code::kData, "cannot read " + from.string());
  std::ofstream out(to, std::ios::binary | std::ios::trunc);
  if (!out) return Fail(Error::Code::kData, "cannot write the UTF-8 copy " + to.string());
  std::string input(1u << 16, '\0');
  std::string output(4u << 16, '\0');  // an 8-bit character is at most 3 bytes of UTF-8
  int64_t offset = 0;
  while (in) {
    in.read(input.data(), static_cast<std::streamsize>(input.size()));
    size_t left = static_cast<size_t>(in.gcount());
    if (left == 0) break;
    char* src = input.data();
    char* dst = output.data();
    size_t room = output.size();
    if (::iconv(cd, &src, &left, &dst, &room) == static_cast<size_t>(-1)) {
      const int64_t at = offset + (src - input.data());
      return Fail(Error::Code::kData,
                  "byte " + std::to_string(at) + " of the file is no " + EncodingName(encoding) +
                      " character: give the encoding as FILE?encoding=latin-1 (or utf-8)");
    }
    out.write(output.data(), output.size() - room);
    offset += src - input.data();
  }
  if (!out.flush()) return Fail(Error::Code::kData, "cannot write the UTF-8 copy " + to.string());
  return {};
}

}  // namespace quarry::engine::internal
