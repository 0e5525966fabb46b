// bench_bitlinear_inference.cpp: the inference half of `bitgrad bench bitlinear`: the W2A8
// kernels (GEMV at batch 1, int8 tensor cores at batch 16 and 256) and the bit-plane kernel
// against cuBLAS fp16 and bf16 on the same GPU, at 4096^2, 8192^2, 16384^2 and at
// microsoft/BitNet's eight GEMV shapes (REFERENCES.md). Each figure is the median over --reps
// replays of a CUDA graph that runs the kernel once on each of a set of inputs whose weights
// together exceed three L2 caches (so HBM is what is measured), divided by the set's size. The
// floor is the bytes a kernel must move (weights, activations, outputs) at the copy bandwidth
// measured in the same run.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <functional>
#include <sstream>

#include "bench_common.h"
#include "core/bitlinear.h"
#include "core/ops.h"
#include "kernels/cuda/device_runtime.h"
#if BITGRAD_WITH_CUDA
#include "kernels/cuda/cuda_kernels.h"
#include "kernels/cuda/w2a8_tiles.h"
#endif

namespace bg::cli {

#if BITGRAD_WITH_CUDA
namespace {

constexpr double kL2Bytes = 60e6;  // H100/H200 L2 is 50/60 MB: three of these is plenty

struct InferenceShape {
  const char* source;
  int64_t m, n, k;
};

int sets_for(double bytes) { return int(std::clamp(std::ceil(3 * kL2Bytes / bytes), 2.0, 128.0)); }

// --shapes "MxNxK[,MxNxK...]": batch M, output features N, input features K, each 1 to 65536.
std::vector<InferenceShape> parse_shapes(const std::string& list) {
  std::vector<InferenceShape> shapes;
  std::stringstream items(list);
  std::string item;
  while (std::getline(items, item, ',')) {
    int64_t v[3];
    std::stringstream dims(item);
    std::string dim;
    int count = 0;
    while (std::getline(dims, dim, 'x') && count < 4)
      v[std::min(count++, 2)] = parse_integer(dim, "--shapes", 1, 65536);
    BG_CHECK(count == 3, "bench", "--shapes takes MxNxK items separated by commas, got '", item,
             "'");
    shapes.push_back({"custom", v[0], v[1], v[2]});
  }
  BG_CHECK(!shapes.empty(), "bench", "--shapes is empty");
  return shapes;
}

}  // namespace

void bench_bitlinear_inference(int reps, const std::string& shape_list, JsonObject& out) {
  const Device dev = Device::cuda(0);
  const StreamHandle stream = stream_for(dev);
  const double bandwidth = copy_bandwidth(dev, reps);
  std::printf("device-to-device copy: %.0f GB/s\n", bandwidth / 1e9);
  std::printf("%-10s %5s %6s %6s %-12s %10s %9s %9s %8s %8s\n", "source", "m", "n", "k", "kernel",
              "median_us", "GB/s", "floor_us", "vs_fp16", "vs_bf16");
  const std::vector<InferenceShape> shapes =
      !shape_list.empty()
          ? parse_shapes(shape_list)
          : std::vector<InferenceShape>{{"square", 1, 4096, 4096},   {"square", 1, 8192, 8192},
                                        {"square", 1, 16384, 16384}, {"bitnet", 1, 3840, 2560},
                                        {"bitnet", 1, 2560, 2560},   {"bitnet", 1, 13824, 2560},
                                        {"bitnet", 1, 2560, 6912},   {"bitnet", 1, 4800, 3200},
                                        {"bitnet", 1, 3200, 3200},   {"bitnet", 1, 20480, 3200},
                                        {"bitnet", 1, 3200, 10240},  {"square", 16, 8192, 8192},
                                        {"square", 256, 8192, 8192}, {"square", 16, 4096, 4096},
                                        {"square", 256, 4096, 4096}, {"square", 4, 8192, 8192},
                                        {"square", 64, 8192, 8192},  {"square", 4096, 8192, 8192}};
  BenchReport rows("bitlinear inference", "");
  Generator gen(3);
  for (const InferenceShape& s : shapes) {
    const double w2_bytes = double(s.n) * double((s.k + 127) / 128 * 32);
    const double f16_bytes = 2.0 * double(s.n) * double(s.k);
    const int sets_w2 = sets_for(w2_bytes), sets_f16 = sets_for(f16_bytes);
    // Activations: int8 rows (W2A8), ternary planes (bit-plane), fp16/bf16 (cuBLAS).
    ActQuantOptions a8, a2;
    a2.bits = 2;
    const Tensor xf = randn({s.m, s.k}, gen, 0, 1, DType::f32, dev);
    const QuantizedActivations x8 = act_quantize(xf, a8), x2 = act_quantize(xf, a2);
    const TernaryPlanes xp = bitplanes(x2.q);
    std::vector<PackedTernary> w2;
    std::vector<TernaryPlanes> wp;
    for (int i = 0; i < sets_w2; ++i) {
      const TernaryWeights q =
          ternary_quantize(randn({s.n, s.k}, gen, 0, 0.02, DType::f32, dev), TernaryScale::absmean);
      w2.push_back(w2_from_packed(pack_ternary(q), s.k, q.beta));
      wp.push_back(bitplanes(q.q));
    }
    const Tensor y = empty({s.m, s.n}, DType::f32, dev);
    const Tensor y16 = empty({s.m, s.n}, DType::f16, dev),
                 yb16 = empty({s.m, s.n}, DType::bf16, dev);
    const Tensor x16 = xf.to(DType::f16), xb16 = xf.to(DType::bf16);
    std::vector<Tensor> w16, wb16;
    for (int i = 0; i < sets_f16; ++i) {
      const Tensor w = randn({s.n, s.k}, gen, 0, 0.02, DType::f32, dev);
      w16.push_back(w.to(DType::f16));
      wb16.push_back(w.to(DType::bf16));
    }
    auto as3 = [](const Tensor& t, bool transpose) {
      KView v = (transpose ? t.transpose(0, 1) : t).kview();
      v.ndim = 3;
      v.shape[2] = v.shape[1];
      v.strides[2] = v.strides[1];
      v.shape[1] = v.shape[0];
      v.strides[1] = v.strides[0];
      v.shape[0] = 1;
      v.strides[0] = 0;
      return v;
    };
    const MatmulEpilogue none{};
    const KView no_bias{};
    const double t_fp16 = graph_us(dev, sets_f16, reps, [&](int i) {
      cuda::matmul(as3(y16, false), as3(x16, false), as3(w16[size_t(i)], true), none,
                   MatmulPrecision::bf16, stream);
    });
    const double t_bf16 = graph_us(dev, sets_f16, reps, [&](int i) {
      cuda::matmul(as3(yb16, false), as3(xb16, false), as3(wb16[size_t(i)], true), none,
                   MatmulPrecision::bf16, stream);
    });
    const double t_w2a8 = graph_us(dev, sets_w2, reps, [&](int i) {
      cuda::w2a8_linear(y.kview(), x8.q.kview(), w2[size_t(i)].w2.kview(), x8.step.kview(),
                        w2[size_t(i)].beta.kview(), no_bias, stream);
    });
    // Batches of 2 and up on Hopper: the portable mma.sync kernel and each wgmma tile shape
    // too, beside the one w2a8_linear picks.
    std::vector<std::pair<std::string, double>> variants;
    if (s.m > 1 && cuda::hopper_kernels_available()) {
      cuda::set_kernel_family(cuda::KernelFamily::portable);
      variants.emplace_back("w2a8_mma_sync", graph_us(dev, sets_w2, reps, [&](int i) {
                              cuda::w2a8_linear(y.kview(), x8.q.kview(), w2[size_t(i)].w2.kview(),
                                                x8.step.kview(), w2[size_t(i)].beta.kview(),
                                                no_bias, stream);
                            }));
      cuda::set_kernel_family(cuda::KernelFamily::best);
      for (int tile = 0; tile < cuda::w2a8_wgmma_tile_count(); ++tile)
        variants.emplace_back(std::string("wgmma_") + cuda::w2a8_wgmma_tile_name(tile),
                              graph_us(dev, sets_w2, reps, [&](int i) {
                                cuda::w2a8_linear_wgmma(y.kview(), x8.q.kview(),
                                                        w2[size_t(i)].w2.kview(), x8.step.kview(),
                                                        w2[size_t(i)].beta.kview(), no_bias, tile,
                                                        stream);
                              }));
    }
    const double t_plane = graph_us(dev, sets_w2, reps, [&](int i) {
      cuda::bitplane_linear(y.kview(), xp.planes.kview(), wp[size_t(i)].planes.kview(),
                            x2.step.kview(), w2[size_t(i)].beta.kview(), no_bias, stream);
    });
    const double act_bytes = double(s.m) * double(s.k), out_bytes = 4.0 * double(s.m * s.n);
    auto report = [&](const char* kernel, double us, double weight_bytes, double in_bytes,
                      double o_bytes) {
      const double floor_us = 1e6 * (weight_bytes + in_bytes + o_bytes) / bandwidth;
      const double gbps = weight_bytes / (us * 1e-6) / 1e9;
      std::printf("%-10s %5lld %6lld %6lld %-12s %10.2f %9.0f %9.2f %8.2f %8.2f\n", s.source,
                  (long long)s.m, (long long)s.n, (long long)s.k, kernel, us, gbps, floor_us,
                  t_fp16 / us, t_bf16 / us);
      rows.row(JsonObject()
                   .add("source", s.source)
                   .add("m", s.m)
                   .add("n", s.n)
                   .add("k", s.k)
                   .add("kernel", kernel)
                   .add("median_us", us)
                   .add("weight_gbps", gbps)
                   .add("floor_us", floor_us)
                   .add("speedup_vs_cublas_fp16", t_fp16 / us)
                   .add("speedup_vs_cublas_bf16", t_bf16 / us)
                   .add("input_sets", weight_bytes == f16_bytes ? sets_f16 : sets_w2));
    };
    report("cublas_fp16", t_fp16, f16_bytes, 2 * act_bytes, out_bytes / 2);
    report("cublas_bf16", t_bf16, f16_bytes, 2 * act_bytes, out_bytes / 2);
    report("w2a8", t_w2a8, w2_bytes, act_bytes, out_bytes);
    for (const auto& [name, us] : variants)
      report(name.c_str(), us, w2_bytes, act_bytes, out_bytes);
    report("bitplane", t_plane, w2_bytes, act_bytes / 4, out_bytes);
  }
  out.add("inference_copy_bandwidth_gbps", bandwidth / 1e9).raw("inference", rows.rows_json());
}
#else
void bench_bitlinear_inference(int, const std::string&, JsonObject&) {}
#endif

}  // namespace bg::cli
