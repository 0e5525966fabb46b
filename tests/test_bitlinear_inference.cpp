// test_bitlinear_inference.cpp: BitLinear on packed weights (core/bitlinear.h). The W2A8
// layout against its definition, the W2A8 and bit-plane products equal to the training
// forward's int8 product bit for bit at odd shapes (every K, not only multiples of 4, 16, 128
// or 256), CUDA equal to the CPU, the packed layer equal to `bitlinear`, and the errors.
#include <array>
#include <cstring>

#include "core/bitlinear.h"
#include "harness.h"
#if BITGRAD_WITH_CUDA
#include "kernels/cuda/w2a8_tiles.h"
#endif

namespace bg::test {
namespace {

std::vector<float> floats(const Tensor& t) {
  return t.to(Device::cpu()).to(DType::f32).contiguous().to_vector<float>();
}

int64_t mismatches(const std::vector<float>& a, const std::vector<float>& b) {
  if (a.size() != b.size()) return -1;
  int64_t bad = 0;
  for (size_t i = 0; i < a.size(); ++i) bad += std::memcmp(&a[i], &b[i], 4) != 0;
  return bad;
}

ActQuantOptions act_bits(int bits) {
  ActQuantOptions o;
  o.bits = bits;
  return o;
}

PackedTernary packed_on(const TernaryWeights& w, Device device) {
  return w2_from_packed(pack_ternary(w).to(device), w.q.size(1), w.beta);
}

QuantizedActivations on_device(const QuantizedActivations& x, Device device) {
  QuantizedActivations out = x;
  out.q = padded_int8(x.q.size(0), x.q.size(1), device);
  out.q.copy_(x.q.to(device));
  out.step = x.step.to(device);
  return out;
}

// A W2A8 problem: ternary weights (N, K), a bias, int8 activations (M, K).
struct W2A8Case {
  TernaryWeights w;
  Tensor bias;
  QuantizedActivations x8;
};
W2A8Case w2a8_case(int64_t m, int64_t k, int64_t n, Generator& gen) {
  W2A8Case c{ternary_quantize(randn({n, k}, gen, 0, 0.02), TernaryScale::absmean), Tensor(), {}};
  c.bias = randn({n}, gen);
  c.x8 = act_quantize(randn({m, k}, gen), act_bits(8));
  return c;
}

// The odd shapes: M from a GEMV to several tiles, K around every block width.
const std::vector<std::array<int64_t, 3>> kShapes = {
    {1, 1, 1},     {1, 3, 7},      {2, 4, 9},      {1, 129, 65},     {5, 17, 130},   {16, 128, 64},
    {17, 255, 33}, {1, 383, 1000}, {70, 384, 257}, {130, 1000, 129}, {300, 517, 200}};

}  // namespace

TEST_CASE("cpu: the w2 layout puts each code where its definition says") {
  Generator gen(21);
  for (int64_t k : {1, 4, 5, 127, 128, 129, 300}) {
    const TernaryWeights w = ternary_quantize(randn({3, k}, gen), TernaryScale::absmean);
    const PackedTernary p = packed_on(w, Device::cpu());
    const int64_t blocks = (k + 127) / 128;
    CHECK(p.w2.shape() == Shape{3, blocks * 32});
    const std::vector<float> q = floats(w.q);
    const std::vector<int64_t> bytes = p.w2.to(DType::i64).to_vector<int64_t>();
    int64_t wrong = 0;
    for (int64_t r = 0; r < 3; ++r)
      for (int64_t e = 0; e < blocks * 128; ++e) {
        const int64_t h = e / 128, u = (e / 64) % 2, s = (e / 16) % 4, t = (e / 4) % 4, j = e % 4;
        const int64_t byte = bytes[size_t(r * blocks * 32 + h * 32 + 8 * t + 4 * u + j)];
        const int64_t code = (byte >> (2 * s)) & 3;
        wrong += code != (e < k ? int64_t(q[size_t(r * k + e)]) + 1 : 1);
      }
    CHECK(wrong == 0);
  }
}

TEST_CASE("cpu: w2a8 and bit-plane products equal the int8 product bit for bit") {
  Generator gen(22);
  for (const auto& [m, k, n] : kShapes)
    for (bool with_bias : {false, true}) {
      CAPTURE(m);
      CAPTURE(k);
      CAPTURE(n);
      const TernaryWeights w = ternary_quantize(randn({n, k}, gen, 0, 0.02), TernaryScale::absmean);
      const Tensor bias = with_bias ? randn({n}, gen) : Tensor();
      const QuantizedActivations x8 = act_quantize(randn({m, k}, gen), act_bits(8));
      const std::vector<float> want = floats(int8_linear(x8, w, bias, DType::f32));
      CHECK(mismatches(floats(w2a8_linear(x8, packed_on(w, Device::cpu()), bias, DType::f32)),
                       want) == 0);
      // Ternary activations (act_bits 2) through the bit planes.
      const QuantizedActivations x2 = act_quantize(randn({m, k}, gen), act_bits(2));
      const std::vector<float> want2 = floats(int8_linear(x2, w, bias, DType::f32));
      const Tensor y2 =
          bitplane_linear(bitplanes(x2.q), x2.step, bitplanes(w.q), w.beta, bias, DType::f32);
      CHECK(mismatches(floats(y2), want2) == 0);
    }
  // Binary activations (+-1, no zeros) are ternary ones too.
  const TernaryWeights w = ternary_quantize(randn({9, 70}, gen), TernaryScale::absmean);
  QuantizedActivations xb = act_quantize(randn({4, 70}, gen), act_bits(2));
  std::vector<int8_t> signs(4 * 70);
  for (size_t i = 0; i < signs.size(); ++i) signs[i] = int8_t(i % 3 == 0 ? -1 : 1);
  xb.q.copy_(from_vector(signs, {4, 70}));
  const Tensor yb =
      bitplane_linear(bitplanes(xb.q), xb.step, bitplanes(w.q), w.beta, Tensor(), DType::f32);
  CHECK(mismatches(floats(yb), floats(int8_linear(xb, w, Tensor(), DType::f32))) == 0);
}

TEST_CASE("cuda: w2a8 (GEMV and GEMM) and bit-plane kernels give the CPU's bits") {
  BG_REQUIRE_CUDA();
  const Device cuda = Device::cuda(0);
  Generator gen(23);
  std::vector<std::array<int64_t, 3>> shapes = kShapes;
  shapes.push_back({1, 4096, 512});  // a GEMV with every warp on several blocks
  shapes.push_back({256, 2048, 300});
  for (const auto& [m, k, n] : shapes) {
    CAPTURE(m);
    CAPTURE(k);
    CAPTURE(n);
    const auto [w, bias, x8] = w2a8_case(m, k, n, gen);
    const PackedTernary pc = packed_on(w, Device::cpu()), pg = packed_on(w, cuda);
    CHECK(pg.w2.to(Device::cpu()).to(DType::i64).to_vector<int64_t>() ==
          pc.w2.to(DType::i64).to_vector<int64_t>());
    const std::vector<float> want = floats(w2a8_linear(x8, pc, bias, DType::f32));
    const QuantizedActivations xg = on_device(x8, cuda);
    // Both kernel families: on Hopper, batches of 2 and up take the wgmma kernel by default.
    for (cuda::KernelFamily family : {cuda::KernelFamily::best, cuda::KernelFamily::portable}) {
      const PinKernelFamily pin(family);
      CHECK(mismatches(floats(w2a8_linear(xg, pg, bias.to(cuda), DType::f32)), want) == 0);
      CHECK(mismatches(floats(w2a8_linear(xg, pg, Tensor(), DType::bf16)),
                       floats(w2a8_linear(x8, pc, Tensor(), DType::f32).to(DType::bf16))) == 0);
    }
    const QuantizedActivations x2 = act_quantize(randn({m, k}, gen), act_bits(2));
    const TernaryPlanes xp = bitplanes(x2.q), wp = bitplanes(w.q);
    const QuantizedActivations x2g = on_device(x2, cuda);
    const TernaryPlanes xpg = bitplanes(x2g.q);
    const TernaryWeights wg{w.q.to(cuda), w.beta.to(cuda), Tensor()};
    const TernaryPlanes wpg = bitplanes(wg.q);
    CHECK(floats(xpg.planes) == floats(xp.planes));
    CHECK(floats(wpg.planes) == floats(wp.planes));
    const std::vector<float> want2 =
        floats(bitplane_linear(xp, x2.step, wp, w.beta, bias, DType::f32));
    CHECK(
        mismatches(floats(bitplane_linear(xpg, x2g.step, wpg, wg.beta, bias.to(cuda), DType::f32)),
                   want2) == 0);
  }
}

#if BITGRAD_WITH_CUDA
TEST_CASE("cuda: every tile shape of the Hopper W2A8 kernel gives the CPU's bits") {
  BG_REQUIRE_HOPPER_KERNELS();
  // Ragged in every dimension against each tile: batch rows past a tile, features past a
  // warpgroup's 64, K past a 128-k block and past a stage, and several stages.
  const Device cuda = Device::cuda(0);
  Generator gen(29);
  for (const auto& [m, k, n] : std::vector<std::array<int64_t, 3>>{
           {2, 1, 1}, {17, 255, 33}, {70, 384, 257}, {130, 1000, 129}, {300, 1517, 200}}) {
    CAPTURE(m);
    CAPTURE(k);
    CAPTURE(n);
    const auto [w, bias, x8] = w2a8_case(m, k, n, gen);
    const std::vector<float> want =
        floats(w2a8_linear(x8, packed_on(w, Device::cpu()), bias, DType::f32));
    const std::vector<float> want16 =
        floats(w2a8_linear(x8, packed_on(w, Device::cpu()), Tensor(), DType::f32).to(DType::bf16));
    const PackedTernary pg = packed_on(w, cuda);
    const QuantizedActivations xg = on_device(x8, cuda);
    const Tensor bias_g = bias.to(cuda);
    for (int tile = 0; tile < cuda::w2a8_wgmma_tile_count(); ++tile) {
      CAPTURE(cuda::w2a8_wgmma_tile_name(tile));
      const Tensor y = empty({m, n}, DType::f32, cuda), y16 = empty({m, n}, DType::bf16, cuda);
      cuda::w2a8_linear_wgmma(y.kview(), xg.q.kview(), pg.w2.kview(), xg.step.kview(),
                              pg.beta.kview(), bias_g.kview(), tile, stream_for(cuda));
      cuda::w2a8_linear_wgmma(y16.kview(), xg.q.kview(), pg.w2.kview(), xg.step.kview(),
                              pg.beta.kview(), KView{}, tile, stream_for(cuda));
      CHECK(mismatches(floats(y), want) == 0);
      CHECK(mismatches(floats(y16), want16) == 0);
    }
  }
}
#endif

TEST_CASE("cuda: kernels above 48 KB of shared memory run on a second GPU too") {
  // Their shared-memory opt-in is a setting of the current device: made once and remembered, it
  // would leave the second GPU without it and the launch would fail there.
  BG_REQUIRE_CUDA();
  if (cuda_device_count() < 2) return skip_case("needs two GPUs");
  Generator gen(31);
  const auto [w, bias, x8] = w2a8_case(256, 1024, 300, gen);  // K a multiple of 16: q moves as is
  const std::vector<float> want =
      floats(w2a8_linear(x8, packed_on(w, Device::cpu()), bias, DType::f32));
  const std::vector<float> want_int8 = floats(int8_linear(x8, w, bias, DType::f32));
  for (int index : {0, 1}) {
    CAPTURE(index);
    const Device dev = Device::cuda(index);
    const QuantizedActivations xg = on_device(x8, dev);
    for (cuda::KernelFamily family : {cuda::KernelFamily::best, cuda::KernelFamily::portable}) {
      const PinKernelFamily pin(family);
      CHECK(mismatches(floats(w2a8_linear(xg, packed_on(w, dev), bias.to(dev), DType::f32)),
                       want) == 0);
      CHECK(mismatches(floats(int8_linear(xg, TernaryWeights{w.q.to(dev), w.beta.to(dev), Tensor()},
                                          bias.to(dev), DType::f32)),
                       want_int8) == 0);
    }
  }
}

TEST_CASE("bitlinear on packed weights equals the training forward, and refuses bad input") {
  Generator gen(24);
  for (Device device : {Device::cpu(), Device::cuda(0)}) {
    if (device.is_cuda() && !cuda_available()) continue;
    ComputeMode mode;
    if (device.is_cuda()) mode.precision = MatmulPrecision::bf16;
    mode = mode.on(device);
    BitLinearOptions opt;
    for (BitNorm norm : {BitNorm::rms, BitNorm::layer, BitNorm::none}) {
      opt.act.norm = norm;
      const Tensor x = randn({3, 5, 100}, gen).to(device), wt = randn({37, 100}, gen, 0, 0.02);
      const Tensor bias = randn({37}, gen).to(device);
      NoGradGuard no_grad;
      const Tensor y = bitlinear(x, wt.to(device), bias, opt, mode);
      const TernaryWeights q = ternary_quantize(wt, opt.weight_scale);
      const Tensor yp = bitlinear_packed(x, packed_on(q, device), bias, opt, mode);
      CHECK(yp.shape() == y.shape());
      CHECK(yp.dtype() == y.dtype());
      CHECK(mismatches(floats(yp), floats(y)) == 0);
    }
  }
  const TernaryWeights w = ternary_quantize(randn({8, 10}, gen), TernaryScale::absmean);
  const Tensor packed = pack_ternary(w);
  CHECK_THROWS_WITH(w2_from_packed(packed, 13, w.beta),
                    doctest::Contains("in = 13 needs 4 bytes a row, the packed array has 3"));
  CHECK_THROWS_WITH(w2_from_packed(packed, 10, zeros({3})),
                    doctest::Contains("the weight scale must be one f32 value, got 3"));
  CHECK_THROWS_WITH(w2_from_packed(packed.to(DType::f32), 10, w.beta),
                    doctest::Contains("must be an (out, ceil(in / 4)) u8 array"));
  const PackedTernary p = w2_from_packed(packed, 10, w.beta);
  Tensor x = randn({2, 10}, gen);
  x.requires_grad_();
  CHECK_THROWS_WITH(bitlinear_packed(x, p, Tensor(), BitLinearOptions(), ComputeMode()),
                    doctest::Contains("packed weights are for inference"));
  NoGradGuard no_grad;
  CHECK_THROWS_WITH(
      bitlinear_packed(randn({2, 11}, gen), p, Tensor(), BitLinearOptions(), ComputeMode()),
      doctest::Contains("does not match packed weights of 10 inputs"));
}

}  // namespace bg::test
