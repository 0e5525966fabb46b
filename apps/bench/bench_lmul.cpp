// bench_lmul.cpp: `bitgrad bench lmul`: the L-Mul GEMM (MatmulAlgo::lmul, kernels/cuda/
// lmul_gemm.cu) against cuBLAS SGEMM without TF32 on the same GPU, at 4096^3 and at the baby
// GPT's products (16384 tokens a step: the forward x W^T, the input gradient dy W and the weight
// gradient x^T dy of each linear, and attention's QK^T and PV for 64 x 6 heads of 256 x 64).
// Median microseconds over inputs rotated past L2, and multiply-adds per second. The integer
// pipe's floor is stated in docs/lmul.md. Writes JSON.
#include <cmath>
#include <cstdio>

#include "bench_common.h"
#include "core/dispatch.h"
#include "core/ops.h"
#include "kernels/cuda/device_runtime.h"
#if BITGRAD_WITH_CUDA
#include "kernels/cuda/cuda_kernels.h"
#endif

namespace bg::cli {

int run_bench_lmul(const Args& args) {
  args.allow_only({"out", "reps", "mantissa-bits"});
  BG_CHECK(args.positional.size() == 1, "bench",
           "usage: bitgrad bench lmul [--mantissa-bits M] [--out FILE] [--reps N]");
  BG_CHECK(cuda_available(), "bench", "no CUDA device: the L-Mul benchmark times GPU kernels");
#if BITGRAD_WITH_CUDA
  const int reps = int(parse_integer(args.option("reps", "20"), "--reps", 3, 100000));
  const int bits = int(parse_integer(args.option("mantissa-bits", "23"), "--mantissa-bits", 1, 23));
  const Device dev = Device::cuda(0);
  const StreamHandle stream = stream_for(dev);
  const LmulParams params = lmul_params(bits);
  struct Case {
    const char* name;
    int64_t batch, m, k, n;
    bool a_t, b_t;  // operands stored transposed (the backward's layouts)
  };
  const std::vector<Case> cases = {
      {"4096^3", 1, 4096, 4096, 4096, false, true},
      {"c_attn fwd", 1, 16384, 384, 1152, false, true},
      {"c_attn dx", 1, 16384, 1152, 384, false, false},
      {"c_attn dw", 1, 1152, 16384, 384, true, false},
      {"c_fc fwd", 1, 16384, 384, 1536, false, true},
      {"mlp.proj fwd", 1, 16384, 1536, 384, false, true},
      {"lm_head fwd", 1, 16384, 384, 65, false, true},
      {"attn QK^T", 384, 256, 64, 256, false, true},
      {"attn PV", 384, 256, 256, 64, false, false},
  };
  BenchReport report("lmul", cuda::device_info(0).name);
  report.settings().add("mantissa_bits", bits).add("reps", reps);
  std::printf("%-14s %5s %6s %6s %6s %11s %11s %9s %9s %7s\n", "case", "batch", "M", "K", "N",
              "sgemm_us", "lmul_us", "sgemmT", "lmulT", "ratio");
  Generator gen(11);
  for (const Case& c : cases) {
    const double bytes = 4.0 * double(c.batch) * double(c.m * c.k + c.k * c.n + c.m * c.n);
    const int sets = int(std::max(2.0, std::ceil(180e6 / bytes)));
    std::vector<Tensor> as, bs;
    for (int i = 0; i < sets; ++i) {
      const Tensor a =
          randn({c.batch, c.a_t ? c.k : c.m, c.a_t ? c.m : c.k}, gen, 0, 1, DType::f32, dev);
      const Tensor b =
          randn({c.batch, c.b_t ? c.n : c.k, c.b_t ? c.k : c.n}, gen, 0, 1, DType::f32, dev);
      as.push_back(c.a_t ? a.transpose(1, 2) : a);
      bs.push_back(c.b_t ? b.transpose(1, 2) : b);
    }
    const Tensor out = empty({c.batch, c.m, c.n}, DType::f32, dev);
    std::vector<double> ts, tl;
    for (int r = 0; r < reps + 2; ++r) {
      const size_t i = size_t(r % sets);
      const KView va = as[i].kview(), vb = bs[i].kview(), vo = out.kview();
      const double s = bench_time_ms(
          dev, [&] { cuda::matmul(vo, va, vb, MatmulEpilogue{}, MatmulPrecision::fp32, stream); });
      ScratchArena scratch(dev);  // the split-K workspace of a weight gradient
      const double l =
          bench_time_ms(dev, [&] { cuda::matmul_lmul(vo, va, vb, params, scratch, stream); });
      if (r >= 2) {
        ts.push_back(s * 1e3);
        tl.push_back(l * 1e3);
      }
    }
    const double us_s = median(ts), us_l = median(tl);
    const double macs = double(c.batch) * double(c.m) * double(c.k) * double(c.n);
    const double tmac_s = macs / (us_s * 1e-6) / 1e12, tmac_l = macs / (us_l * 1e-6) / 1e12;
    std::printf("%-14s %5lld %6lld %6lld %6lld %11.1f %11.1f %9.2f %9.2f %7.3f\n", c.name,
                (long long)c.batch, (long long)c.m, (long long)c.k, (long long)c.n, us_s, us_l,
                tmac_s, tmac_l, tmac_l / tmac_s);
    report.row(JsonObject()
                   .add("case", c.name)
                   .add("batch", c.batch)
                   .add("m", c.m)
                   .add("k", c.k)
                   .add("n", c.n)
                   .add("sgemm_us", us_s)
                   .add("lmul_us", us_l)
                   .add("sgemm_tmacs", tmac_s)
                   .add("lmul_tmacs", tmac_l)
                   .add("lmul_over_sgemm", tmac_l / tmac_s)
                   .add("input_sets", sets));
  }
  report.write(args);
  return 0;
#else
  return 1;
#endif
}

}  // namespace bg::cli
