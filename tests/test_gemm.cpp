// test_gemm.cpp: MatmulAlgo::batch_invariant, train.deterministic's matmul. The op harness
// (f64 finite differences, CUDA against the CPU, strided, transposed and broadcast operands);
// on the CPU it is the naive chain, bit for bit; on CUDA a product's row never depends on M,
// the batch count or the SM count the kernel is launched for (issue 15's proof by test of the
// pinned cuBLASLt algorithm). Row invariance of x W and its dx at M = 1, 7, 64 and 4097 is in
// test_batch_invariance.cpp beside the other row kernels.
#include "harness.h"
#if BITGRAD_WITH_CUDA
#include "kernels/cuda/cuda_kernels.h"
#include "kernels/cuda/device_runtime.h"
#endif

namespace bg::test {
namespace {

using V = std::vector<Tensor>;

ComputeMode batch_invariant_mode(MatmulPrecision p = MatmulPrecision::fp32) {
  return ComputeMode::deterministic_mode(p);
}

OpCase bi_matmul_case() {
  OpCase c;
  c.name = "matmul batch_invariant";
  c.inputs = {{{9, 13}}, {{13, 6}}};
  c.fn = [](const V& x) { return matmul(x[0], x[1], batch_invariant_mode()); };
  return c;
}
OpCase bi_matmul_transposed_case() {
  OpCase c;
  c.name = "matmul batch_invariant transposed operands";
  c.inputs = {{{37, 5}}, {{3, 37}}};
  c.fn = [](const V& x) {
    return matmul(x[0].transpose(0, 1), x[1].transpose(0, 1), batch_invariant_mode());
  };
  return c;
}
OpCase bi_matmul_batched_case() {
  OpCase c;
  c.name = "matmul batch_invariant batched broadcast";
  c.inputs = {{{2, 3, 5, 7}}, {{7, 4}}};
  c.fn = [](const V& x) { return matmul(x[0], x[1], batch_invariant_mode()); };
  return c;
}
OpCase bi_matmul_batched_strided_case() {
  OpCase c;
  c.name = "matmul batch_invariant batched strided";
  c.inputs = {{{3, 6, 9}}, {{3, 9, 5}}};
  c.fn = [](const V& x) { return matmul(x[0], x[1], batch_invariant_mode()); };
  c.noncontiguous = true;
  return c;
}
OpCase bi_linear_case() {
  OpCase c;
  c.name = "linear batch_invariant";
  c.inputs = {{{2, 5, 7}}, {{6, 7}}, {{6}}};
  c.fn = [](const V& x) { return linear(x[0], x[1], x[2], batch_invariant_mode()); };
  return c;
}

std::vector<std::vector<float>> product_and_grads(const Tensor& a0, const Tensor& b0,
                                                  const Tensor& w0, const ComputeMode& mode) {
  const Tensor a = a0.detach().requires_grad_(true), b = b0.detach().requires_grad_(true);
  const Tensor out = matmul(a, b.transpose(-1, -2), mode);
  sum(out * w0).backward();
  return {out.to(DType::f32).to(Device::cpu()).to_vector<float>(),
          a.grad().to(DType::f32).to(Device::cpu()).to_vector<float>(),
          b.grad().to(DType::f32).to(Device::cpu()).to_vector<float>()};
}

}  // namespace

BG_OP_TEST("matmul batch_invariant", bi_matmul_case)
BG_OP_TEST("matmul batch_invariant transposed operands", bi_matmul_transposed_case)
BG_OP_TEST("matmul batch_invariant batched broadcast", bi_matmul_batched_case)
BG_OP_TEST("matmul batch_invariant batched strided", bi_matmul_batched_strided_case)
BG_OP_TEST("linear batch_invariant", bi_linear_case)

TEST_CASE("cpu: the batch-invariant algorithm gives the naive algorithm's bits") {
  // Its row-at-a-time loop runs each output's chain in the naive order: the same bits, forward
  // and both gradients, for contiguous and transposed b, f32 and f64.
  Generator gen(test_seed());
  for (DType dt : {DType::f32, DType::f64}) {
    const std::string dtype_text = dtype_name(dt);  // text, not a pointer, in reports
    CAPTURE(dtype_text);
    const Tensor a = randn({3, 33, 70}, gen).to(dt), b = randn({3, 45, 70}, gen).to(dt),
                 w = randn({3, 33, 45}, gen).to(dt);
    ComputeMode naive;
    naive.algo = MatmulAlgo::naive;
    CHECK(product_and_grads(a, b, w, batch_invariant_mode()) == product_and_grads(a, b, w, naive));
    const Tensor bc = b.transpose(1, 2).contiguous().transpose(1, 2);  // b^T unit-stride rows
    CHECK(product_and_grads(a, bc, w, batch_invariant_mode()) ==
          product_and_grads(a, bc, w, naive));
  }
}

TEST_CASE("cpu: deterministic mode refuses cuBLAS's algorithm and takes the batch-invariant one") {
  const Tensor a = zeros({2, 3}), b = zeros({3, 4});
  ComputeMode m;
  m.deterministic = true;
  CHECK_THROWS_WITH(matmul(a, b, m), doctest::Contains("'standard' is not one"));
  CHECK(matmul(a, b, batch_invariant_mode()).shape() == Shape{2, 4});
  CHECK(batch_invariant_mode().str() == "fp32 batch_invariant deterministic");
}

TEST_CASE("cuda: batch-invariant products repeat bit for bit in every precision") {
  BG_REQUIRE_CUDA();
  const Device gpu = Device::cuda(0);
  Generator gen(test_seed());
  const Tensor a = randn({2, 300, 200}, gen, 0, 1, DType::f32, gpu),
               b = randn({2, 130, 200}, gen, 0, 1, DType::f32, gpu),
               w = randn({2, 300, 130}, gen, 0, 1, DType::f32, gpu);
  for (MatmulPrecision p : {MatmulPrecision::fp32, MatmulPrecision::tf32, MatmulPrecision::bf16}) {
    const std::string precision_text = enum_name(p);
    CAPTURE(precision_text);
    const auto first = product_and_grads(a, b, w, batch_invariant_mode(p));
    for (int rep = 0; rep < 2; ++rep)
      CHECK(product_and_grads(a, b, w, batch_invariant_mode(p)) == first);
  }
}

TEST_CASE("cuda: the batch-invariant GEMM gives the same bits on any SM count (partition)") {
  BG_REQUIRE_CUDA();
#if BITGRAD_WITH_CUDA
  // The same products on a simulated GPU of 132 (an H100/H200 SXM), 114 (an H100 PCIe), 66 or
  // 8 SMs (cuda::simulate_device: launched for that many SMs, and a table miss's heuristic
  // chooses for it): cuBLAS's default path picks other tiles and split-K for fewer SMs; the
  // pinned algorithm must not. Forward-like products (rows kept apart) and weight-gradient-like
  // ones (K over the rows, where the algorithm may split K in a fixed order), bf16 and fp32.
  const Device gpu = Device::cuda(0);
  const StreamHandle stream = stream_for(gpu);
  Generator gen(test_seed());
  struct Case {
    int64_t m, k, n;
    bool k_over_rows;
  };
  for (DType dt : {DType::bf16, DType::f32})
    for (const Case& c : {Case{4097, 384, 1152, false}, Case{384, 16384, 384, true},
                          Case{768, 4096, 2304, true}, Case{1, 768, 3072, false}}) {
      const std::string dtype_text = dtype_name(dt);  // text, not a pointer, in reports
      CAPTURE(dtype_text);
      CAPTURE(c.m);
      CAPTURE(c.k);
      const Tensor a = randn({1, c.m, c.k}, gen, 0, 1, DType::f32, gpu).to(dt);
      const Tensor b = randn({1, c.k, c.n}, gen, 0, 1, DType::f32, gpu).to(dt);
      const MatmulPrecision p = dt == DType::bf16 ? MatmulPrecision::bf16 : MatmulPrecision::fp32;
      std::vector<float> want;
      for (int sms : {0, 132, 114, 66, 8}) {
        CAPTURE(sms);
        const Tensor out = full({1, c.m, c.n}, std::nan(""), DType::f32, gpu).to(dt);
        const BatchInvariantGemm opt{p, c.k_over_rows};
        cuda::simulate_device({sms, 0, 0});
        cuda::matmul_batch_invariant(out.kview(), a.kview(), b.kview(), MatmulEpilogue{}, opt,
                                     stream);
        cuda::simulate_device({});
        const std::vector<float> got = out.to(DType::f32).to(Device::cpu()).to_vector<float>();
        if (want.empty()) {
          want = got;
          // Written everywhere (no NaN poison left) and close to the exact product.
          const Tensor ref =
              matmul(a.to(DType::f64).to(Device::cpu()), b.to(DType::f64).to(Device::cpu()));
          CHECK(rel_err(out.to(DType::f64).to(Device::cpu()), ref) <
                (dt == DType::bf16 ? 1e-2 : 1e-4));
        }
        CHECK(got == want);
      }
    }
#endif
}

}  // namespace bg::test
