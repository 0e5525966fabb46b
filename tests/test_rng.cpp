// test_rng.cpp: the counter-based generator: streams, statistics, CPU/CUDA equality.
#include <cmath>

#include "harness.h"

namespace bg::test {

TEST_CASE("cpu: Philox streams are reproducible disjoint and well distributed") {
  Generator a(42), b(42);
  const std::vector<float> u1 = rand({1001}, a).to_vector<float>();
  CHECK(u1 == rand({1001}, b).to_vector<float>());
  CHECK(u1 != rand({1001}, a).to_vector<float>());  // the next range differs
  Generator g(7);
  const int64_t n = 200000;
  const std::vector<double> u = rand({n}, g, 0, 1, DType::f64).to_vector<double>();
  const std::vector<double> z = randn({n}, g, 0, 1, DType::f64).to_vector<double>();
  const std::vector<double> k = bernoulli({n}, g, 0.3, 1.0, DType::f64).to_vector<double>();
  double mu = 0, zm = 0, zv = 0, km = 0;
  for (int64_t i = 0; i < n; ++i) {
    mu += u[size_t(i)] / double(n);
    zm += z[size_t(i)] / double(n);
    zv += z[size_t(i)] * z[size_t(i)] / double(n);
    km += k[size_t(i)] / double(n);
    REQUIRE((u[size_t(i)] >= 0 && u[size_t(i)] < 1));
  }
  // 5-sigma bounds.
  CHECK(std::fabs(mu - 0.5) < 5 * std::sqrt(1.0 / 12 / double(n)));
  CHECK(std::fabs(zm) < 5 / std::sqrt(double(n)));
  CHECK(std::fabs(zv - 1) < 5 * std::sqrt(2.0 / double(n)));
  CHECK(std::fabs(km - 0.3) < 5 * std::sqrt(0.21 / double(n)));
}

TEST_CASE("cpu: the sampler's uniforms carry 53 random bits") {
  // A draw of 24 bits is a multiple of 2^-24: a token of probability 1e-9 between two such
  // multiples could never be drawn. 53-bit draws fill the gaps below 2^-24 too.
  Generator g(11);
  const int64_t n = 4096;
  int64_t below_float = 0;  // draws with bits below 2^-24
  double sum = 0;
  for (int64_t i = 0; i < n; ++i) {
    const double u = uniform53(g);
    REQUIRE(u >= 0);
    REQUIRE(u < 1);
    sum += u;
    below_float += std::ldexp(u, 24) != std::floor(std::ldexp(u, 24));
  }
  CHECK(below_float > n * 99 / 100);
  CHECK(std::fabs(sum / double(n) - 0.5) < 0.02);
  Generator a(3), b(3);
  CHECK(uniform53(a) == uniform53(b));  // a stream, like every other
  CHECK(uniform53(a) != uniform53(b) + 1.0);
}

TEST_CASE("cuda: the same seed gives the same numbers on CPU and CUDA") {
  BG_REQUIRE_CUDA();
  const Device gpu = Device::cuda(0);
  for (DType dt : {DType::f32, DType::f16, DType::bf16}) {
    Generator c(99), d(99);
    CHECK(rand({100003}, c, -2, 3, dt).to_vector<float>() ==
          rand({100003}, d, -2, 3, dt, gpu).to_vector<float>());
    CHECK(randn({100003}, c, 1, 2, dt).to_vector<float>() ==
          randn({100003}, d, 1, 2, dt, gpu).to_vector<float>());
    CHECK(bernoulli({100003}, c, 0.8, 1.25, dt).to_vector<float>() ==
          bernoulli({100003}, d, 0.8, 1.25, dt, gpu).to_vector<float>());
  }
}

}  // namespace bg::test
