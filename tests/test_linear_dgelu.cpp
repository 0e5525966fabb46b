// test_linear_dgelu.cpp: GELU's backward in the input-gradient GEMM's epilogue (linear's
// gelu_input, cuBLASLt's DGELU under bf16 precision on CUDA's cuBLASLt algorithms). The product
// that reads a GELU's output hands the GELU's input its gradient, (g W) * gelu'(pre), in one
// pass instead of two. cuBLASLt rounds g W to bf16 before the multiply, as the composition
// does, so the check against a float64 reference is that the epilogue is as exact as the
// composition (and bits differ from it: the derivative's arithmetic is cuBLASLt's); the MLP's
// chain against the composed chain (forward bits equal; the second product's weight and bias
// gradients equal; the rest within bf16 roundings), run to run, in the default and the
// deterministic mode (its pinned algorithms: a row's gradient the same in any batch), and where
// the epilogue is not taken (the CPU, fp32, a width not a multiple of 8) bit for bit the
// composition.
#include <cmath>
#include <cstdint>
#include <cstring>
#include <vector>

#include "harness.h"

namespace bg::test {
namespace {

// The tanh form's derivative in float64.
double gelu_tanh_grad(double x) {
  const double c = std::sqrt(2.0 / M_PI), u = c * (x + 0.044715 * x * x * x);
  const double t = std::tanh(u);
  return 0.5 * (1.0 + t) + 0.5 * x * (1.0 - t * t) * c * (1.0 + 3.0 * 0.044715 * x * x);
}

// v rounded to bf16 (to nearest, ties to even; through f32, whose rounding rarely matters here).
float round_bf16(double v) {
  float f = float(v);
  uint32_t u;
  std::memcpy(&u, &f, 4);
  u = (u + 0x7fffu + ((u >> 16) & 1u)) & 0xffff0000u;
  std::memcpy(&f, &u, 4);
  return f;
}

// The gradient reaching pre, a bf16 leaf, through y = linear(gelu(pre), w) and sum(y * probe):
// with gelu_input = pre (the epilogue where the mode has it) or through gelu's own record.
Tensor pre_gradient(const Tensor& pre, const Tensor& w, const Tensor& probe,
                    const ComputeMode& mode, bool through_epilogue) {
  Tensor p = pre.detach().requires_grad_();
  Tensor act = through_epilogue ? attach_gelu_backward(p, gelu(pre.detach())) : gelu(p);
  const Tensor y = linear(act, w, Tensor(), mode, Consumer::any, Tensor(),
                          through_epilogue ? p : Tensor());
  sum(y.to(DType::f32) * probe).backward();
  return p.grad();
}

struct ChainGrads {
  Tensor y, dx, dw1, db1, dw2, db2;
};

// The MLP's chain: y = linear(gelu(linear(x, w1, b1)), w2, b2) (+ residual), the GELU in c_fc's
// epilogue, its backward in c_proj's (fused) or through its own record (composed).
ChainGrads chain(const Tensor& x, const Tensor& w1, const Tensor& b1, const Tensor& w2,
                 const Tensor& b2, const Tensor& residual, const Tensor& probe,
                 const ComputeMode& mode, bool fused) {
  Tensor xl = x.detach().requires_grad_(), w1l = w1.detach().requires_grad_(),
         b1l = b1.detach().requires_grad_(), w2l = w2.detach().requires_grad_(),
         b2l = b2.detach().requires_grad_();
  Tensor pre;
  const Tensor act = linear_gelu(xl, w1l, b1l, mode, fused ? &pre : nullptr);
  const Tensor y = linear(act, w2l, b2l, mode, Consumer::any, residual, pre);
  sum(y.to(DType::f32) * probe).backward();
  return {y.detach(), xl.grad(), w1l.grad(), b1l.grad(), w2l.grad(), b2l.grad()};
}

Tensor cpu_f32(const Tensor& t) { return t.detach().to(DType::f32).to(Device::cpu()); }

}  // namespace

TEST_CASE("cuda: the dGELU epilogue's gradient is as exact as GELU's backward after the product") {
  BG_REQUIRE_CUDA();
  const Device gpu = Device::cuda(0);
  Generator gen(test_seed() + 31);
  const int64_t m = 301, k = 264, n = 200;  // odd rows; the GELU's width a multiple of 8
  const Tensor pre = randn({m, k}, gen, 0, 1.5, DType::f32, gpu).to(DType::bf16);
  const Tensor w = randn({n, k}, gen, 0, 0.1, DType::f32, gpu);
  const Tensor probe = randn({m, n}, gen, 0, 1, DType::f32, gpu);
  // The reference from the operands the GEMM reads: bf16(probe) @ bf16(w), times gelu'(pre).
  const Tensor p = cpu_f32(pre), g = cpu_f32(probe.to(DType::bf16)),
               wc = cpu_f32(w.to(DType::bf16));
  std::vector<double> gw(size_t(m * k)), want(size_t(m * k));
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < k; ++j) {
      double s = 0;
      for (int64_t l = 0; l < n; ++l)
        s += double(g.data<float>()[i * n + l]) * double(wc.data<float>()[l * k + j]);
      gw[size_t(i * k + j)] = s;
      want[size_t(i * k + j)] = s * gelu_tanh_grad(p.data<float>()[i * k + j]);
    }
  for (const ComputeMode& mode : {precision_mode(MatmulPrecision::bf16),
                                  ComputeMode::deterministic_mode(MatmulPrecision::bf16)}) {
    CAPTURE(mode.str());
    const Tensor fused = pre_gradient(pre, w, probe, mode, true),
                 again = pre_gradient(pre, w, probe, mode, true),
                 composed = pre_gradient(pre, w, probe, mode, false);
    REQUIRE(fused.dtype() == DType::bf16);
    CHECK(bit_mismatches(fused, again) == 0);  // run to run
    CHECK(bit_mismatches(fused, composed) > 0);  // the epilogue ran, not the composition
    if (mode.deterministic) {  // the first 100 rows alone give the same rows
      const Tensor part = pre_gradient(pre.slice(0, 0, 100).contiguous(), w,
                                       probe.slice(0, 0, 100).contiguous(), mode, true);
      CHECK(bit_mismatches(part, fused.slice(0, 0, 100).contiguous()) == 0);
    }
    const Tensor f = cpu_f32(fused), c = cpu_f32(composed);
    // How often each is the reference's correct rounding (once), and the composition's formula
    // (g W rounded to bf16, then times gelu'(pre), rounded again).
    int64_t fused_exact = 0, composed_exact = 0, fused_twice = 0, far = 0;
    for (size_t i = 0; i < want.size(); ++i) {
      const float once = round_bf16(want[i]),
                  twice = round_bf16(double(round_bf16(gw[i])) * gelu_tanh_grad(p.data<float>()[i]));
      const float got = f.data<float>()[i], other = c.data<float>()[i];
      fused_exact += got == once;
      composed_exact += other == once;
      fused_twice += got == twice;
      // Both within two bf16 steps of the result, plus what the f32 sums' order and an
      // approximate tanh in the derivative may move at the product's own scale.
      const double bound = std::ldexp(std::fabs(want[i]), -7) + std::ldexp(std::fabs(gw[i]), -10) + 1e-6;
      far += std::fabs(got - want[i]) > bound || std::fabs(other - want[i]) > bound;
    }
    MESSAGE(mode.str() << ": of " << want.size() << " the epilogue's gradient is the reference "
                       << "rounded once in " << fused_exact << ", rounded as the composition "
                       << "rounds in " << fused_twice << "; the composition's is the reference "
                       << "rounded once in " << composed_exact);
    CHECK(far == 0);
    CHECK(fused_exact * 100 >= composed_exact * 97);
  }
}

TEST_CASE("cuda: the MLP's chain with GELU's backward in c_proj's epilogue") {
  BG_REQUIRE_CUDA();
  const Device gpu = Device::cuda(0);
  Generator gen(test_seed() + 32);
  // 3-D input (2 x 157 rows), 96 wide, 384 hidden (the GELU's width, a multiple of 8).
  const Tensor x = randn({2, 157, 96}, gen, 0, 1, DType::f32, gpu).to(DType::bf16);
  const Tensor w1 = randn({384, 96}, gen, 0, 0.1, DType::f32, gpu),
               b1 = randn({384}, gen, 0, 0.3, DType::f32, gpu),
               w2 = randn({96, 384}, gen, 0, 0.05, DType::f32, gpu),
               b2 = randn({96}, gen, 0, 0.3, DType::f32, gpu);
  const Tensor probe = randn({2, 157, 96}, gen, 0, 1, DType::f32, gpu);
  for (const auto& [bf16, with_residual] :
       {std::pair{precision_mode(MatmulPrecision::bf16), false},
        {precision_mode(MatmulPrecision::bf16), true},
        {ComputeMode::deterministic_mode(MatmulPrecision::bf16), true}}) {
    CAPTURE(bf16.str());
    CAPTURE(with_residual);
    const Tensor residual =
        with_residual ? randn({2, 157, 96}, gen, 0, 1, DType::f32, gpu) : Tensor();
    const ChainGrads fused = chain(x, w1, b1, w2, b2, residual, probe, bf16, true),
                     again = chain(x, w1, b1, w2, b2, residual, probe, bf16, true),
                     composed = chain(x, w1, b1, w2, b2, residual, probe, bf16, false);
    // The forward and the second product's own gradients do not depend on where GELU's
    // backward runs.
    CHECK(bit_mismatches(fused.y, composed.y) == 0);
    CHECK(bit_mismatches(fused.dw2, composed.dw2) == 0);
    CHECK(bit_mismatches(fused.db2, composed.db2) == 0);
    CHECK(fused.dx.dtype() == DType::bf16);
    // GELU's derivative in cuBLASLt's arithmetic upstream of these.
    for (const auto& [got, want] :
         {std::pair{fused.dx, composed.dx}, {fused.dw1, composed.dw1}, {fused.db1, composed.db1}})
      CHECK(rel_err(cpu_f32(got), cpu_f32(want)) < 1e-2);
    CHECK(bit_mismatches(fused.dw1, composed.dw1) > 0);  // the epilogue ran
    for (const auto& [a, b] :
         {std::pair{fused.dx, again.dx}, {fused.dw1, again.dw1}, {fused.db1, again.db1}})
      CHECK(bit_mismatches(a, b) == 0);  // run to run
  }
}

TEST_CASE("cuda: where the dGELU epilogue is not taken the gradient goes through GELU's record") {
  BG_REQUIRE_CUDA();
  const Device gpu = Device::cuda(0);
  Generator gen(test_seed() + 33);
  const Tensor pre = randn({33, 40}, gen, 0, 1, DType::f32, gpu),
               pre_odd = randn({33, 42}, gen, 0, 1, DType::f32, gpu).to(DType::bf16);
  const Tensor w = randn({24, 40}, gen, 0, 0.1, DType::f32, gpu),
               w_odd = randn({24, 42}, gen, 0, 0.1, DType::f32, gpu);
  const Tensor probe = randn({33, 24}, gen, 0, 1, DType::f32, gpu);
  // fp32 has no bf16 product; a width of 42 is not a multiple of 8 (either mode).
  for (const auto& [mode, p, wt] :
       {std::tuple{ComputeMode(), pre, w}, {precision_mode(MatmulPrecision::bf16), pre_odd, w_odd},
        {ComputeMode::deterministic_mode(MatmulPrecision::bf16), pre_odd, w_odd}}) {
    const Tensor through = pre_gradient(p, wt, probe, mode, true),
                 composed = pre_gradient(p, wt, probe, mode, false);
    CHECK(bit_mismatches(through, composed) == 0);
  }
}

TEST_CASE("cpu: linear ignores gelu_input: the GELU's record carries the gradient") {
  Generator gen(test_seed() + 34);
  const Tensor pre = randn({7, 16}, gen), w = randn({5, 16}, gen, 0, 0.3), probe = randn({7, 5}, gen);
  const Tensor through = pre_gradient(pre, w, probe, ComputeMode(), true),
               composed = pre_gradient(pre, w, probe, ComputeMode(), false);
  CHECK(bit_mismatches(through, composed) == 0);
}

}  // namespace bg::test
