// libFuzzer target: a knowledge folder from anywhere (a cloned repository's .quarry/) and a dbt
// manifest. The input, split at NUL bytes, becomes metrics.yaml, glossary.yaml, tables/t.yaml,
// relationships.yaml, queries/q.md and rules/r.md in a temporary folder (an empty part: no
// file); knowledge::Load reads it and, when it loads, Retrieve picks for a question within its
// budget, which it must never pass. The whole input is also read as a dbt manifest; what an
// import renders must load back (the import's promise), written to a second temporary folder.
// Nothing is written outside the input's own temporary folder.
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <string_view>

#include "quarry/knowledge/dbt.h"
#include "quarry/knowledge/knowledge.h"

namespace fs = std::filesystem;
namespace knowledge = quarry::knowledge;

// EstimateTokens (engine/card_text.cc), which Retrieve needs, also names IsServerSpec from
// engine/open.cc, which would link every data loader into this target. Nothing here reaches it.
namespace quarry::engine {
bool IsServerSpec(std::string_view) { std::abort(); }
}  // namespace quarry::engine

namespace {

// A folder of its own for each input, removed when the input is done: libFuzzer ends by _Exit,
// so nothing at exit would run.
class Scratch {
 public:
  Scratch() {
    std::string pattern = (fs::temp_directory_path() / "quarry-fuzz-knowledge-XXXXXX").string();
    if (!mkdtemp(pattern.data())) std::abort();
    dir_ = pattern;
  }
  ~Scratch() {
    std::error_code ec;
    fs::remove_all(dir_, ec);
  }
  Scratch(const Scratch&) = delete;
  Scratch& operator=(const Scratch&) = delete;
  fs::path Make(const std::string& name) const {
    std::error_code ec;
    fs::create_directories(dir_ / name, ec);
    if (ec) std::abort();
    return dir_ / name;
  }

 private:
  fs::path dir_;
};

void Write(const fs::path& path, std::string_view text) {
  std::error_code ec;
  fs::create_directories(path.parent_path(), ec);
  std::ofstream(path, std::ios::binary)
      .write(text.data(), static_cast<std::streamsize>(text.size()));
}

void LoadAndRetrieve(std::string_view text, const Scratch& scratch) {
  static const char* const kFiles[] = {"metrics.yaml",       "glossary.yaml", "tables/t.yaml",
                                       "relationships.yaml", "queries/q.md",  "rules/r.md"};
  const fs::path dir = scratch.Make("k");
  size_t start = 0;
  for (const char* name : kFiles) {
    if (start > text.size()) break;
    size_t end = text.find('\0', start);
    if (end == std::string_view::npos) end = text.size();
    if (end > start) Write(dir / name, text.substr(start, end - start));
    start = end + 1;
  }
  const auto k = knowledge::Load(dir);
  if (!k) {
    if (k.error().message.empty()) std::abort();
    return;
  }
  for (int64_t budget : {40, 400}) {
    const auto s = knowledge::Retrieve(*k, "What was the revenue by region for active customers?",
                                       budget, {"t", "sales"});
    if (s.tokens > budget) std::abort();
  }
}

void ImportDbt(std::string_view text, const Scratch& scratch) {
  const auto imported = knowledge::ParseDbtManifest(text, "manifest.json");
  if (!imported) {
    if (imported.error().message.empty()) std::abort();
    return;
  }
  auto files = knowledge::RenderDbtImport(*imported, "manifest.json");
  if (!files) std::abort();  // the emitter refused text the import let through
  const fs::path dir = scratch.Make("dbt");
  const auto plan = knowledge::PlanDbtImport(dir, std::move(*files));
  const auto written = knowledge::WriteKnowledgeFiles(dir, plan.write);
  if (!written) std::abort();
  const auto k = knowledge::Load(dir);
  if (!k) {
    fprintf(stderr, "an import that does not load back: %s\n", k.error().message.c_str());
    std::abort();
  }
  size_t tables = 0;
  for (const auto& path : written->written) tables += path.starts_with("tables/") ? 1 : 0;
  if (k->tables.size() != tables || !written->kept.empty()) std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  const Scratch scratch;
  LoadAndRetrieve(text, scratch);
  ImportDbt(text, scratch);
  return 0;
}
