// An Open Packaging Conventions package (the zip inside an .xlsx), read as untrusted input:
// libzip for the package, expat for its XML parts, streamed. Entry sizes come from the central
// directory and are checked before a byte is inflated (a 1 GB part, a zip bomb), reads stop at
// the declared size, names and relationship targets that climb out of the package are
// refused, two entries of one name are refused, and a DTD is refused (no entity expansion).
#pragma once

#include <expat.h>
#include <zip.h>

#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "quarry/engine/workbook.h"

namespace quarry::engine::internal {

// One XML part, streamed through expat into three callbacks (names are "uri|local").
struct XmlHandler {
  std::function<void(std::string_view local, const char** attrs)> start;
  std::function<void(std::string_view local)> end;
  std::function<void(std::string_view text)> text;
  std::string error;  // set by Stop()
  bool doctype = false;
  XML_Parser parser = nullptr;
  void Stop(std::string message) {
    if (error.empty()) error = std::move(message);
    XML_StopParser(parser, XML_FALSE);
  }
};

// An attribute's value by its local name, or nullptr; `namespaced`: only a prefixed one (r:id).
const char* Attr(const char** attrs, std::string_view local, bool namespaced = false);

// A relationship: its type URI and its target, resolved to a part name.
struct OpcRel {
  std::string type, target;
};

class OpcPackage {
 public:
  // Errors are kData and say what to do: not a zip, a compound file (password-protected or an
  // .xls renamed), a hostile package. `label` names the file in messages.
  static Result<std::unique_ptr<OpcPackage>> Open(const std::string& path,
                                                  const WorkbookLimits& limits);
  static Result<std::unique_ptr<OpcPackage>> FromBytes(std::string bytes,
                                                       const WorkbookLimits& limits);
  ~OpcPackage();
  OpcPackage(const OpcPackage&) = delete;
  OpcPackage& operator=(const OpcPackage&) = delete;

  const std::string& label() const { return label_; }
  // Part names are case-insensitive in a package.
  bool Has(const std::string& part) const { return Locate(part).has_value(); }
  // Streams `part` through `h`; a stop request ends it with kCancelled.
  Result<void> Parse(const std::string& part, XmlHandler& h, const StopToken& stop = {});
  // The relationships of a .rels part, targets resolved against `dir` (the folder of the part
  // they belong to); none when the part is absent. External targets are left out.
  Result<std::map<std::string, OpcRel>> ReadRels(const std::string& part, const std::string& dir);

 private:
  OpcPackage(zip_t* zip, std::shared_ptr<std::string> bytes, std::string label,
             const WorkbookLimits& limits);
  Result<void> CheckEntries();
  std::optional<zip_uint64_t> Locate(const std::string& name) const;

  std::shared_ptr<std::string> bytes_;  // the archive's buffer, when opened from memory
  zip_t* zip_;                          // closed before bytes_ goes
  std::string label_;
  WorkbookLimits limits_;
  std::map<std::string, zip_uint64_t> entries_;
};

}  // namespace quarry::engine::internal
