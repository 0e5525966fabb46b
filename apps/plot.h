// plot.h: minimal SVG line plots (no dependencies): a grid of panels, each with axes, ticks,
// a title and labelled series. Enough for CDF/density and loss curves.
#pragma once
#include <string>
#include <vector>

namespace bg::plot {

struct Series {
  std::string label, color;
  std::vector<double> x, y;
  bool dashed = false;
};

struct Panel {
  std::string title, xlabel, ylabel;
  std::vector<Series> series;
};

// Panels laid out `cols` per row; each panel is panel_w x panel_h pixels.
std::string svg(const std::vector<Panel>& panels, int cols, int panel_w = 420, int panel_h = 300);

}  // namespace bg::plot
