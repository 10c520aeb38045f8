// DrawChart: the layout and marks of every chart, on whatever cairo surface the painter holds:
// title, axes with nice ticks, category labels that never overlap, legend, bars (stacked by
// color), lines with points, stacked areas, points, and pies.
#include <algorithm>
#include <array>
#include <cmath>
#include <map>
#include <cstdio>
#include <numbers>
#include <set>

#include "quarry/chart/paint_internal.h"

namespace quarry::chart::internal {
namespace {

// Okabe & Ito's colour-blind-safe palette, blue first for a single series; yellow late because
// it is faint on white.
constexpr std::array<unsigned, 8> kPalette = {0x0072B2, 0xE69F00, 0x009E73, 0xD55E00,
                                              0xCC79A7, 0x56B4E9, 0xF0E442, 0x000000};
constexpr double kPad = 16;         // outer margin
constexpr double kMaxLabel = 120;   // category labels longer than this are ellipsized
constexpr double kMaxLegend = 150;  // so are legend entries
constexpr double kSin45 = std::numbers::sqrt2 / 2;

Rgb SeriesColor(int i) { return Hex(kPalette[static_cast<size_t>(i) % kPalette.size()]); }

std::string ChannelTitle(const Channel& c) {
  if (!c.title.empty()) return c.title;
  if (c.aggregate == "count") return c.field.empty() ? "Count" : "Count of " + c.field;
  std::string name = c.field + (c.bin ? " (binned)" : "");
  if (c.aggregate.empty()) return name;
  std::string op = c.aggregate;
  op[0] = static_cast<char>(op[0] - 'a' + 'A');
  return op + " of " + name;
}

class Chart {
 public:
  Chart(Painter& p, const Spec& spec, const Prepared& d, int width, int height)
      : p_(p), cr_(p.cr()), spec_(spec), d_(d), w_(width), h_(height) {}

  void Draw() {
    p_.SetColor(Hex(0xFFFFFF));
    cairo_paint(cr_);
    Title();
    if (spec_.mark == Mark::kArc) {
      Arc();
    } else {
      Cartesian();
    }
  }

 private:
  void Title() {
    std::string title = spec_.title;
    if (title.empty()) {
      title = spec_.mark == Mark::kArc
                  ? ChannelTitle(*spec_.theta) + " by " + ChannelTitle(*spec_.color)
                  : ChannelTitle(*spec_.y) + " by " + ChannelTitle(*spec_.x);
    }
    auto e =
        p_.Text(title, Font::kTitle, TextRole::kTitle, w_ / 2.0, kPad, 0.5, 0, 0, w_ - 2 * kPad);
    top_ = kPad + e.height + 12;
  }

  double LineHeight() { return p_.Measure("Ag", Font::kBody).height; }

  double LegendWidth() {
    if (!spec_.color) return 0;
    double widest = p_.Measure(ChannelTitle(*spec_.color), Font::kBold, kMaxLegend).width;
    for (const std::string& s : d_.series) {
      widest = std::max(widest, 18 + p_.Measure(s, Font::kBody, kMaxLegend).width);
    }
    return widest + 24;
  }

  void Legend(double x, double y) {
    y += p_.Text(ChannelTitle(*spec_.color), Font::kBold, TextRole::kLegendTitle, x, y, 0, 0, 0,
                 kMaxLegend)
             .height +
         4;
    const double row = LineHeight() + 4;
    for (size_t i = 0; i < d_.series.size(); ++i) {
      if (y + 2 * row > h_ - kPad && i + 1 < d_.series.size()) {
        p_.Text("+" + std::to_string(d_.series.size() - i) + " more", Font::kBody,
                TextRole::kLegend, x, y, 0, 0);
        return;
      }
      p_.SetColor(SeriesColor(static_cast<int>(i)));
      cairo_rectangle(cr_, x, y + (row - 4 - 12) / 2, 12, 12);
      cairo_fill(cr_);
      p_.Text(d_.series[i], Font::kBody, TextRole::kLegend, x + 18, y, 0, 0, 0, kMaxLegend);
      y += row;
    }
  }

  void Note(const std::string& text, double cx, double cy) {
    p_.Text(text, Font::kBody, TextRole::kNote, cx, cy, 0.5, 0.5, 0, 0, Hex(0x777777));
  }

  // ---- cartesian charts

  double X(double v) const { return left_ + (v - x0_) / (x1_ - x0_) * (right_ - left_); }
  double Y(double v) const { return bottom_ - (v - y0_) / (y1_ - y0_) * (bottom_ - top_); }
  double BandCenter(double i) const { return left_ + (i + 0.5) * band_; }
  double PointX(const Point& pt) const {
    return d_.x_mode == XMode::kBand ? BandCenter(pt.x) : X(pt.x);
  }

  // Stacks values per x: for each series in order, (x, series) -> [base, top).
  std::map<std::pair<double, int>, std::pair<double, double>> Stack() const {
    std::map<std::pair<double, int>, double> cells;
    for (const Point& pt : d_.points) cells[{pt.x, pt.series}] += pt.y;
    std::map<double, std::pair<double, double>> bases;  // x -> (positive, negative) so far
    std::map<std::pair<double, int>, std::pair<double, double>> out;
    for (const auto& [key, v] : cells) {
      auto& [pos, neg] = bases[key.first];
      double& base = v >= 0 ? pos : neg;
      out[key] = {base, base + v};
      base += v;
    }
    return out;
  }

  void YScale() {
    const bool stacked = spec_.mark == Mark::kBar || spec_.mark == Mark::kArea;
    double lo = INFINITY, hi = -INFINITY;
    if (stacked) {
      for (const auto& [key, span] : Stack()) {
        lo = std::min({lo, span.first, span.second});
        hi = std::max({hi, span.first, span.second});
      }
    } else {
      for (const Point& pt : d_.points) {
        lo = std::min(lo, pt.y);
        hi = std::max(hi, pt.y);
      }
    }
    if (lo > hi) {
      lo = 0;
      hi = 1;
    }
    // Bars and areas show amounts, so their axis starts at zero; lines and points may zoom in,
    // but keep zero when the data comes close to it anyway.
    if (stacked || (lo > 0 && lo <= 0.3 * hi)) lo = std::min(lo, 0.0);
    if (stacked || (hi < 0 && hi >= 0.3 * lo)) hi = std::max(hi, 0.0);
    y_ticks_ = NiceTicks(lo, hi, d_.y_integers);
    y0_ = y_ticks_.values.front();
    y1_ = y_ticks_.values.back();
  }

  // x ticks for the continuous modes: positions in data units and labels.
  std::vector<std::pair<double, std::string>> ContinuousTicks() {
    std::vector<std::pair<double, std::string>> out;
    if (d_.x_mode == XMode::kTime) {
      x0_ = INFINITY;
      x1_ = -INFINITY;
      for (const Point& pt : d_.points) {
        x0_ = std::min(x0_, pt.x);
        x1_ = std::max(x1_, pt.x);
      }
      if (!(x0_ <= x1_)) x0_ = x1_ = 0;
      for (const TimeTick& t : TimeTicks(x0_, x1_)) out.emplace_back(t.t, t.label);
      if (x1_ == x0_) {  // one instant: a day either side, the tick in the middle
        x0_ -= 86400;
        x1_ += 86400;
      }
      return out;
    }
    double lo = INFINITY, hi = -INFINITY;
    bool integers = true;
    for (const Point& pt : d_.points) {
      lo = std::min(lo, pt.x);
      hi = std::max(hi, pt.x);
      integers = integers && pt.x == std::round(pt.x);
    }
    if (d_.x_mode == XMode::kBinned && !d_.bin_edges.empty()) {
      lo = d_.bin_edges.front();
      hi = d_.bin_edges.back();
      // The axis shows the edges, not the points: whole ticks only when the edges are whole.
      integers = std::all_of(d_.bin_edges.begin(), d_.bin_edges.end(),
                             [](double e) { return e == std::round(e); });
    }
    if (lo > hi) {
      lo = 0;
      hi = 1;
    }
    const Ticks ticks = NiceTicks(lo, hi, integers);
    x0_ = std::min(ticks.values.front(), lo);
    x1_ = std::max(ticks.values.back(), hi);
    // Years on a quantitative axis read as 2024, not 2,024.
    const bool years = integers && lo >= 1000 && hi <= 2999 && ticks.step >= 1;
    for (double v : ticks.values) {
      out.emplace_back(
          v, years ? std::to_string(std::lround(v)) : FormatNumber(v, DecimalsFor(ticks.step)));
    }
    return out;
  }

  void Cartesian() {
    YScale();
    const int y_decimals = DecimalsFor(y_ticks_.step);
    std::vector<std::string> y_labels;
    double y_label_w = 0;
    for (double v : y_ticks_.values) {
      y_labels.push_back(FormatNumber(v, y_decimals));
      y_label_w = std::max(y_label_w, p_.Measure(y_labels.back(), Font::kBody).width);
    }
    const double line_h = LineHeight();
    const double legend_w = LegendWidth();
    left_ = kPad + line_h + 8 + y_label_w + 8;
    right_ = w_ - kPad - legend_w;

    // x labels, and how much room they need below the plot.
    std::vector<std::pair<double, std::string>> x_ticks;  // continuous: value, label
    LabelLayout layout;
    std::vector<double> widths;
    if (d_.x_mode == XMode::kBand) {
      for (const std::string& c : d_.categories) {
        widths.push_back(p_.Measure(c, Font::kBody, kMaxLabel).width);
      }
      const size_t n = std::max<size_t>(1, d_.categories.size());
      band_ = (right_ - left_) / static_cast<double>(n);
      layout = LayoutCategoryLabels(widths, line_h, band_);
      if (layout.angle_deg != 0 && !widths.empty()) {
        // A rotated first label reaches left of its band; make room so it is not cut off.
        left_ = std::max(left_, kPad + (widths[0] + line_h / 2) * kSin45 - band_ / 2);
        band_ = (right_ - left_) / static_cast<double>(n);
        layout = LayoutCategoryLabels(widths, line_h, band_);
      }
    } else {
      x_ticks = ContinuousTicks();
      double widest = 0;
      for (const auto& t : x_ticks)
        widest = std::max(widest, p_.Measure(t.second, Font::kBody).width);
      const double spacing =
          x_ticks.size() > 1
              ? (right_ - left_) * (x_ticks[1].first - x_ticks[0].first) / (x1_ - x0_)
              : right_ - left_;
      layout.step = std::max(1, static_cast<int>(std::ceil((widest + 8) / spacing)));
    }
    double label_h = line_h;
    if (layout.angle_deg != 0) {
      label_h = 0;
      for (size_t i = 0; i < widths.size(); i += static_cast<size_t>(layout.step)) {
        label_h = std::max(label_h, (widths[i] + line_h) * kSin45);
      }
    }
    const std::string x_title = ChannelTitle(*spec_.x);
    bottom_ = h_ - kPad - line_h - 8 - label_h - 8;
    bottom_ = std::max(bottom_, top_ + 40);

    Scene& scene = p_.scene();
    scene.plot_left = left_;
    scene.plot_top = top_;
    scene.plot_right = right_;
    scene.plot_bottom = bottom_;

    // Grid and y labels.
    cairo_set_line_width(cr_, 1);
    for (size_t i = 0; i < y_ticks_.values.size(); ++i) {
      const double y = std::round(Y(y_ticks_.values[i])) + 0.5;
      p_.SetColor(Hex(0xE5E5E5));
      cairo_move_to(cr_, left_, y);
      cairo_line_to(cr_, right_, y);
      cairo_stroke(cr_);
      p_.Text(y_labels[i], Font::kBody, TextRole::kYTick, left_ - 8, y, 1, 0.5);
    }

    if (d_.points.empty()) {
      Note("No rows to draw", (left_ + right_) / 2, (top_ + bottom_) / 2);
    } else if (spec_.mark == Mark::kBar) {
      Bars();
    } else if (spec_.mark == Mark::kArea) {
      Areas();
    } else {
      LinesAndPoints();
    }

    // Axis line at the bottom, and the zero line wherever zero falls inside the plot.
    p_.SetColor(Hex(0x888888));
    cairo_move_to(cr_, left_, std::round(bottom_) + 0.5);
    cairo_line_to(cr_, right_, std::round(bottom_) + 0.5);
    cairo_stroke(cr_);
    if (y0_ <= 0 && y1_ >= 0) {
      scene.zero_y = Y(0);
      if (y0_ < 0) {
        p_.SetColor(kInk);
        cairo_move_to(cr_, left_, std::round(Y(0)) + 0.5);
        cairo_line_to(cr_, right_, std::round(Y(0)) + 0.5);
        cairo_stroke(cr_);
      }
    }

    // x labels.
    const double label_y = bottom_ + 6;
    auto tick = [&](double x) {
      p_.SetColor(Hex(0x888888));
      cairo_move_to(cr_, std::round(x) + 0.5, bottom_);
      cairo_line_to(cr_, std::round(x) + 0.5, bottom_ + 4);
      cairo_stroke(cr_);
    };
    const size_t step = static_cast<size_t>(layout.step);
    if (d_.x_mode == XMode::kBand) {
      for (size_t i = 0; i < d_.categories.size(); i += step) {
        const double x = BandCenter(static_cast<double>(i));
        tick(x);
        if (layout.angle_deg == 0) {
          p_.Text(d_.categories[i], Font::kBody, TextRole::kXTick, x, label_y, 0.5, 0, 0,
                  kMaxLabel);
        } else {
          // The label's end, mid-height, at the tick; lowered so its top corner clears the axis.
          p_.Text(d_.categories[i], Font::kBody, TextRole::kXTick, x, label_y + line_h / 2 * kSin45,
                  1, 0.5, layout.angle_deg, kMaxLabel);
        }
      }
    } else {
      for (size_t i = 0; i < x_ticks.size(); i += step) {
        const double x = X(x_ticks[i].first);
        if (x < left_ - 0.5 || x > right_ + 0.5) continue;
        tick(x);
        p_.Text(x_ticks[i].second, Font::kBody, TextRole::kXTick, x, label_y, 0.5, 0);
      }
    }

    p_.Text(x_title, Font::kBody, TextRole::kXTitle, (left_ + right_) / 2, h_ - kPad, 0.5, 1, 0,
            right_ - left_);
    p_.Text(ChannelTitle(*spec_.y), Font::kBody, TextRole::kYTitle, kPad, (top_ + bottom_) / 2, 0.5,
            0, -90, bottom_ - top_);
    if (spec_.color) Legend(right_ + 24, top_);
  }

  void Bars() {
    const auto stack = Stack();
    const double width = std::min(band_ * 0.8, 140.0);
    for (const auto& [key, span] : stack) {
      double x0, x1;
      if (d_.x_mode == XMode::kBinned) {
        const size_t b = static_cast<size_t>(key.first);
        x0 = X(d_.bin_edges[b]) + 0.5;
        x1 = X(d_.bin_edges[b + 1]) - 0.5;
      } else {
        x0 = BandCenter(key.first) - width / 2;
        x1 = x0 + width;
      }
      const double ya = Y(span.first), yb = Y(span.second);
      const BarItem bar{key.second, x0, std::min(ya, yb), x1, std::max(ya, yb)};
      p_.SetColor(SeriesColor(key.second));
      cairo_rectangle(cr_, bar.x0, bar.y0, bar.x1 - bar.x0, bar.y1 - bar.y0);
      cairo_fill(cr_);
      p_.scene().bars.push_back(bar);
    }
  }

  void Areas() {
    // Every series at every x (0 where it has no row), so the stacked bands line up.
    std::set<double> xs;
    for (const Point& pt : d_.points) xs.insert(pt.x);
    std::map<std::pair<double, int>, double> cells;
    for (const Point& pt : d_.points) cells[{pt.x, pt.series}] += pt.y;
    std::map<double, double> base;
    for (size_t s = 0; s < d_.series.size(); ++s) {
      std::vector<std::pair<double, double>> lower, upper;
      for (double x : xs) {
        auto it = cells.find({x, static_cast<int>(s)});
        const double v = it == cells.end() ? 0 : it->second;
        const double px = d_.x_mode == XMode::kBand ? BandCenter(x) : X(x);
        lower.emplace_back(px, Y(base[x]));
        base[x] += v;
        upper.emplace_back(px, Y(base[x]));
      }
      const Rgb color = SeriesColor(static_cast<int>(s));
      cairo_new_path(cr_);
      for (const auto& [x, y] : upper) cairo_line_to(cr_, x, y);
      for (auto it = lower.rbegin(); it != lower.rend(); ++it)
        cairo_line_to(cr_, it->first, it->second);
      cairo_close_path(cr_);
      p_.SetColor(color, 0.75);
      cairo_fill(cr_);
      cairo_new_path(cr_);
      for (const auto& [x, y] : upper) cairo_line_to(cr_, x, y);
      p_.SetColor(color);
      cairo_set_line_width(cr_, 1.5);
      cairo_stroke(cr_);
    }
  }

  void LinesAndPoints() {
    const bool line = spec_.mark == Mark::kLine;
    for (size_t s = 0; s < d_.series.size(); ++s) {
      std::vector<std::pair<double, double>> pts;
      for (const Point& pt : d_.points) {
        if (pt.series == static_cast<int>(s)) pts.emplace_back(PointX(pt), Y(pt.y));
      }
      const Rgb color = SeriesColor(static_cast<int>(s));
      if (line) {
        cairo_new_path(cr_);
        for (const auto& [x, y] : pts) cairo_line_to(cr_, x, y);
        p_.SetColor(color);
        cairo_set_line_width(cr_, 2);
        cairo_set_line_join(cr_, CAIRO_LINE_JOIN_ROUND);
        cairo_stroke(cr_);
      }
      // Dots mark the real observations on a line; too many of them would hide it.
      const double r = line ? (pts.size() <= 60 ? 3 : 0) : (d_.points.size() <= 500 ? 4 : 2.5);
      if (r == 0) continue;
      cairo_new_path(cr_);
      for (const auto& [x, y] : pts) {
        cairo_new_sub_path(cr_);
        cairo_arc(cr_, x, y, r, 0, 2 * std::numbers::pi);
      }
      p_.SetColor(color, line ? 1 : 0.85);
      cairo_fill_preserve(cr_);
      p_.SetColor(Hex(0xFFFFFF));
      cairo_set_line_width(cr_, 0.75);
      cairo_stroke(cr_);
    }
  }

  // ---- pie

  void Arc() {
    const double legend_w = LegendWidth();
    const double right = w_ - kPad - legend_w;
    const double cx = (kPad + right) / 2, cy = (top_ + h_ - kPad) / 2;
    const double radius = std::max(10.0, std::min(right - kPad, h_ - kPad - top_) / 2 - 4);
    double total = 0;
    for (const Point& pt : d_.points) total += std::max(0.0, pt.y);
    Legend(right + 24, top_);
    if (total <= 0) {
      Note(d_.points.empty() ? "No rows to draw" : "Nothing to draw: every value is zero", cx, cy);
      return;
    }
    double angle = -std::numbers::pi / 2;  // start at twelve o'clock, go clockwise
    for (const Point& pt : d_.points) {
      if (pt.y <= 0) continue;
      const double sweep = pt.y / total * 2 * std::numbers::pi;
      const Rgb color = SeriesColor(pt.series);
      cairo_new_path(cr_);
      cairo_move_to(cr_, cx, cy);
      cairo_arc(cr_, cx, cy, radius, angle, angle + sweep);
      cairo_close_path(cr_);
      p_.SetColor(color);
      cairo_fill_preserve(cr_);
      p_.SetColor(Hex(0xFFFFFF));
      cairo_set_line_width(cr_, 1.5);
      cairo_stroke(cr_);
      const double share = pt.y / total;
      if (share >= 0.04) {
        const double mid = angle + sweep / 2;
        const bool light = 0.2126 * color.r + 0.7152 * color.g + 0.0722 * color.b > 0.5;
        char label[16];
        std::snprintf(label, sizeof label, "%.0f%%", share * 100);
        p_.Text(label, Font::kBold, TextRole::kSlice, cx + 0.65 * radius * std::cos(mid),
                cy + 0.65 * radius * std::sin(mid), 0.5, 0.5, 0, 0, light ? kInk : Hex(0xFFFFFF));
      }
      angle += sweep;
    }
  }

  Painter& p_;
  cairo_t* cr_;
  const Spec& spec_;
  const Prepared& d_;
  int w_, h_;
  double top_ = 0, left_ = 0, right_ = 0, bottom_ = 0;
  double x0_ = 0, x1_ = 1, y0_ = 0, y1_ = 1, band_ = 1;
  Ticks y_ticks_;
};

}  // namespace

void DrawChart(Painter& painter, const Spec& spec, const Prepared& data, int width, int height) {
  Chart(painter, spec, data, width, height).Draw();
}

}  // namespace quarry::chart::internal
