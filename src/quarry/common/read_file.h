// Reading a whole file the user named (a replay, a fixture, a script, a trace) with an error
// that says what was wrong with the path. Header-only.
#pragma once

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <string_view>
#include <system_error>

#include "quarry/common/common.h"

namespace quarry {

// The bytes of the regular file at `path`. Errors (Error::Code::kData, starting with `what`
// and the path): "WHAT PATH not found", "... is a directory, not a file", "... is not a regular
// file", "cannot read WHAT PATH: <reason>". A directory would otherwise read as an exception
// ("basic_filebuf::underflow") or as empty text.
inline Result<std::string> ReadFileText(const std::filesystem::path& path, std::string_view what) {
  const std::string name = std::string(what) + (what.empty() ? "" : " ") + path.string();
  std::error_code ec;
  const auto status = std::filesystem::status(path, ec);
  if (!std::filesystem::exists(status)) return Fail(Error::Code::kData, name + " not found");
  if (std::filesystem::is_directory(status)) {
    return Fail(Error::Code::kData, name + " is a directory, not a file");
  }
  if (!std::filesystem::is_regular_file(status)) {
    return Fail(Error::Code::kData, name + " is not a regular file");
  }
  std::ifstream in(path, std::ios::binary);
  if (!in) return Fail(Error::Code::kData, "cannot read " + name + ": " + std::strerror(errno));
  std::string text;
  try {
    text.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  } catch (const std::exception& e) {
    return Fail(Error::Code::kData, "cannot read " + name + ": " + e.what());
  }
  if (in.bad()) return Fail(Error::Code::kData, "cannot read " + name);
  return text;
}

}  // namespace quarry
