// forecast_truth.h: the true one-step predictive laws of a synthetic series file
// (scripts/forecast_synthetic.py writes them beside the data): at each point, a mass at exactly
// zero plus up to two components (normal, student_t, lognormal, normal_pos). Their CRPS and NLL
// on the float16 grid are the floor a forecaster is measured against.
#pragma once
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "data/distributions.h"

namespace bg {

// One point's law: F(x) = zero_mass 1{x >= 0} + sum_j w_j F_j(x).
class TruthLaw {
 public:
  double cdf(double x) const;
  double zero_mass = 0;
  struct Component {
    double weight = 0, loc = 0;
    bool positive_part = false;  // normal_pos: N(loc, .) conditioned on > 0
    std::shared_ptr<Distribution> law;  // centred: the component is loc + law (lognormal: law)
  };
  std::vector<Component> components;
};

// (unique_id, ds) -> the law at that point. Refused in one line naming file:line: a wrong
// header or field count, an unknown kind, a weight, scale or df out of range, weights that do not
// sum to 1 (within 1e-9).
std::map<std::pair<std::string, std::string>, TruthLaw> read_truth(const std::string& path);

}  // namespace bg
