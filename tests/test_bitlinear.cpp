// test_bitlinear.cpp: BitNet b1.58 (core/bitlinear.h, layers/bitlinear.h). The quantisers
// against their formulas (ties, all-zero rows and tensors, every act_bits), the exact int8
// product against integer loops at odd shapes, CUDA equal to the CPU bit for bit, the
// straight-through gradients against finite differences of the surrogate, and a GPT built
// with model.linear: bitlinear that learns and repeats bit for bit.
#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>

#include "core/bitlinear.h"
#include "core/optim.h"
#include "harness.h"
#include "layers/bitlinear.h"
#include "models/gpt/gpt.h"

namespace bg::test {
namespace {

std::vector<float> as_floats(const Tensor& t) {
  return t.to(Device::cpu()).to(DType::f32).contiguous().to_vector<float>();
}

ActQuantOptions act_options(BitNorm norm, int bits) {
  ActQuantOptions o;
  o.norm = norm;
  o.bits = bits;
  return o;
}

// Bitwise equality of two float vectors (NaN-free here), counting mismatches.
int64_t bit_mismatches(const std::vector<float>& a, const std::vector<float>& b) {
  if (a.size() != b.size()) return -1;
  int64_t bad = 0;
  for (size_t i = 0; i < a.size(); ++i) bad += std::memcmp(&a[i], &b[i], 4) != 0;
  return bad;
}

}  // namespace

TEST_CASE("cpu: ternary quantisation follows absmean and absmedian, ties to even") {
  // mean |w| = 8 / 8 = 1 exactly: w / beta is w, so the ties 0.5 and -0.5 round to 0 and 1.5
  // to 2, clamped to 1.
  const Tensor w = from_vector<float>({0.5f, -0.5f, 1.5f, -1.5f, 1.0f, -1.0f, 0.0f, 2.0f}, {2, 4});
  const TernaryWeights q = ternary_quantize(w, TernaryScale::absmean);
  CHECK(q.beta.item() == 1.0f);
  CHECK(as_floats(q.q) == std::vector<float>{0, 0, 1, -1, 1, -1, 0, 1});
  // The lower median of |w| = {0, 0.5, 0.5, 1, 1, 1.5, 1.5, 2} is 1.
  const TernaryWeights med = ternary_quantize(w, TernaryScale::absmedian);
  CHECK(med.beta.item() == 1.0f);
  // All zero: beta clamps to 1e-5 and every weight is 0.
  const TernaryWeights zero = ternary_quantize(zeros({3, 5}), TernaryScale::absmean);
  CHECK(zero.beta.item() == 1e-5f);
  CHECK(as_floats(zero.q) == std::vector<float>(15, 0.0f));
  // Random weights of odd shapes against the formula, with the scale from a plain f64 loop.
  Generator gen(7);
  for (auto [rows, cols] : {std::pair<int64_t, int64_t>{1, 1}, {3, 17}, {37, 100}, {130, 300}}) {
    const Tensor r = randn({rows, cols}, gen, 0.0, 0.05);
    const std::vector<float> v = r.to_vector<float>();
    double sum = 0;
    for (float x : v) sum += std::fabs(double(x));
    std::vector<float> mag(v.size());
    for (size_t i = 0; i < v.size(); ++i) mag[i] = std::fabs(v[i]);
    std::sort(mag.begin(), mag.end());
    for (TernaryScale method : {TernaryScale::absmean, TernaryScale::absmedian}) {
      const TernaryWeights t = ternary_quantize(r, method);
      const float beta = t.beta.item();
      const float want = method == TernaryScale::absmean ? float(sum / double(v.size()))
                                                         : mag[(mag.size() - 1) / 2];
      CHECK(beta == doctest::Approx(want).epsilon(1e-6));
      std::vector<float> expect(v.size());
      for (size_t i = 0; i < v.size(); ++i)
        expect[i] = std::clamp(std::nearbyint(v[i] / beta), -1.0f, 1.0f);
      CHECK(as_floats(t.q) == expect);
    }
  }
}

TEST_CASE("cpu: activation quantisation follows absmax per row, every act_bits and norm") {
  // No norm, gamma = 127, Q / gamma = 1: the ties 0.5 -> 0, 1.5 -> 2, -2.5 -> -2.
  const Tensor x = from_vector<float>({127.0f, 0.5f, 1.5f, -2.5f, 0, 0, 0, 0}, {2, 4});
  const QuantizedActivations q = act_quantize(x, act_options(BitNorm::none, 8));
  CHECK(as_floats(q.q) == std::vector<float>{127, 0, 2, -2, 0, 0, 0, 0});
  const std::vector<float> step = as_floats(q.step);
  CHECK(step[0] == 1.0f);
  CHECK(step[1] == 1e-5f / 127.0f);  // an all-zero row: gamma clamps to 1e-5
  // Random rows in f64 against the formula evaluated independently in f64, and f32 within one
  // integer step of it (the f32 statistics round differently near a tie).
  Generator gen(11);
  for (BitNorm norm : {BitNorm::none, BitNorm::rms, BitNorm::layer})
    for (int bits : {2, 4, 8})
      for (int64_t k : {1, 3, 6, 383, 384}) {
        const Tensor r = randn({5, k}, gen, 0.3, 2.0, DType::f64);
        const std::vector<double> v = r.to_vector<double>();
        const QuantizedActivations q64 = act_quantize(r, act_options(norm, bits));
        const QuantizedActivations q32 = act_quantize(r.to(DType::f32), act_options(norm, bits));
        const std::vector<float> got64 = as_floats(q64.q), got32 = as_floats(q32.q);
        const std::vector<double> step64 = q64.step.to_vector<double>();
        const double qmax = double((1 << (bits - 1)) - 1);
        for (int64_t row = 0; row < 5; ++row) {
          const double* xr = v.data() + row * k;
          double mu = 0, var = 0, rs = 1;
          if (norm == BitNorm::layer) {
            for (int64_t e = 0; e < k; ++e) mu += xr[e];
            mu /= double(k);
          }
          if (norm != BitNorm::none) {
            for (int64_t e = 0; e < k; ++e) var += (xr[e] - mu) * (xr[e] - mu);
            rs = 1.0 / std::sqrt(var / double(k) + 1e-5);
          }
          double gamma = 0;
          for (int64_t e = 0; e < k; ++e) gamma = std::max(gamma, std::fabs((xr[e] - mu) * rs));
          gamma = std::max(gamma, 1e-5);
          CHECK(step64[size_t(row)] == doctest::Approx(gamma / qmax).epsilon(1e-12));
          for (int64_t e = 0; e < k; ++e) {
            const double want =
                std::clamp(std::nearbyint((xr[e] - mu) * rs * qmax / gamma), -qmax - 1, qmax);
            CHECK(got64[size_t(row * k + e)] == want);
            CHECK(std::fabs(got32[size_t(row * k + e)] - want) <= 1.0);
          }
        }
      }
}

TEST_CASE("cpu: the int8 product is exact and rescaled by the documented formula") {
  Generator gen(3);
  for (auto [m, k, n] : {std::array<int64_t, 3>{1, 1, 1}, {7, 3, 5}, {37, 17, 130}, {64, 100, 33}})
    for (bool with_bias : {false, true}) {
      const QuantizedActivations x = act_quantize(randn({m, k}, gen), act_options(BitNorm::rms, 8));
      const TernaryWeights w = ternary_quantize(randn({n, k}, gen, 0, 0.02), TernaryScale::absmean);
      const Tensor bias = with_bias ? randn({n}, gen) : Tensor();
      const std::vector<float> y = as_floats(int8_linear(x, w, bias, DType::f32));
      const std::vector<float> xq = as_floats(x.q), wq = as_floats(w.q), st = as_floats(x.step);
      const std::vector<float> b = with_bias ? as_floats(bias) : std::vector<float>(size_t(n), 0);
      const float beta = w.beta.item();
      std::vector<float> want(size_t(m * n));
      for (int64_t i = 0; i < m; ++i)
        for (int64_t j = 0; j < n; ++j) {
          int64_t acc = 0;
          for (int64_t e = 0; e < k; ++e)
            acc += int64_t(xq[size_t(i * k + e)]) * int64_t(wq[size_t(j * k + e)]);
          want[size_t(i * n + j)] = std::fma(float(acc) * st[size_t(i)], beta, b[size_t(j)]);
        }
      CHECK(bit_mismatches(y, want) == 0);
    }
}

TEST_CASE("cuda: quantisers and the int8 product give the CPU's bits at odd shapes") {
  BG_REQUIRE_CUDA();
  Generator gen(5);
  for (auto [m, k, n] : {std::array<int64_t, 3>{1, 1, 1},
                         {7, 3, 5},
                         {37, 17, 130},
                         {129, 100, 257},
                         {300, 384, 1152},
                         {1000, 1536, 384}})
    for (TernaryScale method : {TernaryScale::absmean, TernaryScale::absmedian})
      for (BitNorm norm : {BitNorm::none, BitNorm::rms, BitNorm::layer}) {
        const Tensor x = randn({m, k}, gen, 0.1, 1.5), w = randn({n, k}, gen, 0, 0.02);
        const Tensor bias = norm == BitNorm::layer ? randn({n}, gen) : Tensor();
        const ActQuantOptions opt = act_options(norm, norm == BitNorm::none ? 4 : 8);
        const QuantizedActivations xc = act_quantize(x, opt);
        const QuantizedActivations xg = act_quantize(x.to(Device::cuda(0)), opt);
        const TernaryWeights wc = ternary_quantize(w, method);
        const TernaryWeights wg = ternary_quantize(w.to(Device::cuda(0)), method);
        CHECK(bit_mismatches(as_floats(xg.q), as_floats(xc.q)) == 0);
        CHECK(bit_mismatches(as_floats(xg.step), as_floats(xc.step)) == 0);
        if (norm != BitNorm::none)
          CHECK(bit_mismatches(as_floats(xg.rstd), as_floats(xc.rstd)) == 0);
        CHECK(bit_mismatches(as_floats(wg.beta), as_floats(wc.beta)) == 0);
        CHECK(bit_mismatches(as_floats(wg.q), as_floats(wc.q)) == 0);
        const Tensor bg = bias.defined() ? bias.to(Device::cuda(0)) : Tensor();
        const std::vector<float> yc = as_floats(int8_linear(xc, wc, bias, DType::f32));
        CHECK(bit_mismatches(as_floats(int8_linear(xg, wg, bg, DType::f32)), yc) == 0);
        // bf16 output: the same f32 value rounded once.
        const std::vector<float> y16 = as_floats(int8_linear(xg, wg, bg, DType::bf16));
        CHECK(bit_mismatches(y16, as_floats(from_vector(yc, {m, n}).to(DType::bf16))) == 0);
      }
  // A bf16 input quantises as its f32 value.
  const Tensor x16 = randn({9, 50}, gen).to(DType::bf16);
  const ActQuantOptions opt = act_options(BitNorm::rms, 8);
  CHECK(bit_mismatches(as_floats(act_quantize(x16.to(Device::cuda(0)), opt).q),
                       as_floats(act_quantize(x16.to(DType::f32), opt).q)) == 0);
}

TEST_CASE("cuda: the Hopper int8 product gives the portable kernel's bits") {
  BG_REQUIRE_HOPPER_KERNELS();
  // Exact integer products either way; the shapes cover ragged block edges in M, N and K (K
  // past a 128-byte step, not a multiple of 16), several K steps, both output dtypes, and more
  // tiles than the persistent kernel has blocks (each block then takes several, its stage ring
  // running on across them).
  Generator gen(8);
  for (auto [m, k, n] : {std::array<int64_t, 3>{333, 300, 500},
                         {130, 1000, 129},
                         {2048, 768, 2304},
                         {1, 77, 8},
                         {4097, 1000, 1100},
                         {9000, 136, 700}}) {
    CAPTURE(m);
    const Tensor x = randn({m, k}, gen, 0.1, 1.5, DType::f32, Device::cuda(0));
    const Tensor w = randn({n, k}, gen, 0, 0.02, DType::f32, Device::cuda(0));
    const Tensor bias = randn({n}, gen, 0, 1, DType::f32, Device::cuda(0));
    const QuantizedActivations xq = act_quantize(x, act_options(BitNorm::rms, 8));
    const TernaryWeights wq = ternary_quantize(w, TernaryScale::absmean);
    for (DType out : {DType::f32, DType::bf16}) {
      const std::vector<float> hopper = as_floats(int8_linear(xq, wq, bias, out));
      std::vector<float> portable;
      {
        const PinKernelFamily pin(cuda::KernelFamily::portable);
        portable = as_floats(int8_linear(xq, wq, bias, out));
      }
      CHECK(bit_mismatches(hopper, portable) == 0);
    }
  }
}

TEST_CASE("cpu: bitlinear's straight-through gradients equal finite differences of the surrogate") {
  // The surrogate: y = x_n(x) W~0^T for dx (the norm differentiable, the quantised weights
  // frozen) and y = x~0 W^T for dW, with x~0 = step x_q and W~0 = beta W_q at the point.
  Generator gen(21);
  const int64_t m = 3, k = 6, n = 4;
  for (BitNorm norm : {BitNorm::none, BitNorm::rms, BitNorm::layer}) {
    BitLinearOptions opt;
    opt.act = act_options(norm, 8);
    const Tensor x0 = randn({m, k}, gen, 0.2, 1.0, DType::f64);
    const Tensor w0 = randn({n, k}, gen, 0, 0.5, DType::f64);
    const Tensor bias0 = randn({n}, gen, 0, 1, DType::f64);
    const Tensor g = randn({m, n}, gen, 0, 1, DType::f64);
    Tensor x = x0.detach(), w = w0.detach(), bias = bias0.detach();
    x.requires_grad_();
    w.requires_grad_();
    bias.requires_grad_();
    sum(bitlinear(x, w, bias, opt, ComputeMode()) * g).backward();
    const std::vector<double> dx = x.grad().to_vector<double>(), dw = w.grad().to_vector<double>();
    const TernaryWeights wq = ternary_quantize(w0, opt.weight_scale);
    const Tensor w_tilde = int8_dequantize(wq.q, Tensor(), wq.beta, DType::f64);
    const QuantizedActivations xq = act_quantize(x0, opt.act);
    const Tensor x_tilde = int8_dequantize(xq.q, xq.step, Tensor(), DType::f64);
    auto normed = [&](const Tensor& t) {
      if (norm == BitNorm::rms) return rmsnorm(t, Tensor(), 1e-5);
      if (norm == BitNorm::layer) return layernorm(t, Tensor(), Tensor(), 1e-5);
      return t;
    };
    auto surrogate_x = [&](const Tensor& t) {
      return sum(matmul(normed(t), w_tilde.transpose(0, 1)) * g).item();
    };
    auto surrogate_w = [&](const Tensor& t) {
      return sum(matmul(x_tilde, (w_tilde + t - w0).transpose(0, 1)) * g).item();
    };
    const double h = 1e-6;
    auto fd = [&](const Tensor& at, auto&& f, int64_t i) {
      std::vector<double> v = at.to_vector<double>();
      v[size_t(i)] += h;
      const double up = f(from_vector(v, at.shape()));
      v[size_t(i)] -= 2 * h;
      return (up - f(from_vector(v, at.shape()))) / (2 * h);
    };
    for (int64_t i = 0; i < m * k; ++i)
      CHECK(dx[size_t(i)] == doctest::Approx(fd(x0, surrogate_x, i)).epsilon(1e-6));
    for (int64_t i = 0; i < n * k; ++i)
      CHECK(dw[size_t(i)] == doctest::Approx(fd(w0, surrogate_w, i)).epsilon(1e-6));
    const std::vector<double> db = bias.grad().to_vector<double>(), gv = g.to_vector<double>();
    for (int64_t j = 0; j < n; ++j)
      CHECK(db[size_t(j)] ==
            doctest::Approx(gv[size_t(j)] + gv[size_t(n + j)] + gv[size_t(2 * n + j)]));
  }
}

TEST_CASE("cuda: bitlinear's forward is the CPU's bits and its gradients agree") {
  BG_REQUIRE_CUDA();
  Generator gen(8);
  BitLinearOptions opt;
  const Tensor x0 = randn({2, 19, 40}, gen), w0 = randn({24, 40}, gen, 0, 0.1);
  const Tensor g = randn({2, 19, 24}, gen);
  std::vector<float> y[2], dx[2], dw[2];
  for (int d = 0; d < 2; ++d) {
    const Device dev = d ? Device::cuda(0) : Device::cpu();
    // Fresh leaves on each device (to() of a tensor that requires grad would be recorded).
    Tensor x = x0.detach().to(dev).detach(), w = w0.detach().to(dev).detach();
    x.requires_grad_();
    w.requires_grad_();
    const Tensor out = bitlinear(x, w, Tensor(), opt, ComputeMode());
    sum(out * g.to(dev)).backward();
    y[d] = as_floats(out);
    dx[d] = as_floats(x.grad());
    dw[d] = as_floats(w.grad());
  }
  CHECK(bit_mismatches(y[1], y[0]) == 0);
  CHECK(rel_err(from_vector(dx[1], {2, 19, 40}), from_vector(dx[0], {2, 19, 40})) < 1e-5);
  CHECK(rel_err(from_vector(dw[1], {24, 40}), from_vector(dw[0], {24, 40})) < 1e-5);
}

TEST_CASE("cuda: a bitlinear row gives the same bits alone and in a batch (any mode)") {
  BG_REQUIRE_CUDA();
  Generator gen(9);
  BitLinearOptions opt;
  const Tensor w = randn({384, 384}, gen, 0, 0.02).to(Device::cuda(0));
  const Tensor batch = randn({4097, 384}, gen).to(Device::cuda(0));
  const std::vector<float> all = as_floats(bitlinear(batch, w, Tensor(), opt, ComputeMode()));
  for (int64_t row : {int64_t(0), int64_t(2048), int64_t(4096)}) {
    const std::vector<float> alone =
        as_floats(bitlinear(batch.slice(0, row, row + 1), w, Tensor(), opt, ComputeMode()));
    CHECK(bit_mismatches(alone, std::vector<float>(all.begin() + row * 384,
                                                   all.begin() + (row + 1) * 384)) == 0);
  }
}

namespace {

GPTConfig tiny_bitnet(int64_t vocab) {
  GPTConfig cfg;
  cfg.vocab_size = vocab;
  cfg.block_size = 16;
  cfg.n_layer = 2;
  cfg.n_head = 2;
  cfg.n_embd = 32;
  cfg.linear.kind = LinearKind::bitlinear;
  cfg.fused_attention = false;  // the composed ops run in any mode on either device
  return cfg;
}

// Losses of a few AdamW steps of a tiny BitNet GPT on a repeating sequence.
std::vector<float> bitnet_losses(Device dev, const ComputeMode& mode, int steps) {
  Generator init(1), data(2);
  GPT model(tiny_bitnet(11), init);
  model.set_compute_mode(mode);
  FlatParameters params(model.named_parameters(), dev);
  std::vector<int64_t> ids(4 * 17);
  for (size_t i = 0; i < ids.size(); ++i) ids[i] = int64_t((i * 7 + i / 5) % 11);
  const Tensor all = from_vector(ids, {4, 17}, dev);
  const Tensor idx = all.slice(1, 0, 16).contiguous(), tgt = all.slice(1, 1, 17).contiguous();
  AdamW opt(params, {0.9, 0.99, 1e-8, 0.0});
  std::vector<float> losses;
  for (int s = 0; s < steps; ++s) {
    params.zero_grad();
    const Tensor loss = model.loss(idx, tgt, data);
    loss.backward();
    opt.step(3e-3);
    losses.push_back(float(loss.item()));
  }
  return losses;
}

}  // namespace

TEST_CASE("cpu: a bitlinear gpt learns a tiny corpus and repeats bit for bit") {
  const std::vector<float> a = bitnet_losses(Device::cpu(), ComputeMode(), 40);
  CHECK(a.back() < 0.5f * a.front());
  CHECK(bitnet_losses(Device::cpu(), ComputeMode(), 40) == a);
}

TEST_CASE("cuda: a bitlinear gpt in bf16 learns, tracks the CPU's start and repeats bit for bit") {
  BG_REQUIRE_CUDA();
  const ComputeMode bf16 = precision_mode(MatmulPrecision::bf16).on(Device::cuda(0));
  const std::vector<float> a = bitnet_losses(Device::cuda(0), bf16, 40);
  CHECK(a.back() < 0.5f * a.front());
  CHECK(bitnet_losses(Device::cuda(0), bf16, 40) == a);
  const std::vector<float> cpu = bitnet_losses(Device::cpu(), ComputeMode(), 1);
  CHECK(a.front() == doctest::Approx(cpu.front()).epsilon(1e-2));
}

}  // namespace bg::test

namespace bg::test {

TEST_CASE("cpu: ternary weights pack 4 to a byte and unpack to the same bits") {
  Generator gen(12);
  for (int64_t k : {1, 3, 4, 5, 17, 384}) {
    const TernaryWeights w = ternary_quantize(randn({7, k}, gen), TernaryScale::absmean);
    const Tensor packed = pack_ternary(w);
    CHECK(packed.shape() == Shape{7, (k + 3) / 4});
    const TernaryWeights back = unpack_ternary(packed, k, w.beta);
    CHECK(as_floats(back.q) == as_floats(w.q));
    CHECK(back.beta.item() == w.beta.item());
    // Codes w + 1 at bits 2 (k % 4): the first byte spelled out.
    const std::vector<float> q = as_floats(w.q);
    int expect = 0;
    for (int i = 0; i < 4; ++i) expect |= (i < k ? int(q[size_t(i)]) + 1 : 1) << (2 * i);
    CHECK(int(packed.to(DType::i64).to_vector<int64_t>()[0]) == expect);
  }
  // 2 bits a weight: 1/8 of fp16's bytes when K is a multiple of 4.
  const TernaryWeights big = ternary_quantize(randn({64, 4096}, gen), TernaryScale::absmean);
  CHECK(pack_ternary(big).numel() * 8 == big.q.numel() * 2);
  CHECK_THROWS_WITH(
      unpack_ternary(pack_ternary(big), 4000, big.beta),
      doctest::Contains("in = 4000 needs 1000 bytes a row, the packed array has 1024"));
  CHECK_THROWS_WITH(unpack_ternary(pack_ternary(big), 4096, zeros({2})),
                    doctest::Contains("the scale must be one f32 value"));
}

TEST_CASE("cuda: packing and unpacking give the CPU's bytes") {
  BG_REQUIRE_CUDA();
  Generator gen(13);
  for (int64_t k : {1, 5, 17, 384, 1537}) {
    const TernaryWeights w = ternary_quantize(randn({33, k}, gen), TernaryScale::absmean);
    const TernaryWeights wg{w.q.to(Device::cuda(0)), w.beta.to(Device::cuda(0)), Tensor()};
    const Tensor pg = pack_ternary(wg), pc = pack_ternary(w);
    CHECK(pg.to(Device::cpu()).to(DType::i64).to_vector<int64_t>() ==
          pc.to(DType::i64).to_vector<int64_t>());
    CHECK(as_floats(unpack_ternary(pg, k, wg.beta).q) == as_floats(w.q));
  }
}

}  // namespace bg::test
