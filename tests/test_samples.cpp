// test_samples.cpp: sample files (text, CSV, HDF5) and their bad inputs; value encoding.
#include <hdf5.h>
#include <unistd.h>

#include <fstream>

#include "core/bide.h"
#include "data/distributions.h"
#include "data/samples.h"
#include "harness.h"

namespace bg::test {
namespace {

std::string tmp_file(const std::string& name, const std::string& text) {
  const std::string path = scratch_path("samples_" + name);
  std::ofstream(path) << text;
  return path;
}

std::string no_check(double) { return ""; }

}  // namespace

TEST_CASE("cpu: sample files read text csv and hdf5") {
  SampleFileSpec spec;
  spec.path = tmp_file("a.txt", "# comment\n1.5\n\n-2\n3e2\n");
  CHECK(read_samples(spec, no_check).values == std::vector<double>{1.5, -2, 300});
  spec.path = tmp_file("b.csv", "x,value\n1,10\n2,20.5\n");
  spec.column = "value";
  CHECK(read_samples(spec, no_check).values == std::vector<double>{10, 20.5});
  spec.column = "0";
  spec.path = tmp_file("c.csv", "1,10\n2,20.5\n");
  CHECK(read_samples(spec, no_check).values == std::vector<double>{1, 2});
  // HDF5
  const std::string h5 = scratch_path("samples.h5");
  const hid_t f = H5Fcreate(h5.c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
  const hsize_t dims[1] = {3};
  const double v[3] = {0.25, 0.5, 4};
  const hid_t sp = H5Screate_simple(1, dims, nullptr);
  const hid_t ds =
      H5Dcreate2(f, "samples", H5T_NATIVE_DOUBLE, sp, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
  H5Dwrite(ds, H5T_NATIVE_DOUBLE, H5S_ALL, H5S_ALL, H5P_DEFAULT, v);
  H5Dclose(ds);
  H5Sclose(sp);
  H5Fclose(f);
  SampleFileSpec hs;
  hs.path = h5;
  CHECK(read_samples(hs, no_check).values == std::vector<double>{0.25, 0.5, 4});
  hs.dataset = "missing";
  CHECK_THROWS_WITH(read_samples(hs, no_check), doctest::Contains("no dataset 'missing'"));
}

TEST_CASE("cpu: bad sample files are errors naming file and line or counted skips") {
  SampleFileSpec spec;
  spec.path = tmp_file("bad.txt", "1\n2\nabc\n4\n");
  CHECK_THROWS_WITH(read_samples(spec, no_check),
                    doctest::Contains((spec.path + ":3: 'abc' is not a number").c_str()));
  spec.path = tmp_file("empty.txt", "");
  CHECK_THROWS_WITH(read_samples(spec, no_check), doctest::Contains("file has no samples"));
  spec.path = tmp_file("nan.txt", "1\nnan\n");
  CHECK_THROWS_WITH(read_samples(spec, no_check),
                    doctest::Contains(":2: 'nan' is not a finite number"));
  spec.path = tmp_file("inf.txt", "inf\n");
  CHECK_THROWS_WITH(read_samples(spec, no_check),
                    doctest::Contains(":1: 'inf' is not a finite number"));
  BideCode f16;
  f16.type = BideValueType::f16;
  auto fits = [&](double x) {
    uint32_t k;
    std::string why;
    return bide_encode(f16, x, &k, &why) ? std::string() : why;
  };
  spec.path = tmp_file("big.txt", "1\n70000\n2\n");
  CHECK_THROWS_WITH(read_samples(spec, fits),
                    doctest::Contains(":2: value 70000 overflows float16"));
  spec.skip_invalid = true;
  const SampleSet s = read_samples(spec, fits);
  CHECK(s.values == std::vector<double>{1, 2});
  CHECK(s.skipped == 1);
  CHECK(s.first_skip.find(":2:") != std::string::npos);
  spec.path = "/nonexistent/x.txt";
  CHECK_THROWS_WITH(read_samples(spec, no_check),
                    doctest::Contains("x.txt: cannot open sample file (No such file"));
}

TEST_CASE("cpu: value encoding rounds like IEEE and rejects what does not fit") {
  BideCode c;
  uint32_t k;
  std::string why;
  c.type = BideValueType::f16;
  REQUIRE(bide_encode(c, 1.0, &k, &why));
  CHECK(k == 0x3C00u);
  REQUIRE(bide_encode(c, -2.5, &k, &why));
  CHECK(c.value(k) == -2.5);
  REQUIRE(bide_encode(c, 65504, &k, &why));
  CHECK(k == 0x7BFFu);
  REQUIRE(bide_encode(c, 5.9604644775390625e-08, &k, &why));  // the smallest subnormal
  CHECK(k == 1u);
  CHECK_FALSE(bide_encode(c, 65520, &k, &why));
  c.type = BideValueType::bf16;
  REQUIRE(bide_encode(c, 257, &k, &why));
  CHECK(c.value(k) == 256);
  c.type = BideValueType::sint;
  c.bits = 8;
  REQUIRE(bide_encode(c, -1, &k, &why));
  CHECK(k == 0xFFu);
  CHECK(c.value(k) == -1);
  CHECK_FALSE(bide_encode(c, 128, &k, &why));
  CHECK_FALSE(bide_encode(c, 1.5, &k, &why));
  // Every finite float16 pattern round-trips through its value.
  c.type = BideValueType::f16;
  c.bits = 16;
  for (uint32_t p = 0; p < 65536; ++p) {
    if (!c.finite(p)) continue;
    REQUIRE(bide_encode(c, c.value(p), &k, &why));
    if (p != 0x8000u) CHECK(k == p);  // -0 encodes as -0 too; checked separately
  }
}

TEST_CASE("cpu: distribution CDFs agree with their samplers") {
  HostRng rng(3);
  const char* kinds[] = {"normal",    "gamma",   "pareto",      "poisson", "binomial", "lognormal",
                         "student_t", "uniform", "exponential", "beta",    "laplace",  "weibull"};
  for (const char* kind : kinds) {
    DistributionParams p;
    p.kind = kind;
    p.a = std::string(kind) == "binomial" ? 20 : 2.0;
    p.b = std::string(kind) == "binomial" ? 0.3 : (std::string(kind) == "uniform" ? 5.0 : 1.5);
    const auto d = make_distribution(p);
    const int n = 20000;
    std::vector<double> xs(n);
    for (double& x : xs) x = d->sample(rng);
    std::sort(xs.begin(), xs.end());
    double ks = 0;
    for (int i = 0; i < n; ++i) {
      const double f = d->cdf(xs[size_t(i)]);
      ks = std::max(ks, std::max(std::fabs(f - double(i + 1) / n),
                                 d->discrete() ? 0.0 : std::fabs(f - double(i) / n)));
    }
    // Discrete laws: compare at the atoms only (the ECDF jumps there).
    CHECK_MESSAGE(ks < (d->discrete() ? 0.5 : 0.02), kind, " KS ", ks);
  }
  DistributionParams mix;
  mix.kind = "mixture";
  mix.weights = {0.2, 0.8};
  mix.means = {120, 132};
  mix.stds = {1, 1.5};
  const auto m = make_distribution(mix);
  CHECK(m->mean() == doctest::Approx(129.6));
  CHECK(m->cdf(126) == doctest::Approx(0.2).epsilon(1e-3));
}

}  // namespace bg::test
