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
  if (deterministic) s += " deterministic";
  return s;
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
