// File: svg_plot.h
//
// A small line-plot writer for the report's figures: linear axes with
// rounded ticks, one polyline with markers per series, and a legend. Output is
// a self-contained SVG document.
#ifndef SLACKSWAP_CLIENT_SVG_PLOT_H_
#define SLACKSWAP_CLIENT_SVG_PLOT_H_

#include <string>
#include <utility>
#include <vector>

namespace slackswap {

struct PlotSeries {
  std::string name;
  std::vector<std::pair<double, double>> points;  // (x, y); gaps are left out
};

struct LinePlot {
  std::string title;
  std::string x_label;
  std::string y_label;
  std::vector<PlotSeries> series;
  // Fixed y range when y_max > y_min; otherwise fitted to the data.
  double y_min = 0;
  double y_max = 0;
};

std::string RenderSvg(const LinePlot& plot);

}  // namespace slackswap

#endif  // SLACKSWAP_CLIENT_SVG_PLOT_H_
