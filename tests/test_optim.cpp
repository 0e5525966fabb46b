// test_optim.cpp: AdamW / SGD against their formulas, schedules, global-norm clipping, and the
// CUDA optimizer kernels against the CPU ones.
#include <cmath>

#include "core/optim.h"
#include "harness.h"

namespace bg::test {
namespace {

struct TwoParams {
  Tensor w = from_vector(std::vector<float>{0.5f, -1.f, 2.f, 0.25f, -0.75f, 1.5f}, {2, 3});
  Tensor b = from_vector(std::vector<float>{0.1f, -0.2f}, {2});
  std::vector<std::pair<std::string, Tensor>> named() { return {{"b", b}, {"w", w}}; }
};

void set_grads(FlatParameters& p, const std::vector<float>& g) {
  p.grads().copy_(from_vector(g, {int64_t(g.size())}));
}

}  // namespace

TEST_CASE("cpu: AdamW matches the decoupled-weight-decay formula with decay only on matrices") {
  TwoParams tp;
  FlatParameters p(tp.named(), Device::cpu());
  CHECK(p.decay_count() == 6);  // w first (2-D), then b
  AdamWConfig cfg{0.9, 0.96, 1e-8, 0.1};
  AdamW opt(p, cfg);
  std::vector<double> w(6), m(8, 0), v(8, 0);
  const std::vector<float> init = p.values().to_vector<float>();
  std::vector<double> x(init.begin(), init.end());
  const std::vector<std::vector<float>> grads{{0.3f, -0.1f, 0.2f, 0.05f, -0.4f, 0.6f, 1.0f, -2.0f},
                                              {-0.2f, 0.1f, 0.0f, 0.5f, 0.3f, -0.1f, 0.5f, 0.25f}};
  for (int s = 0; s < 2; ++s) {
    set_grads(p, grads[size_t(s)]);
    opt.step(0.01);
    for (size_t i = 0; i < 8; ++i) {
      const double g = grads[size_t(s)][i];
      m[i] = 0.9 * m[i] + 0.1 * g;
      v[i] = 0.96 * v[i] + 0.04 * g * g;
      const double mh = m[i] / (1 - std::pow(0.9, s + 1)), vh = v[i] / (1 - std::pow(0.96, s + 1));
      x[i] -= 0.01 * (mh / (std::sqrt(vh) + 1e-8) + (i < 6 ? 0.1 * x[i] : 0.0));
    }
  }
  const std::vector<float> got = p.values().to_vector<float>();
  for (size_t i = 0; i < 8; ++i) CHECK(got[i] == doctest::Approx(x[i]).epsilon(1e-6));
  // The module's own tensors see the update (they were rebound into the flat buffer).
  CHECK(tp.w.to_vector<float>()[0] == got[0]);
  CHECK(tp.b.to_vector<float>()[1] == got[7]);
}

TEST_CASE("cpu: frozen ranges keep their values and state; the rest steps as without them") {
  // Three parameters: w (2-D, decayed) and head.w first in the flat buffer, then b and head.b.
  auto named = [](std::vector<Tensor>& t) {
    return std::vector<std::pair<std::string, Tensor>>{
        {"w", t[0]}, {"b", t[1]}, {"head.w", t[2]}, {"head.b", t[3]}};
  };
  const std::vector<float> g{0.3f, -0.1f, 0.2f, 0.05f, -0.4f, 0.6f, 1.0f, -2.0f, 0.7f, 0.1f};
  std::vector<float> after[2][2];  // [optimizer][frozen]
  for (int sgd = 0; sgd < 2; ++sgd)
    for (int frozen = 0; frozen < 2; ++frozen) {
      std::vector<Tensor> t{from_vector(std::vector<float>{0.5f, -1.f, 2.f, 0.25f}, {2, 2}),
                            from_vector(std::vector<float>{0.1f, -0.2f}, {2}),
                            from_vector(std::vector<float>{1.f, 2.f}, {1, 2}),
                            from_vector(std::vector<float>{-0.5f, 0.3f}, {2})};
      FlatParameters p(named(t), Device::cpu());
      const FrozenRanges ranges = ranges_not_named(p, "head.");
      // w [0, 4) and b [6, 8): the decayed group is w then head.w, the other b then head.b.
      REQUIRE(ranges == FrozenRanges{{0, 4}, {6, 8}});
      AdamW adam(p, {0.9, 0.95, 1e-8, 0.1});
      SGD plain(p, 0.9, 0.1);
      for (int s = 0; s < 2; ++s) {
        p.grads().copy_(from_vector(g, {10}));
        if (sgd) {
          plain.set_frozen(frozen ? ranges : FrozenRanges());
          plain.step(0.01);
        } else {
          adam.set_frozen(frozen ? ranges : FrozenRanges());
          adam.step(0.01);
        }
      }
      after[sgd][frozen] = p.values().to_vector<float>();
      if (frozen) {  // untouched values, and untouched state
        const std::vector<float> state =
            (sgd ? plain.momentum_buffer() : adam.exp_avg()).to_vector<float>();
        for (int64_t i : {0, 1, 2, 3, 6, 7}) CHECK(state[size_t(i)] == 0.f);
      }
    }
  const std::vector<float> init{0.5f, -1.f, 2.f, 0.25f, 1.f, 2.f, 0.1f, -0.2f, -0.5f, 0.3f};
  for (int sgd = 0; sgd < 2; ++sgd) {
    CAPTURE(sgd);
    for (size_t i = 0; i < 10; ++i) {
      CAPTURE(i);
      const bool head = (i >= 4 && i < 6) || i >= 8;
      CHECK(after[sgd][1][i] == (head ? after[sgd][0][i] : init[i]));
    }
  }
}

TEST_CASE("cpu: SGD with momentum and clipping by global norm") {
  TwoParams tp;
  FlatParameters p(tp.named(), Device::cpu());
  SGD opt(p, 0.9, 0.0);
  const std::vector<float> g{3, 0, 0, 0, 0, 0, 0, 4};  // norm 5
  set_grads(p, g);
  const ClipResult clip = clip_grad_norm(p, 1.0);
  CHECK(clip.norm.item() == doctest::Approx(5.0));
  CHECK(clip.scale.item() == doctest::Approx(0.2));
  CHECK(clip_grad_norm(p, 10.0).scale.item() == doctest::Approx(1.0));
  const std::vector<float> before = p.values().to_vector<float>();
  opt.step(0.5, clip.scale);
  opt.step(0.5, clip.scale);  // buf = 0.6 then 0.6*0.9 + 0.6 = 1.14; total step 0.5*(0.6+1.14)
  const std::vector<float> after = p.values().to_vector<float>();
  CHECK(after[0] == doctest::Approx(before[0] - 0.5 * (0.6 + 1.14)));
  CHECK(after[7] == doctest::Approx(before[7] - 0.5 * (0.8 + 0.8 * 1.9)));
  CHECK(after[3] == before[3]);
}

TEST_CASE("cpu: learning-rate schedules") {
  LrSchedule s;
  s.kind = ScheduleKind::cosine;
  s.lr = 1.0;
  s.min_lr = 0.1;
  s.warmup_steps = 10;
  s.total_steps = 110;
  CHECK(s.at(0) == doctest::Approx(0.1));
  CHECK(s.at(9) == doctest::Approx(1.0));
  CHECK(s.at(10) == doctest::Approx(1.0));
  CHECK(s.at(60) == doctest::Approx(0.55));
  CHECK(s.at(110) == doctest::Approx(0.1));
  s.kind = ScheduleKind::linear;
  CHECK(s.at(60) == doctest::Approx(0.55));
  s.kind = ScheduleKind::exponential;
  s.warmup_steps = 0;
  s.total_steps = 100;
  s.min_lr = 0.01;
  CHECK(s.at(50) == doctest::Approx(0.1));
  CHECK(s.at(100) == doctest::Approx(0.01));
  s.kind = ScheduleKind::constant;
  CHECK(s.at(77) == 1.0);
}

TEST_CASE("cuda: AdamW and SGD kernels match the CPU") {
  BG_REQUIRE_CUDA();
  Generator gen(11);
  const Tensor w0 = randn({33, 17}, gen), b0 = randn({17}, gen);
  std::vector<std::vector<float>> grads;
  for (int s = 0; s < 3; ++s) grads.push_back(randn({33 * 17 + 17}, gen).to_vector<float>());
  for (bool adam : {true, false}) {
    std::vector<float> result[2];
    for (int d = 0; d < 2; ++d) {
      const Device dev = d ? Device::cuda(0) : Device::cpu();
      FlatParameters p({{"w", w0.clone()}, {"b", b0.clone()}}, dev);
      AdamW a(p, {0.9, 0.95, 1e-8, 0.1});
      SGD sgd(p, 0.9, 0.01);
      for (const auto& g : grads) {
        set_grads(p, g);
        const Tensor scale = clip_grad_norm(p, 10.0).scale;
        if (adam)
          a.step(3e-3, scale);
        else
          sgd.step(3e-3, scale);
      }
      result[d] = p.values().to_vector<float>();
    }
    CHECK(rel_err(from_vector(result[1], {int64_t(result[1].size())}),
                  from_vector(result[0], {int64_t(result[0].size())})) < 1e-6);
  }
}

// The watch keeps the first non-finite step, whatever comes after it, on either device.
void check_nonfinite_watch(Device dev) {
  NonFiniteWatch watch(dev);
  CHECK(watch.first_step() == 0);
  const std::vector<double> losses = {2.5, 1.0, NAN, 3.0, INFINITY, -INFINITY};
  for (size_t i = 0; i < losses.size(); ++i)
    watch.check(full({}, losses[i], DType::f32, dev), int64_t(i) + 1);
  CHECK(watch.first_step() == 3);
  NonFiniteWatch inf_first(dev);
  inf_first.check(full({1}, -INFINITY, DType::f32, dev), 41);
  inf_first.check(full({1}, NAN, DType::f32, dev), 42);
  CHECK(inf_first.first_step() == 41);
  CHECK_THROWS_WITH(watch.check(zeros({2}, DType::f32, dev), 9), doctest::Contains("a scalar"));
}

TEST_CASE("cpu: the non-finite watch records the first NaN/Inf step") {
  check_nonfinite_watch(Device::cpu());
}

TEST_CASE("cuda: the non-finite watch records the first NaN/Inf step on the device") {
  BG_REQUIRE_CUDA();
  check_nonfinite_watch(Device::cuda(0));
}

}  // namespace bg::test
