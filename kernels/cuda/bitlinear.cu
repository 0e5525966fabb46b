// bitlinear.cu: BitNet b1.58's activation quantiser and the dequantiser on CUDA (the weight
// quantiser is ternary_quantize.cu, the int8 product int8_gemm.cu). Each equals
// kernels/cpu/bitlinear.cpp bit for bit: the same reduction trees, IEEE roundings spelled out
// (__fdiv_rn, __fsqrt_rn, __fmaf_rn), rint's ties to even.
#include <cstdint>
#include <type_traits>

#include "act_quantize_row.cuh"
#include "bitlinear_common.cuh"
#include "cuda_common.cuh"
#include "cuda_kernels.h"

namespace bg::cuda {
namespace {

// One warp per row. Element e belongs to lane (e / 4) % 32; a lane folds its elements in order.
template <typename T>
__global__ void act_quantize_rows(int8_t* xq, float* step, float* scale_out, float* mean_out,
                                  float* rstd_out, const T* x, int64_t m, int64_t k, int64_t row,
                                  BitNorm norm, float q_max, float eps) {
  const int lane = threadIdx.x & 31;
  const int64_t r = int64_t(blockIdx.x) * (blockDim.x / 32) + threadIdx.x / 32;
  if (r >= m) return;
  const T* xr = x + r * k;
  auto for_lane = [&](auto&& f) {
    for (int64_t g = int64_t(lane) * 4; g < k; g += 128)
      for (int64_t e = g; e < min(g + 4, k); ++e) f(e, to_float(xr[e]));
  };
  float mu = 0.0f, rs = 1.0f;
  if (norm == BitNorm::layer) {
    float s = 0.0f;
    for_lane([&](int64_t, float v) { s = __fadd_rn(s, v); });
    mu = __fdiv_rn(warp_sum(s), float(k));
  }
  if (norm != BitNorm::none) {
    float ss = 0.0f;
    for_lane([&](int64_t, float v) {
      const float d = __fsub_rn(v, mu);
      ss = __fmaf_rn(d, d, ss);
    });
    rs = __fdiv_rn(1.0f, __fsqrt_rn(__fadd_rn(__fdiv_rn(warp_sum(ss), float(k)), eps)));
  }
  auto normed = [&](float v) {
    return norm == BitNorm::none ? v : __fmul_rn(__fsub_rn(v, mu), rs);
  };
  float gamma = 0.0f;
  for_lane([&](int64_t, float v) { gamma = fmaxf(gamma, fabsf(normed(v))); });
  gamma = fmaxf(warp_max(gamma), kActMinScale);
  const float inv = __fdiv_rn(q_max, gamma);
  int8_t* out = xq + r * row;
  for_lane([&](int64_t e, float v) {
    out[e] = int8_t(fminf(fmaxf(rintf(__fmul_rn(normed(v), inv)), -q_max - 1.0f), q_max));
  });
  for (int64_t e = k + lane; e < row; e += 32) out[e] = 0;
  if (lane == 0) {
    step[r] = __fdiv_rn(gamma, q_max);
    if (scale_out) scale_out[r] = inv;
    if (rstd_out) rstd_out[r] = rs;
    if (mean_out) mean_out[r] = mu;
  }
}

// act_quantize_rows with the row held in registers (act_quantize_row.cuh): lane l loads groups
// l, l + 32, ... (kG of them) of four elements once. Short rows are held as floats, long rows of
// 2-byte inputs raw (half the registers), converted at each pass. kFull: k = 128 kG, every group
// whole (no per-element bounds). vec: rows of whole, aligned groups (K % 4 == 0, x aligned),
// loaded as vectors. Rows are shorter than 2^31 elements (kG <= 24).
template <typename T, int kG, bool kFull>
__global__ void act_quantize_rows_held(const T* x, int64_t m, int64_t k64, bool vec,
                                       RowQuantizer quantizer) {
  constexpr bool kFloats = sizeof(T) == 4 || kG <= 8;
  const int lane = threadIdx.x & 31;
  const int64_t r = int64_t(blockIdx.x) * (blockDim.x / 32) + threadIdx.x / 32;
  if (r >= m) return;
  const int k = int(k64);
  const T* xr = x + r * k64;
  HeldRow<T, kG, kFloats> held;
#pragma unroll
  for (int j = 0; j < kG; ++j) {
    const int e0 = (lane + 32 * j) * 4, n = kFull ? 4 : max(0, min(4, k - e0));
    Group4<T> g;
    g.load(xr + (n > 0 ? e0 : 0), n, vec);
    held.set(j, g);
  }
  quantizer.quantize<kFull>(held, r, k, lane);
}

// Four bytes of a row per thread. Rows whose length is a multiple of 4 run as one flat range of
// groups (a char4 load, one 8- or 16-byte store: vec); others one row per grid.y step, stored
// element by element (a row of 4 n + 1 elements starts at any 2- or 4-byte address).
template <typename O>
__device__ __forceinline__ void dequantize4(O* out, const int8_t* src, int n, float rs, float ts,
                                            bool has_rs, bool has_ts, bool vec) {
  float x[4];
  for (int j = 0; j < 4; ++j) {
    x[j] = j < n ? float(src[j]) : 0.0f;
    if (has_rs) x[j] = __fmul_rn(x[j], rs);
    if (has_ts) x[j] = __fmul_rn(x[j], ts);
  }
  if (vec) {
    if constexpr (sizeof(O) == 4) {
      *reinterpret_cast<float4*>(out) = make_float4(x[0], x[1], x[2], x[3]);
    } else {
      O h[4] = {from_float<O>(x[0]), from_float<O>(x[1]), from_float<O>(x[2]), from_float<O>(x[3])};
      *reinterpret_cast<uint2*>(out) = *reinterpret_cast<const uint2*>(h);
    }
  } else {
    for (int j = 0; j < n; ++j) out[j] = from_float<O>(x[j]);
  }
}

template <typename O>
__global__ void dequantize_flat(O* out, const int8_t* q, const float* row_scale,
                                const float* tensor_scale, int64_t rows, int64_t cols,
                                int64_t row) {
  const float ts = tensor_scale ? *tensor_scale : 1.0f;
  const int64_t per_row = cols / 4;
  BG_GRID_LOOP(g, rows * per_row) {
    const int64_t r = g / per_row, c0 = (g - r * per_row) * 4;
    dequantize4(out + r * cols + c0, q + r * row + c0, 4, row_scale ? row_scale[r] : 1.0f, ts,
                row_scale != nullptr, tensor_scale != nullptr, true);
  }
}

template <typename O>
__global__ void dequantize_rows(O* out, const int8_t* q, const float* row_scale,
                                const float* tensor_scale, int64_t rows, int64_t cols,
                                int64_t row) {
  const int64_t c0 = (int64_t(blockIdx.x) * blockDim.x + threadIdx.x) * 4;
  if (c0 >= cols) return;
  const float ts = tensor_scale ? *tensor_scale : 1.0f;
  const int n = int(cols - c0 < 4 ? cols - c0 : 4);
  for (int64_t r = blockIdx.y; r < rows; r += gridDim.y)
    dequantize4(out + r * cols + c0, q + r * row + c0, n, row_scale ? row_scale[r] : 1.0f, ts,
                row_scale != nullptr, tensor_scale != nullptr, false);
}

}  // namespace

void act_quantize(const KView& xq, const KView& step, const KView& quant_scale, const KView& mean,
                  const KView& rstd, const KView& x, const ActQuantOptions& opt,
                  StreamHandle stream) {
  if (xq.dtype != DType::i8 || step.dtype != DType::f32)
    kernel_fail("act_quantize", "xq must be i8 and step f32");
  const int64_t m = xq.shape[0], k = xq.shape[1];
  if (m == 0) return;
  const cudaStream_t s = as_stream(stream);
  const int64_t groups = (k + 127) / 128;
  // Wide rows hold many registers a lane: smaller blocks then pack the SMs more evenly.
  const int kWarps = groups > 8 ? 4 : 8;
  const unsigned grid = unsigned((m + kWarps - 1) / kWarps);
  const RowQuantizer quantizer = row_quantizer(xq, step, quant_scale, mean, rstd, opt);
  dispatch_float(x.dtype, "act_quantize", [&](auto zero) {
    using T = decltype(zero);
    const T* px = static_cast<const T*>(x.data);
    const bool vec = k % 4 == 0 && reinterpret_cast<uintptr_t>(px) % (4 * sizeof(T)) == 0;
    // Rows up to 3072 wide (GPT-2's MLP) live in registers; wider ones read their row once per
    // pass.
    if (groups > 24) {
      act_quantize_rows<T><<<grid, kWarps * 32, 0, s>>>(
          quantizer.xq, quantizer.step, quantizer.scale_out, quantizer.mean_out, quantizer.rstd_out,
          px, m, k, quantizer.row, opt.norm, quantizer.q_max, quantizer.eps);
      return;
    }
    with_row_groups<24>(groups, [&](auto size) {
      constexpr int kG = decltype(size)::value;
      if (k == 128 * kG)
        act_quantize_rows_held<T, kG, true><<<grid, kWarps * 32, 0, s>>>(px, m, k, vec, quantizer);
      else
        act_quantize_rows_held<T, kG, false><<<grid, kWarps * 32, 0, s>>>(px, m, k, vec, quantizer);
    });
  });
  BG_CUDA_LAUNCH_CHECK();
}

void int8_dequantize(const KView& out, const KView& q, const KView& row_scale,
                     const KView& tensor_scale, StreamHandle stream) {
  const int64_t rows = q.shape[0], cols = q.shape[1];
  if (rows * cols == 0) return;
  const auto* rs = static_cast<const float*>(row_scale.data);
  const auto* ts = static_cast<const float*>(tensor_scale.data);
  const auto* qp = static_cast<const int8_t*>(q.data);
  const cudaStream_t s = as_stream(stream);
  auto launch = [&](auto* o) {
    if (cols % 4 == 0)
      dequantize_flat<<<grid_for(rows * cols / 4, 256), 256, 0, s>>>(o, qp, rs, ts, rows, cols,
                                                                     q.strides[0]);
    else
      dequantize_rows<<<dim3(unsigned((cols + 1023) / 1024),
                             unsigned(std::min<int64_t>(rows, 65535))),
                        256, 0, s>>>(o, qp, rs, ts, rows, cols, q.strides[0]);
  };
  if (out.dtype == DType::f32)
    launch(static_cast<float*>(out.data));
  else if (out.dtype == DType::bf16)
    launch(static_cast<__nv_bfloat16*>(out.data));
  else
    kernel_fail("int8_dequantize",
                std::string("out must be f32 or bf16, got ") + dtype_name(out.dtype));
  BG_CUDA_LAUNCH_CHECK();
}

namespace {

__global__ void pack_ternary_kernel(uint8_t* packed, const int8_t* wq, int64_t n, int64_t k,
                                    int64_t row, int64_t bytes) {
  BG_GRID_LOOP(i, n * bytes) {
    const int64_t r = i / bytes, j = i - r * bytes;
    uint32_t b = 0;
    for (int t = 0; t < 4; ++t) {
      const int64_t e = 4 * j + t;
      const int code = e < k ? wq[r * row + e] + 1 : 1;
      b |= uint32_t(code) << (2 * t);
    }
    packed[i] = uint8_t(b);
  }
}

__global__ void unpack_ternary_kernel(int8_t* wq, const uint8_t* packed, int64_t n, int64_t k,
                                      int64_t row, int64_t bytes) {
  BG_GRID_LOOP(i, n * row) {
    const int64_t r = i / row, e = i - r * row;
    wq[i] = e < k ? int8_t(((packed[r * bytes + e / 4] >> (2 * (e % 4))) & 3) - 1) : 0;
  }
}

}  // namespace

void pack_ternary(const KView& packed, const KView& wq, StreamHandle stream) {
  const int64_t n = wq.shape[0], bytes = packed.shape[1];
  if (n * bytes == 0) return;
  pack_ternary_kernel<<<grid_for(n * bytes, 256), 256, 0, as_stream(stream)>>>(
      static_cast<uint8_t*>(packed.data), static_cast<const int8_t*>(wq.data), n, wq.shape[1],
      wq.strides[0], bytes);
  BG_CUDA_LAUNCH_CHECK();
}

void unpack_ternary(const KView& wq, const KView& packed, StreamHandle stream) {
  const int64_t n = wq.shape[0], row = wq.strides[0];
  if (n * row == 0) return;
  unpack_ternary_kernel<<<grid_for(n * row, 256), 256, 0, as_stream(stream)>>>(
      static_cast<int8_t*>(wq.data), static_cast<const uint8_t*>(packed.data), n, wq.shape[1], row,
      packed.shape[1]);
  BG_CUDA_LAUNCH_CHECK();
}

}  // namespace bg::cuda
