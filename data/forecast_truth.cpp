#include "forecast_truth.h"

#include <cmath>
#include <cstdlib>

#include "core/error.h"
#include "data/csv.h"

namespace bg {
namespace {

const char* kHeader = "unique_id,ds,zero_mass,w1,kind1,loc1,scale1,df1,w2,kind2,loc2,scale2,df2";

double number(const std::string& text, const std::string& where, const char* what) {
  char* end = nullptr;
  const double v = std::strtod(text.c_str(), &end);
  BG_CHECK(!text.empty() && end == text.c_str() + text.size() && std::isfinite(v), "truth", where,
           ": ", what, " '", text, "' is not a finite number");
  return v;
}

}  // namespace

double TruthLaw::cdf(double x) const {
  double f = x >= 0 ? zero_mass : 0.0;
  for (const Component& c : components) {
    if (c.positive_part) {
      // N(loc, s) given > 0: (Phi((x - loc)/s) - Phi(-loc/s)) / (1 - Phi(-loc/s)) for x > 0.
      if (x <= 0) continue;
      const double below = c.law->cdf(-c.loc);
      f += c.weight * (c.law->cdf(x - c.loc) - below) / (1 - below);
    } else {
      f += c.weight * c.law->cdf(c.law->kind() == "lognormal" ? x : x - c.loc);
    }
  }
  return std::min(1.0, std::max(0.0, f));
}

std::map<std::pair<std::string, std::string>, TruthLaw> read_truth(const std::string& path) {
  LineReader in(path, "truth", "truth file");
  std::string line;
  BG_CHECK(in.next(&line) && csv_fields(line, in.path(), 1) == csv_fields(kHeader, "header"),
           "truth", path, ":1: expected the header ", kHeader);
  std::map<std::pair<std::string, std::string>, TruthLaw> out;
  while (in.next(&line)) {
    if (line.empty()) continue;
    const std::string where = in.where();
    const std::vector<std::string> f = csv_fields(line, in.path(), in.line_no());
    BG_CHECK(f.size() == 13, "truth", where, ": ", f.size(), " fields, expected 13");
    TruthLaw law;
    law.zero_mass = number(f[2], where, "zero_mass");
    double total = law.zero_mass;
    for (int j = 0; j < 2; ++j) {
      const size_t at = 3 + 5 * size_t(j);
      TruthLaw::Component c;
      c.weight = number(f[at], where, "weight");
      BG_CHECK(c.weight >= 0 && c.weight <= 1, "truth", where, ": weight ", c.weight,
               " is outside [0, 1]");
      total += c.weight;
      if (c.weight == 0) continue;
      const std::string& kind = f[at + 1];
      c.loc = number(f[at + 2], where, "loc");
      const double scale = number(f[at + 3], where, "scale"), df = number(f[at + 4], where, "df");
      BG_CHECK(scale > 0, "truth", where, ": scale ", scale, " is not positive");
      if (kind == "normal" || kind == "normal_pos") {
        c.law = make_distribution({"normal", 0.0, scale, {}, {}, {}});
        c.positive_part = kind == "normal_pos";
      } else if (kind == "student_t") {
        BG_CHECK(df > 0, "truth", where, ": df ", df, " is not positive");
        c.law = make_distribution({"student_t", df, scale, {}, {}, {}});
      } else if (kind == "lognormal") {
        c.law = make_distribution({"lognormal", c.loc, scale, {}, {}, {}});
      } else {
        fail("truth", where, ": kind '", kind, "' (normal, student_t, lognormal, normal_pos)");
      }
      law.components.push_back(c);
    }
    BG_CHECK(law.zero_mass >= 0 && std::fabs(total - 1) <= 1e-9, "truth", where,
             ": zero_mass and the weights sum to ", total, ", not 1");
    out[{f[0], f[1]}] = std::move(law);
  }
  BG_CHECK(!out.empty(), "truth", path, ": no laws");
  return out;
}

}  // namespace bg
