#include "plot.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <sstream>

#include "models/trainer.h"

namespace bg::plot {
namespace {

using Real = long double;  // spans of doubles (1e308 - -1e308) overflow a double, not this

// "Nice" tick step covering span (> 0) with about n ticks.
Real nice_step(Real span, int n) {
  const Real raw = span / n, mag = std::pow(Real(10), std::floor(std::log10(raw))), f = raw / mag;
  return (f < 1.5 ? 1 : f < 3 ? 2 : f < 7 ? 5 : 10) * mag;
}

// [lo, hi] widened where empty, so a scale is finite and positive: a constant series gets a
// span relative to its value (one ulp of 1e23 is more than 1).
void widen(Real* lo, Real* hi) {
  if (!(*lo <= *hi)) *lo = 0, *hi = 1;  // nothing finite to draw
  if (*hi - *lo <= std::fabs(*hi) * Real(1e-12)) {
    const Real pad = std::max<Real>(1, std::fabs(*hi) * Real(1e-6));
    *lo -= pad;
    *hi += pad;
  }
}

std::string num(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g", std::fabs(v) < 1e-12 ? 0.0 : v);
  return buf;
}

std::string esc(const std::string& t) {
  std::string o;
  for (char ch : t) {
    if (ch == '<')
      o += "&lt;";
    else if (ch == '>')
      o += "&gt;";
    else if (ch == '&')
      o += "&amp;";
    else
      o += ch;
  }
  return o;
}

}  // namespace

std::string svg(const std::vector<Panel>& panels, int cols, int pw, int ph) {
  const int rows = int((panels.size() + size_t(cols) - 1) / size_t(cols));
  std::ostringstream o;
  o << "<svg xmlns='http://www.w3.org/2000/svg' width='" << cols * pw << "' height='" << rows * ph
    << "' font-family='sans-serif' font-size='11'>\n<rect width='100%' height='100%' "
       "fill='white'/>\n";
  for (size_t p = 0; p < panels.size(); ++p) {
    const Panel& pn = panels[p];
    const int ox = int(p % size_t(cols)) * pw, oy = int(p / size_t(cols)) * ph;
    const double l = ox + 55, r = ox + pw - 15, t = oy + 28, b = oy + ph - 40;
    Real x0 = INFINITY, x1 = -INFINITY, y0 = INFINITY, y1 = -INFINITY;
    for (const Series& s : pn.series)
      for (size_t i = 0; i < s.x.size(); ++i) {
        if (!std::isfinite(s.x[i]) || !std::isfinite(s.y[i])) continue;
        x0 = std::min<Real>(x0, s.x[i]);
        x1 = std::max<Real>(x1, s.x[i]);
        y0 = std::min<Real>(y0, s.y[i]);
        y1 = std::max<Real>(y1, s.y[i]);
      }
    widen(&x0, &x1);
    if (pn.y_from_zero) y0 = std::min<Real>(y0, 0);
    widen(&y0, &y1);
    const Real pad = 0.05L * (y1 - y0);  // the curves clear the frame
    y1 += pad;
    if (!(pn.y_from_zero && y0 == 0)) y0 -= pad;
    auto px = [&](Real x) { return double(l + (x - x0) / (x1 - x0) * (r - l)); };
    auto py = [&](Real y) { return double(b - (y - y0) / (y1 - y0) * (b - t)); };
    o << "<text x='" << (l + r) / 2 << "' y='" << oy + 16
      << "' text-anchor='middle' font-size='13'>" << esc(pn.title) << "</text>\n";
    o << "<rect x='" << l << "' y='" << t << "' width='" << r - l << "' height='" << b - t
      << "' fill='none' stroke='#444'/>\n";
    const Real xs = nice_step(x1 - x0, 5), ys = nice_step(y1 - y0, 5);
    // Ticks counted, not stepped to a bound: v += step can stand still at large v.
    for (int i = 0; i <= 12; ++i) {
      const Real v = std::ceil(x0 / xs) * xs + i * xs;
      if (v > x1 + 1e-9L * xs) break;
      o << "<line x1='" << px(v) << "' x2='" << px(v) << "' y1='" << b << "' y2='" << b + 4
        << "' stroke='#444'/><text x='" << px(v) << "' y='" << b + 15 << "' text-anchor='middle'>"
        << num(double(v)) << "</text>\n";
    }
    for (int i = 0; i <= 12; ++i) {
      const Real v = std::ceil(y0 / ys) * ys + i * ys;
      if (v > y1 + 1e-9L * ys) break;
      o << "<line x1='" << l - 4 << "' x2='" << l << "' y1='" << py(v) << "' y2='" << py(v)
        << "' stroke='#444'/><text x='" << l - 6 << "' y='" << py(v) + 4 << "' text-anchor='end'>"
        << num(double(v)) << "</text>\n";
    }
    o << "<text x='" << (l + r) / 2 << "' y='" << b + 32 << "' text-anchor='middle'>"
      << esc(pn.xlabel) << "</text>\n";
    o << "<text transform='translate(" << ox + 14 << "," << (t + b) / 2
      << ") rotate(-90)' text-anchor='middle'>" << esc(pn.ylabel) << "</text>\n";
    int legend = 0;
    for (const Series& s : pn.series) {
      o << "<polyline fill='none' stroke='" << s.color << "' stroke-width='1.5'"
        << (s.dashed ? " stroke-dasharray='5,3'" : "") << " points='";
      for (size_t i = 0; i < s.x.size(); ++i)
        if (std::isfinite(s.x[i]) && std::isfinite(s.y[i]))
          o << px(s.x[i]) << "," << py(s.y[i]) << " ";
      o << "'/>\n";
      const double ly = t + 14 + 14 * legend++;
      o << "<line x1='" << r - 110 << "' x2='" << r - 90 << "' y1='" << ly - 4 << "' y2='" << ly - 4
        << "' stroke='" << s.color << "' stroke-width='2'"
        << (s.dashed ? " stroke-dasharray='5,3'" : "") << "/><text x='" << r - 86 << "' y='" << ly
        << "'>" << esc(s.label) << "</text>\n";
    }
  }
  o << "</svg>\n";
  return o.str();
}

std::pair<Series, Series> metrics_series(const std::vector<MetricsRow>& rows,
                                         const std::string& label, const char* color) {
  Series train{label, color, {}, {}, true}, val{label, color, {}, {}, false};
  for (const MetricsRow& row : rows) {
    train.x.push_back(double(row.step));
    train.y.push_back(row.train_loss);
    if (std::isnan(row.val_loss)) continue;
    val.x.push_back(double(row.step));
    val.y.push_back(row.val_loss);
  }
  return {train, val};
}

}  // namespace bg::plot
