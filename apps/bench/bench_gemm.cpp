// bench_gemm.cpp: `bitgrad bench gemm`: the batch-invariant GEMM (train.deterministic's matmul,
// cuBLASLt with the algorithm pinned for every M) beside cuBLAS's default choice, on 4096^3 and
// on the linear layers of the Baby GPT and GPT-2 124M (16384 tokens a step): the forward
// x W^T, the input gradient dy W and the weight gradient x^T dy, each as the training step runs
// it. bf16 operands and output everywhere (the products train.precision: bf16 runs); 4096^3 also
// in fp32 and tf32. Median microseconds over inputs rotated past the L2 cache, TFLOP/s, and the
// floor at the H200's measured 728 TFLOP/s bf16 rate. Writes JSON.
#include <algorithm>
#include <cmath>
#include <cstdio>

#include "bench_common.h"
#include "core/ops.h"
#include "kernels/cuda/device_runtime.h"
#if BITGRAD_WITH_CUDA
#include "kernels/cuda/cuda_kernels.h"
#endif

namespace bg::cli {
namespace {

struct GemmShape {
  const char* model;
  const char* layer;
  int64_t tokens, in, out;
};

#if BITGRAD_WITH_CUDA
// The product as the kernels see it: a (1, R, K) @ b (1, K, C) view triple.
KView as_batch_of_one(const Tensor& t) {
  KView v = t.kview();
  v.ndim = 3;
  v.shape[2] = t.size(1);
  v.strides[2] = t.strides()[1];
  v.shape[1] = t.size(0);
  v.strides[1] = t.strides()[0];
  v.shape[0] = 1;
  v.strides[0] = 0;
  return v;
}

#endif

struct Product {
  const char* name;  // fwd: x W^T; dx: dy W; dw: x^T dy (the weight gradient, K over tokens)
  Tensor a, b;
  bool k_over_rows;
};

}  // namespace

int run_bench_gemm(const Args& args) {
  args.allow_only({"out", "reps"});
  BG_CHECK(args.positional.size() == 1, "bench",
           "usage: bitgrad bench gemm [--out FILE] [--reps N]");
  BG_CHECK(cuda_available(), "bench", "no CUDA device: the GEMM benchmark times GPU kernels");
#if BITGRAD_WITH_CUDA
  const int reps = int(parse_integer(args.option("reps", "30"), "--reps", 5, 100000));
  const Device dev = Device::cuda(0);
  const StreamHandle stream = stream_for(dev);
  BenchReport report("gemm", cuda::device_info(0).name);
  report.settings().add("reps", reps).add("bf16_tensor_tflops", kBf16TensorFlops / 1e12);
  std::printf("%-5s %-8s %-4s %-4s %6s %5s %6s %10s %10s %8s %8s %9s %6s\n", "model", "layer",
              "prod", "type", "M", "K", "N", "cublas_us", "pinned_us", "cublasTF", "pinnedTF",
              "floor_us", "ratio");
  const std::vector<GemmShape> shapes = {
      {"square", "4096^3", 4096, 4096, 4096}, {"baby", "c_attn", 16384, 384, 1152},
      {"baby", "attn.proj", 16384, 384, 384}, {"baby", "c_fc", 16384, 384, 1536},
      {"baby", "mlp.proj", 16384, 1536, 384}, {"baby", "lm_head", 16384, 384, 65},
      {"gpt2", "c_attn", 16384, 768, 2304},   {"gpt2", "attn.proj", 16384, 768, 768},
      {"gpt2", "c_fc", 16384, 768, 3072},     {"gpt2", "mlp.proj", 16384, 3072, 768},
      {"gpt2", "lm_head", 16384, 768, 50304}};
  for (const GemmShape& s : shapes) {
    const bool square = std::string(s.model) == "square";
    std::vector<MatmulPrecision> precisions = {MatmulPrecision::bf16};
    if (square) precisions = {MatmulPrecision::bf16, MatmulPrecision::tf32, MatmulPrecision::fp32};
    for (const MatmulPrecision precision : precisions) {
      const DType dt = precision == MatmulPrecision::bf16 ? DType::bf16 : DType::f32;
      const double esize = double(dtype_size(dt));
      const double set_bytes = esize * double(s.tokens * s.in + s.out * s.in + s.tokens * s.out);
      const int sets = int(std::max(2.0, std::ceil(128e6 / set_bytes)));
      Generator gen(7);
      std::vector<Tensor> xs, ws, dys;
      for (int i = 0; i < sets; ++i) {
        xs.push_back(randn({s.tokens, s.in}, gen, 0, 1, DType::f32, dev).to(dt));
        ws.push_back(randn({s.out, s.in}, gen, 0, 0.02, DType::f32, dev).to(dt));
        dys.push_back(randn({s.tokens, s.out}, gen, 0, 1, DType::f32, dev).to(dt));
      }
      const double flops = 2.0 * double(s.tokens) * double(s.in) * double(s.out);
      for (const char* prod : {"fwd", "dx", "dw"}) {
        if (square && std::string(prod) != "fwd") continue;
        std::vector<double> t_cublas, t_pinned;
        for (int it = 0; it < reps + 3; ++it) {
          const size_t i = size_t(it % sets);
          const std::string p = prod;
          const Product pr = p == "fwd"  ? Product{prod, xs[i], ws[i].transpose(0, 1), false}
                             : p == "dx" ? Product{prod, dys[i], ws[i], false}
                                         : Product{prod, xs[i].transpose(0, 1), dys[i], true};
          const Tensor out = empty({pr.a.size(0), pr.b.size(1)}, dt, dev);
          const KView va = as_batch_of_one(pr.a), vb = as_batch_of_one(pr.b),
                      vo = as_batch_of_one(out);
          const BatchInvariantGemm opt{precision, pr.k_over_rows};
          const double tc = bench_time_ms(
              dev, [&] { cuda::matmul(vo, va, vb, MatmulEpilogue{}, precision, stream); });
          const double tp = bench_time_ms(dev, [&] {
            cuda::matmul_batch_invariant(vo, va, vb, MatmulEpilogue{}, opt, stream);
          });
          if (it >= 3) {
            t_cublas.push_back(tc * 1e3);
            t_pinned.push_back(tp * 1e3);
          }
        }
        const double uc = median(t_cublas), up = median(t_pinned);
        const double floor_us = 1e6 * flops / kBf16TensorFlops;
        const double tfc = flops / (uc * 1e-6) / 1e12, tfp = flops / (up * 1e-6) / 1e12;
        const char* type = enum_name(precision);
        const int64_t m = std::string(prod) == "dw" ? s.in : s.tokens;
        const int64_t k = std::string(prod) == "fwd"  ? s.in
                          : std::string(prod) == "dx" ? s.out
                                                      : s.tokens;
        const int64_t n = std::string(prod) == "dx" ? s.in : s.out;
        std::printf("%-5s %-8s %-4s %-4s %6lld %5lld %6lld %10.1f %10.1f %8.1f %8.1f %9.1f %6.3f\n",
                    s.model, s.layer, prod, type, (long long)m, (long long)k, (long long)n, uc, up,
                    tfc, tfp, floor_us, uc / up);
        report.row(JsonObject()
                       .add("model", s.model)
                       .add("layer", s.layer)
                       .add("product", prod)
                       .add("precision", type)
                       .add("m", m)
                       .add("k", k)
                       .add("n", n)
                       .add("cublas_us", uc)
                       .add("pinned_us", up)
                       .add("cublas_tflops", tfc)
                       .add("pinned_tflops", tfp)
                       .add("bf16_floor_us", floor_us)
                       .add("pinned_over_cublas_speed", uc / up)
                       .add("input_sets", sets));
      }
    }
  }
  report.write(args);
  return 0;
#else
  return 1;
#endif
}

}  // namespace bg::cli
