#include "client/svg_plot.h"

#include <algorithm>
#include <cmath>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace slackswap {
namespace {

constexpr double kWidth = 640, kHeight = 400;
constexpr double kLeft = 70, kRight = 170, kTop = 40, kBottom = 60;
constexpr const char* kColors[] = {"#1f77b4", "#d62728", "#2ca02c", "#ff7f0e",
                                   "#9467bd", "#8c564b", "#e377c2", "#7f7f7f"};

std::string Escape(const std::string& s) {
  std::string out;
  for (char c : s) {
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      default:
        out += c;
    }
  }
  return out;
}

// A tick step of 1, 2 or 5 times a power of ten giving about five ticks.
double TickStep(double range) {
  const double raw = range / 5;
  const double power = std::pow(10, std::floor(std::log10(raw)));
  for (double m : {1.0, 2.0, 5.0}) {
    if (m * power >= raw) return m * power;
  }
  return 10 * power;
}

std::string Number(double v) { return absl::StrFormat("%g", v); }

}  // namespace

std::string RenderSvg(const LinePlot& plot) {
  double x_min = 1e300, x_max = -1e300, y_min = 1e300, y_max = -1e300;
  for (const PlotSeries& s : plot.series) {
    for (const auto& [x, y] : s.points) {
      x_min = std::min(x_min, x), x_max = std::max(x_max, x);
      y_min = std::min(y_min, y), y_max = std::max(y_max, y);
    }
  }
  if (x_min > x_max) x_min = 0, x_max = 1, y_min = 0, y_max = 1;
  if (plot.y_max > plot.y_min) y_min = plot.y_min, y_max = plot.y_max;
  if (x_max == x_min) x_max = x_min + 1;
  if (y_max == y_min) y_max = y_min + 1;
  const double y_step = TickStep(y_max - y_min);
  y_min = std::floor(y_min / y_step) * y_step;
  y_max = std::ceil(y_max / y_step) * y_step;
  const double x_step = TickStep(x_max - x_min);
  const double plot_w = kWidth - kLeft - kRight,
               plot_h = kHeight - kTop - kBottom;
  auto px = [&](double x) {
    return kLeft + (x - x_min) / (x_max - x_min) * plot_w;
  };
  auto py = [&](double y) {
    return kTop + (y_max - y) / (y_max - y_min) * plot_h;
  };

  std::string svg = absl::StrFormat(
      "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%g\" height=\"%g\" "
      "font-family=\"sans-serif\" font-size=\"12\">\n"
      "<rect width=\"100%%\" height=\"100%%\" fill=\"white\"/>\n"
      "<text x=\"%g\" y=\"22\" font-size=\"15\" "
      "text-anchor=\"middle\">%s</text>\n",
      kWidth, kHeight, kLeft + plot_w / 2, Escape(plot.title));
  for (double y = y_min; y <= y_max + y_step / 2; y += y_step) {
    absl::StrAppendFormat(
        &svg,
        "<line x1=\"%g\" y1=\"%g\" x2=\"%g\" y2=\"%g\" stroke=\"#ddd\"/>\n"
        "<text x=\"%g\" y=\"%g\" text-anchor=\"end\">%s</text>\n",
        kLeft, py(y), kLeft + plot_w, py(y), kLeft - 6, py(y) + 4, Number(y));
  }
  for (double x = std::ceil(x_min / x_step) * x_step; x <= x_max * (1 + 1e-9);
       x += x_step) {
    absl::StrAppendFormat(
        &svg,
        "<line x1=\"%g\" y1=\"%g\" x2=\"%g\" y2=\"%g\" stroke=\"#ddd\"/>\n"
        "<text x=\"%g\" y=\"%g\" text-anchor=\"middle\">%s</text>\n",
        px(x), kTop, px(x), kTop + plot_h, px(x), kTop + plot_h + 18,
        Number(x));
  }
  absl::StrAppendFormat(
      &svg,
      "<rect x=\"%g\" y=\"%g\" width=\"%g\" height=\"%g\" fill=\"none\" "
      "stroke=\"#333\"/>\n"
      "<text x=\"%g\" y=\"%g\" text-anchor=\"middle\">%s</text>\n"
      "<text x=\"16\" y=\"%g\" text-anchor=\"middle\" transform=\"rotate(-90 "
      "16 %g)\">%s</text>\n",
      kLeft, kTop, plot_w, plot_h, kLeft + plot_w / 2, kHeight - 16,
      Escape(plot.x_label), kTop + plot_h / 2, kTop + plot_h / 2,
      Escape(plot.y_label));
  for (size_t i = 0; i < plot.series.size(); ++i) {
    const PlotSeries& s = plot.series[i];
    const char* color = kColors[i % std::size(kColors)];
    std::string points;
    for (const auto& [x, y] : s.points)
      absl::StrAppendFormat(&points, "%.1f,%.1f ", px(x), py(y));
    absl::StrAppendFormat(&svg,
                          "<polyline points=\"%s\" fill=\"none\" stroke=\"%s\" "
                          "stroke-width=\"2\"/>\n",
                          points, color);
    for (const auto& [x, y] : s.points) {
      absl::StrAppendFormat(
          &svg, "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"3\" fill=\"%s\"/>\n",
          px(x), py(y), color);
    }
    const double ly = kTop + 10 + 18 * static_cast<double>(i);
    absl::StrAppendFormat(
        &svg,
        "<line x1=\"%g\" y1=\"%g\" x2=\"%g\" y2=\"%g\" stroke=\"%s\" "
        "stroke-width=\"2\"/>\n<text x=\"%g\" y=\"%g\">%s</text>\n",
        kLeft + plot_w + 12, ly, kLeft + plot_w + 32, ly, color,
        kLeft + plot_w + 38, ly + 4, Escape(s.name));
  }
  return svg + "</svg>\n";
}

}  // namespace slackswap
