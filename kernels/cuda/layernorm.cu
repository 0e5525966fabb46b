// layernorm.cu: LayerNorm and RMSNorm (rms = true) over the last dim: one warp per row, or for
// wide rows (c >= kWideRow) one block per row holding the row in registers.
// Forward stores mean/rstd (f32). Backward: dx per row in the same warp; dweight/dbias as
// f32 partial sums over fixed chunks of kRowsPerChunk rows, then summed over chunks in a fixed
// order (one warp per column):
// a partition fixed by the shape alone (not the SM count), hence bitwise reproducible.
#include <type_traits>

#include "cuda_common.cuh"
#include "cuda_kernels.h"
#include "layernorm_row.cuh"
#include "layernorm_rows.h"

namespace bg::cuda {
namespace {

constexpr int kWarpsPerBlock = 8;
constexpr int64_t kRowsPerChunk = 32;  // 512 chunks for a 16384-row GPT batch: enough blocks

// y may be stored narrower than x (TOut = bf16 for f32 x: the operand of a bf16 matmul). TW: the
// weight's and bias's storage, x's or f32 for a 16-bit x (bf16 activations, f32 parameters).
template <typename T, typename TOut, typename TW>
__global__ void layernorm_forward_kernel(TOut* y, float* mean, float* rstd, const T* x, const TW* w,
                                         const TW* b, int64_t rows, int64_t c, float eps,
                                         bool rms) {
  const int64_t r = int64_t(blockIdx.x) * kWarpsPerBlock + threadIdx.x / 32;
  const int lane = threadIdx.x & 31;
  if (r >= rows) return;
  const T* xr = x + r * c;
  float mu, rs;
  layernorm_row_stats([&](int64_t j) { return to_float(xr[j]); }, lane, c, eps, rms, mu, rs);
  TOut* yr = y + r * c;
  for (int64_t j = lane; j < c; j += 32)
    yr[j] = from_float<TOut>(layernorm_row_value(to_float(xr[j]), mu, rs, w != nullptr,
                                                 w ? to_float(w[j]) : 1.f, b != nullptr,
                                                 b ? to_float(b[j]) : 0.f));
  if (lane == 0) {
    if (mean) mean[r] = mu;
    rstd[r] = rs;
  }
}

// Wide rows: one block of kWideThreads per row, the row read once into registers. A group is 16
// bytes of x: kVec = 4 f32 or 8 f16/bf16 elements. Thread t owns groups g = t, t + kWideThreads,
// ... (elements kVec g .. kVec g + kVec - 1), loaded as one vector when the row is aligned for it
// and element by element otherwise: the same elements in the same order either way, so a row's
// bits depend on its values and c alone (never on its address or the batch). kItems: groups
// per thread (c <= kItems kVec kWideThreads).
constexpr int kWideThreads = 256;
constexpr int64_t kWideRow = 2048;

template <typename T, int N>
struct alignas(N * sizeof(T)) VecN {
  T v[N];
};

template <int N, typename T>
__device__ __forceinline__ bool vec_aligned(const T* p, int64_t c) {
  return reinterpret_cast<uintptr_t>(p) % (N * sizeof(T)) == 0 && c % N == 0;
}

template <int N, typename T>
__device__ __forceinline__ void load_group(float* v, const T* row, int64_t e, int64_t c, bool vec) {
  if (vec && e + N - 1 < c) {
    const VecN<T, N> q = *reinterpret_cast<const VecN<T, N>*>(row + e);
#pragma unroll
    for (int k = 0; k < N; ++k) v[k] = to_float(q.v[k]);
  } else {
#pragma unroll
    for (int k = 0; k < N; ++k) v[k] = e + k < c ? to_float(row[e + k]) : 0.f;
  }
}

template <typename T, typename TOut, typename TW, int kItems>
__global__ void __launch_bounds__(kWideThreads)
    layernorm_forward_wide_kernel(TOut* y, float* mean, float* rstd, const T* x, const TW* w,
                                  const TW* b, int64_t c, float eps, bool rms) {
  constexpr int kVec = 16 / sizeof(T);
  __shared__ float scratch[32];
  const int64_t r = blockIdx.x;
  const T* xr = x + r * c;
  TOut* yr = y + r * c;
  const bool vec_x = vec_aligned<kVec>(xr, c);
  float v[kItems][kVec];
  float sum = 0.f;
#pragma unroll
  for (int i = 0; i < kItems; ++i) {
    const int64_t e = kVec * (int64_t(i) * kWideThreads + threadIdx.x);
    load_group<kVec>(v[i], xr, e, c, vec_x);
#pragma unroll
    for (int k = 0; k < kVec; ++k) sum += v[i][k];
  }
  const float mu = rms ? 0.f : block_reduce<false>(sum, scratch) / float(c);
  float var = 0.f;
#pragma unroll
  for (int i = 0; i < kItems; ++i) {
    const int64_t e = kVec * (int64_t(i) * kWideThreads + threadIdx.x);
#pragma unroll
    for (int k = 0; k < kVec; ++k) {
      const float d = e + k < c ? v[i][k] - mu : 0.f;
      var += d * d;
    }
  }
  const float rs = rsqrtf(block_reduce<false>(var, scratch) / float(c) + eps);
  const bool vec_y = vec_aligned<kVec>(yr, c), vec_w = w && vec_aligned<kVec>(w, c),
             vec_b = b && vec_aligned<kVec>(b, c);
#pragma unroll
  for (int i = 0; i < kItems; ++i) {
    const int64_t e = kVec * (int64_t(i) * kWideThreads + threadIdx.x);
    if (e >= c) break;
    float wk[kVec], bk[kVec];
    if (w) load_group<kVec>(wk, w, e, c, vec_w);
    if (b) load_group<kVec>(bk, b, e, c, vec_b);
    VecN<TOut, kVec> out;
#pragma unroll
    for (int k = 0; k < kVec; ++k) {
      float o = (v[i][k] - mu) * rs;
      if (w) o *= wk[k];
      if (b) o += bk[k];
      out.v[k] = from_float<TOut>(o);
    }
    if (vec_y && e + kVec - 1 < c) {
      *reinterpret_cast<VecN<TOut, kVec>*>(yr + e) = out;
    } else {
#pragma unroll
      for (int k = 0; k < kVec; ++k)
        if (e + k < c) yr[e + k] = out.v[k];
    }
  }
  if (threadIdx.x == 0) {
    if (mean) mean[r] = mu;
    rstd[r] = rs;
  }
}

// Wide rows, backward: one block per chunk of kRowsPerChunk rows, the rows in order. For each
// row the block reads x and dy once into registers, writes dx (its two row sums reduced in a
// fixed order), and adds dy * xhat and dy to per-column partial sums it keeps in registers, so
// the dweight/dbias partials come from the same pass instead of a second read of x and dy.
// Each partial sums its chunk's rows in order, as layernorm_param_partials_kernel does.
template <typename T, typename TG, typename TW, int kItems>
__global__ void __launch_bounds__(kWideThreads)
    layernorm_backward_wide_kernel(T* dx, const T* dx_addend, float* partial_w, float* partial_b,
                                   const TG* dy, const T* x, const TW* w, const float* mean,
                                   const float* rstd, int64_t rows, int64_t c, bool rms) {
  constexpr int kVec = 16 / sizeof(T);
  __shared__ float scratch[32];
  const int64_t begin = int64_t(blockIdx.x) * kRowsPerChunk;
  const int64_t end = min(begin + kRowsPerChunk, rows);
  float wk[kItems][kVec], acc_w[kItems][kVec], acc_b[kItems][kVec];
#pragma unroll
  for (int i = 0; i < kItems; ++i) {
    const int64_t e = kVec * (int64_t(i) * kWideThreads + threadIdx.x);
    if (w) {
      load_group<kVec>(wk[i], w, e, c, vec_aligned<kVec>(w, c));
    } else {
#pragma unroll
      for (int k = 0; k < kVec; ++k) wk[i][k] = 1.f;
    }
#pragma unroll
    for (int k = 0; k < kVec; ++k) acc_w[i][k] = acc_b[i][k] = 0.f;
  }
  for (int64_t r = begin; r < end; ++r) {
    const T* xr = x + r * c;
    const TG* gr = dy + r * c;
    const bool vec_x = vec_aligned<kVec>(xr, c), vec_g = vec_aligned<kVec>(gr, c);
    const float mu = rms ? 0.f : mean[r], rs = rstd[r];
    float xv[kItems][kVec], gv[kItems][kVec];
    float sum_g = 0.f, sum_gx = 0.f;
#pragma unroll
    for (int i = 0; i < kItems; ++i) {
      const int64_t e = kVec * (int64_t(i) * kWideThreads + threadIdx.x);
      load_group<kVec>(xv[i], xr, e, c, vec_x);
      load_group<kVec>(gv[i], gr, e, c, vec_g);
#pragma unroll
      for (int k = 0; k < kVec; ++k) {
        const float g = gv[i][k] * wk[i][k];
        const float xhat = e + k < c ? (xv[i][k] - mu) * rs : 0.f;
        sum_g += g;
        sum_gx += g * xhat;
      }
    }
    const float mean_g = rms ? 0.f : block_reduce<false>(sum_g, scratch) / float(c);
    const float mean_gx = block_reduce<false>(sum_gx, scratch) / float(c);
    T* dxr = dx + r * c;
    const T* addr = dx_addend ? dx_addend + r * c : nullptr;
#pragma unroll
    for (int i = 0; i < kItems; ++i) {
      const int64_t e = kVec * (int64_t(i) * kWideThreads + threadIdx.x);
#pragma unroll
      for (int k = 0; k < kVec; ++k) {
        if (e + k >= c) break;
        const float g = gv[i][k] * wk[i][k];
        const float xhat = (xv[i][k] - mu) * rs;
        const T own = from_float<T>(rs * (g - mean_g - xhat * mean_gx));
        // __fadd_rn: the residual gradient meets dx rounded, as a separate add would.
        dxr[e + k] = addr ? from_float<T>(__fadd_rn(to_float(own), to_float(addr[e + k]))) : own;
        acc_w[i][k] += gv[i][k] * xhat;
        acc_b[i][k] += gv[i][k];
      }
    }
  }
  if (!partial_w) return;
#pragma unroll
  for (int i = 0; i < kItems; ++i) {
    const int64_t e = kVec * (int64_t(i) * kWideThreads + threadIdx.x);
#pragma unroll
    for (int k = 0; k < kVec; ++k) {
      if (e + k >= c) break;
      partial_w[blockIdx.x * c + e + k] = acc_w[i][k];
      if (partial_b) partial_b[blockIdx.x * c + e + k] = acc_b[i][k];
    }
  }
}

// Groups of 16 bytes per thread that hold a row of c elements of T in one kWideThreads block,
// rounded up to the kernels' template sizes 2, 4 or 8; 0 when the row is narrower than kWideRow
// (the warp-per-row kernels take it) or needs more than 8 (they stream it).
template <typename T>
int wide_groups(int64_t c) {
  const int64_t group = 16 / int64_t(sizeof(T));
  const int64_t items = (c + group * kWideThreads - 1) / (group * kWideThreads);
  if (c < kWideRow || items > 8) return 0;
  return items <= 2 ? 2 : items <= 4 ? 4 : 8;
}
// Calls f(std::integral_constant<int, groups>{}): the wide kernels' kItems.
template <typename F>
void with_groups(int groups, F&& f) {
  if (groups == 2)
    f(std::integral_constant<int, 2>{});
  else if (groups == 4)
    f(std::integral_constant<int, 4>{});
  else
    f(std::integral_constant<int, 8>{});
}

// TG: the gradient's storage (T, or bf16 for f32 x whose output was stored in bf16).
template <typename T, typename TG, typename TW>
__global__ void layernorm_dx_kernel(T* dx, const T* dx_addend, const TG* dy, const T* x,
                                    const TW* w, const float* mean, const float* rstd,
                                    int64_t rows, int64_t c, bool rms) {
  const int64_t r = int64_t(blockIdx.x) * kWarpsPerBlock + threadIdx.x / 32;
  const int lane = threadIdx.x & 31;
  if (r >= rows) return;
  const T* xr = x + r * c;
  const TG* gr = dy + r * c;
  const float mu = rms ? 0.f : mean[r], rs = rstd[r];
  float mean_g = 0.f, mean_gx = 0.f;
  for (int64_t j = lane; j < c; j += 32) {
    const float g = to_float(gr[j]) * (w ? to_float(w[j]) : 1.f);
    mean_g += g;
    mean_gx += g * (to_float(xr[j]) - mu) * rs;
  }
  mean_g = rms ? 0.f : warp_sum(mean_g) / float(c);
  mean_gx = warp_sum(mean_gx) / float(c);
  T* dxr = dx + r * c;
  const T* addr = dx_addend ? dx_addend + r * c : nullptr;
  for (int64_t j = lane; j < c; j += 32) {
    const float g = to_float(gr[j]) * (w ? to_float(w[j]) : 1.f);
    const float xhat = (to_float(xr[j]) - mu) * rs;
    const T own = from_float<T>(rs * (g - mean_g - xhat * mean_gx));
    // __fadd_rn: the residual gradient meets dx rounded, as a separate add would.
    dxr[j] = addr ? from_float<T>(__fadd_rn(to_float(own), to_float(addr[j]))) : own;
  }
}

// partial_w/partial_b: (chunks, c); thread per column, rows of its chunk in order.
template <typename T, typename TG>
__global__ void layernorm_param_partials_kernel(float* partial_w, float* partial_b, const TG* dy,
                                                const T* x, const float* mean, const float* rstd,
                                                int64_t rows, int64_t c, bool rms) {
  const int64_t col = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  const int64_t chunk = blockIdx.y;
  if (col >= c) return;
  const int64_t begin = chunk * kRowsPerChunk, end = min(begin + kRowsPerChunk, rows);
  float acc_w = 0.f, acc_b = 0.f;
  for (int64_t r = begin; r < end; ++r) {
    const float g = to_float(dy[r * c + col]);
    const float xhat = (to_float(x[r * c + col]) - (rms ? 0.f : mean[r])) * rstd[r];
    acc_w += g * xhat;
    acc_b += g;
  }
  partial_w[chunk * c + col] = acc_w;
  if (partial_b) partial_b[chunk * c + col] = acc_b;
}

// One warp per column: lane l sums chunks l, l + 32, ... in order, then a fixed butterfly adds
// the 32 lane sums. The order depends on the shape alone, and 32 loads are in flight per column
// instead of one long dependent chain (a 16384-row GPT batch has 512 chunks).
template <typename T>
__global__ void sum_chunks_kernel(T* out, const float* partial, int64_t chunks, int64_t c) {
  const int64_t col = int64_t(blockIdx.x) * (blockDim.x / 32) + threadIdx.x / 32;
  const int lane = threadIdx.x & 31;
  if (col >= c) return;
  float acc = 0.f;
  for (int64_t k = lane; k < chunks; k += 32) acc += partial[k * c + col];
  acc = warp_sum(acc);
  if (lane == 0) out[col] = from_float<T>(acc);
}

// f(x's element, the second tensor's, the parameters'): the parameters have x's dtype, or are
// f32 for a 16-bit x (bf16 activations with f32 weights; a missing weight and bias count as x's).
template <typename F>
void dispatch_norm(DType x, DType second, DType params, const char* op, const char* what, F&& f) {
  dispatch_float_or_bf16(x, second, op, what, [&](auto xt, auto st) {
    using T = decltype(xt);
    if (params == x) return f(xt, st, xt);
    if constexpr (sizeof(T) == 2) {
      if (params == DType::f32) return f(xt, st, float{});
    }
    kernel_fail(op, std::string("parameter dtype ") + dtype_name(params) + " for input " +
                        dtype_name(x) + " (x's dtype, or f32 for a 16-bit x)");
  });
}

DType params_dtype(const KView& weight, const KView& bias, DType x) {
  return weight.data ? weight.dtype : bias.data ? bias.dtype : x;
}

}  // namespace

void layernorm_forward(const KView& y, const KView& mean, const KView& rstd, const KView& x,
                       const KView& weight, const KView& bias, double eps, bool rms,
                       StreamHandle stream) {
  const int64_t c = x.shape[x.ndim - 1];
  if (c == 0 || x.numel() == 0) return;
  const int64_t rows = x.numel() / c;
  const unsigned grid = unsigned((rows + kWarpsPerBlock - 1) / kWarpsPerBlock);
  auto launch = [&](auto in, auto out, auto param) {
    using T = decltype(in);
    using TOut = decltype(out);
    using TW = decltype(param);
    // A wide row is held in registers (up to 8 16-byte groups per thread: c <= 8192 f32, 16384
    // f16/bf16); past that the warp-per-row kernel streams it.
    if (const int groups = wide_groups<T>(c)) {
      with_groups(groups, [&](auto k) {
        layernorm_forward_wide_kernel<T, TOut, TW, decltype(k)::value>
            <<<unsigned(rows), kWideThreads, 0, as_stream(stream)>>>(
                static_cast<TOut*>(y.data), static_cast<float*>(mean.data),
                static_cast<float*>(rstd.data), static_cast<const T*>(x.data),
                static_cast<const TW*>(weight.data), static_cast<const TW*>(bias.data), c,
                float(eps), rms);
      });
      return;
    }
    layernorm_forward_kernel<T, TOut, TW><<<grid, 32 * kWarpsPerBlock, 0, as_stream(stream)>>>(
        static_cast<TOut*>(y.data), static_cast<float*>(mean.data), static_cast<float*>(rstd.data),
        static_cast<const T*>(x.data), static_cast<const TW*>(weight.data),
        static_cast<const TW*>(bias.data), rows, c, float(eps), rms);
  };
  dispatch_norm(x.dtype, y.dtype, params_dtype(weight, bias, x.dtype), "layernorm", "output",
                launch);
  BG_CUDA_LAUNCH_CHECK();
}

bool layernorm_backward_block_rows(DType x, int64_t c) {
  return x == DType::f32 && wide_groups<float>(c) != 0;
}

void layernorm_backward(const KView& dx, const KView& dx_addend, const KView& dweight,
                        const KView& dbias, const KView& dy, const KView& x, const KView& weight,
                        const KView& mean, const KView& rstd, bool rms, Scratch& scratch,
                        StreamHandle stream) {
  const int64_t c = x.shape[x.ndim - 1];
  if (c == 0 || x.numel() == 0) return;
  const int64_t rows = x.numel() / c;
  auto s = as_stream(stream);
  auto launch = [&](auto xt, auto gt, auto param) {
    using T = decltype(xt);
    using TG = decltype(gt);
    using TW = decltype(param);
    const auto* px = static_cast<const T*>(x.data);
    const auto* pdy = static_cast<const TG*>(dy.data);
    const auto* pmean = static_cast<const float*>(mean.data);
    const auto* prstd = static_cast<const float*>(rstd.data);
    const int64_t chunks = (rows + kRowsPerChunk - 1) / kRowsPerChunk;
    const bool partials = dweight.data || dbias.data;
    float* pw =
        partials ? static_cast<float*>(scratch.get(sizeof(float) * size_t(chunks * c))) : nullptr;
    float* pb =
        dbias.data ? static_cast<float*>(scratch.get(sizeof(float) * size_t(chunks * c))) : nullptr;
    // Wide f32 rows: one pass writes dx and the dweight/dbias partials. f32 only: for 2-byte
    // rows the 32 dependent row steps of a chunk leave the block waiting on latency, and the
    // two-kernel path is faster (bf16 65536x4096: 2553 us one pass, 2243 two kernels; f32: 2660
    // one pass, 3055 two kernels; bench/results/norms_h200*.json).
    const int groups = layernorm_backward_block_rows(x.dtype, c) ? wide_groups<T>(c) : 0;
    if (dx.data && groups) {
      with_groups(groups, [&](auto k) {
        layernorm_backward_wide_kernel<T, TG, TW, decltype(k)::value>
            <<<unsigned(chunks), kWideThreads, 0, s>>>(
                static_cast<T*>(dx.data), static_cast<const T*>(dx_addend.data), pw, pb, pdy, px,
                static_cast<const TW*>(weight.data), pmean, prstd, rows, c, rms);
      });
    } else {
      if (dx.data) {
        const unsigned grid = unsigned((rows + kWarpsPerBlock - 1) / kWarpsPerBlock);
        layernorm_dx_kernel<T, TG, TW><<<grid, 32 * kWarpsPerBlock, 0, s>>>(
            static_cast<T*>(dx.data), static_cast<const T*>(dx_addend.data), pdy, px,
            static_cast<const TW*>(weight.data), pmean, prstd, rows, c, rms);
      }
      if (partials) {
        dim3 grid(unsigned((c + 127) / 128), unsigned(chunks));
        layernorm_param_partials_kernel<T, TG>
            <<<grid, 128, 0, s>>>(pw, pb, pdy, px, pmean, prstd, rows, c, rms);
      }
    }
    BG_CUDA_LAUNCH_CHECK();
    if (!partials) return;
    const unsigned column_blocks = unsigned((c + 7) / 8);  // 8 warps of 256 threads
    if (dweight.data)
      sum_chunks_kernel<TW>
          <<<column_blocks, 256, 0, s>>>(static_cast<TW*>(dweight.data), pw, chunks, c);
    if (dbias.data)
      sum_chunks_kernel<TW>
          <<<column_blocks, 256, 0, s>>>(static_cast<TW*>(dbias.data), pb, chunks, c);
    BG_CUDA_LAUNCH_CHECK();
  };
  dispatch_norm(x.dtype, dy.dtype, params_dtype(weight, dweight.data ? dweight : dbias, x.dtype),
                "layernorm_backward", "gradient", launch);
}

}  // namespace bg::cuda
