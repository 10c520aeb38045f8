// ParseSpec: the Vega-Lite subset the model may write, turned into a Spec at the edge. Every
// error is one line naming the JSON path, so the model can repair exactly that key.
#include <algorithm>
#include <array>
#include <string>
#include <string_view>
#include <utility>

#include "quarry/chart/chart.h"

namespace quarry::chart {
namespace {

using Json = nlohmann::ordered_json;

// Shows a JSON value in a message without letting invalid UTF-8 or a huge value through.
std::string Show(const Json& value) {
  std::string s = value.dump(-1, ' ', false, Json::error_handler_t::replace);
  if (s.size() > 60) s = s.substr(0, 57) + "...";
  return s;
}

std::unexpected<Error> Bad(const std::string& path, const std::string& what) {
  return Fail(Error::Code::kUsage, path + ": " + what);
}

template <size_t N>
bool OneOf(std::string_view value, const std::array<std::string_view, N>& allowed) {
  return std::find(allowed.begin(), allowed.end(), value) != allowed.end();
}

template <size_t N>
std::string Join(const std::array<std::string_view, N>& items) {
  std::string out;
  for (std::string_view item : items) out += (out.empty() ? "" : ", ") + std::string(item);
  return out;
}

// Names every key of `object` outside `allowed` in one error, so one repair fixes them all.
template <size_t N>
std::optional<Error> UnknownKeys(const Json& object, const std::string& path,
                                 const std::array<std::string_view, N>& allowed) {
  std::string unknown;
  int count = 0;
  for (const auto& [key, value] : object.items()) {
    if (OneOf(key, allowed)) continue;
    unknown += (count++ ? ", \"" : "\"") + key + "\"";
  }
  if (count == 0) return std::nullopt;
  std::string hint;
  if (object.contains("timeUnit")) hint = "; truncate dates in SQL instead (date_trunc)";
  return Error{Error::Code::kUsage, path + ": unknown key" + (count > 1 ? "s " : " ") + unknown +
                                        " (this subset takes " + Join(allowed) + ")" + hint};
}

// A string, or {"title": ...} / {"text": ...} style object holding one, or null (no text).
Result<std::string> TextOf(const Json& value, const std::string& path, std::string_view key) {
  if (value.is_null()) return std::string();
  if (value.is_string()) return value.get<std::string>();
  if (value.is_array() && !value.empty() &&
      std::all_of(value.begin(), value.end(), [](const Json& v) { return v.is_string(); })) {
    std::string joined;  // Vega-Lite's multi-line titles become one line
    for (const Json& line : value) joined += (joined.empty() ? "" : " ") + line.get<std::string>();
    return joined;
  }
  if (value.is_object() && !key.empty()) {
    if (auto e = UnknownKeys(value, path, std::array<std::string_view, 1>{key})) {
      return std::unexpected(*e);
    }
    if (!value.contains(key)) return std::string();
    return TextOf(value.at(std::string(key)), path + "." + std::string(key), "");
  }
  return Bad(path, "must be a string, not " + Show(value));
}

constexpr std::array<std::string_view, 4> kTypeNames = {"nominal", "ordinal", "quantitative",
                                                        "temporal"};

Result<FieldType> TypeOf(const Json& value, const std::string& path) {
  if (value.is_string()) {
    const std::string s = value.get<std::string>();
    if (s == "nominal" || s == "N") return FieldType::kNominal;
    if (s == "ordinal" || s == "O") return FieldType::kOrdinal;
    if (s == "quantitative" || s == "Q") return FieldType::kQuantitative;
    if (s == "temporal" || s == "T") return FieldType::kTemporal;
  }
  return Bad(path, Show(value) + " is not one of " + Join(kTypeNames));
}

// One channel of encoding. `name` is x, y, color or theta; the rules that depend on the mark
// are checked by the caller once every channel is known.
// `histogram` (the mark's alias) makes x binned and quantitative unless it says otherwise.
Result<Channel> ParseChannel(const Json& json, const std::string& name, bool histogram) {
  const std::string path = "spec.encoding." + name;
  if (!json.is_object()) {
    return Bad(path,
               "must be an object like {\"field\": \"...\", \"type\": \"...\"}, not " + Show(json));
  }
  const bool positional = name == "x" || name == "y";
  static constexpr std::array<std::string_view, 7> kPositional = {
      "field", "type", "aggregate", "sort", "bin", "title", "axis"};
  static constexpr std::array<std::string_view, 7> kColor = {"field", "type",  "aggregate", "sort",
                                                             "bin",   "title", "legend"};
  static constexpr std::array<std::string_view, 6> kTheta = {"field", "type", "aggregate",
                                                             "sort",  "bin",  "title"};
  std::optional<Error> unknown = positional        ? UnknownKeys(json, path, kPositional)
                                 : name == "color" ? UnknownKeys(json, path, kColor)
                                                   : UnknownKeys(json, path, kTheta);
  if (unknown) return std::unexpected(*unknown);

  Channel c;
  c.bin = histogram && name == "x";
  if (json.contains("aggregate")) {
    const Json& a = json.at("aggregate");
    static constexpr std::array<std::string_view, 7> kAggregates = {
        "sum", "mean", "average", "count", "min", "max", "median"};
    if (!a.is_string() || !OneOf(a.get<std::string>(), kAggregates)) {
      return Bad(path + ".aggregate", Show(a) + " is not one of " + Join(kAggregates));
    }
    c.aggregate = a.get<std::string>() == "average" ? "mean" : a.get<std::string>();
  }
  if (json.contains("field")) {
    const Json& f = json.at("field");
    if (!f.is_string() || f.get<std::string>().empty()) {
      return Bad(path + ".field", "must be a column name of the query result, not " + Show(f));
    }
    c.field = f.get<std::string>();
  } else if (c.aggregate != "count") {
    return Bad(path + ".field",
               "missing; name a column of the query result (only "
               "{\"aggregate\": \"count\"} goes without a field)");
  }
  if (json.contains("bin")) {
    const Json& b = json.at("bin");
    if (b.is_boolean()) {
      c.bin = b.get<bool>();
    } else if (b.is_object()) {
      if (auto e = UnknownKeys(b, path + ".bin", std::array<std::string_view, 1>{"maxbins"})) {
        return std::unexpected(*e);
      }
      c.bin = true;
      if (b.contains("maxbins")) {
        const Json& m = b.at("maxbins");
        if (!m.is_number_integer() || m.get<long long>() < 2 || m.get<long long>() > 200) {
          return Bad(path + ".bin.maxbins", "must be a whole number from 2 to 200, not " + Show(m));
        }
        c.maxbins = static_cast<int>(m.get<long long>());
      }
    } else if (!b.is_null()) {
      return Bad(path + ".bin", "must be true, false or {\"maxbins\": n}, not " + Show(b));
    }
  }
  if (json.contains("type")) {
    auto type = TypeOf(json.at("type"), path + ".type");
    if (!type) return std::unexpected(type.error());
    c.type = *type;
  } else if (c.aggregate == "count" || c.bin || name == "theta") {
    c.type = FieldType::kQuantitative;
  } else if (name == "color") {
    c.type = FieldType::kNominal;
  } else {
    return Bad(path + ".type", "missing; one of " + Join(kTypeNames));
  }
  if (json.contains("sort")) {
    const Json& s = json.at("sort");
    static constexpr std::array<std::string_view, 6> kSorts = {"ascending", "descending", "x",
                                                               "-x",        "y",          "-y"};
    if (s.is_null()) {
      c.sort = "none";
    } else if (s.is_string() && OneOf(s.get<std::string>(), kSorts)) {
      c.sort = s.get<std::string>();
    } else {
      return Bad(path + ".sort", Show(s) + " is not one of " + Join(kSorts) +
                                     " or null (for any other order, ORDER BY in the query and "
                                     "use null)");
    }
  }
  if (json.contains("title")) {
    auto t = TextOf(json.at("title"), path + ".title", "");
    if (!t) return std::unexpected(t.error());
    c.title = *t;
  }
  for (std::string_view key : {"axis", "legend"}) {
    if (!json.contains(key) || json.at(std::string(key)).is_null()) continue;
    const std::string sub = path + "." + std::string(key);
    if (!json.at(std::string(key)).is_object()) {
      return Bad(sub, "must be an object like {\"title\": \"...\"} or null");
    }
    auto t = TextOf(json.at(std::string(key)), sub, "title");
    if (!t) return std::unexpected(t.error());
    if (!t->empty()) c.title = *t;
  }
  return c;
}

// The rules between channels and the mark, checked once everything parsed.
std::optional<Error> CheckShape(Spec& spec, bool histogram) {
  auto bad = [](const std::string& path, const std::string& what) {
    return Error{Error::Code::kUsage, path + ": " + what};
  };
  const std::string enc = "spec.encoding";
  if (spec.mark == Mark::kArc) {
    if (spec.x || spec.y) {
      return bad(enc + (spec.x ? ".x" : ".y"),
                 "an arc (pie) uses theta for the sizes and color for the slices, not x/y");
    }
    if (!spec.theta) return bad(enc + ".theta", "missing; an arc needs the slice sizes in theta");
    if (!spec.color) return bad(enc + ".color", "missing; an arc needs the slices in color");
  } else {
    if (spec.theta) return bad(enc + ".theta", "only an arc (pie) uses theta; use x and y");
    if (!spec.x) return bad(enc + ".x", "missing; this mark needs x and y");
    if (histogram) spec.x->bin = true;
    if (!spec.y && spec.x->bin) {
      Channel count;
      count.type = FieldType::kQuantitative;
      count.aggregate = "count";
      spec.y = count;
    }
    if (!spec.y) return bad(enc + ".y", "missing; this mark needs x and y");
  }
  if (spec.y && spec.y->type != FieldType::kQuantitative) {
    return bad(enc + ".y.type",
               "must be quantitative: bars are vertical, so put the categories "
               "on x and the numbers (or {\"aggregate\": \"count\"}) on y");
  }
  if (spec.theta && spec.theta->type != FieldType::kQuantitative) {
    return bad(enc + ".theta.type", "must be quantitative (the slice sizes)");
  }
  if (spec.color && spec.color->type != FieldType::kNominal &&
      spec.color->type != FieldType::kOrdinal) {
    return bad(enc + ".color.type", "must be nominal or ordinal: color shows categories");
  }
  const std::pair<const char*, const std::optional<Channel>*> channels[] = {
      {"x", &spec.x}, {"y", &spec.y}, {"color", &spec.color}, {"theta", &spec.theta}};
  for (const auto& [name, channel] : channels) {
    if (!*channel) continue;
    const std::string path = enc + "." + name;
    const bool is_x = std::string_view(name) == "x";
    const bool is_measure = std::string_view(name) == "y" || std::string_view(name) == "theta";
    if (!(*channel)->aggregate.empty() && !is_measure) {
      return bad(path + ".aggregate", "only y and theta aggregate; x and color group the rows");
    }
    if (!(*channel)->sort.empty() && !is_x) {
      return bad(path + ".sort", "only x can be sorted; ORDER BY in the query for the rest");
    }
    if ((*channel)->bin && !is_x) return bad(path + ".bin", "only x can be binned");
  }
  if (spec.x && spec.x->bin) {
    if (spec.mark != Mark::kBar) return bad(enc + ".x.bin", "only a bar (histogram) bins x");
    if (spec.x->type != FieldType::kQuantitative) {
      return bad(enc + ".x.type", "a binned x must be quantitative");
    }
    if (spec.y->aggregate.empty()) {
      return bad(enc + ".y.aggregate",
                 "a binned x needs an aggregate on y: \"count\", or "
                 "\"sum\"/\"mean\" of a field");
    }
  }
  return std::nullopt;
}

}  // namespace

Result<Spec> ParseSpec(const nlohmann::ordered_json& json) {
  if (!json.is_object()) {
    return Bad("spec", "must be a JSON object with mark, encoding and data, not " + Show(json));
  }
  static constexpr std::array<std::string_view, 6> kTopKeys = {"mark", "title",   "encoding",
                                                               "data", "$schema", "description"};
  if (auto e = UnknownKeys(json, "spec", kTopKeys)) return std::unexpected(*e);

  Spec spec;
  if (!json.contains("mark"))
    return Bad("spec.mark", "missing; one of bar, line, point, area, arc");
  const Json* mark = &json.at("mark");
  std::string mark_path = "spec.mark";
  if (mark->is_object()) {
    if (auto e = UnknownKeys(*mark, mark_path, std::array<std::string_view, 1>{"type"})) {
      return std::unexpected(*e);
    }
    if (!mark->contains("type")) return Bad("spec.mark.type", "missing");
    mark = &mark->at("type");
    mark_path += ".type";
  }
  static constexpr std::array<std::string_view, 6> kMarks = {"bar",  "line", "point",
                                                             "area", "arc",  "histogram"};
  if (!mark->is_string() || !OneOf(mark->get<std::string>(), kMarks)) {
    return Bad(mark_path, Show(*mark) + " is not one of " + Join(kMarks) + " (a pie is an arc)");
  }
  const std::string mark_name = mark->get<std::string>();
  spec.mark = mark_name == "line"    ? Mark::kLine
              : mark_name == "point" ? Mark::kPoint
              : mark_name == "area"  ? Mark::kArea
              : mark_name == "arc"   ? Mark::kArc
                                     : Mark::kBar;

  if (json.contains("title")) {
    auto title = TextOf(json.at("title"), "spec.title", "text");
    if (!title) return std::unexpected(title.error());
    spec.title = *title;
  }

  if (!json.contains("encoding")) return Bad("spec.encoding", "missing");
  const Json& encoding = json.at("encoding");
  if (!encoding.is_object())
    return Bad("spec.encoding", "must be an object, not " + Show(encoding));
  static constexpr std::array<std::string_view, 4> kChannels = {"x", "y", "color", "theta"};
  if (auto e = UnknownKeys(encoding, "spec.encoding", kChannels)) return std::unexpected(*e);
  const std::pair<const char*, std::optional<Channel>*> slots[] = {
      {"x", &spec.x}, {"y", &spec.y}, {"color", &spec.color}, {"theta", &spec.theta}};
  for (const auto& [name, slot] : slots) {
    if (!encoding.contains(name)) continue;
    auto channel = ParseChannel(encoding.at(name), name, mark_name == "histogram");
    if (!channel) return std::unexpected(channel.error());
    *slot = std::move(*channel);
  }

  if (!json.contains("data")) {
    return Bad("spec.data", "missing; give the query whose result is drawn as {\"sql\": \"...\"}");
  }
  const Json& data = json.at("data");
  if (!data.is_object()) return Bad("spec.data", "must be {\"sql\": \"...\"}, not " + Show(data));
  for (std::string_view key : {"values", "url"}) {
    if (data.contains(key)) {
      return Bad("spec.data." + std::string(key),
                 "not accepted: a chart draws a query's result, so give the query in data.sql");
    }
  }
  if (auto e = UnknownKeys(data, "spec.data", std::array<std::string_view, 1>{"sql"})) {
    return std::unexpected(*e);
  }
  if (!data.contains("sql") || !data.at("sql").is_string() ||
      data.at("sql").get<std::string>().find_first_not_of(" \t\r\n") == std::string::npos) {
    return Bad("spec.data.sql", "must be the non-empty SELECT query whose result is drawn");
  }
  spec.sql = data.at("sql").get<std::string>();

  if (auto e = CheckShape(spec, mark_name == "histogram")) return std::unexpected(*e);
  return spec;
}

}  // namespace quarry::chart
