// bench_bitlinear.cpp: `bitgrad bench bitlinear`: BitLinear's training step against the dense
// bf16 layer on the four projections of the Baby GPT and of GPT-2 124M (16384 tokens a step),
// and the parts of the BitLinear step one by one: the weight quantiser, the norm + activation
// quantiser, the int8 tensor-core product, the dequantiser the backward feeds its products, and
// those products; then a step's weight quantisation for each whole model, one weight at a time
// against all together, timed as a captured step runs it. Median microseconds over inputs rotated
// past the L2 cache (three input sets),
// each beside its floor: the bytes it must move at the copy bandwidth measured in the same run,
// or its products at the tensor-core ceiling (bench_common.h), whichever is larger. Writes JSON.
#include <algorithm>
#include <cstdio>
#include <functional>
#include <string>
#include <utility>

#include "bench_common.h"
#include "core/bitlinear.h"
#include "core/ops.h"
#include "kernels/cuda/device_runtime.h"

namespace bg::cli {

// bench_bitlinear_inference.cpp; `shapes`: "" for the built-in list, or "MxNxK[,MxNxK...]".
void bench_bitlinear_inference(int reps, const std::string& shapes, JsonObject& out);

int run_bench_bitlinear(const Args& args) {
  args.allow_only({"out", "reps", "part", "model", "shapes"});
  BG_CHECK(args.positional.size() == 1, "bench",
           "usage: bitgrad bench bitlinear [--part training|inference|all] "
           "[--model baby|gpt2|all] [--shapes MxNxK,...] [--out FILE] [--reps N]");
  const std::string part = args.option("part", "all");
  BG_CHECK(part == "training" || part == "inference" || part == "all", "bench",
           "--part must be training, inference or all, got '", part, "'");
  BG_CHECK(part != "training" || !args.has("shapes"), "bench",
           "--shapes sets the inference part's shapes; --part training does not run it");
  const std::string model = args.option("model", "all");
  BG_CHECK(model == "baby" || model == "gpt2" || model == "all", "bench",
           "--model must be baby, gpt2 or all, got '", model, "'");
  BG_CHECK(cuda_available(), "bench", "no CUDA device: the BitLinear benchmark times GPU kernels");
  const int reps = int(parse_integer(args.option("reps", "30"), "--reps", 5, 100000));
  const Device dev = Device::cuda(0);
  ComputeMode mode;
  mode.precision = MatmulPrecision::bf16;
  mode = mode.on(dev);
  const BitLinearOptions opt;
  constexpr int kSets = 3;
  struct Shape3 {
    const char* model;
    const char* layer;
    int64_t tokens, in, out;
  };
  std::vector<Shape3> shapes;
  if (model != "gpt2")
    shapes.insert(shapes.end(), {{"baby", "c_attn", 16384, 384, 1152},
                                 {"baby", "attn.proj", 16384, 384, 384},
                                 {"baby", "c_fc", 16384, 384, 1536},
                                 {"baby", "mlp.proj", 16384, 1536, 384}});
  if (model != "baby")
    shapes.insert(shapes.end(), {{"gpt2", "c_attn", 16384, 768, 2304},
                                 {"gpt2", "attn.proj", 16384, 768, 768},
                                 {"gpt2", "c_fc", 16384, 768, 3072},
                                 {"gpt2", "mlp.proj", 16384, 3072, 768}});
  const double bandwidth = part == "inference" ? 0 : copy_bandwidth(dev, reps);
  BenchReport report("bitlinear", cuda::device_info(0).name);
  report.settings()
      .add("reps", reps)
      .add("input_sets", kSets)
      .add("copy_bandwidth_gbps", bandwidth / 1e9)
      .add("bf16_tensor_tflops", kBf16TensorFlops / 1e12)
      .add("int8_tensor_tops", kInt8TensorOps / 1e12);
  if (part != "inference")
    std::printf("device-to-device copy: %.0f GB/s\n%-6s %-10s %-22s %10s %10s %7s\n",
                bandwidth / 1e9, "model", "layer", "part", "median_us", "floor_us", "share");
  auto emit = [&](const char* model_name, const char* layer, int64_t tokens, int64_t in,
                  int64_t out, const char* part_name, double us, double floor_us) {
    std::printf("%-6s %-10s %-22s %10.1f %10.1f %6.0f%%\n", model_name, layer, part_name, us,
                floor_us, 100 * floor_us / us);
    report.row(JsonObject()
                   .add("model", model_name)
                   .add("layer", layer)
                   .add("tokens", tokens)
                   .add("in", in)
                   .add("out", out)
                   .add("part", part_name)
                   .add("median_us", us)
                   .add("floor_us", floor_us)
                   .add("share_of_floor", floor_us / us));
  };
  Generator gen(1);
  for (const Shape3& s : shapes) {
    if (part == "inference") break;
    // Floors: bytes at the copy bandwidth, products at the tensor-core ceilings.
    const double m = double(s.tokens), k = double(s.in), n = double(s.out);
    const double macs = m * n * k;
    auto bytes_floor = [&](double bytes) { return 1e6 * bytes / bandwidth; };
    auto product_floor = [&](double ops, double rate, double bytes) {
      return std::max(1e6 * ops / rate, bytes_floor(bytes));
    };
    // The dense layer: bf16 x and weight in, f32 y out (Consumer::any); the backward's two
    // products read y's bf16 gradient and write dx (bf16) and dW (f32).
    const double dense_fwd_floor =
        product_floor(2 * macs, kBf16TensorFlops, 2 * m * k + 4 * n * k + 4 * m * n);
    const double dense_step_floor = 3 * dense_fwd_floor;
    std::vector<Tensor> xs, ws, gs, biases;
    std::vector<QuantizedActivations> xq;
    std::vector<TernaryWeights> wq;
    for (int i = 0; i < kSets; ++i) {
      xs.push_back(randn({s.tokens, s.in}, gen, 0, 1, DType::f32, dev).to(DType::bf16));
      ws.push_back(randn({s.out, s.in}, gen, 0, 0.02, DType::f32, dev));
      gs.push_back(randn({s.tokens, s.out}, gen, 0, 1, DType::f32, dev));
      biases.push_back(randn({s.out}, gen, 0, 0.1, DType::f32, dev));
      xq.push_back(act_quantize(xs.back(), opt.act));
      wq.push_back(ternary_quantize(ws.back(), opt.weight_scale));
    }
    int set = 0;
    auto time = [&](const char* part, double floor_us, const std::function<void(int)>& fn) {
      std::vector<double> t;
      for (int r = 0; r < reps + 2; ++r) {
        const int i = set++ % kSets;
        const double ms = bench_time_ms(dev, [&] { fn(i); });
        if (r >= 2) t.push_back(ms);  // two warm-up calls
      }
      emit(s.model, s.layer, s.tokens, s.in, s.out, part, median(t) * 1e3, floor_us);
    };
    auto fwd_bwd = [&](int i, bool bit) {
      Tensor x = xs[size_t(i)].detach(), w = ws[size_t(i)].detach();
      x.requires_grad_();
      w.requires_grad_();
      const Tensor y = bit ? bitlinear(x, w, Tensor(), opt, mode) : linear(x, w, Tensor(), mode);
      y.backward(gs[size_t(i)]);
    };
    time("dense_fwd", dense_fwd_floor, [&](int i) {
      NoGradGuard ng;
      linear(xs[size_t(i)], ws[size_t(i)], Tensor(), mode);
    });
    time("dense_fwd_bwd", dense_step_floor, [&](int i) { fwd_bwd(i, false); });
    // BitLinear's floors are the dense layer's: the target is a step no slower than it.
    time("bitlinear_fwd", dense_fwd_floor, [&](int i) {
      NoGradGuard ng;
      bitlinear(xs[size_t(i)], ws[size_t(i)], Tensor(), opt, mode);
    });
    time("bitlinear_fwd_bwd", dense_step_floor, [&](int i) { fwd_bwd(i, true); });
    // The weight quantiser reads W (f32) and writes q (i8); the activation quantiser reads x
    // (bf16) and writes q (i8) and the row statistics.
    time("ternary_quantize", bytes_floor(5 * n * k),
         [&](int i) { ternary_quantize(ws[size_t(i)], opt.weight_scale); });
    time("ternary_absmedian", bytes_floor(5 * n * k),
         [&](int i) { ternary_quantize(ws[size_t(i)], TernaryScale::absmedian); });
    time("act_quantize", bytes_floor(3 * m * k + 12 * m),
         [&](int i) { act_quantize(xs[size_t(i)], opt.act); });
    time("int8_linear", product_floor(2 * macs, kInt8TensorOps, m * k + n * k + 4 * m * n),
         [&](int i) { int8_linear(xq[size_t(i)], wq[size_t(i)], Tensor(), DType::f32); });
    // bf16 out with a bias, as the step's c_attn and c_fc products write.
    time("int8_linear_bf16_bias",
         product_floor(2 * macs, kInt8TensorOps, m * k + n * k + 2 * m * n + 4 * n),
         [&](int i) { int8_linear(xq[size_t(i)], wq[size_t(i)], biases[size_t(i)], DType::bf16); });
    // f32 out with a bias and the residual added, as the step's output projections write.
    time("int8_linear_residual",
         product_floor(2 * macs, kInt8TensorOps, m * k + n * k + 8 * m * n + 4 * n), [&](int i) {
           int8_linear(xq[size_t(i)], wq[size_t(i)], biases[size_t(i)], DType::f32, gs[size_t(i)]);
         });
    time("dequantize_x", bytes_floor(3 * m * k), [&](int i) {
      int8_dequantize(xq[size_t(i)].q, xq[size_t(i)].step, Tensor(), DType::bf16);
    });
    time("grad_products",
         product_floor(4 * macs, kBf16TensorFlops, 2 * (m * n + 2 * m * k + n * k) + 4 * n * k),
         [&](int i) {
           const Tensor w16 =
               int8_dequantize(wq[size_t(i)].q, Tensor(), wq[size_t(i)].beta, DType::bf16);
           const Tensor x16 =
               int8_dequantize(xq[size_t(i)].q, xq[size_t(i)].step, Tensor(), DType::bf16);
           const Tensor g16 = gs[size_t(i)].to(DType::bf16);
           gradient_product(g16, w16, mode, false);
           gradient_product(g16.transpose(0, 1), x16, mode, true);
         });
  }
  // A step's weight quantisation for the whole model, timed as a captured step runs it (no host
  // work): each weight's quantiser and the backward's bf16 W~ one by one, against
  // ternary_quantize_all's one pass (three launches). The floor reads W once and writes W_q and W~.
  for (const char* name : {"baby", "gpt2"}) {
    if (part == "inference" || (model != "all" && model != name)) continue;
    const bool gpt2 = std::string(name) == "gpt2";
    const int64_t d = gpt2 ? 768 : 384, layers = gpt2 ? 12 : 6;
    std::vector<Tensor> ws;
    double params = 0;
    for (int64_t l = 0; l < layers; ++l)
      for (auto [out, in] :
           {std::pair<int64_t, int64_t>{3 * d, d}, {d, d}, {4 * d, d}, {d, 4 * d}}) {
        ws.push_back(randn({out, in}, gen, 0, 0.02, DType::f32, dev));
        params += double(out * in);
      }
    const double floor_us = 1e6 * 7 * params / bandwidth;
    const std::string layer = std::to_string(ws.size()) + "_weights";
    const double one_by_one = graph_us(dev, 1, reps, [&](int) {
      for (const Tensor& w : ws) {
        const TernaryWeights q = ternary_quantize(w, opt.weight_scale);
        int8_dequantize(q.q, Tensor(), q.beta, DType::bf16);
      }
    });
    emit(name, layer.c_str(), 0, 0, 0, "weights_one_by_one", one_by_one, floor_us);
    const double together = graph_us(
        dev, 1, reps, [&](int) { ternary_quantize_all(ws, opt.weight_scale, DType::bf16); });
    emit(name, layer.c_str(), 0, 0, 0, "weights_together", together, floor_us);
  }
  if (part != "training") bench_bitlinear_inference(reps, args.option("shapes", ""), report.summary());
  report.write(args);
  return 0;
}

}  // namespace bg::cli
