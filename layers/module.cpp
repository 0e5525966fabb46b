#include "module.h"

namespace bg {

Tensor Module::register_parameter(const std::string& name, Tensor value) {
  value.requires_grad_(true);
  params_.emplace_back(name, value);
  return value;
}

void Module::release_parameter(const std::string& name) {
  for (auto it = params_.begin(); it != params_.end(); ++it)
    if (it->first == name) {
      params_.erase(it);
      return;
    }
  BG_CHECK(false, "module", "no parameter named '", name, "' to release");
}

std::vector<std::pair<std::string, std::shared_ptr<Module>>> Module::named_modules() const {
  std::vector<std::pair<std::string, std::shared_ptr<Module>>> out;
  for (const auto& [name, child] : children_) {
    out.emplace_back(name, child);
    for (auto& [sub, m] : child->named_modules()) out.emplace_back(name + "." + sub, m);
  }
  return out;
}

void Module::collect(const std::string& prefix,
                     std::vector<std::pair<std::string, Tensor>>* out) const {
  for (const auto& [name, t] : params_) out->emplace_back(prefix + name, t);
  for (const auto& [name, child] : children_) child->collect(prefix + name + ".", out);
}

std::vector<std::pair<std::string, Tensor>> Module::named_parameters() const {
  std::vector<std::pair<std::string, Tensor>> out;
  collect("", &out);
  return out;
}

int64_t Module::parameter_count() const {
  int64_t n = 0;
  for (const auto& [name, t] : named_parameters()) n += t.numel();
  return n;
}

void Module::train(bool on) {
  training_ = on;
  for (auto& [name, child] : children_) child->train(on);
}

void Module::set_compute_mode(const ComputeMode& mode) {
  mode_ = mode;
  for (auto& [name, child] : children_) child->set_compute_mode(mode);
}

}  // namespace bg
