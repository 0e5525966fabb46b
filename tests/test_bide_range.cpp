// test_bide_range.cpp: BIDE over a support of value ranges (bide.range): the pattern ranges a
// value range maps to, checked against every pattern; log Z, log p and gradients over a
// per-example support of one or two pattern ranges against the explicit float64 softmax over
// exactly those patterns and the masked composed model; moments, CDF, quantiles and samples
// that never leave the support; CUDA against the CPU.
#include <cmath>

#include "bide_reference.h"
#include "harness.h"

namespace bg::test {
namespace {

// Per example: the explicit-softmax membership test of a support table.
std::function<bool(int64_t, int64_t)> inside_of(const BideOptions& opt) {
  return [opt](int64_t n, int64_t k) { return bide_in_support(opt, n, uint32_t(k)); };
}

// 0 inside each example's support, -inf outside: the composed model's mask.
Tensor support_mask(const BideOptions& opt, int64_t n) {
  const int64_t k_all = int64_t(1) << opt.code.bits;
  std::vector<double> m(size_t(n * k_all));
  for (int64_t i = 0; i < n; ++i)
    for (int64_t k = 0; k < k_all; ++k)
      m[size_t(i * k_all + k)] = bide_in_support(opt, i, uint32_t(k)) ? 0.0 : -INFINITY;
  return from_vector(m, {n, k_all});
}

// The quantile's definition, exactly, in the dtype the device computes (f32): x = quantile(q)
// is the smallest finite pattern in value order whose CDF reaches q: cdf(x) >= q and the
// previous finite value's cdf < q. Rows mix an unrestricted law with two-range supports, and the
// levels reach both tails.
void check_quantile_definition(Device dev, Generator& gen) {
  const int64_t n = 37;
  std::vector<std::pair<double, double>> rr;
  for (int64_t i = 0; i < n; ++i)
    rr.push_back(i % 2 ? std::pair{-1e9, 1e9} : std::pair{-30.0 - i, 2.0 + i});
  BideOptions opt = options(16, "auto", BideValueType::f16);
  bide_set_support(opt, bide_support_table(opt.code, rr), dev);
  const Tensor w = randn({n, 32, 16}, gen, 0, 0.35).to(dev),
               r = randn({n, 32}, gen, 0, 0.17).to(dev);
  const std::vector<double> levels = {1e-7, 1e-3, 0.1, 0.37, 0.5, 0.9, 0.999, 0.99999};
  for (double level : levels) {
    INFO("q " << level);
    std::vector<double> q(static_cast<size_t>(n));
    for (int64_t i = 0; i < n; ++i) q[size_t(i)] = level * (1.0 - 1e-3 * double(i) / double(n));
    const std::vector<int64_t> x =
        bide_quantile(w, r, from_vector(q, {n}), opt).to_vector<int64_t>();
    std::vector<int64_t> before(x.size());
    std::vector<bool> lowest(x.size());  // the lowest finite value has nothing below it
    for (size_t i = 0; i < x.size(); ++i) {
      CHECK(bide_in_support(opt, int64_t(i), uint32_t(x[i])));
      const uint32_t prev = opt.code.from_order_key(opt.code.order_key(uint32_t(x[i])) - 1);
      lowest[i] = !opt.code.finite(prev);
      before[i] = lowest[i] ? x[i] : prev;
    }
    const std::vector<double> at =
        bide_cdf(w, r, from_vector(x, {n}, dev), opt).to_vector<double>();
    const std::vector<double> below =
        bide_cdf(w, r, from_vector(before, {n}, dev), opt).to_vector<double>();
    for (size_t i = 0; i < x.size(); ++i) {
      CHECK_MESSAGE(at[i] >= q[i], "row ", i, " x ", x[i], " cdf ", at[i]);
      if (!lowest[i]) CHECK_MESSAGE(below[i] < q[i], "row ", i, " x ", x[i], " below ", below[i]);
    }
  }
}

}  // namespace

TEST_CASE("cpu: a value range maps to exactly the patterns whose values it holds") {
  struct Code {
    BideValueType type;
    int bits;
  };
  const std::vector<std::pair<double, double>> ranges = {
      {-1.5, 2.0}, {0.0, 7.25},  {-3.0, 0.0},  {0.5, 130.0},     {-200.0, -0.001}, {-1e9, 1e9},
      {0.0, 0.0},  {-4.0, -4.0}, {1e-6, 3e-5}, {-65504.0, 0.25}, {3.2, 3.3},       {-0.7, 90.5}};
  for (const Code c :
       {Code{BideValueType::f16, 16}, Code{BideValueType::bf16, 16}, Code{BideValueType::sint, 8},
        Code{BideValueType::uint, 8}, Code{BideValueType::sint, 11}}) {
    BideCode code;
    code.type = c.type;
    code.bits = c.bits;
    for (const auto& [lo, hi] : ranges) {
      INFO("type ", int(c.type), " bits ", c.bits, " range [", lo, ", ", hi, "]");
      const auto pieces = bide_value_range_patterns(code, lo, hi);
      CHECK(pieces.size() <= 2);
      for (size_t j = 0; j < pieces.size(); ++j) {
        CHECK(pieces[j].first < pieces[j].second);
        if (j) CHECK(pieces[j - 1].second <= pieces[j].first);
      }
      int64_t mismatches = 0;
      for (uint32_t k = 0; k < code.count(); ++k) {
        const double v = code.value(k);
        const bool want = code.finite(k) && v >= lo && v <= hi;
        bool got = false;
        for (const auto& [a, b] : pieces) got |= int64_t(k) >= a && int64_t(k) < b;
        mismatches += got != want;
      }
      CHECK(mismatches == 0);
    }
  }
  BideCode f16;
  f16.type = BideValueType::f16;
  CHECK(bide_value_range_patterns(f16, 70000.0, 80000.0).empty());
  CHECK(bide_value_range_patterns(f16, 2.0, 1.0).empty());
  CHECK_THROWS_WITH(bide_support_table(f16, {{1.0, 2.0}, {70000.0, 80000.0}}),
                    doctest::Contains("holds no 16-bit value"));
}

TEST_CASE("cpu: SICK over one- and two-range supports equals the masked explicit softmax") {
  Generator gen(test_seed() + 21);
  const int bits = 10;
  const int64_t n = 4, h = 6;
  for (const char* variant : {"bruteforce", "precomputed"}) {
    INFO(variant);
    BideOptions opt = options(bits, variant, BideValueType::sint);
    // One range; two ranges of different sizes; a single value; one range in each sign half.
    bide_set_support(opt,
                     bide_support_table(opt.code, {{3, 300}, {-17, 40}, {-512, -510}, {-1, 0}}),
                     Device::cpu());
    Tensor w = randn({n, h, bits}, gen, 0, std::sqrt(2.0 / bits), DType::f64).requires_grad_();
    Tensor r = randn({n, h}, gen, 0, 1.0 / std::sqrt(double(h)), DType::f64).requires_grad_();
    const Explicit ex = explicit_softmax(w, r, bits, inside_of(opt));
    const std::vector<double> lz = bide_log_normalizer(w, r, opt).to_vector<double>();
    for (int64_t i = 0; i < n; ++i)
      CHECK(lz[size_t(i)] == doctest::Approx(ex.log_z[size_t(i)]).epsilon(1e-12));
    // Targets inside each support.
    const Tensor y = from_vector(std::vector<int64_t>{250, 1000, 512, 1023}, {n});
    Tensor lp = bide_log_prob(w, r, y, opt);
    const std::vector<double> lpv = lp.to_vector<double>(),
                              ys = y.to(DType::f64).to_vector<double>();
    for (int64_t i = 0; i < n; ++i)
      CHECK(lpv[size_t(i)] ==
            doctest::Approx(ex.logits[size_t(i)][size_t(ys[size_t(i)])] - ex.log_z[size_t(i)])
                .epsilon(1e-12));
    sum(lp).backward();
    Tensor w2 = w.detach().clone().requires_grad_(), r2 = r.detach().clone().requires_grad_();
    sum(composed_log_prob(w2, r2, y, bits, support_mask(opt, n))).backward();
    CHECK(rel_err(w.grad(), w2.grad()) < 1e-12);
    CHECK(rel_err(r.grad(), r2.grad()) < 1e-12);
    // Moments over the support only.
    const BideMoments mom = bide_moments(w.detach(), r.detach(), opt);
    const std::vector<double> mean = mom.mean.to_vector<double>(),
                              var = mom.variance.to_vector<double>();
    for (int64_t i = 0; i < n; ++i) {
      double m1 = 0, m2 = 0;
      for (int64_t k = 0; k < 1024; ++k) {
        if (!bide_in_support(opt, i, uint32_t(k))) continue;
        const double p = std::exp(ex.logits[size_t(i)][size_t(k)] - ex.log_z[size_t(i)]);
        const double v = opt.code.value(uint32_t(k));
        m1 += p * v;
        m2 += p * v * v;
      }
      CHECK(mean[size_t(i)] == doctest::Approx(m1).epsilon(1e-10));
      CHECK(var[size_t(i)] == doctest::Approx(m2 - m1 * m1).epsilon(1e-8));
    }
    // Every pattern's log p: -inf outside, and the support's mass sums to 1.
    const Tensor all = bide_pattern_log_probs(w.detach(), r.detach(), opt);
    const double* a = static_cast<const double*>(all.data_ptr());
    for (int64_t i = 0; i < n; ++i) {
      double total = 0;
      int64_t leaks = 0;
      for (int64_t k = 0; k < 1024; ++k) {
        const double v = a[i * 1024 + k];
        if (bide_in_support(opt, i, uint32_t(k)))
          total += std::exp(v);
        else
          leaks += v != -INFINITY;
      }
      CHECK(leaks == 0);
      CHECK(total == doctest::Approx(1.0).epsilon(1e-12));
    }
  }
}

TEST_CASE("cpu: CDF, quantiles and samples stay inside a two-range float16 support") {
  Generator gen(test_seed() + 22);
  BideOptions opt = options(16, "precomputed", BideValueType::f16);
  const int64_t n = 3;
  bide_set_support(opt, bide_support_table(opt.code, {{-2.5, 6.0}, {0.0, 1.0}, {-40.0, -3.0}}),
                   Device::cpu());
  const Tensor w = randn({n, 6, 16}, gen, 0, 0.35, DType::f64),
               r = randn({n, 6}, gen, 0, 0.4, DType::f64);
  // CDF at each support's top value is 1, just below its bottom value 0 (log CDF -inf).
  const auto top = [&](double v) {
    uint32_t k;
    std::string why;
    REQUIRE(bide_encode(opt.code, v, &k, &why));
    return int64_t(k);
  };
  const std::vector<double> at_top =
      bide_cdf(w, r, from_vector(std::vector<int64_t>{top(6.0), top(1.0), top(-3.0)}, {n}), opt)
          .to_vector<double>();
  for (double c : at_top) CHECK(c == doctest::Approx(1.0).epsilon(1e-12));
  const std::vector<double> below =
      bide_log_cdf(w, r, from_vector(std::vector<int64_t>{top(-2.75), top(-0.5), top(-41.0)}, {n}),
                   opt)
          .to_vector<double>();
  for (double c : below) CHECK(c == -INFINITY);
  // Quantiles land inside the support and invert the CDF.
  for (double q : {0.01, 0.5, 0.99}) {
    const std::vector<int64_t> x =
        bide_quantile(w, r, full({n}, q, DType::f64), opt).to_vector<int64_t>();
    const std::vector<double> c = bide_cdf(w, r, from_vector(x, {n}), opt).to_vector<double>();
    for (int64_t i = 0; i < n; ++i) {
      CHECK(bide_in_support(opt, i, uint32_t(x[size_t(i)])));
      CHECK(c[size_t(i)] >= q - 1e-12);
    }
  }
  // 3000 draws per example: every one inside its support, and the two-range example draws from
  // both of its ranges.
  const int64_t reps = 3000;
  const Tensor we = w.unsqueeze(0).expand({reps, n, 6, 16}).reshape({reps * n, 6, 16}).contiguous();
  const Tensor re = r.unsqueeze(0).expand({reps, n, 6}).reshape({reps * n, 6}).contiguous();
  BideOptions rep = opt;
  std::vector<std::pair<double, double>> rr;
  for (int64_t i = 0; i < reps; ++i) rr.insert(rr.end(), {{-2.5, 6.0}, {0.0, 1.0}, {-40.0, -3.0}});
  bide_set_support(rep, bide_support_table(opt.code, rr), Device::cpu());
  const std::vector<int64_t> s = bide_sample(we, re, rep, 99).to_vector<int64_t>();
  int64_t outside = 0, negative = 0, positive = 0;
  for (size_t i = 0; i < s.size(); ++i) {
    outside += !bide_in_support(rep, int64_t(i), uint32_t(s[i]));
    if (i % 3 == 0) (opt.code.value(uint32_t(s[i])) < 0 ? negative : positive) += 1;
  }
  CHECK(outside == 0);
  // The sample's split between the halves follows the fitted CDF at -0.
  const double p_neg =
      bide_cdf(w.slice(0, 0, 1), r.slice(0, 0, 1), from_vector(std::vector<int64_t>{0x8000}, {1}),
               [&] {
                 BideOptions one = opt;
                 bide_set_support(one, bide_support_table(opt.code, {{-2.5, 6.0}}), Device::cpu());
                 return one;
               }())
          .item();
  const double expected = p_neg * reps, sd = std::sqrt(reps * p_neg * (1 - p_neg));
  CHECK(std::fabs(double(negative) - expected) < 5 * sd + 1);
  CHECK(negative + positive == reps);
}

TEST_CASE("cuda: SICK over a two-range support matches the CPU (log p, gradients, moments)") {
  BG_REQUIRE_CUDA();
  Generator gen(test_seed() + 23);
  const Device gpu = Device::cuda(0);
  for (const char* variant : {"bruteforce", "precomputed"}) {
    INFO(variant);
    const int64_t n = 37;
    std::vector<std::pair<double, double>> rr;
    for (int64_t i = 0; i < n; ++i)
      rr.push_back(i % 3 == 0 ? std::pair{-1.5 - i, 3.0 + i}
                              : (i % 3 == 1 ? std::pair{0.25, 9.0 + i} : std::pair{-100.0, -0.5}));
    BideOptions cpu = options(16, variant, BideValueType::f16), cuda_opt = cpu;
    const Tensor table = bide_support_table(cpu.code, rr);
    bide_set_support(cpu, table, Device::cpu());
    bide_set_support(cuda_opt, table, gpu);
    const Tensor w = randn_clear_of_kinks(n, 32, 16, 0.35, gen), r = randn({n, 32}, gen, 0, 0.17);
    std::vector<int64_t> ys;
    for (int64_t i = 0; i < n; ++i) {
      uint32_t k;
      std::string why;
      bide_encode(cpu.code, i % 3 == 2 ? -1.0 : 1.0, &k, &why);
      ys.push_back(k);
    }
    const Tensor y = from_vector(ys, {n});
    Tensor wc = w.clone().requires_grad_(), rc = r.clone().requires_grad_();
    Tensor wg = w.to(gpu).requires_grad_(), rg = r.to(gpu).requires_grad_();
    const Tensor lc = bide_log_prob(wc, rc, y, cpu),
                 lg = bide_log_prob(wg, rg, y.to(gpu), cuda_opt);
    CHECK(rel_err(lg, lc) < 2e-5);
    sum(lc).backward();
    sum(lg).backward();
    CHECK(rel_err(wg.grad(), wc.grad()) < 2e-4);
    CHECK(rel_err(rg.grad(), rc.grad()) < 2e-4);
    const BideMoments mc = bide_moments(w, r, cpu),
                      mg = bide_moments(w.to(gpu), r.to(gpu), cuda_opt);
    CHECK(rel_err(mg.mean, mc.mean) < 2e-4);
    CHECK(rel_err(mg.variance, mc.variance) < 2e-4);
    CHECK(rel_err(bide_log_normalizer(w.to(gpu), r.to(gpu), cuda_opt),
                  bide_log_normalizer(w, r, cpu)) < 2e-5);
    const std::vector<int64_t> s =
        bide_sample(w.to(gpu), r.to(gpu), cuda_opt, 3).to_vector<int64_t>();
    for (int64_t i = 0; i < n; ++i) CHECK(bide_in_support(cpu, i, uint32_t(s[size_t(i)])));
  }
}

TEST_CASE("cpu: the f32 quantile is the smallest value whose CDF reaches q (two-range support)") {
  Generator gen(test_seed() + 29);
  check_quantile_definition(Device::cpu(), gen);
}

TEST_CASE("cuda: the quantile is the smallest value whose CDF reaches q (two-range support)") {
  BG_REQUIRE_CUDA();
  Generator gen(test_seed() + 29);
  check_quantile_definition(Device::cuda(0), gen);
}

}  // namespace bg::test
