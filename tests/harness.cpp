#include "harness.h"

#include <unistd.h>

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <random>

namespace bg::test {

uint64_t test_seed() {
  static const uint64_t seed = [] {
    if (const char* s = std::getenv("BITGRAD_TEST_SEED"))
      return uint64_t(std::strtoull(s, nullptr, 10));
    return uint64_t(std::random_device{}()) << 20 ^ uint64_t(std::random_device{}());
  }();
  return seed;
}

int64_t bit_mismatches(const Tensor& a, const Tensor& b) {
  auto bits = [](const Tensor& t) {
    return t.to(Device::cpu()).to(DType::f64).contiguous().to_vector<double>();
  };
  const std::vector<double> x = bits(a), y = bits(b);
  if (x.size() != y.size()) return -1;
  int64_t bad = 0;
  for (size_t i = 0; i < x.size(); ++i) bad += std::memcmp(&x[i], &y[i], sizeof(double)) != 0;
  return bad;
}

double rel_err(const Tensor& got, const Tensor& want) {
  REQUIRE_MESSAGE(got.shape() == want.shape(), "shape ", shape_str(got.shape()), " vs ",
                  shape_str(want.shape()));
  const std::vector<double> a = got.to_vector<double>(), b = want.to_vector<double>();
  double num = 0, den = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    if (std::isnan(a[i]) != std::isnan(b[i])) return INFINITY;
    if (std::isinf(b[i]) || std::isinf(a[i])) {
      if (a[i] != b[i]) return INFINITY;
      continue;
    }
    num += (a[i] - b[i]) * (a[i] - b[i]);
    den += b[i] * b[i];
  }
  if (den == 0) return std::sqrt(num);
  return std::sqrt(num / den);
}

Tensor noncontiguous_copy(const Tensor& t) {
  // Same values, strided storage: a transposed copy viewed back, or every other element.
  if (t.ndim() >= 2 && t.size(-1) > 1 && t.size(-2) > 1) {
    Tensor u = t.detach().transpose(-1, -2).contiguous().transpose(-1, -2);
    REQUIRE(!u.is_contiguous());
    return u;
  }
  Shape wide = t.shape();
  wide.push_back(2);
  Tensor base = zeros(wide, t.dtype(), t.device());
  Tensor view = base.slice(-1, 0, 1).squeeze(-1);
  view.copy_(t.detach());
  return view;
}

std::vector<Tensor> make_inputs(const OpCase& c, Generator& gen, DType dtype) {
  std::vector<Tensor> xs;
  for (const InputSpec& s : c.inputs) {
    Tensor t;
    switch (s.kind) {
      case Kind::normal:
        t = randn(s.shape, gen, 0, 1, dtype);
        break;
      case Kind::positive:
        t = rand(s.shape, gen, 0.5, 2.0, dtype);
        break;
      case Kind::index:
      case Kind::target: {
        std::vector<double> u = rand(s.shape, gen, 0, 1, DType::f64).to_vector<double>();
        std::vector<int64_t> v(u.size());
        for (size_t i = 0; i < u.size(); ++i) {
          v[i] = std::min<int64_t>(int64_t(u[i] * double(s.range)), s.range - 1);
          if (s.kind == Kind::target && i % 10 == 3) v[i] = -100;
        }
        t = from_vector(v, s.shape);
        break;
      }
      case Kind::mask: {
        std::vector<double> u = rand(s.shape, gen, 0, 1, DType::f64).to_vector<double>();
        std::vector<uint8_t> v(u.size());
        for (size_t i = 0; i < u.size(); ++i) v[i] = u[i] < 0.4;
        t = from_vector(v, s.shape);
        break;
      }
    }
    xs.push_back(t);
  }
  return xs;
}

namespace {

bool is_float_input(const InputSpec& s) {
  return s.kind == Kind::normal || s.kind == Kind::positive;
}

// Prepares inputs for a run: device, dtype, layout, requires_grad.
std::vector<Tensor> prepare(const OpCase& c, const std::vector<Tensor>& base, Device dev,
                            DType dtype, bool grad) {
  std::vector<Tensor> xs;
  for (size_t i = 0; i < base.size(); ++i) {
    Tensor t = base[i].to(dev);
    if (is_float_input(c.inputs[i])) {
      t = t.to(dtype);
      if (c.noncontiguous) t = noncontiguous_copy(t);
      t = t.detach();
      if (grad && c.differentiable && c.inputs[i].differentiable) t.requires_grad_(true);
    }
    xs.push_back(t);
  }
  return xs;
}

// Forward, then backward of sum(out * w); returns {out, grad_0, grad_1, ...}.
std::vector<Tensor> run(const OpCase& c, const std::vector<Tensor>& xs, const Tensor& w_base) {
  Tensor out = c.fn(xs);
  std::vector<Tensor> res{out.detach()};
  if (!c.differentiable) return res;
  Tensor w = w_base.to(out.device()).to(out.dtype());
  sum(out * w).backward();
  for (size_t i = 0; i < xs.size(); ++i)
    if (xs[i].defined() && xs[i].requires_grad()) res.push_back(xs[i].grad());
  return res;
}

Tensor weights_for(const OpCase& c, const std::vector<Tensor>& base, Generator& gen) {
  NoGradGuard ng;
  std::vector<Tensor> xs = prepare(c, base, Device::cpu(), DType::f64, false);
  const Tensor out = c.fn(xs);
  return randn(out.shape(), gen, 0, 1, DType::f64);
}

}  // namespace

void check_cpu_case(const OpCase& c) {
  const uint64_t seed = test_seed();
  INFO("op ", c.name, ", seed ", seed, " (BITGRAD_TEST_SEED=", seed, " reproduces)");
  Generator gen(seed);
  const std::vector<Tensor> base = make_inputs(c, gen, DType::f64);
  const Tensor w = weights_for(c, base, gen);

  // f64 forward against the independent reference.
  std::vector<Tensor> x64 = prepare(c, base, Device::cpu(), DType::f64, true);
  const std::vector<Tensor> r64 = run(c, x64, w);
  if (c.reference) {
    NoGradGuard ng;
    const Tensor ref = c.reference(prepare(c, base, Device::cpu(), DType::f64, false));
    CHECK_MESSAGE(rel_err(r64[0], ref) < 1e-12, "f64 forward vs reference: ", rel_err(r64[0], ref));
  }
  // f32 forward and backward against f64.
  const std::vector<Tensor> r32 = run(c, prepare(c, base, Device::cpu(), DType::f32, true), w);
  REQUIRE(r32.size() == r64.size());
  for (size_t i = 0; i < r32.size(); ++i)
    CHECK_MESSAGE(rel_err(r32[i], r64[i]) < c.f32_tol * (i ? 10 : 1), "f32 vs f64, output ", i,
                  ": ", rel_err(r32[i], r64[i]));
  if (!c.differentiable) return;
  // Central finite differences of L = sum(out * w) in f64, on up to 48 elements per input.
  NoGradGuard ng;
  size_t gi = 1;
  for (size_t i = 0; i < base.size(); ++i) {
    if (!x64[i].requires_grad()) continue;
    const Tensor analytic = r64[gi++];
    const std::vector<double> ga = analytic.to_vector<double>();
    Tensor xi = base[i].contiguous().clone();
    double* p = xi.data<double>();
    const int64_t n = xi.numel(), stride = std::max<int64_t>(1, n / 48);
    double scale = 0;
    for (double v : ga) scale = std::max(scale, std::fabs(v));
    for (int64_t e = 0; e < n; e += stride) {
      const double h = 1e-6, orig = p[e];
      auto loss_at = [&](double v) {
        p[e] = v;
        std::vector<Tensor> xs = base;
        xs[i] = xi;
        xs = prepare(c, xs, Device::cpu(), DType::f64, false);
        return sum(c.fn(xs) * w).item();
      };
      const double up = loss_at(orig + h), down = loss_at(orig - h);
      double numeric = (up - down) / (2 * h);
      const double tol = c.fd_tol * std::max(1.0, scale);
      if (c.kinks && std::fabs(numeric - ga[size_t(e)]) > tol) {
        // A kink within h of the input: the central difference averages two slopes. The
        // backward's slope is the one on the input's own side, which one one-sided difference
        // (the side without the kink) measures to O(h).
        const double mid = loss_at(orig), right = (up - mid) / h, left = (mid - down) / h;
        if (std::fabs(right - left) > tol)
          numeric = std::fabs(right - ga[size_t(e)]) < std::fabs(left - ga[size_t(e)]) ? right : left;
      }
      p[e] = orig;
      CHECK_MESSAGE(std::fabs(numeric - ga[size_t(e)]) <= tol, "input ", i, " element ", e,
                    ": finite difference ", numeric, " vs backward ", ga[size_t(e)]);
    }
  }
}

void check_cuda_case(const OpCase& c) {
  const uint64_t seed = test_seed();
  INFO("op ", c.name, ", seed ", seed);
  Generator gen(seed);
  const std::vector<Tensor> base = make_inputs(c, gen, DType::f64);
  const Tensor w = weights_for(c, base, gen);
  const Device gpu = Device::cuda(0);
  const std::vector<Tensor> cpu32 = run(c, prepare(c, base, Device::cpu(), DType::f32, true), w);
  const std::vector<Tensor> gpu32 = run(c, prepare(c, base, gpu, DType::f32, true), w);
  REQUIRE(gpu32.size() == cpu32.size());
  for (size_t i = 0; i < gpu32.size(); ++i) {
    CHECK(gpu32[i].device() == gpu);
    CHECK_MESSAGE(rel_err(gpu32[i], cpu32[i]) < c.cuda_f32_tol * (i ? 10 : 1),
                  "CUDA f32 vs CPU, output ", i, ": ", rel_err(gpu32[i], cpu32[i]));
  }
  if (!c.half_on_cuda) return;
  for (DType half : {DType::f16, DType::bf16}) {
    const std::vector<Tensor> g16 = run(c, prepare(c, base, gpu, half, true), w);
    const std::vector<Tensor> c16 = run(c, prepare(c, base, Device::cpu(), half, true), w);
    const double tol = half == DType::bf16 ? 3e-2 : 5e-3;
    for (size_t i = 0; i < g16.size(); ++i) {
      // Against the f32 result: both halves round inputs identically, then compute in f32.
      if (i == 0 || c.half_grads_vs_f32)
        CHECK_MESSAGE(rel_err(g16[i], cpu32[i]) < tol * (i ? 4 : 1), dtype_name(half),
                      " CUDA vs CPU f32, output ", i, ": ", rel_err(g16[i], cpu32[i]));
      CHECK_MESSAGE(rel_err(g16[i], c16[i]) < tol * (i ? 4 : 1), dtype_name(half), " CUDA vs CPU ",
                    dtype_name(half), ", output ", i, ": ", rel_err(g16[i], c16[i]));
    }
  }
}

namespace {

// This process's scratch folder, removed (with everything in it) at exit.
struct ScratchFolder {
  std::filesystem::path path;
  ScratchFolder()
      : path(std::filesystem::temp_directory_path() /
             ("bitgrad_tests_" + std::to_string(::getpid()))) {
    std::filesystem::create_directories(path);
  }
  ~ScratchFolder() {
    std::error_code ec;
    std::filesystem::remove_all(path, ec);
  }
};

}  // namespace

std::string scratch_path(const std::string& name) {
  static const ScratchFolder folder;
  return (folder.path / name).string();
}

}  // namespace bg::test
