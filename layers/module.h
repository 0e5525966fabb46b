// module.h: the Module base. A module owns named parameters and child modules; names join
// with '.' like PyTorch state_dict keys ("blocks.0.attn.c_attn.weight"). Parameters are created
// on the CPU in f32 and moved into a FlatParameters buffer on the training device.
#pragma once
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "core/ops.h"

namespace bg {

class Module {
 public:
  virtual ~Module() = default;
  std::vector<std::pair<std::string, Tensor>> named_parameters() const;
  int64_t parameter_count() const;
  // Every module below this one, named like state_dict prefixes ("transformer.h.0.attn"),
  // parents before their children.
  std::vector<std::pair<std::string, std::shared_ptr<Module>>> named_modules() const;
  void train(bool on = true);
  bool training() const { return training_; }
  // How this module and its children compute (core/compute_mode.h): set once per run, resolved
  // for the parameters' device (ComputeMode::on); layers pass it to every matmul they run. A
  // model may hand a child another mode (the forecaster's head keeps f32 activations).
  virtual void set_compute_mode(const ComputeMode& mode);
  const ComputeMode& compute_mode() const { return mode_; }

 protected:
  Tensor register_parameter(const std::string& name, Tensor value);
  // Drops a parameter for good (a layer whose weight became a frozen packed form): it leaves
  // named_parameters, so neither checkpoint loading nor an optimizer sees it again.
  void release_parameter(const std::string& name);
  template <typename M>
  std::shared_ptr<M> register_module(const std::string& name, std::shared_ptr<M> module) {
    children_.emplace_back(name, module);
    return module;
  }

 private:
  void collect(const std::string& prefix, std::vector<std::pair<std::string, Tensor>>* out) const;
  std::vector<std::pair<std::string, Tensor>> params_;
  std::vector<std::pair<std::string, std::shared_ptr<Module>>> children_;
  bool training_ = true;
  ComputeMode mode_;
};

}  // namespace bg
