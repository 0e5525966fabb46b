// test_linear_gelu.cpp: the MLP's first product and its GELU in one GEMM (linear_gelu, cuBLASLt's
// GELU_AUX epilogue under bf16 precision on CUDA's standard algorithm). The CPU composes the two
// ops, bit for bit; CUDA against the composed ops on the same bf16 operands (the epilogue takes
// GELU of the f32 sums plus the bias, the composed ops of the rounded product), forward and every
// gradient, with and without a bias, 3-D input, run to run, in the default and the deterministic
// mode (its pinned algorithms); where the epilogue is not taken (fp32, N not a multiple of 8)
// linear_gelu is the composition, bit for bit.
#include <cmath>

#include "harness.h"

namespace bg::test {
namespace {

struct Grads {
  Tensor y, dx, dw, db;
};

// y = linear_gelu (fused) or gelu(linear) (composed) of x, w, b (b may be undefined), and the
// gradients of sum(y * probe).
Grads run(const Tensor& x, const Tensor& w, const Tensor& b, const Tensor& probe,
          const ComputeMode& mode, bool fused) {
  Tensor xl = x.detach().requires_grad_(), wl = w.detach().requires_grad_();
  Tensor bl = b.defined() ? b.detach().requires_grad_() : Tensor();
  const Tensor y = fused ? linear_gelu(xl, wl, bl, mode)
                         : gelu(linear(xl, wl, bl, mode, Consumer::matmul), mode);
  sum(y.to(DType::f32) * probe).backward();
  return {y.detach(), xl.grad(), wl.grad(), bl.defined() ? bl.grad() : Tensor()};
}

}  // namespace

TEST_CASE("cpu: linear_gelu is gelu over linear, bit for bit") {
  Generator gen(test_seed() + 21);
  const Tensor x = randn({2, 5, 12}, gen), w = randn({16, 12}, gen, 0, 0.3), b = randn({16}, gen);
  const Tensor probe = randn({2, 5, 16}, gen);
  CHECK_FALSE(gelu_in_epilogue(ComputeMode(), x, w, b));
  const Grads fused = run(x, w, b, probe, ComputeMode(), true),
              composed = run(x, w, b, probe, ComputeMode(), false);
  CHECK(bit_mismatches(fused.y, composed.y) == 0);
  CHECK(bit_mismatches(fused.dx, composed.dx) == 0);
  CHECK(bit_mismatches(fused.dw, composed.dw) == 0);
  CHECK(bit_mismatches(fused.db, composed.db) == 0);
}

TEST_CASE("cpu: attach_gelu_backward gives gelu's gradient to an output made elsewhere") {
  Generator gen(test_seed() + 22);
  const Tensor x = randn({7, 9}, gen, 0, 2, DType::f64), probe = randn({7, 9}, gen, 0, 1, DType::f64);
  Tensor a = x.detach().requires_grad_(), b = x.detach().requires_grad_();
  const Tensor made = gelu(x);  // no record: as a GEMM's epilogue hands it over
  const Tensor y = attach_gelu_backward(a, made);
  sum(y * probe).backward();
  sum(gelu(b) * probe).backward();
  CHECK(bit_mismatches(y.detach(), made) == 0);
  CHECK(bit_mismatches(a.grad(), b.grad()) == 0);
  CHECK_THROWS_WITH(attach_gelu_backward(a, zeros({7, 8}, DType::f64)),
                    doctest::Contains("its input's shape"));
}

TEST_CASE("cuda: linear_gelu's GELU epilogue matches gelu over linear under bf16 precision") {
  BG_REQUIRE_CUDA();
  const Device gpu = Device::cuda(0);
  Generator gen(test_seed() + 23);
  for (const auto& [bf16, biased] :
       {std::pair{precision_mode(MatmulPrecision::bf16), true},
        {precision_mode(MatmulPrecision::bf16), false},
        {ComputeMode::deterministic_mode(MatmulPrecision::bf16), true}}) {
    CAPTURE(bf16.str());
    CAPTURE(biased);
    // 3-D input (rows 2 x 301), K 200, N 264 (a multiple of 8); x bf16 as layernorm stores it.
    const Tensor x = randn({2, 301, 200}, gen, 0, 1, DType::f32, gpu).to(DType::bf16);
    const Tensor w = randn({264, 200}, gen, 0, 0.08, DType::f32, gpu);
    const Tensor b = biased ? randn({264}, gen, 0, 0.5, DType::f32, gpu) : Tensor();
    const Tensor probe = randn({2, 301, 264}, gen, 0, 1, DType::f32, gpu);
    REQUIRE(gelu_in_epilogue(bf16, x, w, b));
    const Grads fused = run(x, w, b, probe, bf16, true), again = run(x, w, b, probe, bf16, true),
                composed = run(x, w, b, probe, bf16, false);
    CHECK(fused.y.dtype() == DType::bf16);
    CHECK(fused.dx.dtype() == DType::bf16);
    CHECK(fused.dw.dtype() == DType::f32);
    // The epilogue's GELU of the unrounded sum and the composed GELU of the bf16 product differ
    // by about one bf16 rounding of each; the gradients follow from the same bf16 pre-activation
    // up to the epilogue's own summation order.
    CHECK(rel_err(fused.y.to(DType::f32).to(Device::cpu()),
                  composed.y.to(DType::f32).to(Device::cpu())) < 1e-2);
    for (const auto& [got, want] : {std::pair{fused.dx, composed.dx}, {fused.dw, composed.dw}})
      CHECK(rel_err(got.to(DType::f32).to(Device::cpu()), want.to(DType::f32).to(Device::cpu())) <
            1e-2);
    if (biased)
      CHECK(rel_err(fused.db.to(Device::cpu()), composed.db.to(Device::cpu())) < 1e-2);
    for (const auto& [a, b2] : {std::pair{fused.y, again.y}, {fused.dx, again.dx},
                                {fused.dw, again.dw}})
      CHECK(bit_mismatches(a, b2) == 0);  // run to run
  }
}

TEST_CASE("cuda: linear_gelu composes the two ops where the epilogue is not taken") {
  BG_REQUIRE_CUDA();
  const Device gpu = Device::cuda(0);
  Generator gen(test_seed() + 24);
  const Tensor x = randn({33, 40}, gen, 0, 1, DType::f32, gpu);
  const Tensor probe60 = randn({33, 60}, gen, 0, 1, DType::f32, gpu),
               probe62 = randn({33, 62}, gen, 0, 1, DType::f32, gpu);
  const Tensor w60 = randn({60, 40}, gen, 0, 0.1, DType::f32, gpu),
               w62 = randn({62, 40}, gen, 0, 0.1, DType::f32, gpu),
               w64 = randn({64, 40}, gen, 0, 0.1, DType::f32, gpu);
  const ComputeMode det = ComputeMode::deterministic_mode(MatmulPrecision::bf16),
                    bf16 = precision_mode(MatmulPrecision::bf16);
  CHECK(gelu_in_epilogue(det, x, w64, Tensor()));         // the pinned algorithms have it
  CHECK_FALSE(gelu_in_epilogue(det, x, w62, Tensor()));   // N = 62: cuBLASLt needs 8 | N
  CHECK_FALSE(gelu_in_epilogue(bf16, x, w62, Tensor()));
  CHECK_FALSE(gelu_in_epilogue(ComputeMode(), x, w60, Tensor()));  // fp32: no bf16 product
  for (const auto& [mode, w, probe] :
       {std::tuple{det, w62, probe62}, {bf16, w62, probe62}, {ComputeMode(), w60, probe60}}) {
    const Grads fused = run(x, w, Tensor(), probe, mode, true),
                composed = run(x, w, Tensor(), probe, mode, false);
    CHECK(bit_mismatches(fused.y, composed.y) == 0);
    CHECK(bit_mismatches(fused.dx, composed.dx) == 0);
    CHECK(bit_mismatches(fused.dw, composed.dw) == 0);
  }
}

}  // namespace bg::test
