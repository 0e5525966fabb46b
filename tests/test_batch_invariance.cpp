// test_batch_invariance.cpp: which kernels already give a row (or a sequence) the same bits
// whatever the batch around it, and the same bits run after run (issue 15's audit; README and
// docs/determinism.md cite these cases). A probe row computed alone (batch 1) must equal, bit
// for bit, the same row inside batches of 7, 64 and 4097 rows at the first, middle and last
// position, forward and its own input gradient (dx), for hidden sizes 1, 3, 6, 383, 384, 4096;
// three runs of the biggest batch must agree bit for bit.
#include <functional>

#include "bide_reference.h"
#include "core/bide.h"
#include "harness.h"

namespace bg::test {
namespace {

// f maps x (N, C) to (y, dx) for a row-wise op, with the upstream gradient g (N, C') given.
using RowOp = std::function<std::pair<Tensor, Tensor>(const Tensor& x, const Tensor& g)>;

std::vector<float> row(const Tensor& t, int64_t r) {
  return t.slice(0, r, r + 1).to(DType::f32).to(Device::cpu()).to_vector<float>();
}

void check_rows(const char* name, Device dev, DType dtype, int64_t c, int64_t g_cols,
                const RowOp& f) {
  const std::string op = name, type = dtype_name(dtype);
  CAPTURE(op);
  CAPTURE(type);
  CAPTURE(c);
  Generator gen(test_seed());
  const int64_t big = c >= 4096 ? 1024 : 4097;  // 4096-wide rows: 1024 rows keep it quick
  const Tensor xs = randn({big, c}, gen, 0, 1, DType::f32, dev).to(dtype);
  const Tensor gs = randn({big, g_cols}, gen, 0, 1, DType::f32, dev).to(dtype);
  const auto whole = f(xs, gs);
  for (int rep = 0; rep < 2; ++rep) {  // three runs in all
    const auto again = f(xs, gs);
    CHECK(row(again.first, big - 1) == row(whole.first, big - 1));
    CHECK(again.first.to(DType::f32).to_vector<float>() ==
          whole.first.to(DType::f32).to_vector<float>());
    CHECK(again.second.to(DType::f32).to_vector<float>() ==
          whole.second.to(DType::f32).to_vector<float>());
  }
  for (int64_t n : {int64_t(7), int64_t(64), big}) {
    CAPTURE(n);
    const auto batch = n == big ? whole : f(xs.slice(0, 0, n), gs.slice(0, 0, n));
    for (int64_t r : {int64_t(0), n / 2, n - 1}) {
      CAPTURE(r);
      const auto alone = f(xs.slice(0, r, r + 1), gs.slice(0, r, r + 1));
      CHECK(row(batch.first, r) == row(alone.first, 0));
      CHECK(row(batch.second, r) == row(alone.second, 0));
    }
  }
}

// y = op(x) and dx of sum(y * g) through autograd.
RowOp through_autograd(std::function<Tensor(const Tensor&)> op) {
  return [op](const Tensor& x0, const Tensor& g) {
    const Tensor x = x0.detach().requires_grad_(true);
    const Tensor y = op(x);
    y.backward(g);
    return std::make_pair(y.detach(), x.grad());
  };
}

void check_norms_and_softmax(Device dev, DType dtype) {
  for (int64_t c : {1, 3, 6, 383, 384, 4096}) {
    Generator pg(7);  // the parameters in the input's dtype, as the CUDA norms require
    const Tensor w = randn({c}, pg, 1, 0.1, DType::f32, dev).to(dtype);
    const Tensor b = randn({c}, pg, 0, 0.1, DType::f32, dev).to(dtype);
    check_rows("layernorm", dev, dtype, c, c,
               through_autograd([&](const Tensor& x) { return layernorm(x, w, b); }));
    check_rows("rmsnorm", dev, dtype, c, c,
               through_autograd([&](const Tensor& x) { return rmsnorm(x, w); }));
    check_rows("softmax", dev, dtype, c, c,
               through_autograd([](const Tensor& x) { return softmax(x, -1); }));
    check_rows("log_softmax", dev, dtype, c, c,
               through_autograd([](const Tensor& x) { return log_softmax(x, -1); }));
    check_rows("gelu", dev, dtype, c, c, through_autograd([](const Tensor& x) { return gelu(x); }));
  }
}

// Per-row cross-entropy losses (reduction none) and their dlogits.
void check_cross_entropy(Device dev) {
  for (int64_t v : {3, 65, 384, 4096}) {
    check_rows("cross_entropy", dev, DType::f32, v, 1, [v](const Tensor& x0, const Tensor& g) {
      const int64_t n = x0.size(0);
      std::vector<int64_t> t(static_cast<size_t>(n));
      // The target depends on the row's content only (its first logit's sign), not its position.
      const std::vector<float> first = x0.slice(1, 0, 1).to(Device::cpu()).to_vector<float>();
      for (int64_t i = 0; i < n; ++i) t[size_t(i)] = first[size_t(i)] > 0 ? v - 1 : 0;
      const Tensor x = x0.detach().requires_grad_(true);
      const Tensor loss = cross_entropy(x, from_vector(t, {n}, x0.device()), -100, "none");
      loss.backward(g.reshape({n}));
      return std::make_pair(loss.detach().reshape({n, 1}), x.grad());
    });
  }
}

// x (N, K) @ W (K, M) under the naive algorithm: one fixed chain per output, so a row's product
// and its dx (= g W^T) cannot depend on the batch.
void check_naive_matmul(Device dev) {
  ComputeMode naive;
  naive.algo = MatmulAlgo::naive;
  for (int64_t k : {3, 384}) {
    Generator wg(9);
    const Tensor w = randn({k, 97}, wg, 0, 1, DType::f32, dev);
    check_rows("matmul naive", dev, DType::f32, k, 97,
               through_autograd([&](const Tensor& x) { return matmul(x, w, naive); }));
  }
}

// The same under the batch-invariant algorithm (train.deterministic's matmul), in each
// precision the device runs: odd and GPT widths, a row alone against M = 7, 64 and 4097.
void check_batch_invariant_matmul(Device dev, MatmulPrecision precision) {
  const ComputeMode mode = ComputeMode::deterministic_mode(precision);
  struct Dims {
    int64_t k, n;
  };
  const bool gpu = dev.is_cuda();
  const std::vector<Dims> dims =
      gpu ? std::vector<Dims>{{3, 97}, {383, 65}, {384, 1152}, {768, 2304}, {3072, 768}}
          : std::vector<Dims>{{3, 97}, {383, 65}};
  for (const Dims d : dims) {
    const std::string precision_text = enum_name(precision);
    CAPTURE(precision_text);
    Generator wg(9);
    const Tensor w = randn({d.n, d.k}, wg, 0, 0.05, DType::f32, dev);  // (out, in), as Linear's
    check_rows("matmul batch_invariant", dev, DType::f32, d.k, d.n,
               through_autograd([&](const Tensor& x) { return linear(x, w, Tensor(), mode); }));
    // A biased projection stored for its consumer (bf16 under bf16 precision on CUDA): the bias
    // in the epilogue, before the one rounding.
    const Tensor bias = randn({d.n}, wg, 0, 0.5, DType::f32, dev);
    check_rows("linear with a bias, stored for a matmul", dev, DType::f32, d.k, d.n,
               [&](const Tensor& x0, const Tensor& g) {
                 const Tensor x = x0.detach().requires_grad_(true);
                 const Tensor y = linear(x, w, bias, mode, Consumer::matmul);
                 y.backward(g.to(y.dtype()));
                 return std::make_pair(y.detach(), x.grad());
               });
  }
}

// The SICK pass under the mode (BideOptions::batch_invariant): an example's log-probability
// and its dW, dr alone equal the same example inside batches of 7, 64 and 4097, for 16-bit
// float16 patterns on CUDA (10-bit integers on the CPU, whose pass has no slices to vary), each
// variant and precision and `auto`. One row of x carries an example's W (H x B) and r (H).
void check_sick(Device dev) {
  const int bits = dev.is_cuda() ? 16 : 10, hid = 32;
  for (const char* variant : {"auto", "bruteforce", "precomputed"})
    for (SickPrecision precision : {SickPrecision::fp32, SickPrecision::fp16}) {
      if (dev.is_cpu() && precision == SickPrecision::fp16) continue;  // a CUDA setting
      BideOptions opt =
          options(bits, variant, dev.is_cuda() ? BideValueType::f16 : BideValueType::uint);
      opt.precision = precision;
      opt.batch_invariant = true;
      const std::string name = std::string("sick ") + variant + " " + enum_name(precision);
      check_rows(
          name.c_str(), dev, DType::f32, hid * (bits + 1), 1,
          [&](const Tensor& x0, const Tensor& g) {
            const int64_t n = x0.size(0);
            const Tensor x = x0.detach().requires_grad_(true);
            const Tensor w = x.slice(1, 0, hid * bits).reshape({n, hid, bits}) * 0.05;
            const Tensor r = x.slice(1, hid * bits, hid * (bits + 1)) * 0.2;
            // The target pattern follows the row's content only.
            const Tensor y =
                (abs(x0.slice(1, 0, 1)) * (bits == 16 ? 4000.0 : 60.0)).to(DType::i64).reshape({n});
            const Tensor lp = bide_log_prob(w, r, y, opt);
            lp.backward(g.reshape({n}));
            return std::make_pair(lp.detach().reshape({n, 1}), x.grad());
          });
    }
}

}  // namespace

TEST_CASE("cpu: the SICK pass is batch-invariant and repeatable under the mode") {
  check_sick(Device::cpu());
}

TEST_CASE("cuda: the SICK pass is batch-invariant and repeatable under the mode") {
  BG_REQUIRE_CUDA();
  check_sick(Device::cuda(0));
}

TEST_CASE("cpu: the batch-invariant matmul algorithm is batch-invariant and repeatable") {
  check_batch_invariant_matmul(Device::cpu(), MatmulPrecision::fp32);
}

TEST_CASE("cuda: the batch-invariant matmul is batch-invariant and repeatable (fp32, tf32, bf16)") {
  BG_REQUIRE_CUDA();
  for (MatmulPrecision p : {MatmulPrecision::fp32, MatmulPrecision::tf32, MatmulPrecision::bf16})
    check_batch_invariant_matmul(Device::cuda(0), p);
}

TEST_CASE("cpu: the naive matmul algorithm is batch-invariant and repeatable") {
  check_naive_matmul(Device::cpu());
}

TEST_CASE("cuda: the naive matmul algorithm is batch-invariant and repeatable") {
  BG_REQUIRE_CUDA();
  check_naive_matmul(Device::cuda(0));
}

TEST_CASE("cpu: norms, softmax, gelu and cross-entropy are batch-invariant and repeatable") {
  check_norms_and_softmax(Device::cpu(), DType::f32);
  check_cross_entropy(Device::cpu());
}

TEST_CASE("cuda: norms, softmax and gelu are batch-invariant and repeatable (f32, bf16)") {
  BG_REQUIRE_CUDA();
  check_norms_and_softmax(Device::cuda(0), DType::f32);
  check_norms_and_softmax(Device::cuda(0), DType::bf16);
}

TEST_CASE("cuda: cross-entropy is batch-invariant and repeatable") {
  BG_REQUIRE_CUDA();
  check_cross_entropy(Device::cuda(0));
}

TEST_CASE("cuda: fused attention gives a sequence the same bits in any batch") {
  BG_REQUIRE_CUDA();
  // A sequence's output and its dqkv alone, and inside batches of 7 and 64 at the first, middle
  // and last place (no dropout: its counters are numbered by batch row by design).
  const Device gpu = Device::cuda(0);
  Generator gen(test_seed());
  const int64_t t = 130, heads = 3, c = heads * 64;
  const Tensor qkv = randn({64, t, 3 * c}, gen, 0, 1, DType::f32, gpu).to(DType::bf16);
  const Tensor g = randn({64, t, c}, gen, 0, 1, DType::f32, gpu).to(DType::bf16);
  auto run = [&](int64_t lo, int64_t hi) {
    const Tensor x = qkv.slice(0, lo, hi).detach().requires_grad_(true);
    Generator unused;
    const Tensor y = fused_causal_attention(x, heads, 0.0, true, unused, fused_attention_mode(gpu));
    y.backward(g.slice(0, lo, hi));
    return std::make_pair(y.detach(), x.grad());
  };
  for (int64_t n : {7, 64}) {
    CAPTURE(n);
    const auto batch = run(0, n);
    for (int64_t r : {int64_t(0), n / 2, n - 1}) {
      CAPTURE(r);
      const auto alone = run(r, r + 1);
      CHECK(row(batch.first, r) == row(alone.first, 0));
      CHECK(row(batch.second, r) == row(alone.second, 0));
    }
  }
}

}  // namespace bg::test
