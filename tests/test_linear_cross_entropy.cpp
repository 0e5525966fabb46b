// test_linear_cross_entropy.cpp: the chunked softmax-head loss (core/ops/linear_cross_entropy.cpp)
// against cross_entropy over linear's logits: loss and both gradients for any chunk size,
// ignored targets, mean and sum, 3-D and strided inputs; float64 finite differences; CUDA
// against the CPU and under the deterministic mode; its peak memory below one (N, V) logits
// tensor; bad arguments refused in one line.
#include <cmath>

#include "core/allocator.h"
#include "harness.h"

namespace bg::test {
namespace {

struct Run {
  Tensor loss, dx, dw;
};

// The loss and the gradients of (sum of the loss) w.r.t. x and W, by the fused op (chunk > 0)
// or by cross_entropy over the materialised logits (chunk 0).
Run run(const Tensor& x, const Tensor& w, const Tensor& t, int64_t chunk, const std::string& red,
        const ComputeMode& mode = ComputeMode()) {
  Tensor xl = x.detach().requires_grad_(), wl = w.detach().requires_grad_();
  const Tensor loss =
      chunk > 0 ? linear_cross_entropy(xl, wl, t, mode, chunk, -100, red)
                : cross_entropy(linear(xl, wl, Tensor(), mode, Consumer::loss), t, -100, red);
  (loss * 3.0).backward();
  return {loss.detach(), xl.grad(), wl.grad()};
}

Tensor targets(const Shape& shape, int64_t vocab, Generator& gen, Device dev) {
  const std::vector<double> u = rand(shape, gen, 0, 1, DType::f64).to_vector<double>();
  std::vector<int64_t> t(u.size());
  for (size_t i = 0; i < u.size(); ++i) t[i] = i % 5 == 2 ? -100 : int64_t(u[i] * double(vocab));
  return from_vector(t, shape, dev);
}

}  // namespace

TEST_CASE("cpu: linear_cross_entropy equals cross_entropy over the logits, any chunk") {
  Generator gen(test_seed() + 91);
  const int64_t b = 3, s = 7, c = 13, v = 37;  // 21 rows
  const Tensor x = randn({b, s, c}, gen, 0, 1, DType::f64), w = randn({v, c}, gen, 0, 0.3, DType::f64);
  const Tensor t = targets({b, s}, v, gen, Device::cpu());
  for (const std::string red : {"mean", "sum"}) {
    CAPTURE(red);
    const Run want = run(x, w, t, 0, red);
    for (const int64_t chunk : {1, 4, 20, 21, 64}) {
      CAPTURE(chunk);
      const Run got = run(x, w, t, chunk, red);
      CHECK(rel_err(got.loss, want.loss) < 1e-13);
      CHECK(rel_err(got.dx, want.dx) < 1e-13);
      CHECK(rel_err(got.dw, want.dw) < 1e-13);
    }
  }
  // A strided input (a transposed view) and f32.
  const Tensor xt = randn({c, 21}, gen, 0, 1, DType::f32).transpose(0, 1);
  const Tensor t2 = targets({21}, v, gen, Device::cpu());
  const Run got = run(xt, w.to(DType::f32), t2, 5, "mean"),
            want = run(xt.contiguous(), w.to(DType::f32), t2, 0, "mean");
  CHECK(rel_err(got.loss, want.loss) < 1e-6);
  CHECK(rel_err(got.dx, want.dx) < 1e-6);
  CHECK(rel_err(got.dw, want.dw) < 1e-6);
  // Rows that fit one chunk are the plain composition, bit for bit.
  const Run one = run(xt, w.to(DType::f32), t2, 21, "mean"),
            plain = run(xt, w.to(DType::f32), t2, 0, "mean");
  CHECK(bit_mismatches(one.loss, plain.loss) == 0);
  CHECK(bit_mismatches(one.dx, plain.dx) == 0);
  CHECK(bit_mismatches(one.dw, plain.dw) == 0);
  // Every target ignored: the mean is NaN (as cross_entropy's), the sum 0.
  const Tensor none = full({b, s}, -100.0, DType::i64);
  CHECK(std::isnan(linear_cross_entropy(x, w, none).item()));
  CHECK(linear_cross_entropy(x, w, none, ComputeMode(), 4, -100, "sum").item() == 0.0);
}

TEST_CASE("cpu: linear_cross_entropy's extra column is one more logit per row, any chunk") {
  Generator gen(test_seed() + 94);
  const int64_t n = 19, c = 8, v = 23;
  const Tensor x = randn({n, c}, gen, 0, 1, DType::f64), w = randn({v, c}, gen, 0, 0.4, DType::f64);
  const Tensor e = randn({n}, gen, 0, 1.5, DType::f64);
  // Targets over [0, v]: v is the extra column's.
  std::vector<int64_t> tv(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) tv[size_t(i)] = i % 4 == 1 ? v : (i * 7) % v;
  tv[5] = -100;
  const Tensor t = from_vector(tv, {n});
  for (const std::string red : {"mean", "sum"}) {
    CAPTURE(red);
    auto grads = [&](int64_t chunk) {
      Tensor xl = x.detach().requires_grad_(), wl = w.detach().requires_grad_(),
             el = e.detach().requires_grad_();
      const Tensor loss =
          chunk > 0 ? linear_cross_entropy(xl, wl, t, ComputeMode(), chunk, -100, red, el)
                    : cross_entropy(concat({linear(xl, wl), el.reshape({n, 1})}, 1), t, -100, red);
      (loss * 2.0).backward();
      return std::vector<Tensor>{loss.detach(), xl.grad(), wl.grad(), el.grad()};
    };
    const std::vector<Tensor> want = grads(0);
    for (const int64_t chunk : {1, 4, 19}) {
      CAPTURE(chunk);
      const std::vector<Tensor> got = grads(chunk);
      for (size_t i = 0; i < got.size(); ++i) CHECK(rel_err(got[i], want[i]) < 1e-13);
    }
  }
  CHECK_THROWS_WITH(linear_cross_entropy(x, w, t, ComputeMode(), 4, -100, "mean", zeros({n + 1})),
                    doctest::Contains("one float per row"));
}

TEST_CASE("cpu: linear_cross_entropy's gradients match float64 finite differences") {
  Generator gen(test_seed() + 92);
  const Tensor x = randn({9, 6}, gen, 0, 1, DType::f64), w = randn({11, 6}, gen, 0, 0.5, DType::f64);
  const Tensor t = targets({9}, 11, gen, Device::cpu());
  const Run r = run(x, w, t, 4, "mean");  // gradients of 3 x the loss
  const double h = 1e-6;
  for (const bool of_x : {true, false}) {
    const Tensor base = of_x ? x : w, analytic = of_x ? r.dx : r.dw;
    const std::vector<double> ga = analytic.to_vector<double>();
    for (int64_t e = 0; e < base.numel(); e += 5) {
      auto loss_at = [&](double delta) {
        std::vector<double> v = base.to_vector<double>();
        v[size_t(e)] += delta;
        const Tensor moved = from_vector(v, base.shape());
        return 3.0 * linear_cross_entropy(of_x ? moved : x, of_x ? w : moved, t, ComputeMode(), 4)
                         .item();
      };
      const double numeric = (loss_at(h) - loss_at(-h)) / (2 * h);
      CHECK_MESSAGE(std::fabs(numeric - ga[size_t(e)]) <= 1e-7, (of_x ? "x" : "W"), " element ", e);
    }
  }
}

TEST_CASE("cpu: cross_entropy_sum_and_gradient is the summed loss and its autograd gradient") {
  Generator gen(test_seed() + 96);
  const Tensor logits = randn({13, 9}, gen, 0, 2, DType::f64);
  const Tensor t = targets({13}, 9, gen, Device::cpu());
  const auto [loss, grad] = cross_entropy_sum_and_gradient(logits, t);
  Tensor leaf = logits.detach().requires_grad_();
  const Tensor want = cross_entropy(leaf, t, -100, "sum");
  want.backward();
  CHECK(bit_mismatches(loss, want.detach()) == 0);
  CHECK(rel_err(grad, leaf.grad()) < 1e-15);
  CHECK_THROWS_WITH(cross_entropy_sum_and_gradient(logits, zeros({12}, DType::i64)),
                    doctest::Contains("need 13 targets, got (12,)"));
}

TEST_CASE("cpu: linear_cross_entropy refuses bad arguments in one line") {
  const Tensor x = zeros({4, 3}), w = zeros({5, 3}), t = zeros({4}, DType::i64);
  CHECK_THROWS_WITH(linear_cross_entropy(x, w, t, ComputeMode(), 2, -100, "none"),
                    doctest::Contains("reduction must be mean or sum"));
  CHECK_THROWS_WITH(linear_cross_entropy(x, w, t, ComputeMode(), 0),
                    doctest::Contains("chunk_rows must be at least 1"));
  CHECK_THROWS_WITH(linear_cross_entropy(x, zeros({5, 4}), t),
                    doctest::Contains("does not match weight"));
  CHECK_THROWS_WITH(linear_cross_entropy(x, w, zeros({3}, DType::i64)),
                    doctest::Contains("needs 4 targets"));
  CHECK_THROWS_WITH(linear_cross_entropy(x, w, zeros({4})), doctest::Contains("i32 or i64"));
}

TEST_CASE("cuda: linear_cross_entropy matches the CPU and the materialised logits, below their memory") {
  BG_REQUIRE_CUDA();
  const Device gpu = Device::cuda(0);
  Generator gen(test_seed() + 93);
  const int64_t n = 2048, c = 64, v = 5003;
  const Tensor x = randn({n, c}, gen, 0, 1, DType::f32), w = randn({v, c}, gen, 0, 0.1, DType::f32);
  const Tensor t = targets({n}, v, gen, Device::cpu());
  const Run cpu = run(x, w, t, 300, "mean");
  for (const bool deterministic : {false, true}) {
    CAPTURE(deterministic);
    const ComputeMode mode =
        deterministic ? ComputeMode::deterministic_mode(MatmulPrecision::fp32) : ComputeMode();
    const Run fused = run(x.to(gpu), w.to(gpu), t.to(gpu), 300, "mean", mode),
              whole = run(x.to(gpu), w.to(gpu), t.to(gpu), 0, "mean", mode);
    for (const Run* r : {&fused, &whole}) {
      CHECK(rel_err(r->loss.to(Device::cpu()), cpu.loss) < 1e-5);
      CHECK(rel_err(r->dx.to(Device::cpu()), cpu.dx) < 1e-4);
      CHECK(rel_err(r->dw.to(Device::cpu()), cpu.dw) < 1e-4);
    }
  }
  // Peak memory of the fused loss and backward: below one (N, V) f32 logits tensor (the
  // materialised path holds it and its gradient).
  const Tensor xg = x.to(gpu), wg = w.to(gpu), tg = t.to(gpu);
  cuda_reset_peak(0);
  const size_t held = cuda_allocator_stats(0).allocated;
  (void)run(xg, wg, tg, 256, "mean");
  const size_t fused_peak = cuda_allocator_stats(0).peak_allocated - held;
  cuda_reset_peak(0);
  (void)run(xg, wg, tg, 0, "mean");
  const size_t whole_peak = cuda_allocator_stats(0).peak_allocated - held;
  MESSAGE("peak bytes: fused ", fused_peak, ", materialised ", whole_peak);
  CHECK(fused_peak < size_t(n * v) * sizeof(float));
  CHECK(whole_peak >= 2 * size_t(n * v) * sizeof(float));
}

// Under bf16 precision on CUDA the chunks run linear's products directly (W rounded once, dW
// summed in the GEMM's epilogue in place): against the materialised bf16 logits' loss and
// gradients, by default and under the deterministic mode, with an extra column and without.
TEST_CASE("cuda: linear_cross_entropy under bf16 precision matches the materialised bf16 path") {
  BG_REQUIRE_CUDA();
  const Device gpu = Device::cuda(0);
  Generator gen(test_seed() + 95);
  const int64_t n = 3001, c = 96, v = 4099;  // odd sizes; 4 chunks of 751 (the last 748)
  const Tensor x = randn({n, c}, gen, 0, 1, DType::f32, gpu).to(DType::bf16);
  const Tensor w = randn({v, c}, gen, 0, 0.05, DType::f32, gpu);
  const Tensor e = randn({n}, gen, 0, 1, DType::f32, gpu);
  // Targets over the v + 1 columns with an extra column, over v without.
  std::vector<int64_t> with_extra(static_cast<size_t>(n)), plain(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) {
    with_extra[size_t(i)] = i % 7 == 3 ? -100 : (i * 131) % (v + 1);
    plain[size_t(i)] = i % 7 == 3 ? -100 : (i * 131) % v;
  }
  const Tensor t_extra = from_vector(with_extra, {n}, gpu), t_plain = from_vector(plain, {n}, gpu);
  for (const bool deterministic : {false, true})
    for (const bool extra : {false, true}) {
      CAPTURE(deterministic);
      CAPTURE(extra);
      ComputeMode mode = deterministic ? ComputeMode::deterministic_mode(MatmulPrecision::bf16)
                                       : precision_mode(MatmulPrecision::bf16);
      auto grads = [&](int64_t chunk) {
        Tensor xl = x.detach().requires_grad_(), wl = w.detach().requires_grad_(),
               el = e.detach().requires_grad_();
        const Tensor ec = extra ? el : Tensor();
        const Tensor tc = extra ? t_extra : t_plain;
        Tensor loss;
        if (chunk > 0) {
          loss = linear_cross_entropy(xl, wl, tc, mode, chunk, -100, "mean", ec);
        } else {
          Tensor logits = linear(xl, wl, Tensor(), mode, Consumer::loss);
          if (extra) logits = concat({logits.to(DType::f32), el.reshape({n, 1})}, 1);
          loss = cross_entropy(logits, tc, -100, "mean");
        }
        (loss * 0.75).backward();  // a loss gradient other than 1 reaches the scale
        return std::vector<Tensor>{loss.detach(), xl.grad(), wl.grad(),
                                   extra ? el.grad() : zeros({1}, DType::f32, gpu)};
      };
      const std::vector<Tensor> want = grads(0), got = grads(751), again = grads(751);
      CHECK(got[1].dtype() == DType::bf16);
      CHECK(got[2].dtype() == DType::f32);
      CHECK(rel_err(got[0].to(Device::cpu()), want[0].to(Device::cpu())) < 1e-5);
      for (size_t i = 1; i < got.size(); ++i) {
        CAPTURE(i);
        CHECK(rel_err(got[i].to(Device::cpu()), want[i].to(Device::cpu())) < 1e-2);
        CHECK(bit_mismatches(got[i], again[i]) == 0);  // run to run
      }
    }
  // Peak memory: well below one (N, V) bf16 logits tensor and its gradient.
  const ComputeMode bf16 = precision_mode(MatmulPrecision::bf16);
  synchronize(gpu);
  cuda_reset_peak(0);
  const size_t held = cuda_allocator_stats(0).allocated;
  {
    Tensor xl = x.detach().requires_grad_(), wl = w.detach().requires_grad_();
    linear_cross_entropy(xl, wl, t_plain, bf16, 300).backward();
  }
  const size_t chunked_peak = cuda_allocator_stats(0).peak_allocated - held;
  MESSAGE("bf16 chunked peak bytes ", chunked_peak, " against logits of ", n * v * 2);
  CHECK(chunked_peak < size_t(n * v) * 2);
}

}  // namespace bg::test
