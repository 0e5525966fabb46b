// test_bide_head.cpp: the BIDE head layer (layers/bide_head.h): its NLL is bide_nll on its two
// projections bit for bit, gradients reach both projections, it learns a distribution that
// depends on its input (over bytes, and over float16 values on their finite support), and CUDA
// agrees with the CPU.
#include <algorithm>
#include <cmath>

#include "core/optim.h"
#include "data/series.h"
#include "harness.h"
#include "layers/bide_head.h"

namespace bg::test {

// The finite float16 patterns a target can be.
const std::array<uint32_t, 4> kRanges = value_code(ValueFormat::float16).ranges();
namespace {

BideOptions byte_options() {
  BideOptions opt;
  opt.code.type = BideValueType::uint;
  opt.code.bits = 8;
  return opt;
}

// A head over float16 values whose every row's support is the finite values without -0.
BideHead float16_head(int64_t in, int64_t hidden, Generator& init) {
  BideOptions opt;
  opt.code.type = BideValueType::f16;
  opt.code.bits = 16;
  BideHead head(in, hidden, opt, init);
  head.set_row_support({kRanges[0], kRanges[1], kRanges[2], kRanges[3]});
  return head;
}

struct HeadRun {
  std::vector<float> loss, grads;
};

HeadRun head_loss_and_grads(Device device) {
  Generator init(3), data(4);
  BideHead head(5, 6, byte_options(), init);
  FlatParameters params(head.named_parameters(), device);
  const Tensor x = randn({7, 5}, data, 0, 1, DType::f32, device);
  const Tensor y = from_vector(std::vector<int64_t>{0, 17, 255, 128, 3, 99, 201}, {7}, device);
  const Tensor loss = head.nll(x, y);
  loss.backward();
  return {loss.to_vector<float>(), params.grads().to_vector<float>()};
}

}  // namespace

TEST_CASE("cpu: the BIDE head is bide_nll on its projections") {
  Generator init(1), data(2);
  const BideOptions opt = byte_options();
  BideHead head(5, 6, opt, init);
  const auto named = head.named_parameters();
  REQUIRE(named.size() == 2);
  CHECK(named[0].first == "w_proj.weight");
  CHECK(named[0].second.shape() == Shape{48, 5});
  CHECK(named[1].first == "r_proj.weight");
  CHECK(named[1].second.shape() == Shape{6, 5});
  const Tensor x = randn({7, 5}, data),
               y = from_vector(std::vector<int64_t>{1, 2, 3, 4, 5, 6, 7}, {7});
  const Tensor w = linear(x, named[0].second).reshape({7, 6, 8}), r = linear(x, named[1].second);
  CHECK(head.nll(x, y).item() == bide_nll(w, r, y, opt).item());
  CHECK(head.log_prob(x, y).to_vector<float>() == bide_log_prob(w, r, y, opt).to_vector<float>());
  CHECK(head.moments(x).mean.to_vector<float>() == bide_moments(w, r, opt).mean.to_vector<float>());
  CHECK(head.sample(x, 9).to_vector<int64_t>() == bide_sample(w, r, opt, 9).to_vector<int64_t>());
  CHECK_THROWS_WITH(head.nll(zeros({7}), y), doctest::Contains("expected features (N, in)"));
}

TEST_CASE("cpu: the BIDE head learns a distribution that depends on its input") {
  // Two one-hot inputs, values near 40 for the first and near 200 for the second.
  Generator init(5), noise(6);
  BideHead head(2, 8, byte_options(), init);
  FlatParameters params(head.named_parameters(), Device::cpu());
  AdamW opt(params, {0.9, 0.99, 1e-8, 0.0});
  std::vector<float> xs;
  std::vector<int64_t> ys;
  const std::vector<double> jitter = randn({64}, noise, 0, 3, DType::f64).to_vector<double>();
  for (int i = 0; i < 64; ++i) {
    const bool second = i % 2 == 1;
    xs.insert(xs.end(), {second ? 0.f : 1.f, second ? 1.f : 0.f});
    ys.push_back(
        std::clamp<int64_t>(int64_t(std::lround((second ? 200 : 40) + jitter[size_t(i)])), 0, 255));
  }
  const Tensor x = from_vector(xs, {64, 2}), y = from_vector(ys, {64});
  double first = 0, last = 0;
  for (int step = 0; step < 300; ++step) {
    params.zero_grad();
    const Tensor loss = head.nll(x, y);
    loss.backward();
    opt.step(0.05);
    (step == 0 ? first : last) = loss.item();
  }
  CHECK(first > 5.0);  // about ln 256 at the start
  CHECK(last < 3.5);   // a spread of a few values around each centre
  NoGradGuard no_grad;
  const std::vector<float> means =
      head.moments(from_vector(std::vector<float>{1, 0, 0, 1}, {2, 2})).mean.to_vector<float>();
  CHECK(std::fabs(means[0] - 40.0) < 3.0);
  CHECK(std::fabs(means[1] - 200.0) < 3.0);
}

TEST_CASE("cuda: the BIDE head agrees with the CPU, loss and gradients") {
  BG_REQUIRE_CUDA();
  const HeadRun cpu = head_loss_and_grads(Device::cpu()),
                gpu = head_loss_and_grads(Device::cuda(0));
  CHECK(gpu.loss[0] == doctest::Approx(cpu.loss[0]).epsilon(1e-5));
  const int64_t n = int64_t(cpu.grads.size());
  CHECK(rel_err(from_vector(gpu.grads, {n}), from_vector(cpu.grads, {n})) < 1e-4);
}

TEST_CASE("cpu: a BIDE head over float16 values learns a conditional law on the finite values") {
  // Two regimes: y ~ N(-2, 0.5) for the first input and N(3, 1) for the second, as float16
  // patterns; every row's support the finite values without -0 (two pattern ranges).
  Generator init(7), noise(8);
  BideHead head = float16_head(2, 16, init);
  FlatParameters params(head.named_parameters(), Device::cpu());
  AdamW opt(params, {0.9, 0.99, 1e-8, 0.0});
  const int n = 128;
  std::vector<float> xs;
  std::vector<int64_t> ys;
  const std::vector<double> z = randn({n}, noise, 0, 1, DType::f64).to_vector<double>();
  for (int i = 0; i < n; ++i) {
    const bool second = i % 2 == 1;
    xs.insert(xs.end(), {second ? 0.f : 1.f, second ? 1.f : 0.f});
    ys.push_back(float16_pattern(second ? 3 + z[size_t(i)] : -2 + 0.5 * z[size_t(i)]));
  }
  const Tensor x = from_vector(xs, {n, 2}), y = from_vector(ys, {n});
  double first = 0, last = 0;
  for (int step = 0; step < 400; ++step) {
    params.zero_grad();
    const Tensor loss = head.nll(x, y);
    loss.backward();
    opt.step(0.05);
    (step == 0 ? first : last) = loss.item();
  }
  CHECK(first > last + 4.0);
  NoGradGuard no_grad;
  // Quantiles read off the CDF: monotone, near each regime's (Gaussian) quantiles.
  const Tensor regimes = from_vector(std::vector<float>{1, 0, 0, 1}, {2, 2});
  const double mean[2] = {-2, 3}, sd[2] = {0.5, 1};
  for (int r = 0; r < 2; ++r) {
    double prev = -INFINITY;
    for (double q : {0.1, 0.5, 0.9}) {
      const Tensor row = regimes.slice(0, r, r + 1);
      const int64_t k =
          head.quantile(row, from_vector(std::vector<double>{q}, {1})).to_vector<int64_t>()[0];
      const double v = float16_value(uint16_t(k));
      const double want = mean[r] + sd[r] * (q == 0.5 ? 0.0 : (q < 0.5 ? -1.2816 : 1.2816));
      CHECK(v >= prev);
      CHECK(std::fabs(v - want) < 0.6 * sd[r]);
      prev = v;
    }
  }
  // Samples stay on the support: no -0, no Inf or NaN pattern.
  const std::vector<int64_t> s = head.sample(x, 11).to_vector<int64_t>();
  for (int64_t k : s)
    CHECK(((k >= kRanges[0] && k < kRanges[1]) || (k >= kRanges[2] && k < kRanges[3])));
  CHECK_THROWS_WITH(head.set_row_support({0, 10, 5, 20}),
                    doctest::Contains("is not two ordered ranges"));
}

TEST_CASE("cuda: a BIDE head over float16 values with a row support agrees with the CPU") {
  BG_REQUIRE_CUDA();
  struct Run {
    float loss;
    std::vector<float> grads;
    std::vector<int64_t> quantiles;
  };
  auto run = [](Device device) {
    Generator init(3), data(4);
    BideHead head = float16_head(5, 8, init);
    FlatParameters params(head.named_parameters(), device);
    const Tensor x = randn({9, 5}, data, 0, 1, DType::f32, device);
    std::vector<int64_t> ys;
    for (double v : {-3.5, 0.0, 1e-6, 2.25, -0.125, 100.0, -65504.0, 7.0, 0.5})
      ys.push_back(float16_pattern(v));
    const Tensor loss = head.nll(x, from_vector(ys, {9}, device));
    loss.backward();
    NoGradGuard no_grad;
    const Tensor q = from_vector(std::vector<double>(9, 0.3), {9}, device);
    return Run{float(loss.item()), params.grads().to_vector<float>(),
               head.quantile(x, q).to_vector<int64_t>()};
  };
  const Run cpu = run(Device::cpu()), gpu = run(Device::cuda(0));
  CHECK(gpu.loss == doctest::Approx(cpu.loss).epsilon(1e-5));
  const int64_t n = int64_t(cpu.grads.size());
  CHECK(rel_err(from_vector(gpu.grads, {n}), from_vector(cpu.grads, {n})) < 1e-4);
  // The same quantile pattern, or its neighbour in value order where the CDF's f32 sums (in
  // another order on the GPU) land the level on the other side of a pattern's step.
  const BideCode code{BideValueType::f16, 16};
  for (size_t i = 0; i < cpu.quantiles.size(); ++i)
    CHECK(std::abs(int64_t(code.order_key(uint32_t(gpu.quantiles[i]))) -
                   int64_t(code.order_key(uint32_t(cpu.quantiles[i])))) <= 1);
}

}  // namespace bg::test
