// The package layer of the .xlsx reader (xlsx_package.h): the zip's entries checked before
// anything is inflated, XML parts streamed through expat, relationships resolved in the package.
#include "quarry/common/text.h"
#include "quarry/engine/xlsx_package.h"

#include <cstdio>
#include <vector>

namespace quarry::engine::internal {
namespace {

Error DataError(std::string message) { return Error{Error::Code::kData, std::move(message)}; }

std::string_view LocalName(const char* name) {
  std::string_view n(name);
  const size_t bar = n.rfind('|');
  return bar == std::string_view::npos ? n : n.substr(bar + 1);
}

// An entry name that is absolute ("/etc/x", "C:\\x") or has a ".." segment.
bool ClimbsOut(std::string_view name) {
  if (name.starts_with('/') || name.starts_with('\\')) return true;
  if (name.size() >= 2 && name[1] == ':') return true;
  size_t s = 0;
  while (s <= name.size()) {
    size_t e = name.find_first_of("/\\", s);
    if (e == std::string_view::npos) e = name.size();
    if (name.substr(s, e - s) == "..") return true;
    s = e + 1;
  }
  return false;
}

extern "C" void OnStart(void* data, const char* name, const char** attrs) {
  auto* h = static_cast<XmlHandler*>(data);
  if (h->start) h->start(LocalName(name), attrs);
}
extern "C" void OnEnd(void* data, const char* name) {
  auto* h = static_cast<XmlHandler*>(data);
  if (h->end) h->end(LocalName(name));
}
extern "C" void OnText(void* data, const char* s, int len) {
  auto* h = static_cast<XmlHandler*>(data);
  if (h->text) h->text(std::string_view(s, static_cast<size_t>(len)));
}
extern "C" void OnDoctype(void* data, const char*, const char*, const char*, int) {
  auto* h = static_cast<XmlHandler*>(data);
  h->doctype = true;
  XML_StopParser(h->parser, XML_FALSE);
}

struct ParserFree {
  void operator()(XML_Parser p) const { XML_ParserFree(p); }
};
struct ZipFileClose {
  void operator()(zip_file_t* f) const { zip_fclose(f); }
};

// Joins a relationship target to the folder of the part that names it, as OPC says; nullopt
// when it climbs above the package root.
std::optional<std::string> ResolveTarget(const std::string& base_dir, std::string_view target) {
  std::string joined =
      target.starts_with('/') ? std::string(target.substr(1)) : base_dir + std::string(target);
  std::vector<std::string> parts;
  size_t s = 0;
  while (s <= joined.size()) {
    size_t e = joined.find('/', s);
    if (e == std::string::npos) e = joined.size();
    const std::string part = joined.substr(s, e - s);
    s = e + 1;
    if (part.empty() || part == ".") continue;
    if (part == "..") {
      if (parts.empty()) return std::nullopt;
      parts.pop_back();
      continue;
    }
    parts.push_back(part);
  }
  std::string out;
  for (const auto& p : parts) out += (out.empty() ? "" : "/") + p;
  return out;
}

Error NotAZip(const std::string& label, int code, bool ole) {
  if (ole) {
    return DataError(label +
                     " is a compound document, not an .xlsx package: either it is "
                     "password-protected (save it without a password) or it is an "
                     "old .xls file renamed (rename it to .xls)");
  }
  zip_error_t e;
  zip_error_init_with_code(&e, code);
  std::string message = label + " is not a readable .xlsx workbook (" + zip_error_strerror(&e) +
                        "): save it again as .xlsx in Excel or LibreOffice";
  zip_error_fini(&e);
  return DataError(message);
}

bool LooksOle(std::string_view head) {
  return head.size() >= 8 &&
         head.substr(0, 8) == std::string_view("\xD0\xCF\x11\xE0\xA1\xB1\x1A\xE1", 8);
}

}  // namespace

const char* Attr(const char** attrs, std::string_view local, bool namespaced) {
  for (size_t i = 0; attrs[i]; i += 2) {
    const std::string_view n(attrs[i]);
    if ((n.find('|') != std::string_view::npos) != namespaced) continue;
    if (LocalName(attrs[i]) == local) return attrs[i + 1];
  }
  return nullptr;
}

OpcPackage::OpcPackage(zip_t* zip, std::shared_ptr<std::string> bytes, std::string label,
                       const WorkbookLimits& limits)
    : bytes_(std::move(bytes)), zip_(zip), label_(std::move(label)), limits_(limits) {}

OpcPackage::~OpcPackage() { zip_discard(zip_); }

Result<std::unique_ptr<OpcPackage>> OpcPackage::Open(const std::string& path,
                                                     const WorkbookLimits& limits) {
  int code = 0;
  zip_t* zip = zip_open(path.c_str(), ZIP_RDONLY, &code);
  if (!zip) {
    char head[8] = {};
    if (FILE* f = std::fopen(path.c_str(), "rb")) {
      const size_t n = std::fread(head, 1, sizeof head, f);
      std::fclose(f);
      return std::unexpected(NotAZip(path, code, LooksOle(std::string_view(head, n))));
    }
    return std::unexpected(NotAZip(path, code, false));
  }
  std::unique_ptr<OpcPackage> package(new OpcPackage(zip, nullptr, path, limits));
  if (auto r = package->CheckEntries(); !r) return std::unexpected(r.error());
  return package;
}

Result<std::unique_ptr<OpcPackage>> OpcPackage::FromBytes(std::string bytes,
                                                          const WorkbookLimits& limits) {
  auto owned = std::make_shared<std::string>(std::move(bytes));
  zip_error_t error;
  zip_error_init(&error);
  zip_source_t* source = zip_source_buffer_create(owned->data(), owned->size(), 0, &error);
  if (!source) {
    zip_error_fini(&error);
    return std::unexpected(DataError("out of memory for the workbook"));
  }
  zip_t* zip = zip_open_from_source(source, ZIP_RDONLY, &error);
  if (!zip) {
    const int code = zip_error_code_zip(&error);
    zip_error_fini(&error);
    zip_source_free(source);
    return std::unexpected(NotAZip("the workbook", code, LooksOle(*owned)));
  }
  zip_error_fini(&error);
  std::unique_ptr<OpcPackage> package(
      new OpcPackage(zip, std::move(owned), "the workbook", limits));
  if (auto r = package->CheckEntries(); !r) return std::unexpected(r.error());
  return package;
}

// Sizes from the central directory, before anything is inflated.
Result<void> OpcPackage::CheckEntries() {
  const zip_int64_t n = zip_get_num_entries(zip_, 0);
  int64_t total = 0;
  for (zip_int64_t i = 0; i < n; ++i) {
    zip_stat_t st;
    zip_stat_init(&st);
    if (zip_stat_index(zip_, static_cast<zip_uint64_t>(i), 0, &st) != 0) continue;
    const std::string name = (st.valid & ZIP_STAT_NAME) && st.name ? st.name : "";
    if (ClimbsOut(name)) {
      return std::unexpected(DataError(
          label_ + " holds an entry whose path climbs out of the package ('" + name.substr(0, 80) +
          "'): quarry does not read such a file; re-save it in Excel or "
          "LibreOffice"));
    }
    if ((st.valid & ZIP_STAT_ENCRYPTION_METHOD) && st.encryption_method != ZIP_EM_NONE) {
      return std::unexpected(DataError(label_ + " has encrypted parts: save it without a "
                                                "password and ask again"));
    }
    const int64_t size = (st.valid & ZIP_STAT_SIZE) ? static_cast<int64_t>(st.size) : 0;
    const int64_t packed = (st.valid & ZIP_STAT_COMP_SIZE) ? static_cast<int64_t>(st.comp_size) : 0;
    total += size;
    std::string what;
    if (size > limits_.max_part_bytes) {
      what = "its part '" + name.substr(0, 80) + "' unpacks to " + std::to_string(size >> 20) +
             " MiB, over the " + std::to_string(limits_.max_part_bytes >> 20) + " MiB quarry reads";
    } else if (size > (int64_t{16} << 20) &&
               size / std::max<int64_t>(packed, 1) > limits_.max_ratio) {
      what = "its part '" + name.substr(0, 80) + "' unpacks " +
             std::to_string(size / std::max<int64_t>(packed, 1)) +
             " times larger than it is packed (a zip bomb)";
    } else if (total > limits_.max_total_bytes) {
      what =
          "its parts unpack to more than " + std::to_string(limits_.max_total_bytes >> 20) + " MiB";
    }
    if (!what.empty()) {
      return std::unexpected(DataError(label_ + " is refused: " + what +
                                       ". Export the sheet you need to CSV and ask about that"));
    }
    // Two entries of one name: readers differ on which they take, so the data is ambiguous.
    if (!entries_.emplace(Lower(name), static_cast<zip_uint64_t>(i)).second) {
      return std::unexpected(DataError(label_ + " holds two entries named '" + name.substr(0, 80) +
                                       "': which one is the data is ambiguous; re-save it in "
                                       "Excel or LibreOffice"));
    }
  }
  return {};
}

// Part names are case-insensitive in a package (OPC).
std::optional<zip_uint64_t> OpcPackage::Locate(const std::string& name) const {
  const auto it = entries_.find(Lower(name));
  if (it == entries_.end()) return std::nullopt;
  return it->second;
}

Result<void> OpcPackage::Parse(const std::string& part, XmlHandler& h, const StopToken& stop) {
  const auto index = Locate(part);
  if (!index) return std::unexpected(DataError(label_ + ": part " + part + " is missing"));
  std::unique_ptr<zip_file_t, ZipFileClose> file(zip_fopen_index(zip_, *index, 0));
  if (!file) {
    return std::unexpected(
        DataError(label_ + ": cannot unpack " + part + " (" + zip_strerror(zip_) + ")"));
  }
  std::unique_ptr<XML_ParserStruct, ParserFree> parser(XML_ParserCreateNS(nullptr, '|'));
  if (!parser) return std::unexpected(DataError("out of memory for the XML parser"));
  h.parser = parser.get();
  XML_SetUserData(parser.get(), &h);
  XML_SetElementHandler(parser.get(), OnStart, OnEnd);
  XML_SetCharacterDataHandler(parser.get(), OnText);
  XML_SetStartDoctypeDeclHandler(parser.get(), OnDoctype);
  std::vector<char> buf(1 << 16);
  int64_t read_total = 0;
  for (;;) {
    if (stop.stop_requested()) return std::unexpected(Error{Error::Code::kCancelled, "stopped"});
    const zip_int64_t n = zip_fread(file.get(), buf.data(), buf.size());
    if (n < 0) {
      return std::unexpected(DataError(label_ + ": part " + part + " is damaged (" +
                                       zip_file_strerror(file.get()) + ")"));
    }
    read_total += n;
    if (read_total > limits_.max_part_bytes) {
      return std::unexpected(DataError(label_ + ": part " + part + " unpacks past its size"));
    }
    const bool last = n == 0;
    if (XML_Parse(parser.get(), buf.data(), static_cast<int>(n), last) != XML_STATUS_OK) {
      if (!h.error.empty())
        return std::unexpected(DataError(label_ + ": " + part + ": " + h.error));
      if (h.doctype) {
        return std::unexpected(DataError(label_ + ": part " + part +
                                         " declares a DTD, which "
                                         "no Excel workbook does; quarry does not read it"));
      }
      return std::unexpected(
          DataError(label_ + ": part " + part + " is not well-formed XML (line " +
                    std::to_string(XML_GetCurrentLineNumber(parser.get())) + ": " +
                    XML_ErrorString(XML_GetErrorCode(parser.get())) + ")"));
    }
    if (last) break;
  }
  return {};
}

Result<std::map<std::string, OpcRel>> OpcPackage::ReadRels(const std::string& part,
                                                           const std::string& dir) {
  std::map<std::string, OpcRel> rels;
  if (!Locate(part)) return rels;
  XmlHandler h;
  h.start = [&](std::string_view name, const char** attrs) {
    if (name != "Relationship") return;
    const char* id = Attr(attrs, "Id");
    const char* type = Attr(attrs, "Type");
    const char* target = Attr(attrs, "Target");
    const char* mode = Attr(attrs, "TargetMode");
    if (!id || !type || !target || (mode && std::string_view(mode) == "External")) return;
    auto resolved = ResolveTarget(dir, target);
    if (!resolved) {
      h.Stop("a relationship points outside the package ('" + std::string(target).substr(0, 80) +
             "')");
      return;
    }
    rels[id] = OpcRel{type, *resolved};
  };
  if (auto r = Parse(part, h); !r) return std::unexpected(r.error());
  return rels;
}

}  // namespace quarry::engine::internal
