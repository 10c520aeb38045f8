// The cairo/pango layer of the chart module: owned handles, colours, and a text painter that
// records every string it draws into the Scene (for the SVG text layer and for tests).
// Only render.cc and draw.cc include this; it is the one place that knows pango.
#pragma once

#include <cairo.h>
#include <pango/pangocairo.h>

#include <memory>
#include <string>
#include <string_view>

#include "quarry/chart/chart_internal.h"

namespace quarry::chart::internal {

// unique_ptr deleters for C handles: std::unique_ptr<cairo_t, Deleter<cairo_destroy>>.
template <auto Destroy>
struct Deleter {
  template <typename T>
  void operator()(T* handle) const {
    Destroy(handle);
  }
};
using CairoPtr = std::unique_ptr<cairo_t, Deleter<cairo_destroy>>;
using SurfacePtr = std::unique_ptr<cairo_surface_t, Deleter<cairo_surface_destroy>>;
using LayoutPtr = std::unique_ptr<PangoLayout, Deleter<g_object_unref>>;
using FontPtr = std::unique_ptr<PangoFontDescription, Deleter<pango_font_description_free>>;
using FontOptionsPtr = std::unique_ptr<cairo_font_options_t, Deleter<cairo_font_options_destroy>>;

struct Rgb {
  double r = 0, g = 0, b = 0;
};
constexpr Rgb Hex(unsigned rgb) {
  return {((rgb >> 16) & 0xff) / 255.0, ((rgb >> 8) & 0xff) / 255.0, (rgb & 0xff) / 255.0};
}
constexpr Rgb kInk = Hex(0x333333);

enum class Font { kBody, kBold, kTitle };  // DejaVu Sans 11, Bold 11, Bold 14

// Draws text with pango on one cairo context; not copyable, lives for one drawing pass.
class Painter {
 public:
  Painter(cairo_t* cr, Scene* scene);
  Painter(const Painter&) = delete;
  Painter& operator=(const Painter&) = delete;

  struct Extent {
    double width = 0, height = 0, baseline = 0;  // pixels
  };
  // The size `text` takes in `font`, ellipsized to `max_width` when that is positive.
  Extent Measure(std::string_view text, Font font, double max_width = 0);
  // Draws `text` so that its point (ax * width, ay * height), in its own rotated frame, lands on
  // (x, y); angle_deg turns clockwise about that point. Records a TextItem with `role`.
  Extent Text(std::string_view text, Font font, TextRole role, double x, double y, double ax,
              double ay, double angle_deg = 0, double max_width = 0, Rgb color = kInk);

  cairo_t* cr() const { return cr_; }
  Scene& scene() { return *scene_; }
  void SetColor(Rgb c, double alpha = 1) { cairo_set_source_rgba(cr_, c.r, c.g, c.b, alpha); }

 private:
  void Prepare(std::string_view text, Font font, double max_width);

  cairo_t* cr_;
  Scene* scene_;
  LayoutPtr layout_;
  FontPtr body_, bold_, title_;
};

// `text` with invalid UTF-8 sequences replaced by U+FFFD.
std::string ValidUtf8(std::string_view text);

// The one drawing function for every surface (PNG and SVG). `data` is Prepare(spec, table).
void DrawChart(Painter& painter, const Spec& spec, const Prepared& data, int width, int height);

}  // namespace quarry::chart::internal
