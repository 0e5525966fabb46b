// random.cpp: rand / randn / bernoulli from a counter-based Generator (see rng.h).
#include "../dispatch.h"
#include "../ops.h"

namespace bg {
namespace {

Tensor random_tensor(const Shape& shape, Generator& gen, RandomKind kind, double p0, double p1,
                     DType dtype, Device device) {
  BG_CHECK(dtype_is_float(dtype), "random", "dtype must be floating, got ", dtype_name(dtype));
  Tensor probe = empty({0}, dtype, device);
  const DType cd = compute_dtype(probe);
  Tensor out = empty(shape, cd, device);
  const uint64_t offset = gen.take(uint64_t(out.numel()));
  BG_DISPATCH(device, random_fill, out.kview(), kind, p0, p1, gen.seed, offset, stream_for(device));
  return compute_output(out, dtype);
}

}  // namespace

Tensor rand(const Shape& shape, Generator& gen, double lo, double hi, DType dtype, Device device) {
  return random_tensor(shape, gen, RandomKind::uniform, lo, hi, dtype, device);
}
Tensor randn(const Shape& shape, Generator& gen, double mean, double std, DType dtype,
             Device device) {
  return random_tensor(shape, gen, RandomKind::normal, mean, std, dtype, device);
}
Tensor bernoulli(const Shape& shape, Generator& gen, double keep, double value, DType dtype,
                 Device device) {
  BG_CHECK(keep >= 0 && keep <= 1, "bernoulli", "probability must be in [0, 1], got ", keep);
  return random_tensor(shape, gen, RandomKind::bernoulli, keep, value, dtype, device);
}

}  // namespace bg
