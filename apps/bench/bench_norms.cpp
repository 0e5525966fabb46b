// bench_norms.cpp: `bitgrad bench norms`: LayerNorm and RMSNorm, forward and forward+backward,
// at 16384x384, 16384x768 and 65536x4096 rows x hidden, f32 and bf16 (issue 15's shapes).
// Median microseconds over rotated inputs (sets past the L2 cache), the bytes each pass must
// move, the achieved bandwidth and the floor at the H200's measured 4.25 TB/s copy rate, beside
// PyTorch's times measured on the same GPU (REFERENCES.md). These kernels already give every
// row the same bits whatever the batch, run after run (tests/test_batch_invariance.cpp).
#include <algorithm>
#include <cmath>
#include <cstdio>

#include "bench_common.h"
#include "core/ops.h"
#include "kernels/cuda/device_runtime.h"

namespace bg::cli {
namespace {

constexpr double kCopyBytesPerS = 4.25e12;  // measured H200 device-to-device copy (REFERENCES.md)

struct NormShape {
  int64_t rows, hidden;
};

// PyTorch's LayerNorm on an H200 (REFERENCES.md), microseconds; 0 where none was measured.
double pytorch_us(const char* op, int64_t rows, int64_t hidden, DType dt, bool backward) {
  if (std::string(op) != "layernorm") return 0;
  if (rows == 16384 && hidden == 768 && dt == DType::f32) return backward ? 211 : 51;
  if (rows == 65536 && hidden == 4096 && dt == DType::f32) return backward ? 3177 : 692;
  if (rows == 65536 && hidden == 4096 && dt == DType::bf16) return backward ? 1684 : 396;
  return 0;
}

}  // namespace

int run_bench_norms(const Args& args) {
  args.allow_only({"out", "reps"});
  BG_CHECK(args.positional.size() == 1, "bench",
           "usage: bitgrad bench norms [--out FILE] [--reps N]");
  BG_CHECK(cuda_available(), "bench", "no CUDA device: the norms benchmark times GPU kernels");
  const int reps = int(parse_integer(args.option("reps", "30"), "--reps", 5, 100000));
  const Device dev = Device::cuda(0);
  BenchReport report("norms", cuda::device_info(0).name);
  report.settings().add("reps", reps).add("floor_bytes_per_s", kCopyBytesPerS);
  std::printf("%-9s %6s %5s %-4s %-7s %10s %10s %9s %10s\n", "op", "rows", "C", "type", "pass",
              "median_us", "floor_us", "GB/s", "pytorch_us");
  for (const NormShape s : {NormShape{16384, 384}, NormShape{16384, 768}, NormShape{65536, 4096}})
    for (const DType dt : {DType::f32, DType::bf16}) {
      const double elems = double(s.rows * s.hidden), esize = double(dtype_size(dt));
      // Input sets: enough to exceed 128 MB (twice the L2) in rotation, at least two.
      const int sets = int(std::max(2.0, std::ceil(128e6 / (elems * esize))));
      Generator gen(3);
      std::vector<Tensor> xs, dys;
      for (int i = 0; i < sets; ++i) {
        xs.push_back(randn({s.rows, s.hidden}, gen, 0, 1, DType::f32, dev).to(dt));
        dys.push_back(randn({s.rows, s.hidden}, gen, 0, 1, DType::f32, dev).to(dt));
      }
      const Tensor w = randn({s.hidden}, gen, 1, 0.1, DType::f32, dev).to(dt);
      const Tensor b = randn({s.hidden}, gen, 0, 0.1, DType::f32, dev).to(dt);
      for (const char* op : {"layernorm", "rmsnorm"}) {
        const bool ln = std::string(op) == "layernorm";
        auto forward = [&](const Tensor& x, const Tensor& wt, const Tensor& bt) {
          return ln ? layernorm(x, wt, bt, 1e-5) : rmsnorm(x, wt, 1e-5);
        };
        std::vector<double> fwd, both;
        for (int it = 0; it < reps + 3; ++it) {
          const int i = it % sets;
          const double tf = bench_time_ms(dev, [&] {
            NoGradGuard no_grad;
            forward(xs[size_t(i)], w, b);
          });
          const Tensor x = xs[size_t(i)].detach().requires_grad_(true);
          const Tensor wt = w.detach().requires_grad_(true), bt = b.detach().requires_grad_(true);
          const double tb =
              bench_time_ms(dev, [&] { forward(x, wt, bt).backward(dys[size_t(i)]); });
          if (it >= 3) {
            fwd.push_back(tf * 1e3);
            both.push_back(tb * 1e3);
          }
        }
        // Bytes: forward reads x, writes y (+ f32 mean/rstd per row); the backward reads x and dy,
        // writes dx (and the per-row statistics again).
        const double stats = double(s.rows) * 8.0;
        const double fwd_bytes = 2 * elems * esize + stats,
                     both_bytes = fwd_bytes + 3 * elems * esize + stats;
        for (int pass = 0; pass < 2; ++pass) {
          const double us = median(pass ? both : fwd), bytes = pass ? both_bytes : fwd_bytes;
          const double floor_us = 1e6 * bytes / kCopyBytesPerS, gbs = bytes / (us * 1e-6) / 1e9;
          const double torch = pytorch_us(op, s.rows, s.hidden, dt, pass == 1);
          const char* pass_name = pass ? "fwd+bwd" : "fwd";
          std::printf("%-9s %6lld %5lld %-4s %-7s %10.1f %10.1f %9.0f %10s\n", op,
                      (long long)s.rows, (long long)s.hidden, dtype_name(dt), pass_name, us,
                      floor_us, gbs, torch > 0 ? std::to_string(int(torch)).c_str() : "-");
          report.row(JsonObject()
                         .add("op", op)
                         .add("rows", s.rows)
                         .add("hidden", s.hidden)
                         .add("dtype", dtype_name(dt))
                         .add("pass", pass_name)
                         .add("median_us", us)
                         .add("floor_us", floor_us)
                         .add("bytes", bytes)
                         .add("gb_per_s", gbs)
                         .add("pytorch_h200_us", torch)
                         .add("input_sets", sets));
        }
      }
    }
  report.write(args);
  return 0;
}

}  // namespace bg::cli
