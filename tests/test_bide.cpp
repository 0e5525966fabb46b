// test_bide.cpp: BIDE/SICK against an explicitly materialised float64 softmax over all 2^B
// patterns, both variants, CPU and CUDA, plus sampling, CDF/quantile and edge cases.
#include <cmath>
#include <cstring>

#include "bide_reference.h"
#include "core/bide.h"
#include "core/dispatch.h"
#include "harness.h"

namespace bg::test {
namespace {

Tensor random_patterns(int64_t n, int bits, Generator& gen, Device dev = Device::cpu()) {
  const std::vector<double> u = rand({n}, gen, 0, 1, DType::f64).to_vector<double>();
  std::vector<int64_t> y(u.size());
  for (size_t i = 0; i < u.size(); ++i) y[i] = int64_t(u[i] * double(int64_t(1) << bits));
  return from_vector(y, {n}, dev);
}

// A kernel-level SICK pass's arguments: W, r, its (m, s, log Z) outputs and the code.
SickArgs pass_args(const Tensor& w, const Tensor& r, const Tensor& m, const Tensor& s,
                   const Tensor& z, const BideOptions& opt) {
  SickArgs a;
  a.w = w.kview();
  a.r = r.kview();
  a.m = m.kview();
  a.s = s.kview();
  a.logz = z.kview();
  a.code = opt.code;
  return a;
}

}  // namespace

TEST_CASE("cpu: SICK matches the explicit float64 softmax for B = 8 10 12 (both variants)") {
  Generator gen(test_seed());
  for (int bits : {8, 10, 12})
    for (const char* variant : {"bruteforce", "precomputed"}) {
      INFO("bits ", bits, " variant ", variant);
      const int64_t n = 3, h = 7;
      Tensor w = randn({n, h, bits}, gen, 0, std::sqrt(2.0 / bits), DType::f64).requires_grad_();
      Tensor r = randn({n, h}, gen, 0, 1.0 / std::sqrt(double(h)), DType::f64).requires_grad_();
      const Tensor y = random_patterns(n, bits, gen);
      const BideOptions opt = options(bits, variant);
      const Explicit ex = explicit_softmax(w, r, bits);
      const std::vector<double> lz = bide_log_normalizer(w, r, opt).to_vector<double>();
      const std::vector<int64_t> ys = y.to_vector<int64_t>();
      Tensor lp = bide_log_prob(w, r, y, opt);
      const std::vector<double> lpv = lp.to_vector<double>();
      for (int64_t i = 0; i < n; ++i) {
        CHECK(lz[size_t(i)] == doctest::Approx(ex.log_z[size_t(i)]).epsilon(1e-12));
        CHECK(lpv[size_t(i)] ==
              doctest::Approx(ex.logits[size_t(i)][size_t(ys[size_t(i)])] - ex.log_z[size_t(i)])
                  .epsilon(1e-12));
      }
      sum(lp).backward();
      Tensor w2 = w.detach().clone().requires_grad_(), r2 = r.detach().clone().requires_grad_();
      sum(composed_log_prob(w2, r2, y, bits)).backward();
      CHECK(rel_err(w.grad(), w2.grad()) < 1e-12);
      CHECK(rel_err(r.grad(), r2.grad()) < 1e-12);
    }
}

TEST_CASE("cpu: restricted support equals the explicit softmax over the range") {
  Generator gen(test_seed() + 1);
  const int bits = 9;
  const Tensor w = randn({2, 6, bits}, gen, 0, 0.5, DType::f64),
               r = randn({2, 6}, gen, 0, 0.4, DType::f64);
  BideOptions opt = options(bits, "bruteforce");
  opt.support_lo = 37;
  opt.support_hi = 301;
  const Explicit ex = explicit_softmax(w, r, bits, 37, 301);
  const std::vector<double> lz = bide_log_normalizer(w, r, opt).to_vector<double>();
  for (int i = 0; i < 2; ++i)
    CHECK(lz[size_t(i)] == doctest::Approx(ex.log_z[size_t(i)]).epsilon(1e-12));
  opt.variant = SickVariant::precomputed;
  const std::vector<double> lz2 = bide_log_normalizer(w, r, opt).to_vector<double>();
  for (int i = 0; i < 2; ++i)
    CHECK(lz2[size_t(i)] == doctest::Approx(ex.log_z[size_t(i)]).epsilon(1e-12));
}

TEST_CASE("cpu: equal logits give log Z = B ln 2 and peaked distributions do not overflow") {
  const int bits = 10;
  const BideOptions opt = options(bits, "bruteforce");
  CHECK(
      bide_log_normalizer(zeros({1, 4, bits}, DType::f64), zeros({1, 4}, DType::f64), opt).item() ==
      doctest::Approx(bits * std::log(2.0)).epsilon(1e-14));
  Generator gen(test_seed() + 2);
  const Tensor w = randn({2, 5, bits}, gen, 0, 60, DType::f64),
               r = randn({2, 5}, gen, 0, 20, DType::f64);
  const Explicit ex = explicit_softmax(w, r, bits);
  const std::vector<double> lz = bide_log_normalizer(w, r, opt).to_vector<double>();
  for (int i = 0; i < 2; ++i) {
    CHECK(std::isfinite(lz[size_t(i)]));
    CHECK(lz[size_t(i)] == doctest::Approx(ex.log_z[size_t(i)]).epsilon(1e-12));
  }
}

TEST_CASE("cpu: float16 CDF is monotone in value order and quantile inverts it") {
  Generator gen(test_seed() + 3);
  const BideOptions opt = options(16, "precomputed", BideValueType::f16);
  const Tensor w = randn({1, 6, 16}, gen, 0, 0.35, DType::f64),
               r = randn({1, 6}, gen, 0, 0.4, DType::f64);
  // Finite values in increasing order.
  std::vector<int64_t> xs;
  for (uint32_t key = 0; key < 65536; key += 977) {
    const uint32_t k = opt.code.from_order_key(key);
    if (opt.code.finite(k)) xs.push_back(k);
  }
  const int64_t m = int64_t(xs.size());
  const Tensor wm = w.expand({m, 6, 16}).contiguous(), rm = r.expand({m, 6}).contiguous();
  const std::vector<double> c = bide_cdf(wm, rm, from_vector(xs, {m}), opt).to_vector<double>();
  for (size_t i = 1; i < c.size(); ++i) {
    CHECK(opt.code.value(uint32_t(xs[i - 1])) < opt.code.value(uint32_t(xs[i])));
    CHECK(c[i - 1] <= c[i]);
  }
  const BideMoments mom = bide_moments(w, r, opt);
  const int64_t top = opt.code.from_order_key(0xFBFF);  // the largest finite float16
  CHECK(bide_cdf(w, r, from_vector(std::vector<int64_t>{top}, {1}), opt).item() ==
        doctest::Approx(1.0 - mom.nonfinite_mass.item()).epsilon(1e-12));
  // log_cdf agrees with log(cdf), and keeps far-tail values that cdf rounds to 0 in f32.
  const std::vector<double> lc =
      bide_log_cdf(wm, rm, from_vector(xs, {m}), opt).to_vector<double>();
  for (size_t i = 0; i < c.size(); ++i)
    if (c[i] > 1e-300) CHECK(lc[i] == doctest::Approx(std::log(c[i])).epsilon(1e-9));
  const Tensor w_sharp = (w * 8.0).contiguous(), r_sharp = (r * 8.0).contiguous();
  const std::vector<int64_t> lowest{opt.code.from_order_key(0x0400)};  // the most negative finite
  const double tail =
      bide_log_cdf(w_sharp.to(DType::f32), r_sharp.to(DType::f32), from_vector(lowest, {1}), opt)
          .item();
  CHECK(std::isfinite(tail));
  // quantile(cdf(x)) == x.
  const std::vector<int64_t> back =
      bide_quantile(wm, rm, from_vector(c, {m}), opt).to_vector<int64_t>();
  for (size_t i = 0; i < xs.size(); ++i)
    CHECK_MESSAGE(back[i] == xs[i], "x ", xs[i], " cdf ", c[i]);
}

TEST_CASE("cpu: integer codes: the CDF climbs to 1 in value order and quantile inverts it") {
  Generator gen(test_seed() + 31);
  for (const auto& [type, bits] :
       std::vector<std::pair<BideValueType, int>>{{BideValueType::uint, 1},
                                                  {BideValueType::uint, 5},
                                                  {BideValueType::sint, 6},
                                                  {BideValueType::uint, 9},
                                                  {BideValueType::sint, 12}}) {
    CAPTURE(bits);
    const BideOptions opt = options(bits, "bruteforce", type);
    const int64_t m = int64_t(1) << bits;
    const Tensor w = randn({1, 5, bits}, gen, 0, 0.5, DType::f64).expand({m, 5, bits}).contiguous();
    const Tensor r = randn({1, 5}, gen, 0, 0.5, DType::f64).expand({m, 5}).contiguous();
    std::vector<int64_t> xs;  // every pattern, smallest value first
    for (uint32_t key = 0; key < uint32_t(m); ++key) xs.push_back(opt.code.from_order_key(key));
    const std::vector<double> c = bide_cdf(w, r, from_vector(xs, {m}), opt).to_vector<double>();
    const Explicit ex =
        explicit_softmax(w.slice(0, 0, 1).contiguous(), r.slice(0, 0, 1).contiguous(), bits);
    double below = 0;
    for (int64_t i = 0; i < m; ++i) {
      below += std::exp(ex.logits[0][size_t(xs[size_t(i)])] - ex.log_z[0]);
      CHECK(c[size_t(i)] == doctest::Approx(below).epsilon(1e-12));
      if (i > 0) CHECK(c[size_t(i)] > c[size_t(i - 1)]);
    }
    CHECK(c.back() == doctest::Approx(1.0).epsilon(1e-14));
    const std::vector<int64_t> back =
        bide_quantile(w, r, from_vector(c, {m}), opt).to_vector<int64_t>();
    CHECK(back == xs);
  }
}

TEST_CASE("cpu: moments match the explicit distribution and samples follow it (chi-square)") {
  Generator gen(test_seed() + 4);
  const int bits = 6;
  const BideOptions opt = options(bits, "bruteforce", BideValueType::sint);
  const Tensor w = randn({1, 5, bits}, gen, 0, 0.6, DType::f64),
               r = randn({1, 5}, gen, 0, 0.5, DType::f64);
  const Explicit ex = explicit_softmax(w, r, bits);
  std::vector<double> p(64);
  double mean = 0, ent = 0;
  for (int k = 0; k < 64; ++k) {
    p[size_t(k)] = std::exp(ex.logits[0][size_t(k)] - ex.log_z[0]);
    mean += p[size_t(k)] * opt.code.value(uint32_t(k));
    ent -= p[size_t(k)] * std::log(p[size_t(k)]);
  }
  const BideMoments mom = bide_moments(w, r, opt);
  CHECK(mom.mean.item() == doctest::Approx(mean).epsilon(1e-10));
  CHECK(mom.entropy.item() == doctest::Approx(ent).epsilon(1e-10));
  CHECK(mom.nonfinite_mass.item() == doctest::Approx(0.0));
  const int64_t draws = 20000;
  const std::vector<int64_t> s = bide_sample(w.expand({draws, 5, bits}).contiguous(),
                                             r.expand({draws, 5}).contiguous(), opt, 123)
                                     .to_vector<int64_t>();
  std::vector<double> counts(64, 0.0);
  for (int64_t k : s) counts[size_t(k)] += 1;
  double chi2 = 0;
  for (int k = 0; k < 64; ++k)
    chi2 += std::pow(counts[size_t(k)] - draws * p[size_t(k)], 2) / (draws * p[size_t(k)]);
  CHECK(chi2 < 130);  // 63 degrees of freedom: p < 1e-5
}

TEST_CASE("cpu: bad BIDE inputs are rejected with the reason") {
  BideOptions opt = options(25, "bruteforce");
  CHECK_THROWS_WITH(bide_log_normalizer(zeros({1, 4, 25}), zeros({1, 4}), opt),
                    doctest::Contains("25 bits refused"));
  SickVariant variant;  // names outside the enum are refused where they are parsed
  CHECK_FALSE(parse_enum("fastest", &variant));
  SickPrecision precision;
  CHECK_FALSE(parse_enum("fp8", &precision));
  opt = options(8, "bruteforce");
  CHECK_THROWS_WITH(bide_log_normalizer(zeros({1, 4, 7}), zeros({1, 4}), opt),
                    doctest::Contains("W must be (N, H, 8)"));
}

namespace {

struct SickShape {
  int64_t n, h;
  int bits;
};

// For each shape, variant and SICK dtype: log-probabilities and the W and r gradients on the GPU
// against the CPU (and, with `moments`, entropy and mean), random W, r and targets from `gen`.
void check_sick_on_gpu(const std::vector<SickShape>& shapes,
                       const std::vector<const char*>& variants, Generator& gen, bool moments) {
  const Device gpu = Device::cuda(0);
  for (const SickShape sh : shapes)
    for (const char* variant : variants)
      for (const char* dtype : {"fp32", "fp16"}) {
        INFO("n ", sh.n, " h ", sh.h, " bits ", sh.bits, " ", variant, " ", dtype);
        BideOptions opt = options(sh.bits, variant);
        REQUIRE(parse_enum(dtype, &opt.precision));
        const Tensor w = randn_clear_of_kinks(sh.n, sh.h, sh.bits, std::sqrt(2.0 / sh.bits), gen);
        const Tensor r = randn({sh.n, sh.h}, gen, 0, 1.0 / std::sqrt(double(sh.h)));
        const Tensor y = random_patterns(sh.n, sh.bits, gen);
        Tensor wc = w.clone().requires_grad_(), rc = r.clone().requires_grad_();
        Tensor wg = w.to(gpu).requires_grad_(), rg = r.to(gpu).requires_grad_();
        const Tensor lc = bide_log_prob(wc, rc, y, opt), lg = bide_log_prob(wg, rg, y.to(gpu), opt);
        const double tol = std::string(dtype) == "fp32" ? 2e-5 : 5e-3;
        CHECK(rel_err(lg, lc) < tol);
        sum(lc).backward();
        sum(lg).backward();
        CHECK(rel_err(wg.grad(), wc.grad()) < 10 * tol);
        CHECK(rel_err(rg.grad(), rc.grad()) < 10 * tol);
        if (!moments) continue;
        const BideMoments mc = bide_moments(w, r, opt),
                          mg = bide_moments(w.to(gpu), r.to(gpu), opt);
        CHECK(rel_err(mg.entropy, mc.entropy) < 10 * tol);
        CHECK(rel_err(mg.mean, mc.mean) < 10 * tol);
      }
}

}  // namespace

TEST_CASE("cuda: SICK kernels match the CPU for both variants and both dtypes") {
  BG_REQUIRE_CUDA();
  Generator gen(test_seed() + 5);
  check_sick_on_gpu({{1, 32, 16}, {37, 5, 8}, {3, 33, 12}, {2, 64, 16}, {300, 32, 10}, {2, 20, 20}},
                    {"bruteforce", "precomputed"}, gen, true);
}

TEST_CASE("cuda: wide heads (65..256 hidden units) match the CPU, precomputed refuses them") {
  BG_REQUIRE_CUDA();
  Generator gen(test_seed() + 7);
  const Device gpu = Device::cuda(0);
  check_sick_on_gpu({{3, 65, 16}, {5, 128, 7}, {2, 200, 16}, {2, 256, 12}, {1, 256, 18}},
                    {"bruteforce", "auto"}, gen, false);
  BideOptions pre = options(16, "precomputed");
  CHECK_THROWS_WITH(bide_log_normalizer(zeros({1, 65, 16}, DType::f32, gpu),
                                        zeros({1, 65}, DType::f32, gpu), pre),
                    doctest::Contains("holds up to 64 hidden units"));
}

TEST_CASE("cuda: SICK is deterministic and restricted ranges and sampling match the CPU") {
  BG_REQUIRE_CUDA();
  Generator gen(test_seed() + 6);
  const Device gpu = Device::cuda(0);
  const int bits = 16;
  for (const char* variant : {"bruteforce", "precomputed"}) {
    INFO(variant);
    BideOptions opt = options(bits, variant, BideValueType::f16);
    const Tensor w = randn({64, 32, bits}, gen, 0, 0.35).to(gpu),
                 r = randn({64, 32}, gen, 0, 0.17).to(gpu);
    const Tensor y = random_patterns(64, bits, gen, gpu);
    Tensor w1 = w.detach().requires_grad_(), w2 = w.clone().detach().requires_grad_();
    sum(bide_log_prob(w1, r, y, opt)).backward();
    sum(bide_log_prob(w2, r, y, opt)).backward();
    const std::vector<float> g1 = w1.grad().to_vector<float>(), g2 = w2.grad().to_vector<float>();
    CHECK(std::memcmp(g1.data(), g2.data(), g1.size() * sizeof(float)) == 0);
    // CDF (range passes) on GPU vs CPU.
    std::vector<int64_t> xs;
    for (int i = 0; i < 64; ++i) xs.push_back(opt.code.from_order_key(uint32_t(0x4000 + i * 700)));
    const Tensor c_gpu = bide_cdf(w, r, from_vector(xs, {64}, gpu), opt);
    const Tensor c_cpu =
        bide_cdf(w.to(Device::cpu()), r.to(Device::cpu()), from_vector(xs, {64}), opt);
    CHECK(rel_err(c_gpu, c_cpu) < 1e-4);
    // Sampling: identical Gumbel streams, so the draws agree except near-ties.
    const std::vector<int64_t> sg = bide_sample(w, r, opt, 5).to_vector<int64_t>();
    const std::vector<int64_t> sc =
        bide_sample(w.to(Device::cpu()), r.to(Device::cpu()), opt, 5).to_vector<int64_t>();
    int same = 0;
    for (size_t i = 0; i < sg.size(); ++i) same += sg[i] == sc[i];
    CHECK(same >= 60);
  }
}

TEST_CASE("cuda: the SICK launcher writes only the requested outputs") {
  BG_REQUIRE_CUDA();
#if BITGRAD_WITH_CUDA
  // Batch 64 splits each example over several CTAs, so the in-kernel slice merge runs too. Output
  // views for gradients and stats are passed but not requested: they must stay untouched.
  Generator gen(test_seed() + 7);
  const Device gpu = Device::cuda(0);
  const int bits = 16;
  BideOptions opt = options(bits, "bruteforce", BideValueType::f16);
  const Tensor w = randn({64, 32, bits}, gen, 0, 0.35, DType::f32, gpu);
  const Tensor r = randn({64, 32}, gen, 0, 0.17, DType::f32, gpu);
  Tensor m = empty({64}, DType::f32, gpu), s = empty({64}, DType::f32, gpu),
         z = empty({64}, DType::f32, gpu);
  Tensor gr = full({64, 32}, 7.0, DType::f32, gpu), gw = full({64, 32, bits}, 7.0, DType::f32, gpu);
  Tensor st = full({64, 4}, 7.0, DType::f32, gpu);
  SickArgs a = pass_args(w, r, m, s, z, opt);
  a.gr = gr.kview();
  a.gw = gw.kview();
  a.stats = st.kview();
  a.outputs = 0;
  ScratchArena scratch(gpu);
  cuda::sick_forward(a, scratch, stream_for(gpu));
  CHECK(rel_err(z, bide_log_normalizer(w, r, opt)) == 0.0);
  for (const Tensor* t : {&gr, &gw, &st})
    for (float v : t->to_vector<float>()) REQUIRE(v == 7.0f);
#endif
}

// Rows beyond W's: row i reads example i % N's law, as if W were copied per group (the CDF and
// quantile's passes rely on it), for both kernel variants.
void check_rows_share_w(Device dev) {
  Generator gen(test_seed() + 8);
  const int bits = 16, n = 5, groups = 3;
  for (const char* variant : {"bruteforce", "precomputed"}) {
    INFO(variant);
    const BideOptions opt = options(bits, variant, BideValueType::f16);
    const Tensor w = randn({n, 32, bits}, gen, 0, 0.35, DType::f32, dev);
    const Tensor r = randn({n, 32}, gen, 0, 0.17, DType::f32, dev);
    const Tensor w_copies = concat({w, w, w}, 0), r_copies = concat({r, r, r}, 0);
    std::vector<int64_t> lo, hi;
    for (int i = 0; i < n * groups; ++i) {
      lo.push_back(int64_t(i) * 3001 % 40000);
      hi.push_back(lo.back() + 1 + int64_t(i) * 1777 % 20000);
    }
    const Tensor lo_t = from_vector(lo, {n * groups}, dev), hi_t = from_vector(hi, {n * groups}, dev);
    auto pass = [&](const Tensor& wv, const Tensor& rv, int64_t rows) {
      Tensor m = empty({n * groups}, DType::f32, dev), s = empty({n * groups}, DType::f32, dev),
             z = empty({n * groups}, DType::f32, dev);
      SickArgs a = pass_args(wv, rv, m, s, z, opt);
      a.lo = lo_t.kview();
      a.hi = hi_t.kview();
      a.precomputed = std::string(variant) == "precomputed";
      a.rows = rows;
      ScratchArena scratch(dev);
      BG_DISPATCH(dev, sick_forward, a, scratch, stream_for(dev));
      return z.to_vector<float>();
    };
    const std::vector<float> shared = pass(w, r, n * groups), copied = pass(w_copies, r_copies, 0);
    CHECK(std::memcmp(shared.data(), copied.data(), shared.size() * sizeof(float)) == 0);
    CHECK_THROWS_WITH(pass(w, r, n * groups - 1), doctest::Contains("multiple of W's rows"));
  }
}

TEST_CASE("cpu: SICK rows beyond W's read row i % N's law") { check_rows_share_w(Device::cpu()); }

TEST_CASE("cuda: SICK rows beyond W's read row i % N's law") {
  BG_REQUIRE_CUDA();
  check_rows_share_w(Device::cuda(0));
}

}  // namespace bg::test
