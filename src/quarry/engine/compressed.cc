// Whether a gzip-compressed data file is whole. DuckDB decompresses as it reads and stops
// quietly where a truncated archive ends, so a download cut short would load as fewer rows and
// answer with wrong totals; the check reads every member to its end and its checksum first.
#include <zlib.h>

#include <fstream>
#include <string>
#include <vector>

#include "quarry/engine/engine_internal.h"

namespace quarry::engine::internal {

Result<void> CheckGzipWhole(const std::filesystem::path& path, const std::string& shown,
                            const StopToken& stop) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return {};  // unreadable: the loader's own open says so
  std::vector<unsigned char> input(1 << 16);
  std::vector<unsigned char> output(1 << 16);
  in.read(reinterpret_cast<char*>(input.data()), 2);
  if (in.gcount() < 2 || input[0] != 0x1f || input[1] != 0x8b) return {};
  in.seekg(0);
  z_stream z{};
  if (inflateInit2(&z, 16 + MAX_WBITS) != Z_OK) return {};
  const std::string why_fix =
      ": copy or download it again (gzip -t " + path.filename().string() + " says the same)";
  int rc = Z_OK;
  bool ended = false;  // the latest member reached its end and checksum
  while (true) {
    if (stop.stop_requested()) {
      inflateEnd(&z);
      return Fail(Error::Code::kCancelled, "loading was interrupted: the caller asked it to stop");
    }
    in.read(reinterpret_cast<char*>(input.data()), static_cast<std::streamsize>(input.size()));
    const auto got = static_cast<uInt>(in.gcount());
    if (got == 0) break;
    z.next_in = input.data();
    z.avail_in = got;
    while (z.avail_in > 0) {
      z.next_out = output.data();
      z.avail_out = static_cast<uInt>(output.size());
      rc = inflate(&z, Z_NO_FLUSH);
      if (rc == Z_STREAM_END) {
        ended = true;
        inflateReset(&z);  // a next member (gzip files may be concatenated) or the end
        continue;
      }
      if (rc != Z_OK && rc != Z_BUF_ERROR) {
        const std::string detail = z.msg ? z.msg : "damaged data";
        inflateEnd(&z);
        return Fail(Error::Code::kData, "cannot load " + shown + ": " + path.filename().string() +
                                            " is a damaged gzip file (" + detail + ")" + why_fix);
      }
      ended = false;
      if (rc == Z_BUF_ERROR && z.avail_out != 0) break;
    }
  }
  inflateEnd(&z);
  if (!ended) {
    return Fail(Error::Code::kData,
                "cannot load " + shown + ": " + path.filename().string() +
                    " is a truncated gzip file: it ends before its last member does, so only part "
                    "of the data could be read" +
                    why_fix);
  }
  return {};
}

}  // namespace quarry::engine::internal
