// 8-bit encodings DuckDB cannot read itself. A CSV saved by Excel on Windows is Windows-1252:
// its 0x80-0x9F bytes are letters and signs (0x96 an en dash, 0x92 a right quote, 0x80 the euro)
// where Latin-1 has control codes, and DuckDB's Latin-1 reader refuses the file. Such a file is
// transcoded to UTF-8 with glibc's iconv into a private copy that DuckDB reads instead; the
// user's file is never written.
#include <iconv.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <memory>
#include <string_view>

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

// Whether a file that starts with `head` is gzip or zstd data.
bool Compressed(std::string_view head) {
  return head.starts_with("\x1f\x8b") || head.starts_with("\x28\xb5\x2f\xfd");
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
  // Compressed bytes say nothing of the text's encoding: DuckDB decompresses as it reads, and
  // the loader's Latin-1 retry covers text that is not UTF-8.
  if (Compressed(bytes)) return std::nullopt;
  // Bytes outside any valid UTF-8 sequence: one of 0x80-0x9F that Windows-1252 defines says
  // Windows-1252 (Latin-1 has control codes there). Lines that are valid UTF-8 stay as they
  // are when the copy is made, so a UTF-8 file with one line pasted from Excel reads right.
  bool windows = false;
  for (size_t i = 0; i < n;) {
    const size_t len = Utf8Length(p + i, n - i);
    if (len > 0) {
      i += len;
      continue;
    }
    if (p[i] >= 0x80 && p[i] <= 0x9F && !UndefinedInCp1252(p[i])) windows = true;
    ++i;
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

std::string TranscodedNote(const std::string& iconv_name, bool named,
                           const TranscodeCounts& counts) {
  std::string note = "the file is " + EncodingName(iconv_name) + ", not UTF-8 (" +
                     (named ? std::string("as ?encoding= says") : "its bytes 0x80-0x9F say so") +
                     "): read through a UTF-8 copy made with iconv; the file is unchanged";
  if (counts.utf8_lines > 0) {
    note += "; " + std::to_string(counts.utf8_lines) + " of its lines were UTF-8 already and " +
            std::to_string(counts.converted_lines) + " " + EncodingName(iconv_name) +
            ", so each line was read in its own encoding";
  }
  if (counts.replaced > 0) {
    note += "; " + std::to_string(counts.replaced) + (counts.replaced == 1 ? " byte" : " bytes") +
            " that " + EncodingName(iconv_name) +
            " leaves undefined (0x81, 0x8D, 0x8F, 0x90, 0x9D) became U+FFFD";
  }
  return note;
}

namespace {

// One line (or the whole file) from `encoding` to UTF-8, appended to `out`. `lenient`: a byte
// the encoding leaves undefined becomes U+FFFD (counted); otherwise it is an error at its
// offset.
Result<void> Convert(iconv_t cd, std::string_view in, int64_t offset, bool lenient,
                     const std::string& encoding, std::string& out, int64_t& replaced) {
  char* src = const_cast<char*>(in.data());
  size_t left = in.size();
  while (left > 0) {
    char buffer[1u << 14];
    char* dst = buffer;
    size_t room = sizeof buffer;
    const size_t r = ::iconv(cd, &src, &left, &dst, &room);
    out.append(buffer, sizeof buffer - room);
    if (r != static_cast<size_t>(-1) || errno == E2BIG) continue;
    if (!lenient) {
      const int64_t at = offset + (src - in.data());
      return Fail(Error::Code::kData,
                  "byte " + std::to_string(at) + " of the file is no " + EncodingName(encoding) +
                      " character: give the encoding as FILE?encoding=latin-1 (or utf-8)");
    }
    out += "\xEF\xBF\xBD";
    ++replaced;
    ++src;
    --left;
  }
  return {};
}

}  // namespace

Result<TranscodeCounts> TranscodeToUtf8(const std::filesystem::path& from,
                                        const std::filesystem::path& to,
                                        const std::string& encoding, bool by_line) {
  const iconv_t cd = ::iconv_open("UTF-8", encoding.c_str());
  if (cd == reinterpret_cast<iconv_t>(-1)) {
    return Fail(Error::Code::kData, "iconv cannot read " + encoding + ": " + std::strerror(errno));
  }
  const std::unique_ptr<void, int (*)(iconv_t)> closer(cd, &::iconv_close);
  std::ifstream in(from, std::ios::binary);
  if (!in) return Fail(Error::Code::kData, "cannot read " + from.string());
  std::ofstream out(to, std::ios::binary | std::ios::trunc);
  if (!out) return Fail(Error::Code::kData, "cannot write the UTF-8 copy " + to.string());
  TranscodeCounts counts;
  std::string line, converted;
  int64_t offset = 0;
  // Line by line (a line that is valid UTF-8 is kept), or the file in blocks.
  while (true) {
    if (by_line) {
      if (!std::getline(in, line)) break;
      if (!in.eof()) line += '\n';
    } else {
      line.resize(1u << 16);
      in.read(line.data(), static_cast<std::streamsize>(line.size()));
      line.resize(static_cast<size_t>(in.gcount()));
      if (line.empty()) break;
    }
    converted.clear();
    const auto* bytes = reinterpret_cast<const unsigned char*>(line.data());
    bool utf8 = by_line;
    for (size_t i = 0; utf8 && i < line.size();) {
      const size_t len = Utf8Length(bytes + i, line.size() - i);
      if (len == 0 || i + len > line.size()) utf8 = false;
      i += len == 0 ? 1 : len;
    }
    const bool high = std::any_of(line.begin(), line.end(),
                                  [](char c) { return static_cast<unsigned char>(c) >= 0x80; });
    if (utf8) {
      converted = line;
      if (high) ++counts.utf8_lines;
    } else {
      if (auto r = Convert(cd, line, offset, by_line, encoding, converted, counts.replaced); !r) {
        return std::unexpected(r.error());
      }
      if (high) ++counts.converted_lines;
    }
    out.write(converted.data(), static_cast<std::streamsize>(converted.size()));
    offset += static_cast<int64_t>(line.size());
  }
  if (!out.flush()) return Fail(Error::Code::kData, "cannot write the UTF-8 copy " + to.string());
  return counts;
}

Result<std::optional<std::string>> ReadThroughUtf8Copy(const std::filesystem::path& abs,
                                                       CsvOptions& options,
                                                       const std::filesystem::path& copy) {
  const bool named = options.encoding.has_value();
  const std::optional<std::string> from =
      named ? IconvEncoding(*options.encoding) : DetectWindows1252(abs);
  if (!from) return std::nullopt;
  if (named) {
    std::ifstream in(abs, std::ios::binary);
    std::string head(4, '\0');
    in.read(head.data(), 4);
    head.resize(static_cast<size_t>(in.gcount()));
    if (Compressed(head)) {
      return Fail(Error::Code::kData,
                  "the file is compressed (gzip or zstd), and quarry converts an encoding only "
                  "on uncompressed text: decompress it first (gunzip -k, or zstd -d), then give "
                  "?encoding=" +
                      *options.encoding + " on the result");
    }
  }
  auto counts = TranscodeToUtf8(abs, copy, *from, !named);
  if (!counts) return std::unexpected(counts.error());
  options.encoding.reset();
  return TranscodedNote(*from, named, *counts);
}

}  // namespace quarry::engine::internal
