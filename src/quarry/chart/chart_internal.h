// Internals of the chart module shared by its .cc files and its tests: cell parsing, the
// prepared (grouped and aggregated) data, scales and tick labels, the category-label layout, and
// the scene a render records. No cairo or pango types here; those live in paint_internal.h.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "quarry/chart/chart.h"

namespace quarry::chart::internal {

// ---- cells (data.cc)

// A number as an engine renders it ("12", "-3.5", "1e6", "+2", "inf"); nullopt for anything else.
std::optional<double> ParseNumber(std::string_view text);
// An ISO date or timestamp ("2024", "2025-03", "2025-03-14", "2025-03-14 09:30:00[.fff][+01]",
// 'T' also accepted) as seconds since 1970-01-01 of the wall clock shown. A UTC offset is read
// and ignored on purpose: labels then show the same clock time the query result shows.
std::optional<double> ParseTimestamp(std::string_view text);
// Index of `field` among table.columns: an exact match, else the only case-insensitive one.
std::optional<size_t> FindColumn(const Table& table, std::string_view field);

// ---- prepared data (data.cc)

enum class XMode {
  kBand,    // discrete x: bars, nominal/ordinal lines and points, arc slices
  kLinear,  // quantitative x on line/point/area
  kTime,    // temporal x on line/point/area (sorted by time)
  kBinned,  // histogram: x cut into bins
};

struct Point {
  int series = 0;  // index into Prepared::series
  double x = 0;    // kBand: category index; kBinned: bin index; else the x value (seconds if time)
  double y = 0;
};

// The rows of a checked spec, grouped by x (and color) with the spec's aggregate applied.
// Rows whose x, or whose y without an aggregate, is NULL or unparseable are left out.
struct Prepared {
  XMode x_mode = XMode::kBand;
  std::vector<std::string>
      categories;                   // kBand labels in drawing order (dates formatted); arc slices
  std::vector<double> bin_edges;    // kBinned: bins + 1 ascending edges
  std::vector<std::string> series;  // color categories in legend order; {""} without color
  std::vector<Point> points;        // kLinear/kTime: in drawing order per series
  bool y_integers = true;           // every y is a whole number (counts): ticks stay whole
};
Prepared Prepare(const Spec& spec, const Table& table);

// missing_field and type_mismatch only: the problems that make a spec undrawable (check.cc).
std::vector<Problem> CheckFields(const Spec& spec, const Table& table);

// ---- scales and labels (scale.cc)

// Tick values at a step of {1, 2, 2.5, 5} x 10^k covering [lo, hi], 4 to 8 of them when possible;
// front() and back() are the nice domain. `integers` keeps the step at least 1.
struct Ticks {
  std::vector<double> values;
  double step = 1;
};
Ticks NiceTicks(double lo, double hi, bool integers = false);
// Decimals needed to show multiples of `step` exactly (0.25 -> 2, 2500 -> 0).
int DecimalsFor(double step);
// "12,500", "-2,500.5", "0.25": thousands separators, fixed decimals, never "-0".
std::string FormatNumber(double value, int decimals);

// Ticks for a time axis between t0 and t1 (seconds), labelled for the span: years "2024",
// months "Jan 2025", days "Mar 14", hours "09:00".
struct TimeTick {
  double t = 0;
  std::string label;
};
std::vector<TimeTick> TimeTicks(double t0, double t1);
// Labels for discrete dates at their granularity: all Jan 1 -> "2024", all firsts of a month ->
// "Jan 2025", all midnights -> "Mar 14" (", 2025" added when the years differ), else
// "2025-03-14 09:30".
std::vector<std::string> FormatDates(const std::vector<double>& times);

// Histogram edges: a nice step giving at most `maxbins` bins from below lo to above hi.
std::vector<double> BinEdges(double lo, double hi, int maxbins);

// How category labels under bands of width `band` are shown without overlapping: horizontal
// when every neighbour pair fits, else rotated -45 degrees, and every `step`-th label only when
// even rotated ones would touch. `widths` are the labels' drawn widths, `text_height` their line
// height (pixels).
struct LabelLayout {
  double angle_deg = 0;
  int step = 1;
};
LabelLayout LayoutCategoryLabels(const std::vector<double>& widths, double text_height,
                                 double band);

// ---- the scene a render records (draw.cc, render.cc)

enum class TextRole {
  kTitle,
  kXTitle,
  kYTitle,
  kXTick,
  kYTick,
  kLegendTitle,
  kLegend,
  kSlice,
  kNote
};

// One drawn string. The layout's top-left corner is at (x, y); the text runs along angle_deg
// (clockwise, as cairo rotates) from there; width/height are the drawn (maybe ellipsized) extents
// and baseline the distance from the top to the baseline. `text` is the full string.
struct TextItem {
  TextRole role = TextRole::kNote;
  std::string text;
  double x = 0, y = 0, angle_deg = 0;
  double width = 0, height = 0, baseline = 0;
};

struct BarItem {
  int series = 0;
  double x0 = 0, y0 = 0, x1 = 0, y1 = 0;  // device pixels, y0 < y1
};

struct Scene {
  std::vector<TextItem> texts;
  std::vector<BarItem> bars;
  double plot_left = 0, plot_top = 0, plot_right = 0, plot_bottom = 0;
  std::optional<double> zero_y;  // the zero line, when the y domain crosses zero
};

// Render, also returning what the PNG pass drew (the SVG pass draws the same).
Result<Rendered> RenderWithScene(const Spec& spec, const Table& table, int width, int height,
                                 Scene* scene);

}  // namespace quarry::chart::internal
