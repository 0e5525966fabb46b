// test_bitlinear_prepared.cpp: what is quantised ahead of a BitLinear layer equals what the
// layer would make itself, bit for bit, on the CPU and on CUDA: weights quantised together
// (ternary_quantize_all, the one pass a model makes a forward) against ternary_quantize one at a
// time, W~ against int8_dequantize (more weights than one launch takes, odd widths, both
// scales); a LayerNorm that quantises its own output (layernorm_quantize) against layernorm then
// act_quantize (every norm and act_bits, widths up to past the fused kernel's); bitlinear given
// either gives the output and gradients it gives alone; and a layer uses what it is handed for
// one forward only.

#include "core/bitlinear.h"
#include "harness.h"
#include "layers/bitlinear.h"
#include "layers/norms.h"

namespace bg::test {
namespace {

// Weights of awkward shapes: K of 0, 1, 3, 17 and 383 (no 16-byte loads), wide and tall ones,
// and enough small ones that CUDA needs two launches of its 48.
std::vector<Tensor> awkward_weights(Generator& gen, Device device) {
  std::vector<Tensor> w;
  for (auto [rows, cols] : {std::pair<int64_t, int64_t>{1, 1},
                            {3, 17},
                            {37, 100},
                            {130, 383},
                            {96, 3072},
                            {2304, 768},
                            {5, 3},
                            {3, 0}})  // no element: beta 1e-5, only padding
    w.push_back(randn({rows, cols}, gen, 0.0, 0.02).to(device));
  for (int i = 0; i < 45; ++i)
    w.push_back(randn({7 + i, 4 * (i % 5) + 8}, gen, 0.0, 0.02).to(device));
  w.push_back(zeros({4, 8}, DType::f32, device));  // beta clamps to 1e-5
  return w;
}

void check_group_against_single(Device device, DType tilde) {
  Generator gen(31);
  const std::vector<Tensor> w = awkward_weights(gen, device);
  for (TernaryScale method : {TernaryScale::absmean, TernaryScale::absmedian}) {
    CAPTURE(enum_name(method));
    const std::vector<TernaryWeights> all = ternary_quantize_all(w, method, tilde);
    const std::vector<TernaryWeights> bare = ternary_quantize_all(w, method);
    REQUIRE(all.size() == w.size());
    for (size_t i = 0; i < w.size(); ++i) {
      CAPTURE(i);
      const TernaryWeights one = ternary_quantize(w[i], method);
      // On the CPU, the quantiser of record for both backends.
      const TernaryWeights cpu = ternary_quantize(w[i].to(Device::cpu()), method);
      CHECK(bit_mismatches(all[i].beta, one.beta) == 0);
      CHECK(bit_mismatches(all[i].beta, cpu.beta) == 0);
      CHECK(bit_mismatches(all[i].q, one.q) == 0);
      CHECK(bit_mismatches(all[i].q, cpu.q) == 0);
      CHECK(bit_mismatches(bare[i].q, one.q) == 0);
      CHECK_FALSE(bare[i].tilde.defined());
      REQUIRE(all[i].tilde.defined());
      CHECK(all[i].tilde.dtype() == tilde);
      CHECK(bit_mismatches(all[i].tilde, int8_dequantize(one.q, Tensor(), one.beta, tilde)) == 0);
    }
  }
}

}  // namespace

TEST_CASE("cpu: weights quantised together equal ternary_quantize one by one, W~ included") {
  check_group_against_single(Device::cpu(), DType::f32);
  check_group_against_single(Device::cpu(), DType::f64);
  CHECK(ternary_quantize_all({}, TernaryScale::absmean).empty());
  CHECK_THROWS_WITH(ternary_quantize_all({zeros({2, 2})}, TernaryScale::absmean, DType::bf16),
                    doctest::Contains("W~ can be f32 or f64"));
  CHECK_THROWS_WITH(ternary_quantize_all({zeros({2, 2}), zeros({4})}, TernaryScale::absmean),
                    doctest::Contains("weight must be (out, in)"));
}

TEST_CASE("cuda: weights quantised together give the CPU's bits, W~ included, over two launches") {
  BG_REQUIRE_CUDA();
  check_group_against_single(Device::cuda(0), DType::f32);
  check_group_against_single(Device::cuda(0), DType::bf16);
}

namespace {

// bitlinear with weights and input quantised ahead against bitlinear alone: the output and all
// gradients bit for bit, for the mode's W~ dtype and for one the backward cannot use.
void check_quantised_ahead(Device device, const ComputeMode& mode, DType tilde) {
  Generator gen(32);
  BitLinearOptions opt;
  const Tensor x0 = randn({3, 33, 40}, gen), w0 = randn({24, 40}, gen, 0, 0.1);
  const Tensor b0 = randn({24}, gen), g = randn({3, 33, 24}, gen).to(device);
  std::vector<Tensor> got[2];
  for (int ahead = 0; ahead < 2; ++ahead) {
    Tensor x = x0.to(device).detach(), w = w0.to(device).detach(), b = b0.to(device).detach();
    x.requires_grad_();
    w.requires_grad_();
    b.requires_grad_();
    BitLinearPrepared prepared;
    if (ahead) {
      prepared.weights = ternary_quantize_all({w}, opt.weight_scale, tilde)[0];
      prepared.input = act_quantize(x.detach().reshape({-1, 40}), opt.act);
    }
    const Tensor y = bitlinear(x, w, b, opt, mode, Consumer::any, Tensor(), prepared);
    sum(y * g).backward();
    got[ahead] = {y, x.grad(), w.grad(), b.grad()};
  }
  for (size_t i = 0; i < 4; ++i) CHECK(bit_mismatches(got[1][i], got[0][i]) == 0);
}

}  // namespace

TEST_CASE("cpu: bitlinear with weights quantised ahead equals bitlinear alone, and checks them") {
  check_quantised_ahead(Device::cpu(), ComputeMode(), DType::f32);
  check_quantised_ahead(Device::cpu(), ComputeMode(), DType::f64);  // W~ not the operand: unused
  Generator gen(33);
  const Tensor x = randn({4, 8}, gen), w = randn({6, 8}, gen);
  BitLinearPrepared other;
  other.weights = ternary_quantize(randn({5, 8}, gen), TernaryScale::absmean);
  CHECK_THROWS_WITH(
      bitlinear(x, w, Tensor(), BitLinearOptions(), ComputeMode(), Consumer::any, Tensor(), other),
      doctest::Contains("were not made from this (6, 8) weight"));
  BitLinearPrepared rows;
  rows.input = act_quantize(randn({3, 8}, gen), ActQuantOptions());
  CHECK_THROWS_WITH(
      bitlinear(x, w, Tensor(), BitLinearOptions(), ComputeMode(), Consumer::any, Tensor(), rows),
      doctest::Contains("was not made from this (4, 8) input"));
  ActQuantOptions four;
  four.bits = 4;
  BitLinearPrepared bits;
  bits.input = act_quantize(x, four);
  CHECK_THROWS_WITH(
      bitlinear(x, w, Tensor(), BitLinearOptions(), ComputeMode(), Consumer::any, Tensor(), bits),
      doctest::Contains("with act_bits 8"));
}

TEST_CASE("cuda: bitlinear with weights quantised ahead equals bitlinear alone, every precision") {
  BG_REQUIRE_CUDA();
  const Device cuda = Device::cuda(0);
  check_quantised_ahead(cuda, precision_mode(MatmulPrecision::bf16).on(cuda), DType::bf16);
  check_quantised_ahead(cuda, precision_mode(MatmulPrecision::bf16).on(cuda), DType::f32);
  check_quantised_ahead(cuda, ComputeMode(), DType::f32);
}

namespace {

// The quantised activations' parts bit for bit.
void check_same_quantized(const QuantizedActivations& got, const QuantizedActivations& want) {
  CHECK(bit_mismatches(got.q, want.q) == 0);
  CHECK(bit_mismatches(got.step, want.step) == 0);
  CHECK(bit_mismatches(got.quant_scale, want.quant_scale) == 0);
  CHECK(got.rstd.defined() == want.rstd.defined());
  CHECK(got.mean.defined() == want.mean.defined());
  if (want.rstd.defined()) CHECK(bit_mismatches(got.rstd, want.rstd) == 0);
  if (want.mean.defined()) CHECK(bit_mismatches(got.mean, want.mean) == 0);
}

// layernorm_quantize against layernorm then act_quantize of its stored output: y, x_q and every
// statistic bit for bit, and y's gradient as layernorm's.
void check_layernorm_quantize(Device device) {
  Generator gen(35);
  std::vector<std::pair<DType, DType>> dtypes{{DType::f32, DType::f32}};
  if (device.is_cuda())
    dtypes.insert(dtypes.end(), {{DType::f32, DType::bf16}, {DType::bf16, DType::bf16}});
  for (int64_t c : {1, 3, 17, 100, 128, 383, 384, 768, 1000, 1024, 1100, 3072})
    for (auto [in, out] : dtypes)
      for (int affine = 0; affine < 3; ++affine)
        for (auto [norm, bits] :
             {std::pair<BitNorm, int>{BitNorm::rms, 8}, {BitNorm::layer, 4}, {BitNorm::none, 2}}) {
          CAPTURE(c);
          CAPTURE(affine);
          CAPTURE(enum_name(norm));
          CAPTURE(dtype_name(in));
          CAPTURE(dtype_name(out));
          const Tensor x = randn({37, c}, gen, 0.3, 2.0).to(in).to(device);
          const Tensor w = affine ? randn({c}, gen, 1.0, 0.2).to(in).to(device) : Tensor();
          const Tensor b = affine == 2 ? randn({c}, gen, 0.0, 0.2).to(in).to(device) : Tensor();
          ActQuantOptions opt;
          opt.norm = norm;
          opt.bits = bits;
          const NormedActivations got = layernorm_quantize(x, w, b, 1e-5, out, opt);
          const Tensor y = layernorm(x, w, b, 1e-5, out);
          const QuantizedActivations q = act_quantize(y, opt);
          CHECK(got.y.dtype() == out);
          CHECK(bit_mismatches(got.y, y) == 0);
          check_same_quantized(got.q, q);
        }
  // A batch of sequences (3-D) and y's gradient.
  Tensor x = randn({2, 19, 384}, gen).to(device).detach(), x2 = x.detach();
  x.requires_grad_();
  x2.requires_grad_();
  const Tensor w = randn({384}, gen, 1.0, 0.2).to(device), g = randn({2, 19, 384}, gen).to(device);
  const NormedActivations got =
      layernorm_quantize(x, w, Tensor(), 1e-5, DType::f32, ActQuantOptions());
  CHECK(got.q.q.size(0) == 38);
  sum(got.y * g).backward();
  sum(layernorm(x2, w, Tensor(), 1e-5) * g).backward();
  CHECK(bit_mismatches(x.grad(), x2.grad()) == 0);
}

}  // namespace

TEST_CASE("cpu: a LayerNorm quantising its output equals layernorm then act_quantize") {
  check_layernorm_quantize(Device::cpu());
}

TEST_CASE("cuda: a LayerNorm quantising its output equals layernorm then act_quantize") {
  BG_REQUIRE_CUDA();
  check_layernorm_quantize(Device::cuda(0));
}

TEST_CASE(
    "cpu: a BitLinear layer uses the input a LayerNorm quantised for it, for that input only") {
  Generator gen(36);
  LayerNorm ln(16, true);
  BitLinear a(16, 12, true, BitLinearOptions(), gen);
  const Tensor x = randn({5, 16}, gen);
  REQUIRE(a.input_quantizer());
  const Tensor alone = a.forward(ln.forward_for_matmul(x));
  NormedActivations normed = ln.forward_quantized(x, *a.input_quantizer());
  CHECK(bit_mismatches(normed.y, ln.forward_for_matmul(x)) == 0);
  a.set_quantized_input(normed.y, normed.q);
  CHECK(bit_mismatches(a.forward(normed.y), alone) == 0);
  // What is handed over is what the next forward on that input multiplies: here another
  // input's quantisation, to show it is used, and only by that forward.
  const Tensor other = randn({5, 16}, gen);
  const Tensor want = a.forward(other);
  a.set_quantized_input(normed.y, act_quantize(other, a.options().act));
  CHECK(bit_mismatches(a.forward(normed.y), want) == 0);
  CHECK(bit_mismatches(a.forward(normed.y), alone) == 0);
  // Handed over for one tensor, ignored by a forward on another.
  a.set_quantized_input(other, act_quantize(other, a.options().act));
  CHECK(bit_mismatches(a.forward(normed.y), alone) == 0);
}

TEST_CASE("cpu: a BitLinear layer uses weights quantised ahead for its next forward only") {
  Generator gen(34);
  BitLinear a(16, 12, true, BitLinearOptions(), gen), b(12, 8, false, BitLinearOptions(), gen);
  const Tensor x = randn({5, 16}, gen);
  const Tensor alone = b.forward(a.forward(x));
  quantize_bitlinear_weights({&a, &b});
  CHECK(bit_mismatches(b.forward(a.forward(x)), alone) == 0);
  // Weights handed over are what the next forward multiplies by, and only that forward.
  const Tensor other = randn({12, 16}, gen);
  a.set_quantized(ternary_quantize(other, TernaryScale::absmean));
  CHECK(bit_mismatches(a.forward(x),
                       bitlinear(x, other, a.bias, BitLinearOptions(), ComputeMode())) == 0);
  CHECK(bit_mismatches(a.forward(x),
                       bitlinear(x, a.weight, a.bias, BitLinearOptions(), ComputeMode())) == 0);
}

}  // namespace bg::test
