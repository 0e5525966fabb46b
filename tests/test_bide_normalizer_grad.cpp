// test_bide_normalizer_grad.cpp: the two BIDE ops a hybrid output head composes with other
// logits: the log-normaliser over a support, differentiable in W and r (one SICK pass with its
// K-sums), and the unnormalised logit l_y = r . relu(W b_y). Values against every logit
// materialised in float64 by loops, gradients against the same model composed from ordinary ops
// (autograd) and against float64 finite differences; non-contiguous W; CUDA = CPU in both SICK
// precisions.
#include <algorithm>
#include <cmath>

#include "bide_reference.h"
#include "harness.h"

namespace bg::test {
namespace {

// log Z over patterns [lo, hi) and l_y, composed from matmul, relu, exp and log (autograd).
struct Composed {
  Tensor log_z, logit;
};
Composed composed(const Tensor& w, const Tensor& r, const Tensor& y, int bits, int64_t lo,
                  int64_t hi) {
  const int64_t n = w.size(0), k_all = int64_t(1) << bits;
  std::vector<double> b(size_t(k_all * bits)), inside(static_cast<size_t>(k_all));
  for (int64_t k = 0; k < k_all; ++k) {
    inside[size_t(k)] = k >= lo && k < hi ? 1.0 : 0.0;
    for (int j = 0; j < bits; ++j) b[size_t(k * bits + j)] = (k >> j) & 1 ? 1.0 : -1.0;
  }
  const Tensor bm = from_vector(b, {k_all, bits}).to(w.dtype());
  const Tensor l = matmul(relu(matmul(bm, w.transpose(1, 2))), r.unsqueeze(2)).squeeze(2);
  const double m = max(l.detach()).item();  // a constant shift: exact in the gradient
  const Tensor in = from_vector(inside, {1, k_all}).to(w.dtype());
  Composed c;
  c.log_z = log(sum(exp(l - m) * in, {1})) + m;
  std::vector<uint8_t> onehot(size_t(n * k_all), 0);
  const std::vector<int64_t> ys = y.to_vector<int64_t>();
  for (size_t i = 0; i < ys.size(); ++i) onehot[i * size_t(k_all) + size_t(ys[i])] = 1;
  c.logit = sum(where(from_vector(onehot, {n, k_all}), l, zeros({}, l.dtype())), {1});
  return c;
}

// sum(a log Z) + sum(c l_y): both ops in one loss, weights that differ per example.
Tensor weighted(const Tensor& log_z, const Tensor& logit, const Tensor& a, const Tensor& c) {
  return sum(log_z * a) + sum(logit * c);
}

}  // namespace

TEST_CASE("cpu: the differentiable log normaliser and logit equal the composed model") {
  Generator gen(test_seed() + 21);
  const int bits = 9;
  const int64_t n = 4, h = 6, lo = 37, hi = 301;
  // W as a transposed view: the ops take non-contiguous inputs.
  const Tensor w_t = randn({n, bits, h}, gen, 0, 0.5, DType::f64);
  Tensor w = w_t.transpose(1, 2).requires_grad_();
  REQUIRE(!w.is_contiguous());
  Tensor r = randn({n, h}, gen, 0, 0.4, DType::f64).requires_grad_();
  const Tensor y = from_vector(std::vector<int64_t>{37, 300, 122, 511}, {n});
  const Tensor a = randn({n}, gen, 0, 1, DType::f64), c = randn({n}, gen, 0, 1, DType::f64);
  BideOptions opt = options(bits, "bruteforce");
  opt.support_lo = lo;
  opt.support_hi = hi;
  const Tensor log_z = bide_log_normalizer(w, r, opt), logit = bide_logit(w, r, y, opt);
  const Explicit ex = explicit_softmax(w.detach().contiguous(), r.detach(), bits, lo, hi);
  const std::vector<double> zv = log_z.to_vector<double>(), lv = logit.to_vector<double>();
  const std::vector<int64_t> ys = y.to_vector<int64_t>();
  for (int64_t i = 0; i < n; ++i) {
    CHECK(zv[size_t(i)] == doctest::Approx(ex.log_z[size_t(i)]).epsilon(1e-12));
    CHECK(lv[size_t(i)] ==
          doctest::Approx(ex.logits[size_t(i)][size_t(ys[size_t(i)])]).epsilon(1e-12));
  }
  weighted(log_z, logit, a, c).backward();
  Tensor w2 = w.detach().contiguous().requires_grad_(), r2 = r.detach().clone().requires_grad_();
  const Composed ref = composed(w2, r2, y, bits, lo, hi);
  weighted(ref.log_z, ref.logit, a, c).backward();
  CHECK(rel_err(w.grad(), w2.grad()) < 1e-12);
  CHECK(rel_err(r.grad(), r2.grad()) < 1e-12);
  // And against central finite differences of the ops themselves (every third element). The
  // energy's ReLUs make the function kinked: where a step of eps crosses a kink, the one-sided
  // differences disagree and a finite difference says nothing, so that element is skipped; most
  // must be smooth.
  int64_t checked = 0, kinked = 0;
  for (Tensor* p : {&w2, &r2}) {
    const std::vector<double> grad =
        (p == &w2 ? w.grad() : r.grad()).contiguous().to_vector<double>();
    std::vector<double> v = p->detach().to_vector<double>();
    for (size_t i = 0; i < v.size(); i += 3) {
      const double eps = 1e-6, keep = v[i];
      auto at = [&](double x) {
        v[i] = x;
        const Tensor q = from_vector(v, p->shape());
        const Tensor wq = p == &w2 ? q : w2.detach(), rq = p == &r2 ? q : r2.detach();
        return weighted(bide_log_normalizer(wq, rq, opt), bide_logit(wq, rq, y, opt), a, c).item();
      };
      const double up = at(keep + eps), mid = at(keep), down = at(keep - eps);
      const double fd = (up - down) / (2 * eps);
      v[i] = keep;
      if (std::fabs((up - mid) - (mid - down)) / eps > 1e-4 * std::max(1.0, std::fabs(fd))) {
        ++kinked;
        continue;
      }
      ++checked;
      CAPTURE(i);
      CHECK(grad[i] == doctest::Approx(fd).epsilon(1e-5).scale(1e-3));
    }
  }
  CAPTURE(kinked);
  CHECK(checked >= 9 * kinked);
}

TEST_CASE("cpu: without gradients the log normaliser records nothing") {
  Generator gen(test_seed() + 22);
  const Tensor w = randn({2, 3, 5}, gen, 0, 0.5), r = randn({2, 3}, gen, 0, 0.5);
  const Tensor z = bide_log_normalizer(w, r, options(5, "bruteforce"));
  CHECK(!z.requires_grad());
}

TEST_CASE("cpu: W drawn clear of relu's kinks keeps every pattern's pre-activation off zero") {
  Generator gen(test_seed() + 24);
  for (const int bits : {7, 12, 16}) {
    CAPTURE(bits);
    const Tensor w = randn_clear_of_kinks(4, 9, bits, std::sqrt(2.0 / bits), gen);
    CHECK(w.shape() == Shape{4, 9, bits});
    CHECK(w.dtype() == DType::f32);
    const std::vector<double> v = w.to(DType::f64).to_vector<double>();
    for (int64_t u = 0; u < 36; ++u) {
      double l1 = 0;
      for (int j = 0; j < bits; ++j) l1 += std::fabs(v[size_t(u * bits + j)]);
      CHECK(closest_to_kink(v.data() + u * bits, bits) > 1e-5 * l1);
    }
  }
  // The scan itself, against every pattern by brute force.
  const double row[5] = {0.5, -0.25, 0.125, 1.0, -0.875};
  double brute = INFINITY;
  for (int k = 0; k < 32; ++k) {
    double dot = 0;
    for (int j = 0; j < 5; ++j) dot += (k >> j & 1 ? 1.0 : -1.0) * row[j];
    brute = std::min(brute, std::fabs(dot));
  }
  CHECK(closest_to_kink(row, 5) == brute);
  CHECK(randn_clear_of_kinks(1, 2, 20, 0.3, gen).shape() == Shape{1, 2, 20});  // a plain draw
}

TEST_CASE("cuda: the differentiable log normaliser and logit match the CPU (fp32 and fp16)") {
  BG_REQUIRE_CUDA();
  Generator gen(test_seed() + 23);
  INFO("seed ", test_seed(), " (BITGRAD_TEST_SEED reproduces)");
  const Device gpu = Device::cuda(0);
  struct Shape3 {
    int64_t n, h;
    int bits;
    int64_t lo, hi;
  };
  for (const Shape3 s :
       {Shape3{37, 32, 16, 1024, 50257}, Shape3{5, 100, 12, 0, 4096}, Shape3{300, 8, 7, 3, 65}}) {
    for (const char* dtype : {"fp32", "fp16"}) {
      INFO("n ", s.n, " h ", s.h, " bits ", s.bits, " ", std::string(dtype));
      BideOptions opt = options(s.bits, "auto");
      REQUIRE(parse_enum(dtype, &opt.precision));
      opt.support_lo = s.lo;
      opt.support_hi = s.hi;
      const Tensor w = randn_clear_of_kinks(s.n, s.h, s.bits, std::sqrt(2.0 / s.bits), gen);
      const Tensor r = randn({s.n, s.h}, gen, 0, 1.0 / std::sqrt(double(s.h)));
      std::vector<int64_t> yv;
      for (int64_t i = 0; i < s.n; ++i) yv.push_back(s.lo + (i * 7919) % (s.hi - s.lo));
      const Tensor y = from_vector(yv, {s.n});
      const Tensor a = randn({s.n}, gen), c = randn({s.n}, gen);
      Tensor wc = w.clone().requires_grad_(), rc = r.clone().requires_grad_();
      Tensor wg = w.to(gpu).requires_grad_(), rg = r.to(gpu).requires_grad_();
      const Tensor zc = bide_log_normalizer(wc, rc, opt), lc = bide_logit(wc, rc, y, opt);
      const Tensor zg = bide_log_normalizer(wg, rg, opt), lg = bide_logit(wg, rg, y.to(gpu), opt);
      const double tol = std::string(dtype) == "fp32" ? 2e-5 : 5e-3;
      CHECK(rel_err(zg, zc) < tol);
      CHECK(rel_err(lg, lc) < 2e-5);  // the logit is computed in W's dtype either way
      weighted(zc, lc, a, c).backward();
      weighted(zg, lg, a.to(gpu), c.to(gpu)).backward();
      CHECK(rel_err(wg.grad(), wc.grad()) < 10 * tol);
      CHECK(rel_err(rg.grad(), rc.grad()) < 10 * tol);
    }
  }
}

}  // namespace bg::test
