// test_ops.cpp: one entry per op. Each builder returns an OpCase; BG_OP_TEST registers a CPU
// case (f32 vs f64 vs reference, finite differences) and a CUDA case (vs CPU, f32/f16/bf16).
// Sizes are deliberately odd (not multiples of 4/32/128); "strided" variants feed views.
#include <cmath>

#include "core/bide.h"
#include "harness.h"
#include "reference.h"

namespace bg::test {
namespace {

using V = std::vector<Tensor>;

OpCase unary_case(const char* name, Tensor (*fn)(const Tensor&), double (*f)(double),
                  Kind kind = Kind::normal) {
  OpCase c;
  c.name = name;
  c.inputs = {{{7, 13}, kind}};
  c.fn = [fn](const V& x) { return fn(x[0]); };
  c.reference = [f](const V& x) { return ref::map(x[0], f); };
  return c;
}

double gelu_ref(double x) {
  return 0.5 * x * (1 + std::tanh(0.7978845608028654 * (x + 0.044715 * x * x * x)));
}

double gelu_erf_ref(double x) { return 0.5 * x * (1 + std::erf(x / std::sqrt(2.0))); }

OpCase exp_case() {
  return unary_case("exp", bg::exp, [](double x) { return std::exp(x); });
}
OpCase log_case() {
  return unary_case(
      "log", bg::log, [](double x) { return std::log(x); }, Kind::positive);
}
OpCase tanh_case() {
  return unary_case("tanh", bg::tanh, [](double x) { return std::tanh(x); });
}
OpCase relu_case() {
  OpCase c = unary_case("relu", bg::relu, [](double x) { return x > 0 ? x : 0.0; });
  c.kinks = true;  // at 0
  return c;
}
OpCase gelu_case() { return unary_case("gelu", bg::gelu, gelu_ref); }
OpCase gelu_erf_case() { return unary_case("gelu_erf", bg::gelu_erf, gelu_erf_ref); }
OpCase gelu_erf_strided_case() {
  OpCase c = gelu_erf_case();
  c.noncontiguous = true;
  return c;
}
OpCase silu_case() {
  return unary_case("silu", bg::silu, [](double x) { return x / (1 + std::exp(-x)); });
}
OpCase sigmoid_case() {
  return unary_case("sigmoid", bg::sigmoid, [](double x) { return 1 / (1 + std::exp(-x)); });
}
OpCase neg_case() {
  return unary_case("neg", bg::neg, [](double x) { return -x; });
}
OpCase sqrt_case() {
  return unary_case(
      "sqrt", bg::sqrt, [](double x) { return std::sqrt(x); }, Kind::positive);
}
OpCase rsqrt_case() {
  return unary_case(
      "rsqrt", bg::rsqrt, [](double x) { return 1 / std::sqrt(x); }, Kind::positive);
}
OpCase softplus_case() {
  return unary_case("softplus", bg::softplus, [](double x) { return std::log1p(std::exp(x)); });
}
OpCase lgamma_case() {
  return unary_case(
      "lgamma", bg::lgamma, [](double x) { return std::lgamma(x); }, Kind::positive);
}
OpCase abs_case() {
  OpCase c = unary_case("abs", bg::abs, [](double x) { return std::fabs(x); });
  c.kinks = true;  // at 0
  return c;
}
OpCase affine_case() {
  OpCase c = unary_case("affine", bg::neg, [](double x) { return 2.5 * x - 0.75; });
  c.fn = [](const V& x) { return affine(x[0], 2.5, -0.75); };
  return c;
}
OpCase unary_strided_case() {
  OpCase c = gelu_case();
  c.noncontiguous = true;
  return c;
}

OpCase binary_case(const char* name, Tensor (*fn)(const Tensor&, const Tensor&),
                   double (*f)(double, double), Kind kind_b = Kind::normal) {
  OpCase c;
  c.name = name;
  c.inputs = {{{5, 7, 3}, Kind::normal}, {{7, 1}, kind_b}};
  c.fn = [fn](const V& x) { return fn(x[0], x[1]); };
  c.reference = [f](const V& x) { return ref::binary(x[0], x[1], f); };
  return c;
}
OpCase add_case() {
  return binary_case("add", bg::add, [](double a, double b) { return a + b; });
}
OpCase sub_case() {
  return binary_case("sub", bg::sub, [](double a, double b) { return a - b; });
}
OpCase mul_case() {
  return binary_case("mul", bg::mul, [](double a, double b) { return a * b; });
}
OpCase div_case() {
  return binary_case(
      "div", bg::div, [](double a, double b) { return a / b; }, Kind::positive);
}
OpCase maximum_case() {
  OpCase c = binary_case("maximum", bg::maximum, [](double a, double b) { return std::max(a, b); });
  c.half_grads_vs_f32 = false;  // half rounding creates ties between a and b
  c.kinks = true;               // at a == b
  return c;
}
OpCase minimum_case() {
  OpCase c = binary_case("minimum", bg::minimum, [](double a, double b) { return std::min(a, b); });
  c.half_grads_vs_f32 = false;  // half rounding creates ties between a and b
  c.kinks = true;               // at a == b
  return c;
}
OpCase mul_strided_case() {
  OpCase c = mul_case();
  c.inputs = {{{9, 11}, Kind::normal}, {{9, 11}, Kind::normal}};
  c.noncontiguous = true;
  return c;
}

OpCase where_case() {
  OpCase c;
  c.name = "where";
  c.inputs = {{{5, 6}, Kind::mask}, {{5, 6}}, {{6}}};
  c.fn = [](const V& x) { return where(x[0], x[1], x[2]); };
  c.reference = [](const V& x) {
    const Tensor m = x[0].to(DType::f64);
    return ref::binary(ref::binary(m, x[1], [](double c, double a) { return c * a; }),
                       ref::binary(m, x[2], [](double c, double b) { return (1 - c) * b; }),
                       [](double p, double q) { return p + q; });
  };
  return c;
}
OpCase masked_fill_case() {
  OpCase c;
  c.name = "masked_fill";
  c.inputs = {{{4, 9}}, {{4, 9}, Kind::mask}};
  c.fn = [](const V& x) { return masked_fill(x[0], x[1], -3.5); };
  return c;
}

OpCase reduce_case(const char* name, std::vector<int> dims, bool is_max, Shape shape = {4, 5, 6}) {
  OpCase c;
  c.name = name;
  c.inputs = {{shape}};
  c.fn = [dims, is_max](const V& x) { return is_max ? max(x[0], dims) : sum(x[0], dims); };
  std::vector<int> sorted = dims;
  for (int& d : sorted) d = d < 0 ? d + int(shape.size()) : d;
  std::sort(sorted.begin(), sorted.end());
  if (sorted.empty())
    for (int d = 0; d < int(shape.size()); ++d) sorted.push_back(d);
  c.reference = [sorted, is_max](const V& x) { return ref::reduce(x[0], sorted, is_max); };
  c.half_grads_vs_f32 = !is_max;
  return c;
}
OpCase sum_mid_case() { return reduce_case("sum dim 1", {1}, false); }
OpCase sum_all_case() {
  // A scalar sum of normal values can cancel to near zero, where a relative error says nothing
  // about the kernel: positive inputs keep the single output well conditioned.
  OpCase c = reduce_case("sum all", {}, false);
  c.inputs[0].kind = Kind::positive;
  return c;
}
OpCase sum_split_dims_case() { return reduce_case("sum dims 0 and 2", {0, 2}, false); }
OpCase sum_long_case() { return reduce_case("sum long rows", {-1}, false, {3, 5003}); }
OpCase sum_long_cols_case() { return reduce_case("sum long cols", {0}, false, {4099, 3}); }
OpCase max_case() { return reduce_case("max last", {-1}, true); }
OpCase max_mid_case() { return reduce_case("max dim 0", {0}, true); }
OpCase sum_strided_case() {
  OpCase c = sum_mid_case();
  c.noncontiguous = true;
  return c;
}
OpCase mean_case() {
  OpCase c;
  c.name = "mean";
  c.inputs = {{{6, 7, 3}}};
  c.fn = [](const V& x) { return mean(x[0], {0, 2}, true); };
  c.reference = [](const V& x) {
    return ref::map(ref::reduce(x[0], {0, 2}, false), [](double v) { return v / 18.0; })
        .reshape({1, 7, 1});
  };
  return c;
}
OpCase var_case() {
  OpCase c;
  c.name = "var";
  c.inputs = {{{5, 9}}};
  c.fn = [](const V& x) { return var(x[0], {1}); };
  c.reference = [](const V& x) {
    std::vector<double> v = ref::vals(x[0]), r(5);
    for (int i = 0; i < 5; ++i) {
      double mu = 0, s = 0;
      for (int j = 0; j < 9; ++j) mu += v[size_t(i * 9 + j)] / 9;
      for (int j = 0; j < 9; ++j) s += (v[size_t(i * 9 + j)] - mu) * (v[size_t(i * 9 + j)] - mu);
      r[size_t(i)] = s / 8;
    }
    return ref::make(r, {5});
  };
  return c;
}

OpCase matmul_case() {
  OpCase c;
  c.name = "matmul";
  c.inputs = {{{5, 37}}, {{37, 3}}};
  c.fn = [](const V& x) { return matmul(x[0], x[1]); };
  c.reference = [](const V& x) { return ref::matmul2d(x[0], x[1]); };
  return c;
}
OpCase matmul_transposed_case() {
  OpCase c;
  c.name = "matmul transposed operands";
  c.inputs = {{{37, 5}}, {{3, 37}}};
  c.fn = [](const V& x) { return matmul(x[0].transpose(0, 1), x[1].transpose(0, 1)); };
  c.reference = [](const V& x) {
    return ref::matmul2d(x[0].transpose(0, 1).contiguous(), x[1].transpose(0, 1).contiguous());
  };
  return c;
}
OpCase matmul_batched_case() {
  OpCase c;
  c.name = "matmul batched broadcast";
  c.inputs = {{{2, 3, 5, 7}}, {{7, 4}}};
  c.fn = [](const V& x) { return matmul(x[0], x[1]); };
  return c;
}
OpCase matmul_batched_strided_case() {
  OpCase c;
  c.name = "matmul batched strided";
  c.inputs = {{{3, 6, 9}}, {{3, 9, 5}}};
  c.fn = [](const V& x) { return matmul(x[0], x[1]); };
  c.noncontiguous = true;
  return c;
}
OpCase linear_case() {
  OpCase c;
  c.name = "linear";
  c.inputs = {{{2, 5, 7}}, {{6, 7}}, {{6}}};
  c.fn = [](const V& x) { return linear(x[0], x[1], x[2]); };
  return c;
}

// MatmulAlgo::naive, the reference algorithm: the same checks as the standard one (f64 finite
// differences, CUDA against the CPU, strided and transposed operands, broadcast batches).
ComputeMode naive_mode() {
  ComputeMode m;
  m.algo = MatmulAlgo::naive;
  return m;
}
OpCase matmul_naive_case() {
  OpCase c = matmul_case();
  c.name = "matmul naive";
  c.fn = [](const V& x) { return matmul(x[0], x[1], naive_mode()); };
  return c;
}
OpCase matmul_naive_transposed_case() {
  OpCase c = matmul_transposed_case();
  c.name = "matmul naive transposed operands";
  c.fn = [](const V& x) {
    return matmul(x[0].transpose(0, 1), x[1].transpose(0, 1), naive_mode());
  };
  return c;
}
OpCase matmul_naive_batched_strided_case() {
  OpCase c = matmul_batched_strided_case();
  c.name = "matmul naive batched strided";
  c.fn = [](const V& x) { return matmul(x[0], x[1], naive_mode()); };
  return c;
}
OpCase linear_naive_case() {
  OpCase c = linear_case();
  c.name = "linear naive";
  c.fn = [](const V& x) { return linear(x[0], x[1], x[2], naive_mode()); };
  return c;
}

OpCase softmax_case() {
  OpCase c;
  c.name = "softmax";
  c.inputs = {{{6, 37}}};
  c.fn = [](const V& x) { return softmax(x[0], -1); };
  c.reference = [](const V& x) { return ref::softmax_rows(x[0], false); };
  return c;
}
OpCase softmax_wide_case() {
  OpCase c = softmax_case();
  c.name = "softmax wide rows";
  c.inputs = {{{3, 1031}}};
  return c;
}
OpCase softmax_dim0_case() {
  OpCase c;
  c.name = "softmax dim 0";
  c.inputs = {{{9, 5}}};
  c.fn = [](const V& x) { return softmax(x[0], 0); };
  c.reference = [](const V& x) {
    return ref::softmax_rows(x[0].transpose(0, 1).contiguous(), false).transpose(0, 1).contiguous();
  };
  return c;
}
OpCase log_softmax_case() {
  OpCase c;
  c.name = "log_softmax";
  c.inputs = {{{2, 5, 33}}};
  c.fn = [](const V& x) { return log_softmax(x[0], -1); };
  c.reference = [](const V& x) { return ref::softmax_rows(x[0], true); };
  c.noncontiguous = true;
  return c;
}

// softmax(scale x) with keys after i + S - T masked: composed from masked_fill and softmax.
Tensor causal_softmax_reference(const Tensor& x, double scale) {
  const int64_t t = x.size(-2), s = x.size(-1);
  std::vector<uint8_t> future(size_t(t * s));
  for (int64_t i = 0; i < t; ++i)
    for (int64_t j = 0; j < s; ++j) future[size_t(i * s + j)] = j > i + s - t;
  const Tensor hidden = from_vector(future, {t, s});
  return masked_fill(softmax(masked_fill(x * scale, hidden, -INFINITY), -1), hidden, 0.0);
}
OpCase causal_softmax_case() {
  OpCase c;
  c.name = "causal_softmax";
  c.inputs = {{{2, 3, 7, 7}}};
  c.fn = [](const V& x) { return causal_softmax(x[0], 0.37); };
  c.reference = [](const V& x) { return causal_softmax_reference(x[0], 0.37); };
  c.noncontiguous = true;
  return c;
}
OpCase causal_softmax_cached_case() {  // 5 queries after 6 cached keys, long rows
  OpCase c = causal_softmax_case();
  c.name = "causal_softmax with cached keys";
  c.inputs = {{{3, 5, 11}}};
  return c;
}
OpCase causal_softmax_wide_case() {
  OpCase c = causal_softmax_case();
  c.name = "causal_softmax wide rows";
  c.inputs = {{{2, 300, 300}}};
  c.noncontiguous = false;
  return c;
}

Tensor ce_reference(const V& x, const std::string& reduction) {
  const Tensor logp = ref::softmax_rows(x[0], true);
  const std::vector<double> lp = ref::vals(logp);
  const std::vector<int64_t> t = x[1].to_vector<int64_t>();
  const int64_t v = x[0].size(-1);
  std::vector<double> rows(t.size());
  double total = 0, count = 0;
  for (size_t i = 0; i < t.size(); ++i) {
    rows[i] = t[i] == -100 ? 0.0 : -lp[i * size_t(v) + size_t(t[i])];
    total += rows[i];
    count += t[i] == -100 ? 0 : 1;
  }
  if (reduction == "none") return ref::make(rows, x[1].shape());
  return ref::make({reduction == "sum" ? total : total / count}, {});
}
OpCase ce_case(const char* name, std::string reduction) {
  OpCase c;
  c.name = name;
  c.inputs = {{{2, 7, 37}}, {{2, 7}, Kind::target, 37}};
  c.fn = [reduction](const V& x) { return cross_entropy(x[0], x[1], -100, reduction); };
  c.reference = [reduction](const V& x) { return ce_reference(x, reduction); };
  return c;
}
OpCase ce_mean_case() { return ce_case("cross_entropy mean", "mean"); }
// Rows the CUDA kernels move as 16-byte packs: a vocabulary divisible by 8 (every dtype), and one
// divisible by 4 only (f32 packs, f16/bf16 one by one); several packs per thread.
OpCase ce_packed_case(int64_t vocab, const char* name) {
  OpCase c = ce_case(name, "mean");
  c.inputs = {{{3, 5, vocab}}, {{3, 5}, Kind::target, vocab}};
  return c;
}
OpCase ce_packed8_case() { return ce_packed_case(2056, "cross_entropy, vocabulary 2056"); }
OpCase ce_packed4_case() { return ce_packed_case(4100, "cross_entropy, vocabulary 4100"); }
OpCase ce_sum_case() { return ce_case("cross_entropy sum", "sum"); }
OpCase ce_none_case() { return ce_case("cross_entropy none", "none"); }

OpCase embedding_case() {
  OpCase c;
  c.name = "embedding";
  c.inputs = {{{11, 9}}, {{3, 7}, Kind::index, 11}};
  c.fn = [](const V& x) { return embedding(x[0], x[1]); };
  c.reference = [](const V& x) {
    const std::vector<double> w = ref::vals(x[0]);
    const std::vector<int64_t> idx = x[1].to_vector<int64_t>();
    std::vector<double> r;
    for (int64_t i : idx)
      for (int j = 0; j < 9; ++j) r.push_back(w[size_t(i * 9 + j)]);
    return ref::make(r, {3, 7, 9});
  };
  return c;
}

OpCase embedding_large_case() {  // past the small-vocabulary scan: the radix-sort backward
  OpCase c;
  c.name = "embedding large vocab";
  c.inputs = {{{3001, 5}}, {{2003}, Kind::index, 3001}};
  c.fn = [](const V& x) { return embedding(x[0], x[1]); };
  return c;
}

OpCase dropout_add_case() {
  OpCase c;
  c.name = "dropout_add";
  c.inputs = {{{13, 17}}, {{13, 17}}};
  c.fn = [](const V& x) {
    Generator gen(78);
    return dropout_add(x[0], x[1], 0.3, true, gen);
  };
  c.reference = [](const V& x) {  // the residual plus bernoulli's mask on y, from the same counters
    Generator gen(78);
    return x[0] + x[1] * bernoulli(x[1].shape(), gen, 0.7, 1.0 / 0.7, x[1].dtype(), x[1].device());
  };
  c.noncontiguous = true;
  return c;
}
OpCase dropout_case() {
  OpCase c;
  c.name = "dropout";
  c.inputs = {{{13, 17}}};
  c.fn = [](const V& x) {
    Generator gen(77);
    return dropout(x[0], 0.3, true, gen);
  };
  // The kernel regenerates bernoulli's mask from the same counters: x times that mask.
  c.reference = [](const V& x) {
    Generator gen(77);
    return x[0] * bernoulli(x[0].shape(), gen, 0.7, 1.0 / 0.7, x[0].dtype(), x[0].device());
  };
  c.noncontiguous = true;
  return c;
}

OpCase layernorm_case() {
  OpCase c;
  c.name = "layernorm";
  c.inputs = {{{3, 7, 37}}, {{37}}, {{37}}};
  c.fn = [](const V& x) { return layernorm(x[0], x[1], x[2], 1e-5); };
  c.reference = [](const V& x) { return ref::layernorm_rows(x[0], x[1], x[2], 1e-5, false); };
  return c;
}
OpCase layernorm_long_case() {
  OpCase c = layernorm_case();
  c.name = "layernorm many rows";
  c.inputs = {{{301, 45}}, {{45}}, {{45}}};
  return c;
}
OpCase layernorm_strided_case() {
  OpCase c = layernorm_case();
  c.name = "layernorm strided";
  c.inputs = {{{9, 21}}, {{21}}, {{21}}};
  c.noncontiguous = true;
  return c;
}
// Rows of 2048 or more take CUDA's block-per-row kernel: aligned vector loads (4096), an odd
// width whose rows start unaligned (element loads, 2051), strided rows, a width past 4 groups
// of four per thread (6000).
OpCase layernorm_wide_case() {
  OpCase c = layernorm_case();
  c.name = "layernorm wide rows";
  c.inputs = {{{3, 4096}}, {{4096}}, {{4096}}};
  return c;
}
OpCase layernorm_wide_odd_case() {
  OpCase c = layernorm_case();
  c.name = "layernorm wide odd rows";
  c.inputs = {{{2, 2051}}, {{2051}}, {{2051}}};
  return c;
}
OpCase layernorm_wide_strided_case() {
  OpCase c = layernorm_case();
  c.name = "layernorm wide strided";
  c.inputs = {{{3, 2052}}, {{2052}}, {{2052}}};
  c.noncontiguous = true;
  return c;
}
OpCase rmsnorm_case() {
  OpCase c;
  c.name = "rmsnorm";
  c.inputs = {{{5, 33}}, {{33}}};
  c.fn = [](const V& x) { return rmsnorm(x[0], x[1], 1e-6); };
  c.reference = [](const V& x) { return ref::layernorm_rows(x[0], x[1], Tensor(), 1e-6, true); };
  return c;
}
OpCase rmsnorm_wide_case() {
  OpCase c = rmsnorm_case();
  c.name = "rmsnorm wide rows";
  c.inputs = {{{2, 6000}}, {{6000}}};
  return c;
}

OpCase attention_case() {
  OpCase c;
  c.name = "causal_self_attention";
  c.inputs = {{{2, 3, 9, 5}}, {{2, 3, 9, 5}}, {{2, 3, 9, 5}}};
  c.fn = [](const V& x) {
    Generator gen(5);
    return causal_self_attention(x[0], x[1], x[2], 0.0, false, gen);
  };
  c.reference = [](const V& x) {  // per (b, h): softmax(q k^T / sqrt(d) + mask) v
    std::vector<double> out;
    for (int b = 0; b < 2; ++b)
      for (int h = 0; h < 3; ++h) {
        const Tensor q = x[0].slice(0, b, b + 1).slice(1, h, h + 1).reshape({9, 5}).contiguous();
        const Tensor k = x[1].slice(0, b, b + 1).slice(1, h, h + 1).reshape({9, 5}).contiguous();
        const Tensor v = x[2].slice(0, b, b + 1).slice(1, h, h + 1).reshape({9, 5}).contiguous();
        std::vector<double> s = ref::vals(ref::matmul2d(q, k.transpose(0, 1).contiguous()));
        for (int i = 0; i < 9; ++i)
          for (int j = 0; j < 9; ++j)
            s[size_t(i * 9 + j)] = j > i ? -INFINITY : s[size_t(i * 9 + j)] / std::sqrt(5.0);
        const Tensor p = ref::softmax_rows(ref::make(s, {9, 9}), false);
        for (double e : ref::vals(ref::matmul2d(p, v))) out.push_back(e);
      }
    return ref::make(out, {2, 3, 9, 5});
  };
  return c;
}
OpCase attention_dropout_case() {
  OpCase c;
  c.name = "causal_self_attention dropout";
  c.inputs = {{{1, 2, 7, 3}}, {{1, 2, 7, 3}}, {{1, 2, 7, 3}}};
  c.fn = [](const V& x) {
    Generator gen(9);
    return causal_self_attention(x[0], x[1], x[2], 0.25, true, gen);
  };
  return c;
}

OpCase concat_split_case() {
  OpCase c;
  c.name = "concat split";
  c.inputs = {{{3, 7}}, {{3, 2}}};
  c.fn = [](const V& x) {
    const auto parts = split(x[0], {2, 5}, 1);
    return concat({parts[1], x[1] * 3.0, parts[0]}, 1);
  };
  c.reference = [](const V& x) {
    const std::vector<double> a = ref::vals(x[0]), b = ref::vals(x[1]);
    std::vector<double> r;
    for (int i = 0; i < 3; ++i) {
      for (int j = 2; j < 7; ++j) r.push_back(a[size_t(i * 7 + j)]);
      for (int j = 0; j < 2; ++j) r.push_back(3.0 * b[size_t(i * 2 + j)]);
      for (int j = 0; j < 2; ++j) r.push_back(a[size_t(i * 7 + j)]);
    }
    return ref::make(r, {3, 9});
  };
  return c;
}
OpCase views_case() {
  OpCase c;
  c.name = "views";
  c.inputs = {{{3, 4, 5}}, {{3, 1}}};
  c.fn = [](const V& x) {
    const Tensor y = x[0].permute({2, 0, 1}).slice(1, 1, 3).reshape({5, -1}).contiguous();
    const Tensor z =
        x[1].expand({3, 8}).transpose(0, 1).reshape({-1, 3}).slice(0, 0, 5).unsqueeze(0).squeeze(0);
    return concat({y * y, z}, 1);
  };
  return c;
}

OpCase bide_case(const char* variant) {
  OpCase c;
  c.name = std::string("bide_log_prob ") + variant;
  c.inputs = {{{4, 7, 9}}, {{4, 7}}, {{4}, Kind::index, 512}};
  const std::string v = variant;
  c.fn = [v](const V& x) {
    BideOptions opt;
    opt.code.bits = 9;
    REQUIRE(parse_enum(v, &opt.variant));
    return bide_log_prob(x[0] * 0.4, x[1] * 0.5, x[2], opt);
  };
  c.f32_tol = 1e-5;
  // The gradient has relu's kink 1[z > 0]: rounding W to half can flip a z near 0 (f32 would
  // not), so half gradients are checked against CPU half, not f32.
  c.half_grads_vs_f32 = false;
  c.kinks = true;
  return c;
}
OpCase bide_brute_case() { return bide_case("bruteforce"); }
OpCase bide_pre_case() { return bide_case("precomputed"); }

}  // namespace

BG_OP_TEST("exp", exp_case)
BG_OP_TEST("log", log_case)
BG_OP_TEST("tanh", tanh_case)
BG_OP_TEST("relu", relu_case)
BG_OP_TEST("gelu", gelu_case)
BG_OP_TEST("silu", silu_case)
BG_OP_TEST("sigmoid", sigmoid_case)
BG_OP_TEST("neg", neg_case)
BG_OP_TEST("sqrt", sqrt_case)
BG_OP_TEST("rsqrt", rsqrt_case)
BG_OP_TEST("abs", abs_case)
BG_OP_TEST("softplus", softplus_case)
BG_OP_TEST("lgamma", lgamma_case)
BG_OP_TEST("affine", affine_case)
BG_OP_TEST("gelu strided", unary_strided_case)
BG_OP_TEST("gelu_erf", gelu_erf_case)
BG_OP_TEST("gelu_erf strided", gelu_erf_strided_case)
BG_OP_TEST("add", add_case)
BG_OP_TEST("sub", sub_case)
BG_OP_TEST("mul", mul_case)
BG_OP_TEST("div", div_case)
BG_OP_TEST("maximum", maximum_case)
BG_OP_TEST("minimum", minimum_case)
BG_OP_TEST("mul strided", mul_strided_case)
BG_OP_TEST("where", where_case)
BG_OP_TEST("masked_fill", masked_fill_case)
BG_OP_TEST("sum dim 1", sum_mid_case)
BG_OP_TEST("sum all", sum_all_case)
BG_OP_TEST("sum dims 0 and 2", sum_split_dims_case)
BG_OP_TEST("sum long rows", sum_long_case)
BG_OP_TEST("sum long cols", sum_long_cols_case)
BG_OP_TEST("sum strided", sum_strided_case)
BG_OP_TEST("max last", max_case)
BG_OP_TEST("max dim 0", max_mid_case)
BG_OP_TEST("mean", mean_case)
BG_OP_TEST("var", var_case)
BG_OP_TEST("matmul", matmul_case)
BG_OP_TEST("matmul transposed operands", matmul_transposed_case)
BG_OP_TEST("matmul batched broadcast", matmul_batched_case)
BG_OP_TEST("matmul batched strided", matmul_batched_strided_case)
BG_OP_TEST("linear", linear_case)
BG_OP_TEST("matmul naive", matmul_naive_case)
BG_OP_TEST("matmul naive transposed operands", matmul_naive_transposed_case)
BG_OP_TEST("matmul naive batched strided", matmul_naive_batched_strided_case)
BG_OP_TEST("linear naive", linear_naive_case)
BG_OP_TEST("softmax", softmax_case)
BG_OP_TEST("causal_softmax", causal_softmax_case)
BG_OP_TEST("causal_softmax with cached keys", causal_softmax_cached_case)
BG_OP_TEST("causal_softmax wide rows", causal_softmax_wide_case)
BG_OP_TEST("softmax wide rows", softmax_wide_case)
BG_OP_TEST("softmax dim 0", softmax_dim0_case)
BG_OP_TEST("log_softmax strided", log_softmax_case)
BG_OP_TEST("cross_entropy mean", ce_mean_case)
BG_OP_TEST("cross_entropy sum", ce_sum_case)
BG_OP_TEST("cross_entropy none", ce_none_case)
BG_OP_TEST("cross_entropy, vocabulary 2056", ce_packed8_case)
BG_OP_TEST("cross_entropy, vocabulary 4100", ce_packed4_case)
BG_OP_TEST("embedding", embedding_case)
BG_OP_TEST("embedding large vocab", embedding_large_case)
BG_OP_TEST("dropout", dropout_case)
BG_OP_TEST("dropout_add", dropout_add_case)
BG_OP_TEST("layernorm", layernorm_case)
BG_OP_TEST("layernorm many rows", layernorm_long_case)
BG_OP_TEST("layernorm strided", layernorm_strided_case)
BG_OP_TEST("rmsnorm", rmsnorm_case)
BG_OP_TEST("layernorm wide rows", layernorm_wide_case)
BG_OP_TEST("layernorm wide odd rows", layernorm_wide_odd_case)
BG_OP_TEST("layernorm wide strided", layernorm_wide_strided_case)
BG_OP_TEST("rmsnorm wide rows", rmsnorm_wide_case)
BG_OP_TEST("causal_self_attention", attention_case)
BG_OP_TEST("causal_self_attention dropout", attention_dropout_case)
BG_OP_TEST("concat split", concat_split_case)
BG_OP_TEST("views", views_case)
BG_OP_TEST("bide_log_prob bruteforce", bide_brute_case)
BG_OP_TEST("bide_log_prob precomputed", bide_pre_case)

}  // namespace bg::test

namespace bg::test {

// train.precision's matmuls on CUDA. bf16: operands (and, in the backward, the incoming
// gradient) rounded to bf16 once, products accumulated in f32: equal to f64 products of the
// rounded values up to f32 accumulation. tf32: within TF32's 10-bit mantissa of the f64 product.
TEST_CASE("cuda: matmul precision bf16 and tf32 against rounded f64 products") {
  BG_REQUIRE_CUDA();
  Generator gen(test_seed());
  const Tensor a64 = randn({3, 37, 70}, gen, 0, 1, DType::f64);
  const Tensor b64 = randn({70, 45}, gen, 0, 1, DType::f64);
  const Tensor w64 = randn({3, 37, 45}, gen, 0, 1, DType::f64);
  auto round16 = [](const Tensor& t) { return t.to(DType::bf16).to(DType::f64); };
  for (MatmulPrecision p : {MatmulPrecision::bf16, MatmulPrecision::tf32}) {
    const bool bf16 = p == MatmulPrecision::bf16;
    CAPTURE(bf16);
    const Device gpu = Device::cuda(0);
    const Tensor a = a64.to(DType::f32).to(gpu).detach().requires_grad_(true);
    const Tensor b = b64.to(DType::f32).to(gpu).detach().requires_grad_(true);
    const Tensor out = matmul(a, b, precision_mode(p));
    CHECK(out.dtype() == DType::f32);
    sum(out * w64.to(DType::f32).to(gpu)).backward();
    const Tensor ra = bf16 ? round16(a64) : a64, rb = bf16 ? round16(b64) : b64;
    const Tensor rw = bf16 ? round16(w64) : w64;
    const Tensor want_out = matmul(ra, rb);
    const Tensor want_da = matmul(rw, rb.transpose(0, 1));
    const Tensor want_db = sum(matmul(ra.transpose(1, 2), rw), {0});
    const double tol = bf16 ? 1e-6 : 4e-3;
    CHECK(rel_err(out.to(Device::cpu()).to(DType::f64), want_out) < tol);
    CHECK(rel_err(a.grad().to(Device::cpu()).to(DType::f64), want_da) < tol);
    CHECK(rel_err(b.grad().to(Device::cpu()).to(DType::f64), want_db) < tol);
  }
}

// The naive algorithm runs one fused multiply-add chain per output on both devices: the CPU and
// CUDA agree bit for bit (odd sizes, a transposed operand, a broadcast batch), forward and
// backward, and under bf16 precision on CUDA too (operands rounded once, as the standard path).
TEST_CASE("cuda: the naive matmul algorithm gives the CPU's bits") {
  BG_REQUIRE_CUDA();
  Generator gen(test_seed());
  // Batched on both sides (a broadcast operand's gradient is a batch sum, a reduction whose
  // order is the reduce kernel's, not the matmul's), odd sizes, b transposed.
  const Tensor a0 = randn({3, 33, 70}, gen), b0 = randn({3, 45, 70}, gen),
               w0 = randn({3, 33, 45}, gen);
  auto run = [&](Device d) {
    const Tensor a = a0.to(d).detach().requires_grad_(true);
    const Tensor b = b0.to(d).detach().requires_grad_(true);
    const Tensor out = matmul(a, b.transpose(1, 2), naive_mode());
    sum(out * w0.to(d)).backward();
    return std::vector<std::vector<float>>{out.to_vector<float>(), a.grad().to_vector<float>(),
                                           b.grad().to_vector<float>()};
  };
  const auto cpu = run(Device::cpu()), gpu = run(Device::cuda(0));
  for (size_t i = 0; i < 3; ++i) {
    CAPTURE(i);  // 0: the product, 1: a's gradient, 2: b's
    CHECK(cpu[i] == gpu[i]);
  }
  // A broadcast operand in the forward: each batch reads the same b.
  const Tensor b2 = randn({45, 70}, gen);
  CHECK(matmul(a0, b2.transpose(0, 1), naive_mode()).to_vector<float>() ==
        matmul(a0.to(Device::cuda(0)), b2.to(Device::cuda(0)).transpose(0, 1), naive_mode())
            .to_vector<float>());
  // Under bf16 precision: the CPU reference is the naive product of the bf16-rounded operands.
  ComputeMode bf16 = naive_mode();
  bf16.precision = MatmulPrecision::bf16;
  const Tensor got = matmul(a0.to(Device::cuda(0)), b2.to(Device::cuda(0)).transpose(0, 1), bf16);
  const Tensor want = matmul(a0.to(DType::bf16).to(DType::f32),
                             b2.to(DType::bf16).to(DType::f32).transpose(0, 1), naive_mode());
  CHECK(got.to_vector<float>() == want.to_vector<float>());
  bf16.precision = MatmulPrecision::tf32;  // tf32 is cuBLAS's tensor-core format
  CHECK_THROWS_WITH(matmul(a0.to(Device::cuda(0)), b2.to(Device::cuda(0)).transpose(0, 1), bf16),
                    doctest::Contains("tf32 is cuBLAS's"));
}

TEST_CASE("cpu: matmul refuses a mode it cannot honour") {
  const Tensor a = zeros({2, 3}), b = zeros({3, 4});
  // bf16 and tf32 name CUDA matmuls; the CPU computes fp32, and says so rather than pretend.
  CHECK_THROWS_WITH(matmul(a, b, precision_mode(MatmulPrecision::bf16)),
                    doctest::Contains("bf16 precision is a CUDA mode"));
  CHECK(precision_mode(MatmulPrecision::bf16).on(Device::cpu()) == ComputeMode());
  ComputeMode m = naive_mode();
  m.precision = MatmulPrecision::tf32;
  CHECK_THROWS_WITH(matmul(a, b, m), doctest::Contains("tf32 precision is a CUDA mode"));
  m = ComputeMode();
  m.deterministic = true;
  CHECK_THROWS_WITH(matmul(a, b, m), doctest::Contains("'standard' is not one"));
  m.algo = MatmulAlgo::naive;  // one chain per output in a fixed order: batch-invariant
  CHECK(matmul(a, b, m).shape() == Shape{2, 4});
  CHECK(m.str() == "fp32 naive deterministic");
}

// A producer that stores the bf16 operand of the matmul consuming it (layernorm / gelu with a
// bf16 output under bf16 precision) must give exactly what the matmul's own rounding of the f32
// output gave in the forward, bit for bit. Its gradient then arrives in bf16 (a tensor's
// gradient has the tensor's dtype, as under PyTorch's autocast), so the gradients upstream of it
// match the f32-output path to bf16 rounding.
namespace {

struct Narrowed {
  std::vector<float> out, grads;
};

Narrowed run_producer_into_matmul(Device device, bool narrow, const ComputeMode& mode) {
  Generator gen(31);
  auto leaf = [&](Shape s) {
    return randn(s, gen, 0, 1, DType::f32).to(device).detach().requires_grad_(true);
  };
  const Tensor x = leaf({3, 7, 40}), w = leaf({40}), b = leaf({40}), fc = leaf({96, 40}),
               proj = leaf({40, 96}), r = leaf({3, 7, 40});
  const Tensor ln = narrow ? layernorm(x, w, b, 1e-5, mode) : layernorm(x, w, b, 1e-5);
  const Tensor h = linear(ln, fc, Tensor(), mode);
  const Tensor act = narrow ? gelu(h, mode) : gelu(h);
  const Tensor out = linear(act, proj, Tensor(), mode);
  sum(out * r).backward();
  Narrowed n;
  n.out = out.to(DType::f32).to_vector<float>();
  for (const Tensor* t : {&x, &w, &b, &fc, &proj}) {
    const std::vector<float> g = t->grad().to_vector<float>();
    n.grads.insert(n.grads.end(), g.begin(), g.end());
  }
  return n;
}

}  // namespace

TEST_CASE("cpu: layernorm and gelu narrow to bf16 exactly as a cast does") {
  Generator gen(5);
  const Tensor x = randn({4, 33}, gen, 0, 1, DType::f32), w = randn({33}, gen, 0, 1);
  CHECK(rel_err(layernorm(x, w, Tensor(), 1e-5, DType::bf16).to(DType::f64),
                layernorm(x, w, Tensor(), 1e-5).to(DType::bf16).to(DType::f64)) == 0.0);
  CHECK(rel_err(gelu(x, DType::bf16).to(DType::f64), gelu(x).to(DType::bf16).to(DType::f64)) ==
        0.0);
  CHECK(rel_err(gelu_erf(x, DType::bf16).to(DType::f64),
                gelu_erf(x).to(DType::bf16).to(DType::f64)) == 0.0);
  CHECK_THROWS_WITH(gelu(x.to(DType::f64), DType::bf16), doctest::Contains("only f32 -> bf16"));
  CHECK_THROWS_WITH(layernorm(x, w, Tensor(), 1e-5, DType::f16),
                    doctest::Contains("only f32 -> bf16"));
  // The CPU never narrows: its matmuls compute fp32 whatever train.precision says.
  CHECK(stored_dtype(precision_mode(MatmulPrecision::bf16), Consumer::matmul, DType::f32,
                     Device::cpu()) == DType::f32);
}

TEST_CASE("cuda: bf16-stored layernorm and gelu outputs give the matmul's own rounding") {
  BG_REQUIRE_CUDA();
  const ComputeMode bf16 = precision_mode(MatmulPrecision::bf16);
  const Device gpu = Device::cuda(0);
  CHECK(stored_dtype(bf16, Consumer::matmul, DType::f32, gpu) == DType::bf16);
  CHECK(stored_dtype(bf16, Consumer::any, DType::f32, gpu) == DType::f32);
  const Narrowed cast = run_producer_into_matmul(gpu, false, bf16);
  const Narrowed stored = run_producer_into_matmul(gpu, true, bf16);
  CHECK(cast.out == stored.out);
  const int64_t n = int64_t(cast.grads.size());
  CHECK(rel_err(from_vector(stored.grads, {n}), from_vector(cast.grads, {n})) < 1e-2);
  // Layernorm and GELU backward read a bf16 gradient in the kernel: the same bits as the
  // gradient widened to f32 first.
  Generator gen(8);
  const Tensor x0 = randn({5, 70}, gen, 0, 1, DType::f32, gpu), w0 = randn({70}, gen, 0, 1);
  const Tensor g16 = randn({5, 70}, gen, 0, 1, DType::bf16, gpu);
  for (bool is_ln : {true, false}) {
    CAPTURE(is_ln);
    std::vector<float> grads[2];
    for (int narrow = 0; narrow < 2; ++narrow) {
      const Tensor x = x0.detach().requires_grad_(true);
      const DType out = narrow ? DType::bf16 : DType::f32;
      const Tensor y = is_ln ? layernorm(x, w0.to(gpu), Tensor(), 1e-5, out) : gelu(x, out);
      y.backward(narrow ? g16 : g16.to(DType::f32));
      grads[narrow] = x.grad().to_vector<float>();
    }
    CHECK(grads[0] == grads[1]);
  }
  // The gradient of each operand has the operand's dtype.
  const Tensor a = zeros({4, 8}, DType::bf16, gpu).requires_grad_(true);
  const Tensor b = ones({8, 3}, DType::f32, gpu).requires_grad_(true);
  sum(matmul(a, b, bf16)).backward();
  CHECK(a.grad().dtype() == DType::bf16);
  CHECK(b.grad().dtype() == DType::f32);
  CHECK(stored_dtype(ComputeMode(), Consumer::matmul, DType::f32, gpu) == DType::f32);
  CHECK_THROWS_WITH(matmul(zeros({2, 3}, DType::bf16, gpu), zeros({3, 2}, DType::f32, gpu)),
                    doctest::Contains("dtype mismatch"));
}

// The fused residual add draws dropout()'s mask and rounds as the two ops do: equal bit for bit,
// forward and both gradients, on the CPU and (f32 and bf16) on CUDA.
void check_dropout_add_matches_two_ops(Device device, DType dtype) {
  Generator init(41);
  const Tensor x0 = randn({37, 29}, init, 0, 1, dtype, device);
  const Tensor y0 = randn({37, 29}, init, 0, 1, dtype, device);
  const Tensor w = randn({37, 29}, init, 0, 1, dtype, device);
  std::vector<float> got[2][3];
  for (int fused = 0; fused < 2; ++fused) {
    const Tensor x = x0.detach().requires_grad_(true), y = y0.detach().requires_grad_(true);
    Generator gen(42);
    const Tensor out = fused ? dropout_add(x, y, 0.2, true, gen) : x + dropout(y, 0.2, true, gen);
    sum(out * w).backward();
    got[fused][0] = out.to(DType::f32).to_vector<float>();
    got[fused][1] = x.grad().to(DType::f32).to_vector<float>();
    got[fused][2] = y.grad().to(DType::f32).to_vector<float>();
  }
  for (int k = 0; k < 3; ++k) CHECK(got[0][k] == got[1][k]);
}

TEST_CASE("cpu: dropout_add equals x + dropout(y) bit for bit") {
  check_dropout_add_matches_two_ops(Device::cpu(), DType::f32);
  Generator gen;
  CHECK_THROWS_WITH(dropout_add(zeros({2, 3}), zeros({3, 2}), 0.1, true, gen),
                    doctest::Contains("share shape and dtype"));
}

TEST_CASE("cuda: dropout_add equals x + dropout(y) bit for bit") {
  BG_REQUIRE_CUDA();
  check_dropout_add_matches_two_ops(Device::cuda(0), DType::f32);
  check_dropout_add_matches_two_ops(Device::cuda(0), DType::bf16);
}

// A binary op whose operand is a transposed view (an (in, out) weight gradient added into an
// (out, in) slot) takes the tiled kernel: its bits must be the generic kernel's (the operand
// made contiguous first), in place and not, either operand transposed, odd sizes.
TEST_CASE("cuda: a binary op over a transposed operand gives the contiguous operand's bits") {
  BG_REQUIRE_CUDA();
  Generator init(21);
  for (const DType dt : {DType::f32, DType::bf16, DType::f16})
    for (const auto& [rows, cols] : std::vector<std::pair<int64_t, int64_t>>{
             {70, 45}, {33, 97}, {1, 5}, {64, 32}, {129, 1}}) {
      CAPTURE(dtype_name(dt));
      CAPTURE(rows);
      CAPTURE(cols);
      const Device gpu = Device::cuda(0);
      const Tensor s = randn({rows, cols}, init, 0, 1, dt, gpu);
      const Tensor t = randn({cols, rows}, init, 1, 1, dt, gpu).transpose(0, 1);
      const Tensor tc = t.contiguous();
      using BinaryFn = Tensor (*)(const Tensor&, const Tensor&);
      for (const BinaryFn op : {BinaryFn(bg::add), BinaryFn(bg::sub), BinaryFn(bg::mul),
                                BinaryFn(bg::div), BinaryFn(bg::maximum)}) {
        CHECK(bit_mismatches(op(s, t), op(s, tc)) == 0);
        CHECK(bit_mismatches(op(t, s), op(tc, s)) == 0);
      }
      const Tensor into = s.clone(), want = s.clone();
      add_(into, t);
      add_(want, tc);
      CHECK(bit_mismatches(into, want) == 0);
      if (dt == DType::f32) {  // and the CPU's f32 sum
        const Tensor cpu = s.to(Device::cpu()) + t.to(Device::cpu());
        CHECK(bit_mismatches(into.to(Device::cpu()), cpu) == 0);
      }
    }
}

// x feeds a layernorm and a second consumer (a pre-norm residual stream): the layernorm's backward
// folds the other consumer's pending gradient into dx in its kernel. x's gradient must equal the
// sum of the two taken separately, bit for bit, whichever backward runs first; rows of odd width,
// with and without weight and bias.
void check_layernorm_folds_pending_gradient(Device device, DType dtype) {
  Generator init(7);
  const Tensor x0 = randn({5, 3, 37}, init, 0, 1, dtype, device);
  const Tensor w = randn({37}, init, 1, 0.1, dtype, device);
  const Tensor b = randn({37}, init, 0, 0.1, dtype, device);
  const Tensor up = randn({5, 3, 37}, init, 0, 1, dtype, device);
  const Tensor side = randn({5, 3, 37}, init, 0, 1, dtype, device);
  for (int affine = 0; affine < 2; ++affine)
    for (int side_first = 0; side_first < 2; ++side_first) {
      CAPTURE(affine);
      CAPTURE(side_first);
      const Tensor wp = affine ? w : Tensor(), bp = affine ? b : Tensor();
      auto ln_term = [&](const Tensor& x) { return sum(layernorm(x, wp, bp, 1e-5) * up); };
      auto side_term = [&](const Tensor& x) { return sum((x * side) * side); };
      // Together: x = 2 * x0 has a node, so its two gradients meet in one backward().
      const Tensor xa = x0.detach().requires_grad_(true);
      const Tensor x = xa * 2.0;
      // The later op's backward runs first: side_first puts the side consumer after the norm.
      const Tensor loss = side_first ? ln_term(x) + side_term(x) : side_term(x) + ln_term(x);
      loss.backward();
      // Apart: each term's gradient into a leaf of its own (the factor 2 is exact).
      const Tensor x_ln = x0.detach().requires_grad_(true),
                   x_side = x0.detach().requires_grad_(true);
      ln_term(x_ln * 2.0).backward();
      side_term(x_side * 2.0).backward();
      const Tensor g_ln = x_ln.grad(), g_side = x_side.grad();
      const Tensor want = side_first ? g_side + g_ln : g_ln + g_side;
      CHECK(xa.grad().to(DType::f32).to_vector<float>() == want.to(DType::f32).to_vector<float>());
    }
}

TEST_CASE("cpu: layernorm backward folds the pending residual gradient bit for bit") {
  check_layernorm_folds_pending_gradient(Device::cpu(), DType::f32);
  check_layernorm_folds_pending_gradient(Device::cpu(), DType::f64);
}

TEST_CASE("cuda: layernorm backward folds the pending residual gradient bit for bit") {
  BG_REQUIRE_CUDA();
  check_layernorm_folds_pending_gradient(Device::cuda(0), DType::f32);
}

}  // namespace bg::test
