// bench_bitlinear.cpp: `bitgrad bench bitlinear`: BitLinear's training step against the dense
// bf16 layer on the Baby GPT's four projections (16384 tokens a step), and the parts of the
// BitLinear step one by one: the weight quantiser, the norm + activation quantiser, the int8
// tensor-core product, the dequantiser the backward feeds its products, and those products.
// Median microseconds over inputs rotated past the L2 cache (three input sets). Writes JSON.
#include <cstdio>
#include <functional>
#include <sstream>

#include "bench_common.h"
#include "core/bitlinear.h"
#include "core/ops.h"
#include "kernels/cuda/device_runtime.h"

namespace bg::cli {

std::string bench_bitlinear_inference(int reps);  // bench_bitlinear_inference.cpp

int run_bench_bitlinear(const Args& args) {
  args.allow_only({"out", "reps", "part"});
  BG_CHECK(
      args.positional.size() == 1, "bench",
      "usage: bitgrad bench bitlinear [--part training|inference|all] [--out FILE] [--reps N]");
  const std::string part = args.option("part", "all");
  BG_CHECK(part == "training" || part == "inference" || part == "all", "bench",
           "--part must be training, inference or all, got '", part, "'");
  BG_CHECK(cuda_available(), "bench", "no CUDA device: the BitLinear benchmark times GPU kernels");
  const int reps = int(parse_integer(args.option("reps", "30"), "--reps", 5, 100000));
  const Device dev = Device::cuda(0);
  ComputeMode mode;
  mode.precision = MatmulPrecision::bf16;
  mode = mode.on(dev);
  const BitLinearOptions opt;
  constexpr int kSets = 3;
  struct Shape3 {
    const char* layer;
    int64_t tokens, in, out;
  };
  const std::vector<Shape3> shapes = {{"c_attn", 16384, 384, 1152},
                                      {"attn.proj", 16384, 384, 384},
                                      {"c_fc", 16384, 384, 1536},
                                      {"mlp.proj", 16384, 1536, 384}};
  std::ostringstream json;
  std::printf("%-10s %-22s %10s\n", "layer", "part", "median_us");
  bool first = true;
  Generator gen(1);
  for (const Shape3& s : shapes) {
    if (part == "inference") break;
    std::vector<Tensor> xs, ws, gs;
    std::vector<QuantizedActivations> xq;
    std::vector<TernaryWeights> wq;
    for (int i = 0; i < kSets; ++i) {
      xs.push_back(randn({s.tokens, s.in}, gen, 0, 1, DType::f32, dev).to(DType::bf16));
      ws.push_back(randn({s.out, s.in}, gen, 0, 0.02, DType::f32, dev));
      gs.push_back(randn({s.tokens, s.out}, gen, 0, 1, DType::f32, dev));
      xq.push_back(act_quantize(xs.back(), opt.act));
      wq.push_back(ternary_quantize(ws.back(), opt.weight_scale));
    }
    int set = 0;
    auto time = [&](const char* part, const std::function<void(int)>& fn) {
      std::vector<double> t;
      for (int r = 0; r < reps + 2; ++r) {
        const int i = set++ % kSets;
        const double ms = bench_time_ms(dev, [&] { fn(i); });
        if (r >= 2) t.push_back(ms);  // two warm-up calls
      }
      const double us = median(t) * 1e3;
      std::printf("%-10s %-22s %10.1f\n", s.layer, part, us);
      json << (first ? "" : ",\n") << "    {\"layer\": \"" << s.layer
           << "\", \"tokens\": " << s.tokens << ", \"in\": " << s.in << ", \"out\": " << s.out
           << ", \"part\": \"" << part << "\", \"median_us\": " << us << "}";
      first = false;
    };
    auto fwd_bwd = [&](int i, bool bit) {
      Tensor x = xs[size_t(i)].detach(), w = ws[size_t(i)].detach();
      x.requires_grad_();
      w.requires_grad_();
      const Tensor y = bit ? bitlinear(x, w, Tensor(), opt, mode) : linear(x, w, Tensor(), mode);
      y.backward(gs[size_t(i)]);
    };
    time("dense_fwd", [&](int i) {
      NoGradGuard ng;
      linear(xs[size_t(i)], ws[size_t(i)], Tensor(), mode);
    });
    time("dense_fwd_bwd", [&](int i) { fwd_bwd(i, false); });
    time("bitlinear_fwd", [&](int i) {
      NoGradGuard ng;
      bitlinear(xs[size_t(i)], ws[size_t(i)], Tensor(), opt, mode);
    });
    time("bitlinear_fwd_bwd", [&](int i) { fwd_bwd(i, true); });
    time("ternary_quantize", [&](int i) { ternary_quantize(ws[size_t(i)], opt.weight_scale); });
    time("ternary_absmedian",
         [&](int i) { ternary_quantize(ws[size_t(i)], TernaryScale::absmedian); });
    time("act_quantize", [&](int i) { act_quantize(xs[size_t(i)], opt.act); });
    time("int8_linear",
         [&](int i) { int8_linear(xq[size_t(i)], wq[size_t(i)], Tensor(), DType::f32); });
    time("dequantize_x", [&](int i) {
      int8_dequantize(xq[size_t(i)].q, xq[size_t(i)].step, Tensor(), DType::bf16);
    });
    time("grad_products", [&](int i) {
      const Tensor w16 =
          int8_dequantize(wq[size_t(i)].q, Tensor(), wq[size_t(i)].beta, DType::bf16);
      const Tensor x16 =
          int8_dequantize(xq[size_t(i)].q, xq[size_t(i)].step, Tensor(), DType::bf16);
      const Tensor g16 = gs[size_t(i)].to(DType::bf16);
      gradient_product(g16, w16, mode, false);
      gradient_product(g16.transpose(0, 1), x16, mode, true);
    });
  }
  const std::string inference = part == "training" ? "" : bench_bitlinear_inference(reps);
  std::ostringstream out;
  out << "{\n  \"benchmark\": \"bitlinear\",\n  \"device\": \"" << cuda::device_info(0).name
      << "\",\n  \"reps\": " << reps << ", \"input_sets\": " << kSets << ",\n  \"results\": [\n"
      << json.str() << "\n  ]" << (inference.empty() ? "" : ",\n" + inference) << "\n}\n";
  write_bench_json(args, out.str());
  return 0;
}

}  // namespace bg::cli
