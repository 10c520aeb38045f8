// The chart module: a small subset of Vega-Lite, checked against the rows it will draw and
// linted for charts that mislead or say nothing, then rendered natively with cairo and pango,
// one drawing path to both PNG and SVG. Data comes from a query's result, never pasted
// numbers, so a chart is as grounded as an answer. Knows nothing of engines or the agent.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "quarry/common/common.h"

namespace quarry::chart {

enum class Mark { kBar, kLine, kPoint, kArea, kArc };
enum class FieldType { kNominal, kOrdinal, kQuantitative, kTemporal };

// One encoding channel: {"field", "type", "aggregate"?, "sort"?, "bin"?, "title"?}.
struct Channel {
  std::string field;  // empty only for {"aggregate": "count"}
  FieldType type = FieldType::kNominal;
  std::string aggregate;  // "", "sum", "mean", "count", "min", "max", "median"
  std::string sort;       // "", "ascending", "descending", "x", "-x", "y", "-y", or
                          // "none" (JSON null: keep the query's row order); x only
  bool bin = false;       // histogram: bin a quantitative x, count on y
  int maxbins = 0;        // {"bin": {"maxbins": n}}; 0 means about 20 bins
  std::string title;      // axis or legend title; defaults to the field
};

// {"mark": "bar"|"line"|"point"|"area"|"arc", "title"?, "encoding": {"x", "y", "color"?,
//  "theta"? (arc)}, "data": {"sql": "..."}}. A histogram is a bar with x.bin and y count.
struct Spec {
  Mark mark = Mark::kBar;
  std::string title;
  std::optional<Channel> x, y, color, theta;
  std::string sql;  // data.sql: the query whose result is drawn
};

// Rows as the engine rendered them (text; nullopt is NULL) with the engine's column types.
struct Table {
  std::vector<std::string> columns;
  std::vector<std::string> types;
  std::vector<std::vector<std::optional<std::string>>> rows;
};

// Errors: kUsage naming the field of the spec that is wrong and what is allowed, one line, e.g.
// `spec.encoding.x.type: "quantity" is not one of nominal, ordinal, quantitative, temporal`.
// Keys outside the subset are errors too, so the model learns the subset; "$schema" and
// "description" are accepted and ignored. "histogram" is a bar with x.bin and a count on y.
Result<Spec> ParseSpec(const nlohmann::ordered_json& spec);

// Why a spec and its data do not make a chart: fields missing, types that do not fit their
// channels, and the lint rules (no rows, all-null measure, more than 30 categories on a bar or
// arc, an unsorted non-temporal x on a line, negative values on an arc, a single point).
struct Problem {
  std::string rule;     // "missing_field", "type_mismatch", "no_rows", "all_null_measure",
                        // "too_many_categories", "unsorted_line", "negative_arc", "single_point"
  std::string message;  // for the model: what is wrong and how to fix it
};
std::vector<Problem> Check(const Spec& spec, const Table& table);

struct Rendered {
  std::string png;  // PNG bytes
  std::string svg;  // SVG text
  int width = 0;    // pixels
  int height = 0;
};

// Renders a spec that passed Check; lint problems still draw (no rows: empty axes and a note).
// Safe to call from several threads at once. Errors: kUsage when width/height are outside
// 200..4000 or a field is missing or has the wrong type (what Check reports as missing_field or
// type_mismatch); kInternal when cairo fails.
Result<Rendered> Render(const Spec& spec, const Table& table, int width = 800, int height = 500);

}  // namespace quarry::chart
