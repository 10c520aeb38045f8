// The behaviour suite's cases as data (behaviour_internal.h): tasks/behaviour/cases.json, read
// field by field so that a mistake names the file, the case and the field before any run, each
// case's check bound from its named kind (behaviour_checks.cc) and parameters.
#include <algorithm>
#include <cmath>
#include <map>
#include <set>

#include "quarry/bench/behaviour_internal.h"
#include "quarry/common/json.h"
#include "quarry/common/json_fields.h"
#include "quarry/common/read_file.h"

namespace quarry::bench::behaviour {

// The bundled case file (cmake/Embed.cmake): stem "cases".
const std::map<std::string, std::string>& EmbeddedCases();

namespace {

constexpr const char* kBundledFile = "tasks/behaviour/cases.json";

bool ValidId(const std::string& id) {
  return !id.empty() && std::all_of(id.begin(), id.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_';
  });
}

std::string KindNames() {
  std::string out;
  for (const CheckKind& k : CheckKinds()) out += (out.empty() ? "" : ", ") + std::string(k.name);
  return out;
}

bool Blank(const std::string& s) { return s.find_first_not_of(" \t\n") == std::string::npos; }

// The first field of `object` not in `known`, or "".
std::string UnknownField(const json& object, std::initializer_list<std::string_view> known) {
  for (const auto& [key, value] : object.items()) {
    if (std::find(known.begin(), known.end(), key) == known.end()) return key;
  }
  return "";
}

// "reference": {"key": "SQL"} for a single value, or {"key": {"rows": "SQL"}} for every row.
std::string ReadReferences(const json& refs, std::vector<Reference>& out) {
  if (!refs.is_object()) return "field 'reference' should be an object, found " + JsonKind(refs);
  for (const auto& [key, value] : refs.items()) {
    Reference ref{key, "", value.is_object()};
    const std::string field = "reference." + key + (ref.rows ? ".rows" : "");
    if (ref.rows) {
      if (std::string u = UnknownField(value, {"rows"}); !u.empty()) {
        return "unknown field 'reference." + key + "." + u +
               "'; a reference is \"SQL\" or {\"rows\": \"SQL\"}";
      }
      if (!value.contains("rows")) return "field '" + field + "' is missing";
    }
    const json& sql = ref.rows ? value["rows"] : value;
    if (!sql.is_string()) {
      return "field '" + field + "' should be a string of SQL, found " + JsonKind(sql);
    }
    ref.sql = sql.get<std::string>();
    if (Blank(ref.sql)) return "field '" + field + "' is empty";
    out.push_back(std::move(ref));
  }
  return "";
}

// The "check" object bound to its kind; "" or the problem.
std::string BindCheck(const json& spec, CaseDef& def) {
  if (!spec.is_object()) return "field 'check' should be an object, found " + JsonKind(spec);
  if (!spec.contains("kind")) {
    return "field 'check.kind' is missing; the kinds are: " + KindNames();
  }
  if (auto p = ReadJsonField(spec, "kind", def.check_kind, "check"); !p.empty()) return p;
  const auto kind = std::find_if(CheckKinds().begin(), CheckKinds().end(),
                                 [&](const CheckKind& k) { return k.name == def.check_kind; });
  if (kind == CheckKinds().end()) {
    return "field 'check.kind' names no check kind: \"" + def.check_kind +
           "\"; the kinds are: " + KindNames();
  }
  std::string problem;
  CheckParams params(spec, "check", def, problem);
  params.Text("kind");  // read above; marked read so that Finish does not call it unknown
  def.check = kind->make(params);
  params.Finish();
  return problem;
}

// The fields of a case after its id; "" or the problem.
std::string ReadCaseFields(const json& c, CaseDef& def) {
  if (std::string u =
          UnknownField(c, {"id", "checks", "questions", "thread", "wide", "reference", "check"});
      !u.empty()) {
    return "unknown field '" + u + "'";
  }
  for (const char* key : {"checks", "questions", "check"}) {
    if (!c.contains(key)) return std::string("field '") + key + "' is missing";
  }
  for (const auto& problem :
       {ReadJsonField(c, "checks", def.checks), ReadJsonField(c, "questions", def.questions),
        ReadJsonField(c, "thread", def.thread), ReadJsonField(c, "wide", def.wide)}) {
    if (!problem.empty()) return problem;
  }
  if (Blank(def.checks)) return "field 'checks' is empty: say what the check asserts";
  if (def.questions.empty()) return "field 'questions' should hold at least one question";
  if (std::any_of(def.questions.begin(), def.questions.end(), Blank)) {
    return "field 'questions' holds an empty question";
  }
  if (c.contains("reference")) {
    if (auto p = ReadReferences(c["reference"], def.references); !p.empty()) return p;
  }
  return BindCheck(c["check"], def);
}

Result<CaseDef> ReadCase(const json& c, size_t index, const std::string& file,
                         std::set<std::string>& seen) {
  const std::string at = file + ": cases[" + std::to_string(index) + "]";
  if (!c.is_object()) {
    return Fail(Error::Code::kData, at + " should be an object, found " + JsonKind(c));
  }
  CaseDef def;
  if (!c.contains("id")) return Fail(Error::Code::kData, at + ": field 'id' is missing");
  if (auto p = ReadJsonField(c, "id", def.id); !p.empty()) {
    return Fail(Error::Code::kData, at + ": " + p);
  }
  if (!ValidId(def.id)) {
    return Fail(Error::Code::kData,
                at + ": field 'id' should match [a-z0-9_]+, found \"" + def.id + "\"");
  }
  const std::string where = file + ": case " + def.id;
  if (!seen.insert(def.id).second) {
    return Fail(Error::Code::kData, where + ": field 'id' is used by an earlier case");
  }
  if (auto p = ReadCaseFields(c, def); !p.empty()) {
    return Fail(Error::Code::kData, where + ": " + p);
  }
  return def;
}

}  // namespace

CheckParams::CheckParams(const json& object, std::string path, const CaseDef& def,
                         std::string& problem)
    : object_(object), path_(std::move(path)), def_(def), problem_(problem) {}

std::string CheckParams::Path(const std::string& name) const { return path_ + "." + name; }

void CheckParams::Fail(const std::string& name, const std::string& problem) {
  if (problem_.empty()) problem_ = "field '" + Path(name) + "' " + problem;
}

const json* CheckParams::Find(const std::string& name, bool required) {
  read_.push_back(name);
  const auto it = object_.find(name);
  if (it != object_.end()) return &*it;
  if (required) Fail(name, "is missing");
  return nullptr;
}

std::string CheckParams::Text(const std::string& name) {
  const json* v = Find(name, true);
  if (!v) return "";
  if (!v->is_string() || Blank(v->get<std::string>())) {
    Fail(name, "should be a non-empty string, found " + (v->is_string() ? "\"\"" : JsonKind(*v)));
    return "";
  }
  return v->get<std::string>();
}

std::string CheckParams::Text(const std::string& name, std::string fallback) {
  return object_.contains(name) ? Text(name) : fallback;
}

std::string CheckParams::Key(const std::string& name) {
  const std::string key = Text(name);
  if (key.empty()) return key;
  const auto& refs = def_.references;
  if (std::none_of(refs.begin(), refs.end(), [&](const Reference& r) { return r.key == key; })) {
    Fail(name, "names \"" + key + "\", which no reference query of the case computes");
  }
  return key;
}

double CheckParams::Tolerance(const std::string& name) {
  const json* v = Find(name, true);
  if (v && (!v->is_number() || !std::isfinite(v->get<double>()) || v->get<double>() < 0)) {
    Fail(name,
         "should be a finite number >= 0, found " + (v->is_number() ? v->dump() : JsonKind(*v)));
  }
  return v && v->is_number() ? v->get<double>() : 0;
}

int CheckParams::Count(const std::string& name) {
  const json* v = Find(name, true);
  int n = 1;
  if (v && (!ReadJsonValue(*v, n).empty() || n < 1)) {
    Fail(name, "should be an integer >= 1, found " + (v->is_number() ? v->dump() : JsonKind(*v)));
    n = 1;
  }
  return n;
}

size_t CheckParams::Each(const std::string& name, const std::function<void(CheckParams&)>& read) {
  const json* v = Find(name, true);
  if (!v) return 0;
  if (!v->is_array() || v->empty()) {
    Fail(name, "should be a non-empty array of objects, found " + JsonKind(*v));
    return 0;
  }
  for (size_t i = 0; i < v->size(); ++i) {
    const json& item = (*v)[i];
    const std::string element = name + "[" + std::to_string(i) + "]";
    if (!item.is_object()) {
      Fail(element, "should be an object, found " + JsonKind(item));
      continue;
    }
    CheckParams child(item, Path(element), def_, problem_);
    read(child);
    child.Finish();
  }
  return v->size();
}

void CheckParams::Finish() {
  for (const auto& [key, value] : object_.items()) {
    if (std::find(read_.begin(), read_.end(), key) == read_.end() && problem_.empty()) {
      problem_ = "unknown field '" + Path(key) + "' for a " + def_.check_kind + " check";
    }
  }
}

Result<std::vector<CaseDef>> ParseCases(std::string_view text, const std::string& file) {
  std::string problem = "not valid JSON";
  const json doc = ParseJson(text, &problem);
  if (doc.is_discarded()) return Fail(Error::Code::kData, file + ": " + problem);
  if (!doc.is_object()) {
    return Fail(Error::Code::kData, file + ": should hold a JSON object, found " + JsonKind(doc));
  }
  if (!doc.contains("cases")) return Fail(Error::Code::kData, file + ": field 'cases' is missing");
  if (!doc["cases"].is_array()) {
    return Fail(Error::Code::kData,
                file + ": field 'cases' should be an array, found " + JsonKind(doc["cases"]));
  }
  if (std::string u = UnknownField(doc, {"cases"}); !u.empty()) {
    return Fail(Error::Code::kData, file + ": unknown field '" + u + "'");
  }
  std::vector<CaseDef> defs;
  std::set<std::string> seen;
  for (size_t i = 0; i < doc["cases"].size(); ++i) {
    auto def = ReadCase(doc["cases"][i], i, file, seen);
    if (!def) return std::unexpected(def.error());
    defs.push_back(std::move(*def));
  }
  if (defs.empty()) return Fail(Error::Code::kData, file + ": \"cases\" is empty");
  return defs;
}

Result<std::vector<CaseDef>> LoadCases(const std::filesystem::path& file) {
  auto text = ReadFileText(file, "behaviour case file");
  if (!text) return std::unexpected(text.error());
  return ParseCases(*text, file.string());
}

const Result<std::vector<CaseDef>>& CaseDefs() {
  static const Result<std::vector<CaseDef>> defs = []() -> Result<std::vector<CaseDef>> {
    const auto bundled = EmbeddedCases().find("cases");
    if (bundled == EmbeddedCases().end()) {
      return Fail(Error::Code::kInternal, std::string(kBundledFile) + " was not built in");
    }
    return ParseCases(bundled->second, kBundledFile);
  }();
  return defs;
}

const CaseDef* FindCase(const std::string& id) {
  if (!CaseDefs()) return nullptr;
  for (const auto& c : *CaseDefs()) {
    if (c.id == id) return &c;
  }
  return nullptr;
}

}  // namespace quarry::bench::behaviour
