// bench_sick.cpp: `bitgrad bench sick`: the paper's two settings (batch 64 and the LLM-head batch
// 16384 = 32 x 512; H = 32, 16 bits) for both variants and both dtypes: median milliseconds of
// the normalisation constant, the fused NLL forward (which also produces the gradient K-sums),
// its backward, and the NLL forward with no gradients wanted (inference: no K-sums); peak
// device memory; and the floor for the same work on this device.
// Inputs rotate through enough copies to exceed the L2 cache. Writes JSON.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <functional>

#include "bench_common.h"
#include "core/bide.h"
#include "kernels/cuda/device_runtime.h"

namespace bg::cli {
namespace {

// Measured ceilings on an H200 (../shared/REFERENCES.md): dense f16 mma 728 TFLOP/s, f32 SIMT
// 51 TFLOP/s (FFMA counted as 2).
constexpr double kTensorFlops = 728e12, kCudaCoreFlops = 51e12;

double time_ms(Device dev, const std::function<void()>& fn) { return bench_time_ms(dev, fn); }

// Scratch from one preallocated buffer, so kernel-only timings contain no allocator work.
class BumpScratch : public Scratch {
 public:
  BumpScratch(Device dev, size_t bytes) : buf_(empty({int64_t(bytes)}, DType::u8, dev)) {}
  void* get(size_t bytes) override {
    const size_t at = used_;
    used_ += (bytes + 255) / 256 * 256;
    BG_CHECK(used_ <= size_t(buf_.numel()), "bench", "scratch buffer too small");
    return static_cast<char*>(buf_.data_ptr()) + at;
  }
  void reset() { used_ = 0; }

 private:
  Tensor buf_;
  size_t used_ = 0;
};

struct Stat {
  double median, min;
};
Stat summarize(const std::vector<double>& v) {
  return {median(v), *std::min_element(v.begin(), v.end())};
}

}  // namespace

int run_bench_sick(const Args& args) {
  args.allow_only({"out", "reps", "batch", "dtype", "variant"});
  const std::string only_batch = args.option("batch", ""), only_dtype = args.option("dtype", ""),
                    only_variant = args.option("variant", "");
  BG_CHECK(args.positional.size() == 1 && args.positional[0] == "sick", "bench",
           "usage: bitgrad bench attention|norms|gemm|bitlinear|lmul|bide_head [--out FILE] "
           "[--reps N] | bitgrad "
           "bench sick [--out "
           "FILE] [--reps N] [--batch B] [--dtype fp32|fp16] "
           "[--variant V]");
  BG_CHECK(cuda_available(), "bench", "no CUDA device: the SICK benchmark times GPU kernels");
  const int reps = int(parse_integer(args.option("reps", "30"), "--reps", 20, 100000));
  const Device dev = Device::cuda(0);
  const cuda::DeviceInfo info = cuda::device_info(0);
  const int bits = 16, hid = 32;
  const int64_t k_all = int64_t(1) << bits;
  BenchReport report("sick", info.name);
  report.settings()
      .add("sm_count", info.sm_count)
      .add("hidden", hid)
      .add("bits", bits)
      .add("reps", reps)
      .raw("ceilings", JsonObject()
                           .add("tensor_tflops", kTensorFlops / 1e12)
                           .add("cuda_core_tflops", kCudaCoreFlops / 1e12)
                           .str());
  std::printf("%-9s %6s %5s %-12s %10s %10s %10s %10s %9s\n", "op", "batch", "dtype", "variant",
              "median_ms", "kernel_ms", "min_ms", "floor_ms", "peak_MB");
  for (int64_t batch : {int64_t(64), int64_t(16384)})
    for (const char* dtype : {"fp32", "fp16"})
      for (const char* variant : {"bruteforce", "precomputed"}) {
        if ((!only_batch.empty() && std::to_string(batch) != only_batch) ||
            (!only_dtype.empty() && only_dtype != dtype) ||
            (!only_variant.empty() && only_variant != variant))
          continue;
        BideOptions opt;
        opt.code.type = BideValueType::f16;
        opt.code.bits = bits;
        parse_enum(variant, &opt.variant);
        parse_enum(dtype, &opt.precision);
        const bool half = std::string(dtype) == "fp16";
        const DType dt = half ? DType::f16 : DType::f32;
        // Enough rotating input sets to exceed 128 MB (twice the H200's L2).
        const double set_bytes = double(batch * hid * (bits + 1) * int64_t(dtype_size(dt)));
        const int sets = int(std::min(64.0, std::max(3.0, std::ceil(128e6 / set_bytes))));
        Generator gen(7);
        std::vector<Tensor> ws, rs, ys;
        for (int i = 0; i < sets; ++i) {
          ws.push_back(randn({batch, hid, bits}, gen, 0, std::sqrt(2.0 / bits), dt, dev));
          rs.push_back(randn({batch, hid}, gen, 0, 1.0 / std::sqrt(double(hid)), dt, dev));
          ys.push_back(rand({batch}, gen, 0, double(k_all) - 1, DType::f32, dev).to(DType::i64));
        }
        const double flops_z = 2.0 * double(batch) * double(k_all) * hid * bits * (half ? 1 : 2);
        const double core_ops = double(batch) * double(k_all) * (4.0 * hid + 12);
        const double floor_norm = 1e3 * std::max(flops_z / kTensorFlops, core_ops / kCudaCoreFlops);
        const double floor_fwd =
            1e3 * std::max(2 * flops_z / kTensorFlops, 1.6 * core_ops / kCudaCoreFlops);
        const double floor_bwd =
            1e3 * double(batch) * hid * (bits + 1) * 4 * 6 / 4.25e12;  // memory-bound
        std::vector<double> t_norm, t_fwd, t_bwd, t_infer, k_norm, k_fwd;
        // Kernel-only: the SICK pass alone on preallocated outputs (what Triton timings measure).
        Tensor km = empty({batch}, DType::f32, dev), ks = empty({batch}, DType::f32, dev),
               kz = empty({batch}, DType::f32, dev), kgr = empty({batch, hid}, DType::f32, dev),
               kgw = empty({batch, hid, bits}, DType::f32, dev);
        BumpScratch bump(dev, size_t(64) << 20);
        auto kernel_ms = [&](int i, bool grad) {
          bump.reset();
          return time_ms(dev, [&] {
            bide_sick_pass(ws[size_t(i)], rs[size_t(i)], opt, grad, {km, ks, kz, kgr, kgw}, bump);
          });
        };
        synchronize(dev);
        cuda_reset_peak(0);
        const size_t base = cuda_allocator_stats(0).allocated;
        for (int it = 0; it < reps + 3; ++it) {  // 3 warm-up iterations
          const int i = it % sets;
          const double tn =
              time_ms(dev, [&] { bide_log_normalizer(ws[size_t(i)], rs[size_t(i)], opt); });
          Tensor w = ws[size_t(i)].detach().requires_grad_(),
                 r = rs[size_t(i)].detach().requires_grad_();
          Tensor loss;
          const double tf = time_ms(dev, [&] { loss = bide_nll(w, r, ys[size_t(i)], opt); });
          const double tb = time_ms(dev, [&] { loss.backward(); });
          const double kn = kernel_ms(i, false), kf = kernel_ms(i, true);
          // Inference: the NLL value alone (no gradients wanted: no K-sums).
          const double ti = time_ms(dev, [&] {
            NoGradGuard no_grad;
            loss = bide_nll(ws[size_t(i)], rs[size_t(i)], ys[size_t(i)], opt);
          });
          if (it >= 3) {
            t_norm.push_back(tn);
            t_fwd.push_back(tf);
            t_bwd.push_back(tb);
            t_infer.push_back(ti);
            k_norm.push_back(kn);
            k_fwd.push_back(kf);
          }
        }
        const double peak_mb = double(cuda_allocator_stats(0).peak_allocated - base) / 1e6;
        struct Row {
          const char* op;
          Stat st;
          double floor, kernel;  // kernel: median of the SICK pass alone (< 0: not applicable)
        };
        for (const Row& row :
             {Row{"normalizer", summarize(t_norm), floor_norm, summarize(k_norm).median},
              Row{"nll_fwd", summarize(t_fwd), floor_fwd, summarize(k_fwd).median},
              Row{"nll_bwd", summarize(t_bwd), floor_bwd, -1.0},
              Row{"nll_infer", summarize(t_infer), floor_norm, -1.0}}) {
          std::printf("%-9s %6lld %5s %-12s %10.4f %10.4f %10.4f %10.4f %9.1f\n", row.op,
                      (long long)batch, dtype, variant, row.st.median, row.kernel, row.st.min,
                      row.floor, peak_mb);
          report.row(JsonObject()
                         .add("op", row.op)
                         .add("batch", batch)
                         .add("dtype", dtype)
                         .add("variant", variant)
                         .add("median_ms", row.st.median)
                         .add("min_ms", row.st.min)
                         .add("floor_ms", row.floor)
                         .add("kernel_ms", row.kernel)
                         .add("peak_mb", peak_mb)
                         .add("input_sets", sets));
        }
      }
  report.write(args);
  return 0;
}

}  // namespace bg::cli
