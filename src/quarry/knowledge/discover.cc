// Finding the knowledge folder for a run (knowledge.h, Discover). Apart from load.cc, so that
// reading a folder needs nothing of the engine but its ranking (the knowledge fuzz target links
// load.cc without the data loaders).
#include "quarry/knowledge/knowledge.h"

namespace quarry::knowledge {

namespace fs = std::filesystem;

std::optional<fs::path> Discover(const fs::path& given, const std::vector<fs::path>& data,
                                 const fs::path& cwd) {
  if (!given.empty()) return given;
  std::error_code ec;
  std::vector<fs::path> places;
  for (const auto& d : data) {
    if (engine::IsServerSpec(d.string())) continue;
    places.push_back(fs::is_directory(d, ec) ? d : d.parent_path());
  }
  places.push_back(cwd);
  for (const auto& place : places) {
    const fs::path candidate = (place.empty() ? fs::path(".") : place) / ".quarry";
    if (fs::is_directory(candidate, ec)) return candidate;
  }
  return std::nullopt;
}

}  // namespace quarry::knowledge
