// bench_attention.cpp: `bitgrad bench attention`: causal self-attention on GPT shapes (the
// Baby GPT's 64 x 6 heads x 256, with and without its 0.2 dropout, and GPT-2 124M's 16 x 12 x
// 1024), fused_causal_attention against the composed ops (TF32 matmuls + causal_softmax +
// dropout + head transposes, what the model ran before): median milliseconds of the forward
// (training mode) and of the backward, with the tensor-core floor of the causal FLOPs. The fused
// kernel runs on f32 qkv (fp32/tf32 training) and on bf16 qkv (bf16 training: its tiles copy
// asynchronously), the bf16 case twice on a Hopper GPU: the wgmma kernels the model runs there
// ("fused-wgmma") and the portable mma.sync ones ("fused-mma").
// qkv rotates through two sets, each past the L2 cache. Writes JSON.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

#include "bench_common.h"
#include "core/ops.h"
#include "kernels/cuda/device_runtime.h"

namespace bg::cli {
namespace {

struct Variant {
  const char* impl;  // composed, fused-mma (portable kernels) or fused-wgmma (Hopper kernels)
  DType inputs;
};

struct AttentionShape {
  const char* name;
  int64_t batch, heads, t;
  double dropout;
};

Tensor composed_attention(const Tensor& qkv, int64_t n_head, double p, Generator& gen) {
  const int64_t b = qkv.size(0), t = qkv.size(1), c = qkv.size(2) / 3, d = c / n_head;
  const auto parts = split(qkv, {c, c, c}, 2);
  auto heads = [&](const Tensor& z) { return z.reshape({b, t, n_head, d}).transpose(1, 2); };
  ComputeMode tf32;  // the composed baseline on tf32 tensor cores
  tf32.precision = MatmulPrecision::tf32;
  return causal_self_attention(heads(parts[0]), heads(parts[1]), heads(parts[2]), p, true, gen,
                               tf32)
      .transpose(1, 2)
      .reshape({b, t, c});
}

}  // namespace

int run_bench_attention(const Args& args) {
  args.allow_only({"out", "reps"});
  BG_CHECK(args.positional.size() == 1, "bench",
           "usage: bitgrad bench attention [--out FILE] [--reps N]");
  BG_CHECK(cuda_available(), "bench", "no CUDA device: the attention benchmark times GPU kernels");
  const int reps = int(parse_integer(args.option("reps", "30"), "--reps", 5, 100000));
  const Device dev = Device::cuda(0);
  const cuda::DeviceInfo info = cuda::device_info(0);
  const int64_t head_dim = 64;
  BenchReport report("attention", info.name);
  report.settings()
      .add("head_dim", head_dim)
      .add("reps", reps)
      .add("bf16_tensor_tflops", kBf16TensorFlops / 1e12);
  std::printf("%-6s %5s %5s %5s %5s %-11s %-5s %9s %9s %9s %9s %8s\n", "shape", "B", "H", "T",
              "drop", "impl", "in", "fwd_ms", "bwd_ms", "fwd_floor", "bwd_floor", "TFLOP/s");
  ComputeMode bf16;  // the fused kernel's products are bf16
  bf16.precision = MatmulPrecision::bf16;
  for (const AttentionShape& s :
       {AttentionShape{"baby", 64, 6, 256, 0.2}, AttentionShape{"baby", 64, 6, 256, 0.0},
        AttentionShape{"gpt2", 16, 12, 1024, 0.0}}) {
    const int64_t c = s.heads * head_dim;
    Generator init(1);
    std::vector<Tensor> qkv, dy;
    for (int i = 0; i < 2; ++i) {
      qkv.push_back(randn({s.batch, s.t, 3 * c}, init, 0, 1, DType::f32, dev));
      dy.push_back(randn({s.batch, s.t, c}, init, 0, 1, DType::f32, dev));
    }
    // Causal FLOPs: q k^T and p v over the visible pairs; the backward's five products are 2.5x.
    const double fwd_flops =
        4.0 * double(s.batch * s.heads * head_dim) * double(s.t) * double(s.t + 1) / 2.0;
    const double fwd_floor = 1e3 * fwd_flops / kBf16TensorFlops, bwd_floor = 2.5 * fwd_floor;
    std::vector<Variant> variants = {{"fused-mma", DType::f32}, {"fused-mma", DType::bf16}};
    if (cuda::hopper_kernels_available()) variants.push_back({"fused-wgmma", DType::bf16});
    variants.push_back({"composed", DType::f32});
    for (const Variant& variant : variants) {
      const bool fused = std::string(variant.impl) != "composed";
      cuda::set_kernel_family(std::string(variant.impl) == "fused-mma"
                                  ? cuda::KernelFamily::portable
                                  : cuda::KernelFamily::best);
      std::vector<Tensor> qkv_in, dy_in;
      for (size_t i = 0; i < qkv.size(); ++i) {
        qkv_in.push_back(qkv[i].to(variant.inputs));
        dy_in.push_back(dy[i].to(variant.inputs));
      }
      Generator gen(2);
      std::vector<double> fwd, bwd;
      for (int it = 0; it < reps + 3; ++it) {
        const int i = it % 2;
        const Tensor x = qkv_in[size_t(i)].detach().requires_grad_(true);
        Tensor y;
        const double tf = bench_time_ms(dev, [&] {
          y = fused ? fused_causal_attention(x, s.heads, s.dropout, true, gen, bf16)
                    : composed_attention(x, s.heads, s.dropout, gen);
        });
        const double tb = bench_time_ms(dev, [&] { y.backward(dy_in[size_t(i)]); });
        if (it >= 3) {
          fwd.push_back(tf);
          bwd.push_back(tb);
        }
      }
      const double f = median(fwd), b = median(bwd);
      const double tflops = 3.5 * fwd_flops / ((f + b) * 1e-3) / 1e12;
      const char* in = dtype_name(variant.inputs);
      std::printf("%-6s %5lld %5lld %5lld %5.2f %-11s %-5s %9.3f %9.3f %9.3f %9.3f %8.1f\n", s.name,
                  (long long)s.batch, (long long)s.heads, (long long)s.t, s.dropout, variant.impl,
                  in, f, b, fwd_floor, bwd_floor, tflops);
      report.row(JsonObject()
                     .add("shape", s.name)
                     .add("batch", s.batch)
                     .add("heads", s.heads)
                     .add("t", s.t)
                     .add("dropout", s.dropout)
                     .add("impl", variant.impl)
                     .add("inputs", in)
                     .add("fwd_ms", f)
                     .add("bwd_ms", b)
                     .add("fwd_floor_ms", fwd_floor)
                     .add("bwd_floor_ms", bwd_floor)
                     .add("tflops", tflops));
    }
  }
  cuda::set_kernel_family(cuda::KernelFamily::best);
  report.write(args);
  return 0;
}

}  // namespace bg::cli
