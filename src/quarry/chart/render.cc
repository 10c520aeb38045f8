// Render: one drawing pass per surface (a cairo image surface for PNG, a cairo SVG surface for
// SVG), the pango text painter both passes use, and the SVG's readable text layer.
#include <cmath>
#include <numbers>
#include <sstream>

#include <cairo-svg.h>

#include "quarry/common/text.h"
#include "quarry/chart/paint_internal.h"

namespace quarry::chart {
namespace internal {
namespace {

constexpr double kPxPerPt = 96.0 / 72.0;  // pango sizes are points; the surfaces are pixels

cairo_status_t AppendBytes(void* closure, const unsigned char* data, unsigned int length) {
  static_cast<std::string*>(closure)->append(reinterpret_cast<const char*>(data), length);
  return CAIRO_STATUS_SUCCESS;
}

const char* RoleName(TextRole role) {
  switch (role) {
    case TextRole::kTitle:
      return "title";
    case TextRole::kXTitle:
      return "x-title";
    case TextRole::kYTitle:
      return "y-title";
    case TextRole::kXTick:
      return "x-tick";
    case TextRole::kYTick:
      return "y-tick";
    case TextRole::kLegendTitle:
      return "legend-title";
    case TextRole::kLegend:
      return "legend";
    case TextRole::kSlice:
      return "slice";
    case TextRole::kNote:
      return "note";
  }
  return "note";
}

// cairo 1.16's SVG surface writes pango text as glyph outlines (<symbol>/<use>), so no word
// of the chart is text in the file. Browsers' find, screen readers and tests need the words:
// we add <title>/<desc> and a transparent <text> copy of every string at its drawn position
// (textLength matches the drawn width so a selection lines up with the visible glyphs).
std::string WithTextLayer(std::string svg, const Scene& scene, const std::string& desc) {
  std::string title;
  for (const TextItem& t : scene.texts) {
    if (t.role == TextRole::kTitle) title = t.text;
  }
  const size_t open = svg.find("<svg");
  const size_t open_end = open == std::string::npos ? open : svg.find('>', open);
  const size_t close = svg.rfind("</svg>");
  if (open_end == std::string::npos || close == std::string::npos || close < open_end) return svg;
  std::ostringstream layer;
  layer << "<g id=\"chart-text\" fill=\"#333333\" fill-opacity=\"0\" "
           "font-family=\"DejaVu Sans\">\n";
  for (const TextItem& t : scene.texts) {
    const double size = (t.role == TextRole::kTitle ? 14 : 11) * kPxPerPt;
    layer << "<text class=\"" << RoleName(t.role) << "\" transform=\"translate(" << t.x << ' '
          << t.y << ") rotate(" << t.angle_deg << ")\" y=\"" << t.baseline << "\" font-size=\""
          << size << "\" textLength=\"" << t.width << "\" lengthAdjust=\"spacingAndGlyphs\">"
          << EscapeMarkup(t.text) << "</text>\n";
  }
  layer << "</g>\n";
  svg.insert(close, layer.str());
  svg.insert(open_end + 1, "\n<title>" + EscapeMarkup(title) + "</title>\n<desc>" +
                               EscapeMarkup(desc) + "</desc>");
  return svg;
}

std::string Describe(const Spec& spec, const Table& table) {
  static const char* kMarks[] = {"Bar", "Line", "Point", "Area", "Pie"};
  std::string out = std::string(kMarks[static_cast<int>(spec.mark)]) + " chart";
  auto name = [](const std::optional<Channel>& c) {
    if (!c) return std::string();
    if (!c->title.empty()) return c->title;
    return c->field.empty() ? std::string("count") : c->field;
  };
  if (spec.mark == Mark::kArc) {
    out += " of " + name(spec.theta) + " by " + name(spec.color);
  } else {
    out += " of " + name(spec.y) + " by " + name(spec.x);
    if (spec.color) out += ", colored by " + name(spec.color);
  }
  return out + ", from " + std::to_string(table.rows.size()) + " rows.";
}

// One pass: draws the chart on `surface` and reports cairo's verdict.
Result<void> DrawOn(cairo_surface_t* surface, const Spec& spec, const Prepared& data, int width,
                    int height, Scene* scene) {
  CairoPtr cr(cairo_create(surface));
  if (cairo_status(cr.get()) != CAIRO_STATUS_SUCCESS) {
    return Fail(Error::Code::kInternal, std::string("chart render failed: cairo: ") +
                                            cairo_status_to_string(cairo_status(cr.get())));
  }
  Painter painter(cr.get(), scene);
  DrawChart(painter, spec, data, width, height);
  if (cairo_status(cr.get()) != CAIRO_STATUS_SUCCESS) {
    return Fail(Error::Code::kInternal, std::string("chart render failed: cairo: ") +
                                            cairo_status_to_string(cairo_status(cr.get())));
  }
  return {};
}

}  // namespace

Painter::Painter(cairo_t* cr, Scene* scene)
    : cr_(cr),
      scene_(scene),
      layout_(pango_cairo_create_layout(cr)),
      body_(pango_font_description_from_string("DejaVu Sans 11")),
      bold_(pango_font_description_from_string("DejaVu Sans Bold 11")),
      title_(pango_font_description_from_string("DejaVu Sans Bold 14")) {
  // The same metrics on every surface: no hinting, a fixed 96 dpi, so the PNG and the SVG lay
  // out identically and a test on one describes the other.
  PangoContext* context = pango_layout_get_context(layout_.get());
  FontOptionsPtr options(cairo_font_options_create());
  cairo_font_options_set_hint_metrics(options.get(), CAIRO_HINT_METRICS_OFF);
  cairo_font_options_set_hint_style(options.get(), CAIRO_HINT_STYLE_NONE);
  cairo_font_options_set_antialias(options.get(), CAIRO_ANTIALIAS_GRAY);
  pango_cairo_context_set_font_options(context, options.get());
  pango_cairo_context_set_resolution(context, 96);
  pango_layout_context_changed(layout_.get());
  pango_layout_set_single_paragraph_mode(layout_.get(), TRUE);
}

std::string ValidUtf8(std::string_view text) {
  if (g_utf8_validate(text.data(), static_cast<gssize>(text.size()), nullptr)) {
    return std::string(text);
  }
  std::unique_ptr<gchar, Deleter<g_free>> valid(
      g_utf8_make_valid(text.data(), static_cast<gssize>(text.size())));
  return valid.get();
}

void Painter::Prepare(std::string_view raw, Font font, double max_width) {
  // Cell text can be any bytes; pango needs UTF-8, and the SVG layer repeats what is drawn.
  const std::string text = ValidUtf8(raw);
  const PangoFontDescription* desc = font == Font::kTitle  ? title_.get()
                                     : font == Font::kBold ? bold_.get()
                                                           : body_.get();
  pango_layout_set_font_description(layout_.get(), desc);
  pango_layout_set_text(layout_.get(), text.data(), static_cast<int>(text.size()));
  if (max_width > 0) {
    pango_layout_set_width(layout_.get(), static_cast<int>(max_width * PANGO_SCALE));
    // Titles lose their end; labels their middle, since "Product 101" and "Product 102"
    // differ at the end.
    pango_layout_set_ellipsize(layout_.get(),
                               font == Font::kTitle ? PANGO_ELLIPSIZE_END : PANGO_ELLIPSIZE_MIDDLE);
  } else {
    pango_layout_set_width(layout_.get(), -1);
    pango_layout_set_ellipsize(layout_.get(), PANGO_ELLIPSIZE_NONE);
  }
}

Painter::Extent Painter::Measure(std::string_view text, Font font, double max_width) {
  Prepare(text, font, max_width);
  PangoRectangle logical;
  pango_layout_get_extents(layout_.get(), nullptr, &logical);
  return {static_cast<double>(logical.width) / PANGO_SCALE,
          static_cast<double>(logical.height) / PANGO_SCALE,
          static_cast<double>(pango_layout_get_baseline(layout_.get())) / PANGO_SCALE};
}

Painter::Extent Painter::Text(std::string_view raw, Font font, TextRole role, double x, double y,
                              double ax, double ay, double angle_deg, double max_width, Rgb color) {
  const std::string text = ValidUtf8(raw);
  const Extent e = Measure(text, font, max_width);
  const double a = angle_deg * std::numbers::pi / 180;
  const double ux = std::cos(a), uy = std::sin(a);  // along the text
  const double vx = -uy, vy = ux;                   // down the text
  const double ox = x - ax * e.width * ux - ay * e.height * vx;
  const double oy = y - ax * e.width * uy - ay * e.height * vy;
  cairo_save(cr_);
  cairo_translate(cr_, ox, oy);
  cairo_rotate(cr_, a);
  cairo_move_to(cr_, 0, 0);
  SetColor(color);
  pango_cairo_update_layout(cr_, layout_.get());
  pango_cairo_show_layout(cr_, layout_.get());
  cairo_new_path(cr_);  // the path is not part of save/restore; leave no current point behind
  cairo_restore(cr_);
  scene_->texts.push_back(
      {role, std::string(text), ox, oy, angle_deg, e.width, e.height, e.baseline});
  return e;
}

Result<Rendered> RenderWithScene(const Spec& spec, const Table& table, int width, int height,
                                 Scene* scene) {
  if (width < 200 || height < 150 || width > 4000 || height > 4000) {
    return Fail(Error::Code::kUsage, "chart render: size " + std::to_string(width) + "x" +
                                         std::to_string(height) +
                                         " is outside 200x150 .. 4000x4000 pixels");
  }
  std::vector<Problem> problems = CheckFields(spec, table);
  if (!problems.empty()) {
    return Fail(Error::Code::kUsage, "chart render: " + problems.front().message);
  }
  const Prepared data = Prepare(spec, table);
  Rendered out;
  out.width = width;
  out.height = height;

  SurfacePtr image(cairo_image_surface_create(CAIRO_FORMAT_RGB24, width, height));
  Scene png_scene;
  if (auto r = DrawOn(image.get(), spec, data, width, height, &png_scene); !r) {
    return std::unexpected(r.error());
  }
  cairo_surface_flush(image.get());
  if (cairo_surface_write_to_png_stream(image.get(), AppendBytes, &out.png) !=
      CAIRO_STATUS_SUCCESS) {
    return Fail(Error::Code::kInternal, "chart render failed: cairo could not encode the PNG");
  }

  std::string svg;
  {
    SurfacePtr surface(cairo_svg_surface_create_for_stream(AppendBytes, &svg, width, height));
    cairo_svg_surface_set_document_unit(surface.get(), CAIRO_SVG_UNIT_PX);
    Scene svg_scene;
    if (auto r = DrawOn(surface.get(), spec, data, width, height, &svg_scene); !r) {
      return std::unexpected(r.error());
    }
    cairo_surface_finish(surface.get());  // the SVG is written out here, not before
    if (cairo_surface_status(surface.get()) != CAIRO_STATUS_SUCCESS) {
      return Fail(Error::Code::kInternal, "chart render failed: cairo could not write the SVG");
    }
  }
  out.svg = WithTextLayer(std::move(svg), png_scene, Describe(spec, table));
  if (scene) *scene = std::move(png_scene);
  return out;
}

}  // namespace internal

Result<Rendered> Render(const Spec& spec, const Table& table, int width, int height) {
  return internal::RenderWithScene(spec, table, width, height, nullptr);
}

}  // namespace quarry::chart
