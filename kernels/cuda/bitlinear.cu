// bitlinear.cu: BitNet b1.58's quantisers and the dequantiser on CUDA (the int8 product is
// int8_gemm.cu). Each equals kernels/cpu/bitlinear.cpp bit for bit: the same reduction trees,
// IEEE roundings spelled out (__fdiv_rn, __fsqrt_rn, __fmaf_rn), rint's ties to even.
//
// The weight scale: absmean sums |w| in f64, 4096 elements per block (thread t: elements t,
// t + 256, ... in order, then a shared-memory tree), then one block sums the partials the same
// way. absmedian is a radix select over the bits of |w| (non-negative floats order as their
// bits): four passes of 8-bit histograms whose integer counts no order can change.
#include <cstdint>
#include <type_traits>

#include "bitlinear_common.cuh"
#include "cuda_common.cuh"
#include "cuda_kernels.h"

namespace bg::cuda {
namespace {

constexpr int kTree = 256;
constexpr int64_t kAbsSumChunk = 4096;
constexpr float kMinScale = 1e-5f;

__device__ double block_tree_sum(double v, double* lane) {
  lane[threadIdx.x] = v;
  __syncthreads();
  for (int stride = kTree / 2; stride > 0; stride /= 2) {
    if (int(threadIdx.x) < stride) lane[threadIdx.x] += lane[threadIdx.x + stride];
    __syncthreads();
  }
  return lane[0];
}

__global__ void abs_sum_chunks(double* partial, const float* w, int64_t n) {
  __shared__ double lane[kTree];
  const int64_t base = int64_t(blockIdx.x) * kAbsSumChunk;
  const int64_t len = min(kAbsSumChunk, n - base);
  double acc = 0;
  for (int64_t i = threadIdx.x; i < len; i += kTree) acc += double(fabsf(w[base + i]));
  const double s = block_tree_sum(acc, lane);
  if (threadIdx.x == 0) partial[blockIdx.x] = s;
}

__global__ void abs_mean_finish(float* beta, const double* partial, int64_t chunks, int64_t n) {
  __shared__ double lane[kTree];
  double acc = 0;
  for (int64_t i = threadIdx.x; i < chunks; i += kTree) acc += partial[i];
  const double total = block_tree_sum(acc, lane);
  if (threadIdx.x == 0) *beta = fmaxf(n ? float(total / double(n)) : 0.0f, kMinScale);
}

// Radix select state: the high bits found so far, and the rank still sought among the
// elements that share them.
struct SelectState {
  uint32_t prefix;
  uint32_t rank;
};

__global__ void radix_histogram(uint32_t* hist, const SelectState* st, const float* w, int64_t n,
                                int shift) {
  __shared__ uint32_t local[256];
  local[threadIdx.x] = 0;
  __syncthreads();
  const uint32_t high_mask = shift == 24 ? 0u : ~0u << (shift + 8);
  const uint32_t prefix = st->prefix & high_mask;
  BG_GRID_LOOP(i, n) {
    const uint32_t key = __float_as_uint(fabsf(w[i]));
    if ((key & high_mask) == prefix) atomicAdd(&local[(key >> shift) & 255u], 1u);
  }
  __syncthreads();
  if (local[threadIdx.x]) atomicAdd(&hist[threadIdx.x], local[threadIdx.x]);
}

__global__ void radix_pick(SelectState* st, uint32_t* hist, int shift, float* beta) {
  uint32_t below = 0, bin = 0;
  for (; bin < 255; ++bin) {
    if (below + hist[bin] > st->rank) break;
    below += hist[bin];
  }
  st->rank -= below;
  st->prefix |= bin << shift;
  for (int i = 0; i < 256; ++i) hist[i] = 0;  // ready for the next pass
  if (shift == 0) *beta = fmaxf(__uint_as_float(st->prefix), kMinScale);
}

__device__ __forceinline__ int8_t ternary_value(float w, float b) {
  return int8_t(fminf(fmaxf(rintf(__fdiv_rn(w, b)), -1.0f), 1.0f));
}

// Block rows over the weight rows (blockIdx.y, stepping by gridDim.y), four columns a thread: a
// 16-byte load and a 4-byte store where `vector` (K a multiple of 4, both tensors aligned to
// it), with no 64-bit division per element (it dominated the element-at-a-time loop this
// replaced). Columns K .. row - 1 (the padding) get 0.
__global__ void ternary_round(int8_t* wq, const float* w, const float* beta, int64_t rows,
                              int64_t k, int64_t row, bool vector) {
  const float b = *beta;
  for (int64_t r = blockIdx.y; r < rows; r += gridDim.y) {
    const float* src = w + r * k;
    int8_t* dst = wq + r * row;
    for (int64_t j = (int64_t(blockIdx.x) * blockDim.x + threadIdx.x) * 4; j < row;
         j += int64_t(gridDim.x) * blockDim.x * 4) {
      if (vector && j + 4 <= k) {
        const float4 v = *reinterpret_cast<const float4*>(src + j);
        *reinterpret_cast<char4*>(dst + j) =
            make_char4(ternary_value(v.x, b), ternary_value(v.y, b), ternary_value(v.z, b),
                       ternary_value(v.w, b));
      } else {
        for (int64_t c = j; c < j + 4 && c < row; ++c)
          dst[c] = c < k ? ternary_value(src[c], b) : 0;
      }
    }
  }
}

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
  gamma = fmaxf(warp_max(gamma), kMinScale);
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

// Four consecutive elements of T, as held raw in registers (8 bytes of f16/bf16, 16 of f32) and
// read back as floats.
template <typename T>
struct Group4 {
  using Raw = std::conditional_t<sizeof(T) == 4, float4, uint2>;
  Raw raw;
  // n elements from p (0 <= n <= 4), zeros after them. p must point into the row even for
  // n = 0: the compiler may then issue the vector load and discard it.
  __device__ __forceinline__ void load(const T* p, int n, bool vec) {
    if (vec && n == 4) {
      raw = *reinterpret_cast<const Raw*>(p);
    } else {
      T* h = reinterpret_cast<T*>(&raw);
#pragma unroll
      for (int i = 0; i < 4; ++i) h[i] = i < n ? p[i] : from_float<T>(0.0f);
    }
  }
  __device__ __forceinline__ float operator[](int i) const {
    return to_float(reinterpret_cast<const T*>(&raw)[i]);
  }
};

// act_quantize_rows with the row held in registers: lane l holds groups l, l + 32, ... (kG of
// them) of four elements, loaded once; the sums, the max and the rounding then run in
// act_quantize_rows' order (element e in lane (e / 4) % 32), so the bits are the same. Short
// rows are held as floats, normalised once; long rows of 2-byte inputs raw (half the registers),
// converted at each pass. kFull: k = 128 kG, every group whole (no per-element bounds). vec:
// rows of whole, aligned groups (K % 4 == 0, x aligned), loaded as vectors. Rows are shorter
// than 2^31 elements (kG <= 24).
template <typename T, int kG, bool kFull>
__global__ void act_quantize_rows_held(int8_t* xq, float* step, float* scale_out, float* mean_out,
                                       float* rstd_out, const T* x, int64_t m, int64_t k64,
                                       int64_t row, BitNorm norm, float q_max, float eps,
                                       bool vec) {
  constexpr bool kFloats = sizeof(T) == 4 || kG <= 8;
  const int lane = threadIdx.x & 31;
  const int64_t r = int64_t(blockIdx.x) * (blockDim.x / 32) + threadIdx.x / 32;
  if (r >= m) return;
  const int k = int(k64);
  const T* xr = x + r * k64;
  Group4<T> raw[kFloats ? 1 : kG];
  float held[kFloats ? kG : 1][4];
#pragma unroll
  for (int j = 0; j < kG; ++j) {
    const int e0 = (lane + 32 * j) * 4, n = kFull ? 4 : max(0, min(4, k - e0));
    Group4<T> g;
    g.load(xr + (n > 0 ? e0 : 0), n, vec);
    if constexpr (kFloats) {
#pragma unroll
      for (int i = 0; i < 4; ++i) held[j][i] = g[i];
    } else {
      raw[j] = g;
    }
  }
  auto value = [&](int j, int i) {
    if constexpr (kFloats)
      return held[j][kFloats ? i : 0];
    else
      return raw[kFloats ? 0 : j][i];
  };
  auto in_row = [&](int j, int i) { return kFull || (lane + 32 * j) * 4 + i < k; };
  float mu = 0.0f, rs = 1.0f;
  if (norm == BitNorm::layer) {
    float s = 0.0f;
#pragma unroll
    for (int j = 0; j < kG; ++j)
#pragma unroll
      for (int i = 0; i < 4; ++i)
        if (in_row(j, i)) s = __fadd_rn(s, value(j, i));
    mu = __fdiv_rn(warp_sum(s), float(k));
  }
  if (norm != BitNorm::none) {
    float ss = 0.0f;
#pragma unroll
    for (int j = 0; j < kG; ++j)
#pragma unroll
      for (int i = 0; i < 4; ++i)
        if (in_row(j, i)) {
          const float d = __fsub_rn(value(j, i), mu);
          ss = __fmaf_rn(d, d, ss);
        }
    rs = __fdiv_rn(1.0f, __fsqrt_rn(__fadd_rn(__fdiv_rn(warp_sum(ss), float(k)), eps)));
  }
  auto normalise = [&](float v) {
    return norm == BitNorm::none ? v : __fmul_rn(__fsub_rn(v, mu), rs);
  };
  if constexpr (kFloats) {
#pragma unroll
    for (int j = 0; j < kG; ++j)
#pragma unroll
      for (int i = 0; i < 4; ++i) held[j][i] = normalise(held[j][i]);
  }
  auto normed = [&](int j, int i) {
    if constexpr (kFloats)
      return value(j, i);
    else
      return normalise(value(j, i));
  };
  float gamma = 0.0f;
#pragma unroll
  for (int j = 0; j < kG; ++j)
#pragma unroll
    for (int i = 0; i < 4; ++i)
      if (in_row(j, i)) gamma = fmaxf(gamma, fabsf(normed(j, i)));
  gamma = fmaxf(warp_max(gamma), kMinScale);
  const float inv = __fdiv_rn(q_max, gamma), lo = -q_max - 1.0f;
  int8_t* out = xq + r * row;
#pragma unroll
  for (int j = 0; j < kG; ++j) {
    const int e0 = (lane + 32 * j) * 4;
    if (!kFull && e0 >= row) continue;  // row <= 128 kG: the padded row is covered
    uint32_t b[4];
#pragma unroll
    for (int i = 0; i < 4; ++i)
      b[i] = in_row(j, i) ? rounded_bits(__fmul_rn(normed(j, i), inv), lo, q_max) : kRoundedZero;
    *reinterpret_cast<uint32_t*>(out + e0) = pack_int8(b[0], b[1], b[2], b[3]);
  }
  if (lane == 0) {
    step[r] = __fdiv_rn(gamma, q_max);
    if (scale_out) scale_out[r] = inv;
    if (rstd_out) rstd_out[r] = rs;
    if (mean_out) mean_out[r] = mu;
  }
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

void ternary_quantize(const KView& wq, const KView& beta, const KView& w, TernaryScale method,
                      Scratch& scratch, StreamHandle stream) {
  if (w.dtype != DType::f32 || wq.dtype != DType::i8 || beta.dtype != DType::f32)
    kernel_fail("ternary_quantize", "expects f32 weights, i8 output and an f32 scale");
  const cudaStream_t s = as_stream(stream);
  const int64_t rows = wq.shape[0], k = wq.shape[1], row = wq.strides[0], n = rows * k;
  const float* src = static_cast<const float*>(w.data);
  float* b = static_cast<float*>(beta.data);
  if (method == TernaryScale::absmean) {
    const int64_t chunks = (n + kAbsSumChunk - 1) / kAbsSumChunk;
    double* partial = static_cast<double*>(scratch.get(size_t(std::max<int64_t>(chunks, 1)) * 8));
    if (chunks) abs_sum_chunks<<<unsigned(chunks), kTree, 0, s>>>(partial, src, n);
    abs_mean_finish<<<1, kTree, 0, s>>>(b, partial, chunks, n);
  } else {
    auto* mem = static_cast<uint8_t*>(scratch.get(256 * 4 + sizeof(SelectState)));
    auto* hist = reinterpret_cast<uint32_t*>(mem);
    auto* st = reinterpret_cast<SelectState*>(mem + 256 * 4);
    const SelectState init{0u, n ? uint32_t((n - 1) / 2) : 0u};
    BG_CUDA_CHECK(cudaMemsetAsync(hist, 0, 256 * 4, s));
    BG_CUDA_CHECK(cudaMemcpyAsync(st, &init, sizeof(init), cudaMemcpyHostToDevice, s));
    for (int shift = 24; shift >= 0; shift -= 8) {
      radix_histogram<<<grid_for(n, 256, 2048), 256, 0, s>>>(hist, st, src, n, shift);
      radix_pick<<<1, 1, 0, s>>>(st, hist, shift, b);
    }
  }
  BG_CUDA_LAUNCH_CHECK();
  if (rows > 0) {
    const bool vector = k % 4 == 0 && row % 4 == 0 && reinterpret_cast<uintptr_t>(src) % 16 == 0 &&
                        reinterpret_cast<uintptr_t>(wq.data) % 4 == 0;
    const dim3 grid(unsigned(std::min<int64_t>((row + 1023) / 1024, 64)),
                    unsigned(std::min<int64_t>(rows, 65535)));
    ternary_round<<<grid, 256, 0, s>>>(static_cast<int8_t*>(wq.data), src, b, rows, k, row, vector);
  }
  BG_CUDA_LAUNCH_CHECK();
}

void act_quantize(const KView& xq, const KView& step, const KView& quant_scale, const KView& mean,
                  const KView& rstd, const KView& x, const ActQuantOptions& opt,
                  StreamHandle stream) {
  if (xq.dtype != DType::i8 || step.dtype != DType::f32)
    kernel_fail("act_quantize", "xq must be i8 and step f32");
  const int64_t m = xq.shape[0], k = xq.shape[1], row = xq.strides[0];
  if (m == 0) return;
  const float q_max = float((1 << (opt.bits - 1)) - 1);
  const cudaStream_t s = as_stream(stream);
  const int64_t groups_per_lane = (k + 127) / 128;
  // Wide rows hold many registers a lane: smaller blocks then pack the SMs more evenly.
  const int kWarps = groups_per_lane > 8 ? 4 : 8;
  const unsigned grid = unsigned((m + kWarps - 1) / kWarps);
  dispatch_float(x.dtype, "act_quantize", [&](auto zero) {
    using T = decltype(zero);
    auto* q = static_cast<int8_t*>(xq.data);
    auto* st = static_cast<float*>(step.data);
    auto* sc = static_cast<float*>(quant_scale.data);
    auto* mu = static_cast<float*>(mean.data);
    auto* rs = static_cast<float*>(rstd.data);
    const T* px = static_cast<const T*>(x.data);
    const bool vec = k % 4 == 0 && reinterpret_cast<uintptr_t>(px) % (4 * sizeof(T)) == 0;
    const float e = float(opt.eps);
    auto held = [&](auto groups) {
      constexpr int kG = decltype(groups)::value;
      if (k == 128 * kG)
        act_quantize_rows_held<T, kG, true><<<grid, kWarps * 32, 0, s>>>(
            q, st, sc, mu, rs, px, m, k, row, opt.norm, q_max, e, vec);
      else
        act_quantize_rows_held<T, kG, false><<<grid, kWarps * 32, 0, s>>>(
            q, st, sc, mu, rs, px, m, k, row, opt.norm, q_max, e, vec);
    };
    // Rows up to 3072 wide (GPT-2's MLP) live in registers; wider ones read their row once per
    // pass.
    if (groups_per_lane <= 1)
      held(std::integral_constant<int, 1>());
    else if (groups_per_lane <= 2)
      held(std::integral_constant<int, 2>());
    else if (groups_per_lane <= 3)
      held(std::integral_constant<int, 3>());  // the Baby GPT's 384
    else if (groups_per_lane <= 4)
      held(std::integral_constant<int, 4>());
    else if (groups_per_lane <= 6)
      held(std::integral_constant<int, 6>());  // GPT-2's 768
    else if (groups_per_lane <= 8)
      held(std::integral_constant<int, 8>());
    else if (groups_per_lane <= 12)
      held(std::integral_constant<int, 12>());
    else if (groups_per_lane <= 16)
      held(std::integral_constant<int, 16>());
    else if (groups_per_lane <= 24)
      held(std::integral_constant<int, 24>());
    else
      act_quantize_rows<T>
          <<<grid, kWarps * 32, 0, s>>>(q, st, sc, mu, rs, px, m, k, row, opt.norm, q_max, e);
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
