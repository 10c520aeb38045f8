// Reading a dbt manifest (dbt.h, ParseDbtManifest and ReadDbtManifest): the JSON edge. Every
// field read is checked for its kind, and a wrong one is an error naming its path; past this
// file and dbt_metrics.cc the import is plain TableDoc, Relationship and Metric values.
#include "quarry/knowledge/dbt.h"

#include <algorithm>
#include <cctype>
#include <map>
#include <set>

#include "quarry/common/json.h"
#include "quarry/common/read_file.h"
#include "quarry/common/text.h"
#include "quarry/knowledge/dbt_internal.h"

namespace quarry::knowledge {

namespace dbt_internal {

namespace {

std::string ShapeName(Shape s) {
  return s == Shape::kObject ? "an object" : s == Shape::kList ? "a list" : "text";
}

// Text from the manifest without control characters other than newline and tab: a NUL would
// make the knowledge file unreadable, an escape sequence would reach the terminal.
std::string Clean(const std::string& text, bool trim = true) {
  std::string out;
  out.reserve(text.size());
  for (char c : text) {
    const auto u = static_cast<unsigned char>(c);
    if (u >= 0x20 ? u != 0x7f : c == '\n' || c == '\t') out += c;
  }
  return trim ? std::string(Trim(out)) : out;
}

}  // namespace

std::string KindOf(const Json& v) {
  switch (v.type()) {
    case Json::value_t::object:
      return "an object";
    case Json::value_t::array:
      return "a list";
    case Json::value_t::string:
      return "text";
    case Json::value_t::boolean:
      return "true or false";
    case Json::value_t::null:
      return "null";
    default:
      return "a number";
  }
}

std::string Child(const std::string& path, const std::string& key) {
  const bool plain = !key.empty() && std::ranges::all_of(key, [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '_';
  });
  if (plain && key.size() <= 40) return path.empty() ? key : path + "." + key;
  std::string shown = key.substr(0, Utf8Prefix(key, 60));
  std::ranges::replace_if(
      shown, [](char c) { return static_cast<unsigned char>(c) < 0x20 || c == '"'; }, '?');
  return path + "[\"" + shown + (shown.size() < key.size() ? "…" : "") + "\"]";
}
std::string Child(const std::string& path, size_t index) {
  return path + "[" + std::to_string(index) + "]";
}

const Json* Member(const Json& obj, const std::string& key, const std::string& path, Shape shape) {
  const auto it = obj.find(key);
  if (it == obj.end() || it->is_null()) return nullptr;
  const bool ok = shape == Shape::kObject ? it->is_object()
                  : shape == Shape::kList ? it->is_array()
                                          : it->is_string();
  if (!ok) throw Bad{Child(path, key) + " is " + KindOf(*it) + ", not " + ShapeName(shape)};
  return &*it;
}

std::string Text(const Json& obj, const std::string& key, const std::string& path) {
  const Json* v = Member(obj, key, path, Shape::kText);
  return v ? Clean(v->get_ref<const std::string&>()) : "";
}

std::string Scalar(const Json& v, const std::string& path) {
  if (v.is_string()) return Clean(v.get_ref<const std::string&>(), false);
  if (v.is_number() || v.is_boolean()) return v.dump();
  throw Bad{path + " is " + KindOf(v) + ", not text or a number"};
}

bool Identifier(const std::string& s) {
  if (s.empty() || std::isdigit(static_cast<unsigned char>(s[0]))) return false;
  return std::ranges::all_of(s, [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '_' ||
           static_cast<unsigned char>(c) >= 0x80;
  });
}

std::string Operand(const std::string& expr) {
  const bool number = !expr.empty() && std::ranges::all_of(expr, [](char c) {
    return std::isdigit(static_cast<unsigned char>(c)) != 0;
  });
  return Identifier(expr) || number ? expr : "(" + expr + ")";
}

std::optional<std::pair<std::string, std::string>> Target(const std::string& text) {
  for (const std::string kind : {"ref", "source"}) {
    size_t at = text.find(kind + "(");
    while (at != std::string::npos && at > 0 &&
           (std::isalnum(static_cast<unsigned char>(text[at - 1])) || text[at - 1] == '_')) {
      at = text.find(kind + "(", at + 1);
    }
    if (at == std::string::npos) continue;
    std::vector<std::string> args;
    size_t i = at + kind.size() + 1;
    while (i < text.size() && text[i] != ')') {
      const char c = text[i];
      if (c == '\'' || c == '"') {
        const size_t end = text.find(c, i + 1);
        if (end == std::string::npos) return std::nullopt;
        args.push_back(text.substr(i + 1, end - i - 1));
        i = end + 1;
      } else if (c == '=') {  // a keyword argument (v=2, version=2): not a name
        while (i < text.size() && text[i] != ',' && text[i] != ')') ++i;
      } else {
        ++i;
      }
    }
    if (args.empty() || args.size() > 2) return std::nullopt;
    if (kind == "source") {
      if (args.size() != 2) return std::nullopt;
      return std::pair{kind, args[0] + "." + args[1]};
    }
    return std::pair{kind, args.back()};
  }
  return std::nullopt;
}

namespace {

bool Truthy(const Json& v) {
  if (v.is_boolean()) return v.get<bool>();
  if (v.is_string()) {
    const std::string s = Lower(Trim(v.get_ref<const std::string&>()));
    return s == "true" || s == "yes";
  }
  return false;
}

class Importer {
 public:
  DbtImport Run(const Json& doc) {
    if (!doc.is_object()) {
      throw Bad{"the file is " + KindOf(doc) + ", not an object: it is not a dbt manifest"};
    }
    const Json* nodes = Member(doc, "nodes", "", Shape::kObject);
    if (!nodes) {
      throw Bad{
          "no \"nodes\": it is not a dbt manifest (dbt compile, dbt build or dbt docs generate "
          "write one to target/manifest.json)"};
    }
    const Json* sources = Member(doc, "sources", "", Shape::kObject);
    // Every table first, so that a test or a semantic model can name any of them.
    for (const auto& [id, node] : nodes->items()) ReadTable(id, node, "nodes");
    if (sources) {
      for (const auto& [id, node] : sources->items()) ReadTable(id, node, "sources");
    }
    for (const auto& [id, node] : nodes->items()) ReadTest(id, node);
    ReadMetrics(
        doc,
        [this](const std::string& text) {
          const Table* t = TableOfTarget(text);
          return t ? t->doc.table : std::string();
        },
        out_);
    for (auto& [key, t] : tables_) {
      if (!t.doc.description.empty() || !t.doc.columns.empty()) out_.tables.push_back(t.doc);
    }
    std::ranges::sort(out_.tables, {}, [](const TableDoc& t) { return Lower(t.table); });
    std::ranges::sort(out_.relationships, {}, [](const Relationship& r) {
      return std::pair{Lower(r.from), Lower(r.to)};
    });
    std::ranges::sort(out_.metrics, {}, [](const Metric& m) { return Lower(m.name); });
    return std::move(out_);
  }

 private:
  struct Table {
    TableDoc doc;
    std::string kind;  // "model", "seed", "source"
  };

  // Models, seeds and sources: their table's name and their documentation.
  void ReadTable(const std::string& id, const Json& node, const std::string& section) {
    const std::string path = Child(section, id);
    if (!node.is_object()) throw Bad{path + " is " + KindOf(node) + ", not an object"};
    const std::string kind = Text(node, "resource_type", path);
    if (kind != "model" && kind != "seed" && kind != "source") return;
    const std::string name = Text(node, "name", path);
    std::string table = Text(node, kind == "source" ? "identifier" : "alias", path);
    if (table.empty()) table = name;
    if (table.empty()) throw Bad{path + " has no name"};
    const Json* config = Member(node, "config", path, Shape::kObject);
    const bool ephemeral =
        config && Text(*config, "materialized", Child(path, "config")) == "ephemeral";

    Table t;
    t.kind = kind;
    t.doc.table = table;
    t.doc.description = Text(node, "description", path);
    t.doc.origin = {id, 0};
    if (const Json* columns = Member(node, "columns", path, Shape::kObject)) {
      for (const auto& [key, col] : columns->items()) {
        const std::string at = Child(Child(path, "columns"), key);
        if (!col.is_object()) throw Bad{at + " is " + KindOf(col) + ", not an object"};
        ColumnDoc c;
        c.name = Text(col, "name", at);
        if (c.name.empty()) c.name = Clean(key);
        c.meaning = Text(col, "description", at);
        c.personal = Personal(col, at);
        // Two entries of one name (keys that differ, one `name`) would be one column said twice.
        const bool seen = std::ranges::any_of(
            t.doc.columns, [&](const ColumnDoc& o) { return Lower(o.name) == Lower(c.name); });
        if (!c.name.empty() && !seen && (!c.meaning.empty() || c.personal)) {
          t.doc.columns.push_back(std::move(c));
        }
      }
    }
    if (ephemeral) {
      if (!t.doc.description.empty() || !t.doc.columns.empty()) {
        out_.skipped.push_back(kind + " " + name + " (ephemeral: it has no table)");
      }
      return;
    }
    const std::string key = Lower(table);
    if (auto it = tables_.find(key); it != tables_.end()) {
      // Two nodes of one name (a source and the model built on it, in other schemas): the
      // first keeps it, and nothing of the second is attached to it.
      if (!t.doc.description.empty() || !t.doc.columns.empty()) {
        out_.skipped.push_back(kind + " " + name + " (its table " + table + " is described by " +
                               it->second.doc.origin.file + ")");
      }
      return;
    }
    tables_.emplace(key, std::move(t));
    by_id_[id] = key;
    if (kind == "source") {
      by_name_["source " + Text(node, "source_name", path) + "." + name] = key;
    } else {
      // A versioned model's ref() without a version means its latest version.
      const auto version = node.find("version");
      const auto latest = node.find("latest_version");
      const bool is_latest = version == node.end() || version->is_null() || latest == node.end() ||
                             *version == *latest;
      if (is_latest || !by_name_.contains("ref " + name)) by_name_["ref " + name] = key;
    }
  }

  // meta: {personal: true} (or pii, contains_pii, is_pii), under config: too since dbt 1.10, or
  // a tag pii or personal.
  bool Personal(const Json& col, const std::string& at) const {
    std::vector<const Json*> metas = {Member(col, "meta", at, Shape::kObject)};
    if (const Json* config = Member(col, "config", at, Shape::kObject)) {
      metas.push_back(Member(*config, "meta", Child(at, "config"), Shape::kObject));
    }
    for (const Json* meta : metas) {
      if (!meta) continue;
      for (const std::string key : {"personal", "pii", "contains_pii", "is_pii"}) {
        if (const auto it = meta->find(key); it != meta->end() && Truthy(*it)) return true;
      }
    }
    if (const Json* tags = Member(col, "tags", at, Shape::kList)) {
      for (size_t i = 0; i < tags->size(); ++i) {
        const std::string tag = Lower(Scalar((*tags)[i], Child(Child(at, "tags"), i)));
        if (tag == "pii" || tag == "personal") return true;
      }
    }
    return false;
  }

  // The table a unique_id or a ref()/source() names; nullptr when none is known.
  Table* TableOf(const std::string& id) {
    const auto it = by_id_.find(id);
    return it == by_id_.end() ? nullptr : &tables_.at(it->second);
  }
  Table* TableOfTarget(const std::string& text) {
    const auto target = Target(text);
    if (!target) return nullptr;
    const auto it = by_name_.find(target->first + " " + target->second);
    return it == by_name_.end() ? nullptr : &tables_.at(it->second);
  }

  // relationships and accepted_values tests, dbt's own (no namespace).
  void ReadTest(const std::string& id, const Json& node) {
    const std::string path = Child("nodes", id);
    if (Text(node, "resource_type", path) != "test") return;
    const Json* meta = Member(node, "test_metadata", path, Shape::kObject);
    if (!meta) return;
    const std::string at = Child(path, "test_metadata");
    const std::string test = Text(*meta, "name", at);
    if ((test != "relationships" && test != "accepted_values") ||
        !Text(*meta, "namespace", at).empty()) {
      return;
    }
    const Json* kwargs = Member(*meta, "kwargs", at, Shape::kObject);
    if (!kwargs) return;
    const std::string args = Child(at, "kwargs");
    std::string column = Text(*kwargs, "column_name", args);
    if (column.empty()) column = Text(node, "column_name", path);
    Table* table = TableOf(Text(node, "attached_node", path));
    if (!table) table = TableOfTarget(Text(*kwargs, "model", args));
    const std::string name = Text(node, "name", path);
    auto skip = [&](const std::string& why) {
      out_.skipped.push_back(test + " test " + (name.empty() ? id : name) + " (" + why + ")");
    };
    if (!table) return skip("its model is not a table this import describes");
    if (!Identifier(column)) return skip("'" + column + "' is not a column name");
    const Json* config = Member(node, "config", path, Shape::kObject);
    const bool conditional = config && !Text(*config, "where", Child(path, "config")).empty();

    if (test == "accepted_values") {
      if (conditional) return skip("its values hold only where its where: condition does");
      const Json* values = Member(*kwargs, "values", args, Shape::kList);
      if (!values) return;
      auto col = std::ranges::find_if(
          table->doc.columns, [&](const ColumnDoc& c) { return Lower(c.name) == Lower(column); });
      if (col == table->doc.columns.end()) {
        ColumnDoc c;
        c.name = column;
        table->doc.columns.push_back(std::move(c));
        col = std::prev(table->doc.columns.end());
      }
      for (size_t i = 0; i < values->size(); ++i) {
        std::string v = Scalar((*values)[i], Child(Child(args, "values"), i));
        if (std::ranges::find(col->values, v, &std::pair<std::string, std::string>::first) ==
            col->values.end()) {
          col->values.emplace_back(std::move(v), "");
        }
      }
      return;
    }
    const std::string to = Text(*kwargs, "to", args);
    const std::string field = Text(*kwargs, "field", args);
    const Table* target = TableOfTarget(to);
    if (!target) return skip("cannot tell which table " + to + " is");
    if (!Identifier(field)) return skip("'" + field + "' is not a column name");
    Relationship r;
    r.from = table->doc.table + "." + column;
    r.to = target->doc.table + "." + field;
    r.cardinality = "many-to-one";
    r.origin = {id, 0};
    const bool seen = std::ranges::any_of(out_.relationships, [&](const Relationship& o) {
      return Lower(o.from) == Lower(r.from) && Lower(o.to) == Lower(r.to);
    });
    if (!seen) out_.relationships.push_back(std::move(r));
  }

  DbtImport out_;
  std::map<std::string, Table> tables_;         // by lower-case table name
  std::map<std::string, std::string> by_id_;    // unique_id → table key
  std::map<std::string, std::string> by_name_;  // "ref orders", "source raw.orders" → table key
};

// Keeps only what the import reads: a large project's manifest is mostly compiled SQL, macros
// and lineage maps, which need not be held in memory.
bool Wanted(int depth, Json::parse_event_t event, Json& parsed) {
  if (event != Json::parse_event_t::key || !parsed.is_string()) return true;
  const auto& key = parsed.get_ref<const std::string&>();
  if (depth == 1) {
    static const std::set<std::string> kept = {"nodes", "sources", "metrics", "semantic_models"};
    return kept.contains(key);
  }
  static const std::set<std::string> dropped = {"raw_code",     "compiled_code", "raw_sql",
                                                "compiled_sql", "extra_ctes",    "checksum"};
  return depth != 3 || !dropped.contains(key);
}

}  // namespace

}  // namespace dbt_internal

Result<DbtImport> ParseDbtManifest(std::string_view text, const std::string& name) {
  using dbt_internal::Json;
  const std::string what = "dbt manifest " + name;
  if (JsonDepth(text) > kMaxJsonDepth) {
    return Fail(Error::Code::kData, what + ": nested more than " + std::to_string(kMaxJsonDepth) +
                                        " levels deep: it is not a dbt manifest");
  }
  Json doc = Json::parse(text.begin(), text.end(), dbt_internal::Wanted, false);
  if (doc.is_discarded()) {
    std::string why = "not valid JSON";
    try {
      // Parsed again only to learn where it breaks: the throwing form says where.
      [[maybe_unused]] const Json again =
          Json::parse(text.begin(), text.end(), dbt_internal::Wanted, true);
    } catch (const Json::parse_error& e) {
      // "[json.exception.parse_error.101] parse error at line 3, column 5: ..."
      std::string message = e.what();
      const size_t at = message.find("] ");
      if (at != std::string::npos) message.erase(0, at + 2);
      // "; last read: '...'" quotes the input's bytes, which need not be text: the line and
      // column say where.
      if (const size_t last = message.find("; last read: "); last != std::string::npos) {
        const size_t next = message.find("; ", last + 13);
        message.erase(last, next == std::string::npos ? std::string::npos : next - last);
      }
      why += ": " + message;
    } catch (const std::exception& e) {
      why += ": " + std::string(e.what());
    }
    return Fail(Error::Code::kData, what + ": " + why);
  }
  try {
    return dbt_internal::Importer().Run(doc);
  } catch (const dbt_internal::Bad& bad) {
    return Fail(Error::Code::kData, what + ": " + bad.message);
  } catch (const std::exception& e) {  // a conversion past the checks above: still the file's
    return Fail(Error::Code::kData, what + ": " + e.what());
  }
}

Result<DbtImport> ReadDbtManifest(const std::filesystem::path& path) {
  std::error_code ec;
  if (const auto size = std::filesystem::file_size(path, ec); !ec && size > kMaxManifestBytes) {
    return Fail(Error::Code::kData, "dbt manifest " + path.string() + ": " +
                                        std::to_string(size >> 20) + " MiB is more than the " +
                                        std::to_string(kMaxManifestBytes >> 20) +
                                        " MiB an import reads");
  }
  auto text = ReadFileText(path, "dbt manifest");
  if (!text) return std::unexpected(text.error());
  return ParseDbtManifest(*text, path.string());
}

}  // namespace quarry::knowledge
