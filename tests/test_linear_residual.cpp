// test_linear_residual.cpp: a projection onto the residual stream, the residual added in the
// GEMM's epilogue (linear(..., residual); the standard and batch-invariant algorithms). The op
// harness checks finite differences and CUDA against the CPU at odd sizes with strided inputs;
// these cases check the rest: the CPU gives the bits of a separate add, CUDA's f32 sums agree
// with one to f32 rounding, the residual's gradient is the output gradient itself, a row stays
// batch-invariant under train.deterministic, and a residual of another dtype or shape is refused.
#include <cmath>

#include "harness.h"

namespace bg::test {
namespace {

using V = std::vector<Tensor>;

OpCase linear_residual_case(MatmulAlgo algo, bool bias) {
  OpCase c;
  c.name = "linear onto a residual, odd sizes, strided inputs";
  c.inputs = {{{3, 11, 13}}, {{9, 13}}, {{3, 11, 9}}};
  if (bias) c.inputs.push_back({{9}});
  c.noncontiguous = true;
  c.fn = [algo, bias](const V& x) {
    ComputeMode m = algo == MatmulAlgo::batch_invariant
                        ? ComputeMode::deterministic_mode(MatmulPrecision::fp32)
                        : ComputeMode();
    return linear(x[0], x[1], bias ? x[3] : Tensor(), m, Consumer::any, x[2]);
  };
  return c;
}
OpCase residual_standard() { return linear_residual_case(MatmulAlgo::standard, true); }
OpCase residual_standard_no_bias() { return linear_residual_case(MatmulAlgo::standard, false); }
OpCase residual_batch_invariant() {
  return linear_residual_case(MatmulAlgo::batch_invariant, true);
}

std::vector<float> host(const Tensor& t) {
  return t.detach().to(DType::f32).to(Device::cpu()).to_vector<float>();
}

struct Result {
  Tensor y, dx, dw, db, dr;
};

// y = linear(x, w, b, residual r) (fused: the epilogue) or r + linear(x, w, b) (a separate
// add), and the gradients of sum(y * g).
Result run(const Tensor& x0, const Tensor& w0, const Tensor& b0, const Tensor& r0, const Tensor& g,
           const ComputeMode& mode, bool fused) {
  const Tensor x = x0.detach().requires_grad_(true), w = w0.detach().requires_grad_(true),
               b = b0.detach().requires_grad_(true), r = r0.detach().requires_grad_(true);
  const Tensor y =
      fused ? linear(x, w, b, mode, Consumer::any, r) : r + linear(x, w, b, mode, Consumer::any);
  y.backward(g.to(y.dtype()));
  return {y.detach(), x.grad(), w.grad(), b.grad(), r.grad()};
}

struct Inputs {
  Tensor x, w, b, r, g;
};

Inputs inputs(Device dev, DType dtype) {
  Generator gen(test_seed());
  return {randn({5, 37, 29}, gen, 0, 1, DType::f32, dev).to(dtype),
          randn({24, 29}, gen, 0, 0.2, DType::f32, dev).to(dtype),
          randn({24}, gen, 0, 1, DType::f32, dev).to(dtype),
          randn({5, 37, 24}, gen, 0, 1, DType::f32, dev).to(dtype),
          randn({5, 37, 24}, gen, 0, 1, DType::f32, dev).to(dtype)};
}

// How many of `got` differ from `want` = r + (acc + bias) by more than f32 sums of the three
// terms in another order may: each order is within two roundings of the exact sum, so two
// results are within 2^-22 (|acc| + |bias| + |r|). bias has `n` values, one per column.
int64_t beyond_f32_rounding(const std::vector<float>& got, const std::vector<float>& want,
                            const std::vector<float>& r, const std::vector<float>& bias) {
  int64_t beyond = 0;
  const size_t n = bias.size();
  for (size_t i = 0; i < got.size(); ++i) {
    const double b = bias[i % n], acc = double(want[i]) - r[i] - b;
    const double scale = std::fabs(acc) + std::fabs(b) + std::fabs(double(r[i]));
    beyond += std::fabs(double(got[i]) - want[i]) > std::ldexp(scale, -22);
  }
  return beyond;
}

}  // namespace

BG_OP_TEST("linear onto a residual, odd sizes, strided inputs", residual_standard)
BG_OP_TEST("linear onto a residual without bias, odd sizes, strided inputs",
           residual_standard_no_bias)
BG_OP_TEST("linear batch_invariant onto a residual, odd sizes, strided inputs",
           residual_batch_invariant)

TEST_CASE("cpu: a residual in the product's epilogue gives the bits of a separate add") {
  for (DType dt : {DType::f32, DType::f64})
    for (const ComputeMode& mode :
         {ComputeMode(), ComputeMode::deterministic_mode(MatmulPrecision::fp32)}) {
      const std::string what = mode.str() + " " + dtype_name(dt);
      CAPTURE(what);
      const Inputs in = inputs(Device::cpu(), dt);
      const Result fused = run(in.x, in.w, in.b, in.r, in.g, mode, true),
                   separate = run(in.x, in.w, in.b, in.r, in.g, mode, false);
      CHECK(host(fused.y) == host(separate.y));
      CHECK(host(fused.dx) == host(separate.dx));
      CHECK(host(fused.dw) == host(separate.dw));
      CHECK(host(fused.db) == host(separate.db));
      CHECK(host(fused.dr) == host(in.g));  // the residual's gradient is the output's
    }
}

TEST_CASE("cuda: a residual in the product's epilogue matches a separate add to f32 rounding") {
  BG_REQUIRE_CUDA();
  // cuBLASLt sums the accumulator, the bias and the residual in f32 in an order of its own (the
  // residual first: beta C), so the output may differ from the separate add's by f32 roundings
  // of those sums; the gradients do not involve the epilogue and are equal. Every precision,
  // both algorithms.
  const Inputs in = inputs(Device::cuda(0), DType::f32);
  for (MatmulPrecision p : {MatmulPrecision::fp32, MatmulPrecision::tf32, MatmulPrecision::bf16})
    for (bool deterministic : {false, true}) {
      const ComputeMode mode =
          deterministic ? ComputeMode::deterministic_mode(p) : precision_mode(p);
      const std::string what = mode.str();
      CAPTURE(what);
      const Result fused = run(in.x, in.w, in.b, in.r, in.g, mode, true),
                   separate = run(in.x, in.w, in.b, in.r, in.g, mode, false);
      REQUIRE(fused.y.dtype() == DType::f32);
      CHECK(beyond_f32_rounding(host(fused.y), host(separate.y), host(in.r), host(in.b)) == 0);
      CHECK(host(fused.dx) == host(separate.dx));
      CHECK(host(fused.dw) == host(separate.dw));
      CHECK(host(fused.db) == host(separate.db));
      CHECK(host(fused.dr) == host(in.g));
    }
}

TEST_CASE("cuda: a row of a deterministic projection onto a residual depends on its own rows") {
  BG_REQUIRE_CUDA();
  const Inputs in = inputs(Device::cuda(0), DType::f32);
  for (MatmulPrecision p : {MatmulPrecision::fp32, MatmulPrecision::bf16}) {
    const ComputeMode mode = ComputeMode::deterministic_mode(p);
    const Tensor whole = linear(in.x, in.w, in.b, mode, Consumer::any, in.r);
    const Tensor one = linear(in.x.slice(0, 2, 3), in.w, in.b, mode, Consumer::any,
                              in.r.slice(0, 2, 3).contiguous());
    CHECK(host(one) == host(whole.slice(0, 2, 3)));
  }
}

TEST_CASE("cpu: a residual of another dtype or shape than the product is refused") {
  const Inputs in = inputs(Device::cpu(), DType::f32);
  CHECK_THROWS_WITH(linear(in.x, in.w, in.b, ComputeMode(), Consumer::any, in.r.to(DType::f64)),
                    doctest::Contains("the residual is f64 but the product is f32"));
  CHECK_THROWS_WITH(linear(in.x, in.w, in.b, ComputeMode(), Consumer::any, in.r.slice(1, 0, 5)),
                    doctest::Contains("does not match the output"));
}

}  // namespace bg::test
