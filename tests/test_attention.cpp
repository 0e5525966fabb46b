// test_attention.cpp: fused_causal_attention. CPU: f32 vs f64 vs an independent per-head
// reference (with and without dropout), finite differences, strided qkv. CUDA (bf16 tensor-core
// operands, f32 accumulation): forward and dqkv against the CPU on odd T across 1..4 tiles, with
// dropout (the same mask), f16/bf16 inputs, strided qkv, bit-identical reruns, asynchronous
// tile copies equal to synchronous loads, the composed ops.
#include <cmath>
#include <cstring>

#include "harness.h"
#include "kernels/attention_dropout.h"
#include "reference.h"

namespace bg::test {
namespace {

using V = std::vector<Tensor>;

// Per (b, h, query i): y_i = sum_{j <= i} softmax_j(q_i.k_j / sqrt(D)) z_ij v_j, where z is
// the fused kernel's dropout factor (0 or 65536 / threshold); plain loops in double.
Tensor attention_reference(const Tensor& qkv, int64_t n_head, double p, uint64_t seed) {
  const int64_t b = qkv.size(0), t = qkv.size(1), c = qkv.size(2) / 3, d = c / n_head;
  const std::vector<double> x = ref::vals(qkv.contiguous());
  auto at = [&](int64_t bi, int64_t ti, int64_t part, int64_t h, int64_t e) {
    return x[size_t((bi * t + ti) * 3 * c + part * c + h * d + e)];
  };
  AttentionDropout drop;
  if (p > 0) {
    Generator gen(seed);
    drop.seed = seed;
    drop.counter_base = gen.take(4 * attention_dropout_counters(b * n_head, t)) / 4;
    drop.keep_threshold = uint32_t(std::round((1 - p) * 65536));
  }
  std::vector<double> y(size_t(b * t * c), 0.0);
  for (int64_t bi = 0; bi < b; ++bi)
    for (int64_t h = 0; h < n_head; ++h)
      for (int64_t i = 0; i < t; ++i) {
        std::vector<double> s(size_t(i + 1));
        double mx = -INFINITY, sum = 0;
        for (int64_t j = 0; j <= i; ++j) {
          double dot = 0;
          for (int64_t e = 0; e < d; ++e) dot += at(bi, i, 0, h, e) * at(bi, j, 1, h, e);
          s[size_t(j)] = dot / std::sqrt(double(d));
          mx = std::max(mx, s[size_t(j)]);
        }
        for (double& v : s) sum += v = std::exp(v - mx);
        const int64_t row = (bi * n_head + h) * t + i;
        for (int64_t j = 0; j <= i; ++j) {
          double w = s[size_t(j)] / sum;
          if (drop.active())
            w *= attention_keeps(drop, row, t, j) ? 65536.0 / drop.keep_threshold : 0.0;
          for (int64_t e = 0; e < d; ++e)
            y[size_t((bi * t + i) * c + h * d + e)] += w * at(bi, j, 2, h, e);
        }
      }
  return ref::make(y, {b, t, c});
}

OpCase fused_case(const char* name, Shape qkv_shape, int64_t n_head, double p, bool strided) {
  OpCase c;
  c.name = name;
  c.inputs = {{qkv_shape}};
  c.noncontiguous = strided;
  c.fn = [n_head, p](const V& x) {
    Generator gen(17);
    return fused_causal_attention(x[0], n_head, p, true, gen, fused_attention_mode(x[0].device()));
  };
  c.reference = [n_head, p](const V& x) { return attention_reference(x[0], n_head, p, 17); };
  c.f32_tol = 1e-5;
  return c;
}

}  // namespace

TEST_CASE("cpu: fused_causal_attention") {
  check_cpu_case(fused_case("fused attention", {2, 9, 3 * 3 * 5}, 3, 0.0, false));
}
TEST_CASE("cpu: fused_causal_attention dropout") {
  check_cpu_case(fused_case("fused attention dropout", {2, 11, 3 * 2 * 4}, 2, 0.3, false));
}
TEST_CASE("cpu: fused_causal_attention strided head dim 64") {
  check_cpu_case(fused_case("fused attention strided", {1, 13, 3 * 2 * 64}, 2, 0.2, true));
}

TEST_CASE("cpu: fused_causal_attention matches the composed ops without dropout") {
  Generator gen(3), unused;
  const Tensor qkv = randn({2, 10, 3 * 12}, gen, 0, 1, DType::f64);
  const Tensor fused =
      fused_causal_attention(qkv, 3, 0.0, true, unused, fused_attention_mode(qkv.device()));
  auto heads = [](const Tensor& z) { return z.reshape({2, 10, 3, 4}).transpose(1, 2); };
  const auto parts = split(qkv, {12, 12, 12}, 2);
  const Tensor composed =
      causal_self_attention(heads(parts[0]), heads(parts[1]), heads(parts[2]), 0.0, false, unused)
          .transpose(1, 2)
          .reshape({2, 10, 12});
  CHECK(rel_err(fused, composed) < 1e-13);
}

TEST_CASE("cpu: fused_causal_attention rejects bad shapes") {
  Generator gen;
  CHECK_THROWS_WITH(fused_causal_attention(zeros({2, 5, 10}), 2, 0.0, false, gen),
                    doctest::Contains("(B, T, 3C)"));
  CHECK_THROWS_WITH(fused_causal_attention(zeros({2, 5, 12}), 3, 0.0, false, gen),
                    doctest::Contains("not divisible by n_head 3"));
  CHECK_THROWS_WITH(fused_causal_attention(zeros({2, 5, 12}), 2, 1.0, true, gen),
                    doctest::Contains("dropout must be in [0, 1)"));
}

namespace {

struct AttentionRun {
  Tensor y, dqkv;
};

// Forward and d(sum(y * w))/dqkv on `device` from a f64 qkv and weights, in `dtype`.
AttentionRun run_fused(const Tensor& qkv64, const Tensor& w64, int64_t n_head, double p,
                       Device device, DType dtype, bool strided = false) {
  Tensor x = qkv64.to(device).to(dtype);
  if (strided) x = noncontiguous_copy(x);
  x = x.detach().requires_grad_(true);
  Generator gen(23);
  Tensor y = fused_causal_attention(x, n_head, p, true, gen, fused_attention_mode(x.device()));
  sum(y * w64.to(device).to(dtype)).backward();
  return {y.detach().to(Device::cpu()).to(DType::f64), x.grad().to(Device::cpu()).to(DType::f64)};
}

// bf16 operands (8 significant bits) through two chained products: errors of a few 1e-3
// relative (L2) are the expected rounding, a wrong mask or tile shows as O(1).
void check_cuda_against_cpu(Shape shape, int64_t n_head, double p, DType dtype, double tol,
                            bool strided = false) {
  const uint64_t seed = test_seed();
  CAPTURE(seed);
  CAPTURE(shape_str(shape));
  const std::string dtype_str = dtype_name(dtype);
  CAPTURE(dtype_str);
  Generator gen(seed);
  const Tensor qkv = randn(shape, gen, 0, 1, DType::f64);
  const Tensor w = randn({shape[0], shape[1], shape[2] / 3}, gen, 0, 1, DType::f64);
  const AttentionRun cpu = run_fused(qkv, w, n_head, p, Device::cpu(), DType::f32);
  const AttentionRun gpu = run_fused(qkv, w, n_head, p, Device::cuda(0), dtype, strided);
  CHECK_MESSAGE(rel_err(gpu.y, cpu.y) < tol, "y: ", rel_err(gpu.y, cpu.y));
  CHECK_MESSAGE(rel_err(gpu.dqkv, cpu.dqkv) < tol, "dqkv: ", rel_err(gpu.dqkv, cpu.dqkv));
  // Each of dq, dk, dv on its own (a wrong one could hide in the total's norm), relative to
  // its own norm or a tenth of the total's, whichever is larger: at T = 1 the softmax is
  // constant and dq = dk = 0 up to rounding, where a relative error says nothing.
  auto norm = [](const Tensor& t) {
    double s = 0;
    for (double v : t.contiguous().to_vector<double>()) s += v * v;
    return std::sqrt(s);
  };
  const double total = norm(cpu.dqkv);
  for (int64_t part = 0; part < 3; ++part) {
    const int64_t c = shape[2] / 3;
    const Tensor g = gpu.dqkv.slice(2, part * c, (part + 1) * c);
    const Tensor r = cpu.dqkv.slice(2, part * c, (part + 1) * c);
    const double err = norm(g - r) / std::max(norm(r), 0.1 * total);
    CHECK_MESSAGE(err < tol, "d", "qkv"[part], ": ", err);
  }
}

}  // namespace

TEST_CASE("cuda: fused_causal_attention matches the CPU across tile counts") {
  BG_REQUIRE_CUDA();
  for (int64_t t : {1, 37, 64, 130, 255})
    check_cuda_against_cpu({2, t, 3 * 3 * 64}, 3, 0.0, DType::f32, 1e-2);
}

TEST_CASE("cuda: fused_causal_attention dropout uses the CPU's mask") {
  BG_REQUIRE_CUDA();
  for (int64_t t : {45, 200}) check_cuda_against_cpu({2, t, 3 * 2 * 64}, 2, 0.2, DType::f32, 1e-2);
}

TEST_CASE("cuda: fused_causal_attention half inputs and strided qkv") {
  BG_REQUIRE_CUDA();
  check_cuda_against_cpu({1, 77, 3 * 2 * 64}, 2, 0.1, DType::bf16, 3e-2);
  check_cuda_against_cpu({1, 77, 3 * 2 * 64}, 2, 0.1, DType::f16, 3e-2);
  check_cuda_against_cpu({2, 70, 3 * 2 * 64}, 2, 0.1, DType::f32, 1e-2, true);
}

TEST_CASE("cuda: fused_causal_attention bf16 tiles copied asynchronously equal synchronous loads") {
  BG_REQUIRE_CUDA();
  // The portable kernels: bf16 rows that start 16-byte aligned take the cp.async path (two
  // buffers); rows 8 bytes off take the synchronous one. Both stage the same bf16 values, so
  // outputs and gradients agree bit for bit. T = 200: four tiles, both buffers reused, a ragged
  // last tile; with dropout.
  const PinKernelFamily portable(cuda::KernelFamily::portable);
  const Device gpu = Device::cuda(0);
  Generator gen(test_seed());
  const int64_t b = 2, t = 200, heads = 2, c3 = 3 * heads * 64;
  const Tensor qkv = randn({b, t, c3}, gen, 0, 1, DType::f32, gpu).to(DType::bf16);
  const Tensor w = randn({b, t, c3 / 3}, gen, 0, 1, DType::f32, gpu).to(DType::bf16);
  Tensor padded = zeros({b, t, c3 + 4}, DType::bf16, gpu);
  padded.slice(2, 4, 4 + c3).copy_(qkv);
  auto run = [&](const Tensor& input) {
    const Tensor x = input.detach().requires_grad_(true);
    Generator drop(23);
    const Tensor y =
        fused_causal_attention(x, heads, 0.2, true, drop, fused_attention_mode(x.device()));
    sum(y * w).backward();
    return std::make_pair(y.to(DType::f32).to_vector<float>(),
                          x.grad().to(DType::f32).to_vector<float>());
  };
  const auto aligned = run(qkv);
  const auto offset = run(padded.slice(2, 4, 4 + c3));
  CHECK(aligned.first == offset.first);
  CHECK(aligned.second == offset.second);
}

TEST_CASE("cuda: fused_causal_attention reruns are bit-identical") {
  BG_REQUIRE_CUDA();
  Generator gen(test_seed());
  const Tensor qkv = randn({3, 150, 3 * 4 * 64}, gen, 0, 1, DType::f64);
  const Tensor w = randn({3, 150, 4 * 64}, gen, 0, 1, DType::f64);
  const AttentionRun a = run_fused(qkv, w, 4, 0.2, Device::cuda(0), DType::f32);
  const AttentionRun b = run_fused(qkv, w, 4, 0.2, Device::cuda(0), DType::f32);
  CHECK(rel_err(a.y, b.y) == 0.0);
  CHECK(rel_err(a.dqkv, b.dqkv) == 0.0);
  // A sample's output does not depend on the rest of the batch (without dropout, whose
  // counters are numbered by batch row).
  const AttentionRun whole = run_fused(qkv, w, 4, 0.0, Device::cuda(0), DType::f32);
  const AttentionRun one =
      run_fused(qkv.slice(0, 1, 2), w.slice(0, 1, 2), 4, 0.0, Device::cuda(0), DType::f32);
  CHECK(rel_err(one.y, whole.y.slice(0, 1, 2)) == 0.0);
  CHECK(rel_err(one.dqkv, whole.dqkv.slice(0, 1, 2)) == 0.0);
}

// The Hopper (wgmma) kernels run for bf16 rows that start 16-byte aligned (a contiguous packed
// qkv); elsewhere these cases report themselves skipped.
TEST_CASE("cuda: the Hopper attention kernels match the CPU across tile counts, with dropout") {
  BG_REQUIRE_HOPPER_KERNELS();
  // bf16 inputs: the same tolerance as the portable kernels' bf16 case. T = 1 (the softmax is
  // constant), 37 (one ragged tile), 64, 130 and 255 (three and four tiles, both buffers reused).
  for (int64_t t : {1, 37, 64, 130, 255})
    check_cuda_against_cpu({2, t, 3 * 3 * 64}, 3, 0.0, DType::bf16, 3e-2);
  for (int64_t t : {45, 200}) check_cuda_against_cpu({2, t, 3 * 2 * 64}, 2, 0.2, DType::bf16, 3e-2);
}

TEST_CASE("cuda: the Hopper attention kernels give the portable ones' bits and repeat them") {
  BG_REQUIRE_HOPPER_KERNELS();
  // Both families see the same bf16 operands, take the 16-deep steps of every product in the
  // same order and round P and dS to bf16 at the same places; on Hopper the tensor cores sum a
  // step alike for mma.sync and wgmma, so outputs and gradients are equal bit for bit.
  Generator gen(test_seed());
  const Tensor qkv = randn({3, 150, 3 * 4 * 64}, gen, 0, 1, DType::f64);
  const Tensor w = randn({3, 150, 4 * 64}, gen, 0, 1, DType::f64);
  for (double p : {0.0, 0.2}) {
    CAPTURE(p);
    const AttentionRun a = run_fused(qkv, w, 4, p, Device::cuda(0), DType::bf16);
    const AttentionRun b = run_fused(qkv, w, 4, p, Device::cuda(0), DType::bf16);
    CHECK(rel_err(a.y, b.y) == 0.0);
    CHECK(rel_err(a.dqkv, b.dqkv) == 0.0);
    AttentionRun portable;
    {
      const PinKernelFamily pin(cuda::KernelFamily::portable);
      portable = run_fused(qkv, w, 4, p, Device::cuda(0), DType::bf16);
    }
    CHECK(rel_err(a.y, portable.y) == 0.0);
    CHECK(rel_err(a.dqkv, portable.dqkv) == 0.0);
  }
  // A sample's output does not depend on the rest of the batch.
  const AttentionRun whole = run_fused(qkv, w, 4, 0.0, Device::cuda(0), DType::bf16);
  const AttentionRun one =
      run_fused(qkv.slice(0, 1, 2), w.slice(0, 1, 2), 4, 0.0, Device::cuda(0), DType::bf16);
  CHECK(rel_err(one.y, whole.y.slice(0, 1, 2)) == 0.0);
  CHECK(rel_err(one.dqkv, whole.dqkv.slice(0, 1, 2)) == 0.0);
}

TEST_CASE("cuda: fused_causal_attention needs head dim 64") {
  BG_REQUIRE_CUDA();
  Generator gen;
  CHECK_THROWS_WITH(
      fused_causal_attention(
          zeros({1, 4, 3 * 64}, DType::f32, Device::cuda(0)), 2, 0.0, false, gen,
          fused_attention_mode(zeros({1, 4, 3 * 64}, DType::f32, Device::cuda(0)).device())),
      doctest::Contains("needs head_dim 64, got 32"));
}

}  // namespace bg::test
