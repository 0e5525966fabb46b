// test_bitlinear_fused.cpp: BitLinear's fused passes equal the unfused ops they replace, bit for
// bit: the backward's one pass over x (x~ recomputed from x and the quantiser's statistics, the
// norm's backward beside it) against int8_dequantize(act_quantize(x)) and layernorm_backward,
// and the residual added in the int8 product's epilogue against residual + the product, on the
// CPU and on CUDA (both kernel families), at odd sizes, every norm and several act_bits; and
// the activation quantiser's CUDA kernels against the CPU at the widths training uses.
#include <array>

#include "core/bitlinear.h"
#include "core/dispatch.h"
#include "harness.h"
#include "layers/bitlinear.h"

namespace bg::test {
namespace {

// The unfused input side of the backward: x_q dequantised, and layernorm_backward with no
// affine parameters on the quantiser's statistics.
BitLinearInputGradients unfused(const Tensor& dxn, const Tensor& x, const QuantizedActivations& q,
                                const ActQuantOptions& opt, DType x_tilde_dtype) {
  BitLinearInputGradients out;
  out.x_tilde = int8_dequantize(q.q, q.step, Tensor(), x_tilde_dtype);
  if (opt.norm == BitNorm::none) {
    out.dx = dxn;
    return out;
  }
  out.dx = empty(x.shape(), x.dtype(), x.device());
  ScratchArena scratch(x.device());
  BG_DISPATCH(x.device(), layernorm_backward, out.dx.kview(), null_view(), null_view(), null_view(),
              dxn.kview(), x.kview(), null_view(), view_or_null(q.mean), q.rstd.kview(),
              opt.norm == BitNorm::rms, scratch, stream_for(x.device()));
  return out;
}

ActQuantOptions act_with(BitNorm norm, int bits) {
  ActQuantOptions o;
  o.norm = norm;
  o.bits = bits;
  return o;
}

// Fused against unfused for x of `x_dtype` on `device`, dxn of `g_dtype`, x~ of `t_dtype`.
void check_input_backward(Device device, DType x_dtype, DType g_dtype, DType t_dtype,
                          Generator& gen) {
  for (auto [m, k] : {std::array<int64_t, 2>{1, 1},
                      {7, 17},
                      {37, 100},
                      {130, 768},
                      {65, 3072},
                      {9, 2500},
                      {5, 13001}})  // 13001 f32: rows too wide to stage, read from memory
    for (BitNorm norm : {BitNorm::none, BitNorm::rms, BitNorm::layer})
      for (int bits : {2, 8}) {
        CAPTURE(m);
        CAPTURE(k);
        CAPTURE(int(norm));
        CAPTURE(bits);
        const ActQuantOptions opt = act_with(norm, bits);
        const Tensor x = randn({m, k}, gen, 0.1, 1.5, DType::f32, device).to(x_dtype);
        const Tensor dxn = randn({m, k}, gen, 0, 1, DType::f32, device).to(g_dtype);
        const QuantizedActivations q = act_quantize(x, opt);
        const BitLinearInputGradients want = unfused(dxn, x, q, opt, t_dtype);
        QuantizedActivations stats = q;
        stats.q = Tensor();  // the fused pass must not need x_q
        const BitLinearInputGradients got = bitlinear_input_backward(dxn, x, stats, opt, t_dtype);
        CHECK(got.x_tilde.dtype() == t_dtype);
        CHECK(bit_mismatches(got.x_tilde, want.x_tilde) == 0);
        CHECK(got.dx.dtype() == want.dx.dtype());
        CHECK(bit_mismatches(got.dx, want.dx) == 0);
      }
}

// int8_linear with the residual in its epilogue against residual + int8_linear.
void check_residual_epilogue(Device device, Generator& gen) {
  for (auto [m, k, n] : {std::array<int64_t, 3>{1, 1, 1},
                         {7, 17, 5},
                         {130, 300, 129},
                         {257, 768, 768},
                         {2100, 96, 1000}})
    for (DType out : device.is_cuda() ? std::vector<DType>{DType::f32, DType::bf16}
                                      : std::vector<DType>{DType::f32}) {
      CAPTURE(m);
      const Tensor x = randn({m, k}, gen, 0.1, 1.5, DType::f32, device);
      const Tensor w = randn({n, k}, gen, 0, 0.02, DType::f32, device);
      const Tensor bias = randn({n}, gen, 0, 1, DType::f32, device);
      const Tensor residual = randn({m, n}, gen, 0, 3, DType::f32, device).to(out);
      const QuantizedActivations xq = act_quantize(x, act_with(BitNorm::rms, 8));
      const TernaryWeights wq = ternary_quantize(w, TernaryScale::absmean);
      const Tensor want = residual + int8_linear(xq, wq, bias, out);
      CHECK(bit_mismatches(int8_linear(xq, wq, bias, out, residual), want) == 0);
      if (device.is_cuda()) {
        const PinKernelFamily pin(cuda::KernelFamily::portable);
        CHECK(bit_mismatches(int8_linear(xq, wq, bias, out, residual), want) == 0);
      }
    }
}

// The layer's forward_onto against residual + forward, values and gradients.
void check_forward_onto(Device device, const ComputeMode& mode, Generator& gen) {
  BitLinearOptions opt;
  opt.act = act_with(BitNorm::rms, 8);
  const Tensor x0 = randn({3, 11, 40}, gen, 0, 1, DType::f32, device);
  const Tensor w0 = randn({24, 40}, gen, 0, 0.05, DType::f32, device);
  const Tensor b0 = randn({24}, gen, 0, 1, DType::f32, device);
  const Tensor r0 = randn({3, 11, 24}, gen, 0, 1, DType::f32, device);
  const Tensor g = randn({3, 11, 24}, gen, 0, 1, DType::f32, device);
  std::vector<Tensor> grads[2];
  Tensor outs[2];
  for (int fused = 0; fused < 2; ++fused) {
    Tensor x = x0.detach(), w = w0.detach(), b = b0.detach(), r = r0.detach();
    for (Tensor* t : {&x, &w, &b, &r}) t->requires_grad_();
    outs[fused] =
        fused ? bitlinear(x, w, b, opt, mode, Consumer::any, r) : r + bitlinear(x, w, b, opt, mode);
    sum(outs[fused] * g).backward();
    grads[fused] = {x.grad(), w.grad(), b.grad(), r.grad()};
  }
  CHECK(bit_mismatches(outs[1], outs[0]) == 0);
  for (size_t i = 0; i < 4; ++i) CHECK(bit_mismatches(grads[1][i], grads[0][i]) == 0);
}

}  // namespace

TEST_CASE("cpu: bitlinear's fused backward pass equals dequantise + norm backward, bit for bit") {
  Generator gen(41);
  check_input_backward(Device::cpu(), DType::f32, DType::f32, DType::f32, gen);
  check_input_backward(Device::cpu(), DType::f64, DType::f64, DType::f64, gen);
}

TEST_CASE("cuda: bitlinear's fused backward pass equals dequantise + norm backward, bit for bit") {
  BG_REQUIRE_CUDA();
  Generator gen(42);
  const Device dev = Device::cuda(0);
  check_input_backward(dev, DType::bf16, DType::bf16, DType::bf16, gen);
  check_input_backward(dev, DType::f32, DType::bf16, DType::bf16, gen);
  check_input_backward(dev, DType::f32, DType::f32, DType::f32, gen);
  check_input_backward(dev, DType::f16, DType::f16, DType::f32, gen);
}

TEST_CASE("cuda: the activation quantiser gives the CPU's bits at whole and ragged widths") {
  // The register-held kernels at the widths training uses (every group whole: no bounds
  // checks) and beside them (partial last groups), bf16 rows held raw or as floats, f32 rows.
  BG_REQUIRE_CUDA();
  Generator gen(46);
  for (int64_t k : {384, 768, 1536, 3072, 767, 3071, 2500})
    for (DType dtype : {DType::bf16, DType::f32})
      for (BitNorm norm : {BitNorm::none, BitNorm::rms, BitNorm::layer}) {
        CAPTURE(k);
        CAPTURE(int(norm));
        const ActQuantOptions opt = act_with(norm, norm == BitNorm::none ? 4 : 8);
        const Tensor x = randn({37, k}, gen, 0.1, 1.5).to(dtype);
        const QuantizedActivations cpu = act_quantize(x.to(DType::f32), opt);
        const QuantizedActivations gpu = act_quantize(x.to(Device::cuda(0)), opt);
        CHECK(bit_mismatches(gpu.q, cpu.q) == 0);
        CHECK(bit_mismatches(gpu.step, cpu.step) == 0);
        CHECK(bit_mismatches(gpu.quant_scale, cpu.quant_scale) == 0);
        if (norm != BitNorm::none) CHECK(bit_mismatches(gpu.rstd, cpu.rstd) == 0);
      }
}

TEST_CASE("cpu: the residual in the int8 product's epilogue equals adding it after") {
  Generator gen(43);
  check_residual_epilogue(Device::cpu(), gen);
  check_forward_onto(Device::cpu(), ComputeMode(), gen);
}

TEST_CASE("cuda: the residual in the int8 product's epilogue equals adding it after") {
  BG_REQUIRE_CUDA();
  Generator gen(44);
  check_residual_epilogue(Device::cuda(0), gen);
  check_forward_onto(Device::cuda(0), precision_mode(MatmulPrecision::bf16), gen);
  check_forward_onto(Device::cuda(0), ComputeMode(), gen);
}

TEST_CASE("bitlinear's fused backward refuses statistics that do not fit") {
  Generator gen(45);
  const Tensor x = randn({4, 8}, gen);
  const ActQuantOptions opt = act_with(BitNorm::layer, 8);
  QuantizedActivations q = act_quantize(x, opt);
  QuantizedActivations short_rows = q;
  short_rows.step = q.step.slice(0, 0, 3);
  CHECK_THROWS_WITH(bitlinear_input_backward(x, x, short_rows, opt, DType::f32),
                    doctest::Contains("do not cover 4 rows"));
  QuantizedActivations no_mean = q;
  no_mean.mean = Tensor();
  CHECK_THROWS_WITH(bitlinear_input_backward(x, x, no_mean, opt, DType::f32),
                    doctest::Contains("lack the norm's"));
  CHECK_THROWS_WITH(bitlinear_input_backward(randn({4, 7}, gen), x, q, opt, DType::f32),
                    doctest::Contains("does not match the input"));
}

}  // namespace bg::test
