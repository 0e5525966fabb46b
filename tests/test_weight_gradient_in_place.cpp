// test_weight_gradient_in_place.cpp: a linear layer's weight gradient added straight into the
// parameter's gradient buffer (FlatParameters' view) in the GEMM's epilogue, under bf16 precision
// on CUDA's standard algorithm: the same gradient as the returned one (up to the product's
// summation order), accumulating over backward passes, and the returned gradient wherever the
// buffer is not a plain leaf's (a LeafReadyScope, the deterministic mode, the CPU).
#include <cmath>

#include "core/optim.h"
#include "harness.h"

namespace bg::test {
namespace {

struct LinearGrads {
  std::vector<float> w, b, x;
  std::vector<double> b_from_bf16;  // without GELU: the bias gradient as f64 sums of bf16(up)
};

// The mode with the linear's output stored in bf16 (train.activations: bf16): its gradient
// arrives in bf16.
ComputeMode bf16_outputs(ComputeMode mode) {
  mode.activations = ActivationDtype::bf16;
  return mode;
}

// One or two backward passes of sum(linear(x, W, b) * up) in `mode`; W and b in a FlatParameters
// buffer when `flat` (else plain leaves), under a LeafReadyScope when `scoped`.
LinearGrads linear_grads(Device device, const ComputeMode& mode, bool flat, bool scoped,
                         int passes = 1, bool gelu = false) {
  Generator gen(91);
  const Tensor w0 = randn({24, 40}, gen, 0, 0.2), b0 = randn({24}, gen, 0, 0.1);
  const Tensor x0 = randn({2, 37, 40}, gen, 0, 1, DType::f32, device);
  const Tensor up = randn({2, 37, 24}, gen, 0, 1, DType::f32, device);
  Tensor w = w0.to(device).detach().requires_grad_(true);
  Tensor b = b0.to(device).detach().requires_grad_(true);
  FlatParameters params;
  if (flat) {
    params = FlatParameters({{"w", w}, {"b", b}}, device);
    params.zero_grad();
  }
  const Tensor x = x0.detach().requires_grad_(true);
  std::unique_ptr<LeafReadyScope> scope;
  if (scoped) scope = std::make_unique<LeafReadyScope>([](const TensorImpl*) {});
  // The buffer is offered exactly for a flat parameter outside a LeafReadyScope.
  CHECK(leaf_gradient_buffer(w).defined() == (flat && !scoped));
  for (int p = 0; p < passes; ++p) {
    const Tensor y = gelu ? linear_gelu(x, w, b, mode) : linear(x, w, b, mode);
    sum(y.to(DType::f32) * up).backward();
  }
  // Without GELU the output's gradient is `up` itself: the bias gradient summed from its bf16
  // rounding (what both products read), exactly in f64, once per pass.
  const std::vector<float> up16 = up.to(DType::bf16).to(DType::f32).to_vector<float>();
  std::vector<double> b_from_bf16(24, 0.0);
  for (size_t i = 0; i < up16.size(); ++i) b_from_bf16[i % 24] += double(up16[i]) * passes;
  return {w.grad().to(DType::f32).to_vector<float>(), b.grad().to(DType::f32).to_vector<float>(),
          x.grad().to(DType::f32).to_vector<float>(), b_from_bf16};
}

double rel(const std::vector<float>& got, const std::vector<float>& want) {
  const int64_t n = int64_t(want.size());
  return rel_err(from_vector(got, {n}), from_vector(want, {n}));
}

}  // namespace

TEST_CASE("cpu: a parameter's gradient buffer takes its gradient as backward returns it") {
  // The CPU returns the gradient (backward adds it): the buffer and a plain leaf give the same bits.
  const ComputeMode mode;
  const LinearGrads plain = linear_grads(Device::cpu(), mode, false, false);
  const LinearGrads flat = linear_grads(Device::cpu(), mode, true, false);
  CHECK(flat.w == plain.w);
  CHECK(flat.b == plain.b);
  CHECK(flat.x == plain.x);
}

TEST_CASE("cuda: a linear adds its weight gradient into the parameter's buffer in the epilogue") {
  BG_REQUIRE_CUDA();
  const Device gpu = Device::cuda(0);
  const ComputeMode bf16 = precision_mode(MatmulPrecision::bf16);
  for (bool gelu : {false, true}) {
    CAPTURE(gelu);
    const LinearGrads plain = linear_grads(gpu, bf16, false, false, 1, gelu);
    const LinearGrads flat = linear_grads(gpu, bf16, true, false, 1, gelu);
    CHECK(rel(flat.w, plain.w) < 1e-5);  // the same bf16 products, summed in another order
    CHECK(flat.b == plain.b);  // an f32 output's gradient: the bias keeps its own sums
    CHECK(flat.x == plain.x);
    // A bf16 output's gradient: the bias gradient rides on the weight-gradient GEMM (cuBLASLt's
    // BGRADB), f32 sums of the same bf16 values in cuBLASLt's order.
    const LinearGrads plain16 = linear_grads(gpu, bf16_outputs(bf16), false, false, 1, gelu);
    const LinearGrads flat16 = linear_grads(gpu, bf16_outputs(bf16), true, false, 1, gelu);
    CHECK(rel(flat16.b, plain16.b) < 1e-5);
    if (!gelu)
      for (size_t j = 0; j < flat16.b.size(); ++j) {
        CAPTURE(j);
        CHECK(std::abs(double(flat16.b[j]) - flat16.b_from_bf16[j]) <=
              1e-5 * (1 + std::abs(flat16.b_from_bf16[j])));
      }
    CHECK(rel(flat16.w, plain16.w) < 1e-5);
    // Two passes accumulate: twice one pass's gradient.
    const LinearGrads twice = linear_grads(gpu, bf16, true, false, 2, gelu);
    std::vector<float> doubled = flat.w;
    for (float& v : doubled) v *= 2.f;
    CHECK(rel(twice.w, doubled) < 1e-5);
    // Under a LeafReadyScope (data parallel) the gradient is returned: a plain leaf's bits.
    const LinearGrads scoped = linear_grads(gpu, bf16, true, true, 1, gelu);
    CHECK(scoped.w == plain.w);
  }
  // The deterministic mode keeps its pinned products: the buffer gets the returned gradient.
  const ComputeMode det = ComputeMode::deterministic_mode(MatmulPrecision::bf16);
  CHECK(linear_grads(gpu, det, true, false).w == linear_grads(gpu, det, false, false).w);
}

}  // namespace bg::test
