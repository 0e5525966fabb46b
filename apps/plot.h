// plot.h: minimal SVG line plots (no dependencies): a grid of panels, each with axes, ticks,
// a title and labelled series. Enough for CDF/density and loss curves.
#pragma once
#include <string>
#include <utility>
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
  bool y_from_zero = false;  // densities and probabilities; losses span their own range
};

// Panels laid out `cols` per row; each panel is panel_w x panel_h pixels. An axis spans its
// data (from zero where the panel says so: densities); every coordinate written is finite.
std::string svg(const std::vector<Panel>& panels, int cols, int panel_w = 420, int panel_h = 300);

}  // namespace bg::plot

namespace bg {
struct MetricsRow;
namespace plot {
// A run's metrics rows as its training (dashed) and validation series.
std::pair<Series, Series> metrics_series(const std::vector<MetricsRow>& rows,
                                         const std::string& label, const char* color);
}  // namespace plot
}  // namespace bg
