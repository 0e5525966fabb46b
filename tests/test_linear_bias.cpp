// test_linear_bias.cpp: a linear layer's bias added in the GEMM's epilogue (the standard and
// batch-invariant algorithms). The op harness checks finite differences and CUDA against the
// CPU at odd sizes with strided inputs; these cases check what the epilogue promises beyond
// that: an f32 output has the bits of the product plus a separate add, a narrowed (bf16)
// output is rounded once after the bias (within a rounding of a reference whose K order may
// differ), the bias gradient of a bf16 output gradient is summed
// and kept in f32, and a biased row is batch-invariant under train.deterministic.
#include <cmath>

#include "harness.h"

namespace bg::test {
namespace {

using V = std::vector<Tensor>;

OpCase linear_odd_strided_case(MatmulAlgo algo) {
  OpCase c;
  c.name = "linear, odd sizes, strided inputs";
  c.inputs = {{{3, 11, 13}}, {{9, 13}}, {{9}}};
  c.noncontiguous = true;
  c.fn = [algo](const V& x) {
    ComputeMode m = algo == MatmulAlgo::batch_invariant
                        ? ComputeMode::deterministic_mode(MatmulPrecision::fp32)
                        : ComputeMode();
    return linear(x[0], x[1], x[2], m);
  };
  return c;
}
OpCase linear_odd_strided_standard() { return linear_odd_strided_case(MatmulAlgo::standard); }
OpCase linear_odd_strided_batch_invariant() {
  return linear_odd_strided_case(MatmulAlgo::batch_invariant);
}

std::vector<float> host(const Tensor& t) {
  return t.detach().to(DType::f32).to(Device::cpu()).to_vector<float>();
}

struct Result {
  Tensor y, dx, dw, db;
};

// y = linear(x, w, b) (fused: the epilogue) or matmul(x, w^T) + b (a separate add), and the
// gradients of sum(y * g).
Result run_linear(const Tensor& x0, const Tensor& w0, const Tensor& b0, const Tensor& g,
                  const ComputeMode& mode, bool fused, Consumer consumer = Consumer::any) {
  const Tensor x = x0.detach().requires_grad_(true), w = w0.detach().requires_grad_(true),
               b = b0.detach().requires_grad_(true);
  const Tensor y = fused ? linear(x, w, b, mode, consumer) : matmul(x, w.transpose(0, 1), mode) + b;
  y.backward(g.to(y.dtype()));
  return {y.detach(), x.grad(), w.grad(), b.grad()};
}

void check_fused_equals_separate_add(Device dev, const ComputeMode& mode, DType dtype) {
  const std::string what = mode.str() + " " + dtype_name(dtype);
  CAPTURE(what);
  Generator gen(test_seed());
  const Tensor x = randn({37, 29}, gen, 0, 1, DType::f32, dev).to(dtype),
               w = randn({19, 29}, gen, 0, 0.2, DType::f32, dev).to(dtype),
               b = randn({19}, gen, 0, 1, DType::f32, dev).to(dtype),
               g = randn({37, 19}, gen, 0, 1, DType::f32, dev).to(dtype);
  const Result fused = run_linear(x, w, b, g, mode, true),
               separate = run_linear(x, w, b, g, mode, false);
  CHECK(fused.y.dtype() == separate.y.dtype());
  CHECK(host(fused.y) == host(separate.y));
  CHECK(host(fused.dx) == host(separate.dx));
  CHECK(host(fused.dw) == host(separate.dw));
  CHECK(host(fused.db) == host(separate.db));
}

}  // namespace

BG_OP_TEST("linear, odd sizes, strided inputs", linear_odd_strided_standard)
BG_OP_TEST("linear batch_invariant, odd sizes, strided inputs", linear_odd_strided_batch_invariant)

TEST_CASE("cpu: a bias in the product's epilogue gives the bits of a separate add") {
  for (DType dt : {DType::f32, DType::f64}) {
    check_fused_equals_separate_add(Device::cpu(), ComputeMode(), dt);
    check_fused_equals_separate_add(Device::cpu(),
                                    ComputeMode::deterministic_mode(MatmulPrecision::fp32), dt);
  }
}

TEST_CASE("cuda: a bias in the pinned product's epilogue gives the bits of a separate add") {
  BG_REQUIRE_CUDA();
  // The pinned algorithm runs the same K loop with or without the epilogue, and the f32 output
  // is rounded once after the add either way. (The standard algorithm's biased products run on
  // cuBLASLt, its others on cuBLAS: they may choose other kernels, so only the harness's
  // tolerance applies there.)
  for (MatmulPrecision p : {MatmulPrecision::fp32, MatmulPrecision::tf32, MatmulPrecision::bf16})
    check_fused_equals_separate_add(Device::cuda(0), ComputeMode::deterministic_mode(p),
                                    DType::f32);
}

TEST_CASE(
    "cuda: a narrowed biased product is rounded once, after the bias, and its bias "
    "gradient stays f32") {
  BG_REQUIRE_CUDA();
  const Device gpu = Device::cuda(0);
  Generator gen(test_seed());
  const int64_t m = 333, k = 96, n = 200;
  const Tensor x = randn({m, k}, gen, 0, 1, DType::f32, gpu),
               w = randn({n, k}, gen, 0, 0.1, DType::f32, gpu),
               b = randn({n}, gen, 0, 1, DType::f32, gpu),
               g = randn({m, n}, gen, 0, 1, DType::f32, gpu);
  for (bool deterministic : {false, true}) {
    CAPTURE(deterministic);
    const ComputeMode mode = deterministic ? ComputeMode::deterministic_mode(MatmulPrecision::bf16)
                                           : precision_mode(MatmulPrecision::bf16);
    const Result narrow = run_linear(x, w, b, g, mode, true, Consumer::matmul);
    REQUIRE(narrow.y.dtype() == DType::bf16);
    CHECK(narrow.db.dtype() == DType::f32);
    // The reference: the f32 accumulators (the bias-free product, f32 out), plus the bias
    // rounded to bf16, summed in f32 and rounded to bf16 once.
    const std::vector<float> acc = host(matmul(x, w.transpose(0, 1), mode)),
                             bias16 = host(b.to(DType::bf16)), got = host(narrow.y);
    const std::vector<float> want =
        host((from_vector(acc, {m, n}) + from_vector(bias16, {n})).to(DType::bf16));
    // The reference's product may come from another algorithm than the biased one (cuBLAS
    // against cuBLASLt, or another table row: the output dtype is part of the pinned key), so
    // its K order may differ: two f32 sums of the same K terms in two orders differ by at most
    // 2 K 2^-24 sum|x w| (each is that close to the exact sum), and a bf16 rounding adds one
    // ulp. Every value within that, nearly all equal. (Rounding before the bias as well would
    // leave far more values a rounding apart.) Where the bias cancels the product the first
    // term is the larger: one value in 66,600 was, in one run on an H100.
    const std::vector<float> xs = host(x), ws = host(w);
    int64_t equal = 0, within_one_ulp = 0;
    for (size_t i = 0; i < got.size(); ++i) {
      const int64_t row = int64_t(i) / n, col = int64_t(i) % n;
      double terms = 0;
      for (int64_t j = 0; j < k; ++j)
        terms += std::fabs(double(xs[size_t(row * k + j)]) * double(ws[size_t(col * k + j)]));
      const double order = 2.0 * double(k) * std::ldexp(terms, -24);
      equal += got[i] == want[i];
      within_one_ulp += std::fabs(got[i] - want[i]) <= std::ldexp(std::fabs(want[i]), -7) + order;
    }
    CHECK(within_one_ulp == int64_t(got.size()));
    CHECK(equal >= int64_t(got.size()) * 95 / 100);
    MESSAGE(equal << " of " << got.size() << " values equal the reference");
    // The bias gradient: the bf16 output gradient's column sums in f32, against f64 sums.
    const std::vector<float> g16 = host(g.to(DType::bf16)), db = host(narrow.db);
    for (int64_t j = 0; j < n; ++j) {
      double sum = 0, scale = 0;
      for (int64_t i = 0; i < m; ++i) {
        sum += g16[size_t(i * n + j)];
        scale += std::fabs(g16[size_t(i * n + j)]);
      }
      CHECK(std::fabs(db[size_t(j)] - sum) <= 1e-6 * scale);
    }
  }
}

TEST_CASE("cuda: column sums of f32, bf16 and f16 match the CPU's f64 sums at odd sizes") {
  BG_REQUIRE_CUDA();
  Generator gen(test_seed());
  for (DType dt : {DType::f32, DType::bf16, DType::f16})
    for (const Shape& shape : {Shape{1, 5}, Shape{4097, 37}, Shape{3, 7, 3}, Shape{20000, 3}}) {
      const std::string what = std::string(dtype_name(dt)) + " " + shape_str(shape);
      CAPTURE(what);
      const Tensor x = randn(shape, gen, 0, 1, DType::f32, Device::cuda(0)).to(dt);
      const Tensor sums = column_sums(x);
      CHECK(sums.dtype() == DType::f32);
      const Tensor want = column_sums(x.to(Device::cpu()).to(DType::f64));
      const std::vector<double> got = sums.to(DType::f64).to(Device::cpu()).to_vector<double>(),
                                ref = want.to_vector<double>(),
                                mag = column_sums(abs(x.to(Device::cpu()).to(DType::f64)))
                                          .to_vector<double>();
      for (size_t j = 0; j < got.size(); ++j) CHECK(std::fabs(got[j] - ref[j]) <= 1e-6 * mag[j]);
    }
}

}  // namespace bg::test
