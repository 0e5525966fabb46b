#include "compute_mode.h"

namespace bg {

const char* matmul_algo_name(MatmulAlgo algo) {
  switch (algo) {
    case MatmulAlgo::standard:
      return "standard";
    case MatmulAlgo::naive:
      return "naive";
    case MatmulAlgo::batch_invariant:
      return "batch_invariant";
    case MatmulAlgo::lmul:
      return "lmul";
  }
  return "?";
}

const char* precision_name(MatmulPrecision p) {
  switch (p) {
    case MatmulPrecision::fp32:
      return "fp32";
    case MatmulPrecision::tf32:
      return "tf32";
    case MatmulPrecision::bf16:
      return "bf16";
  }
  return "?";
}

std::string ComputeMode::str() const {
  std::string s = precision_name(precision);
  if (algo != MatmulAlgo::standard) s += std::string(" ") + matmul_algo_name(algo);
  if (algo == MatmulAlgo::lmul) {
    s += " m" + std::to_string(lmul_mantissa_bits) + " " + lmul_scope_name(lmul_scope);
    if (lmul_exact_backward) s += " exact-backward";
  }
  if (deterministic) s += " deterministic";
  return s;
}

const char* lmul_scope_name(LmulScope s) {
  return s == LmulScope::attention ? "attention" : s == LmulScope::mlp ? "mlp" : "all";
}

bool parse_lmul_scope(const std::string& name, LmulScope* out) {
  if (name == "attention")
    *out = LmulScope::attention;
  else if (name == "mlp")
    *out = LmulScope::mlp;
  else if (name == "all")
    *out = LmulScope::all;
  else
    return false;
  return true;
}

namespace {
// The algorithm a product runs where L-Mul does not apply: exact, batch-invariant when the
// mode is deterministic.
MatmulAlgo exact_algo(const ComputeMode& mode) {
  return mode.deterministic ? MatmulAlgo::batch_invariant : MatmulAlgo::standard;
}
}  // namespace

ComputeMode ComputeMode::at(MatmulSite site) const {
  if (algo != MatmulAlgo::lmul) return *this;
  const bool in_scope = lmul_scope == LmulScope::all ||
                        (lmul_scope == LmulScope::attention && site == MatmulSite::attention) ||
                        (lmul_scope == LmulScope::mlp && site == MatmulSite::mlp);
  if (in_scope) return *this;
  ComputeMode m = *this;
  m.algo = exact_algo(*this);
  return m;
}

ComputeMode ComputeMode::backward() const {
  ComputeMode m = *this;
  if (algo == MatmulAlgo::lmul && lmul_exact_backward) m.algo = exact_algo(*this);
  return m;
}

ComputeMode ComputeMode::on(Device device) const {
  ComputeMode m = *this;
  if (!device.is_cuda()) m.precision = MatmulPrecision::fp32;
  return m;
}

DType stored_dtype(const ComputeMode& mode, Consumer consumer, DType natural, Device device) {
  return consumer == Consumer::matmul && device.is_cuda() && natural == DType::f32 &&
                 mode.precision == MatmulPrecision::bf16
             ? DType::bf16
             : natural;
}

}  // namespace bg
