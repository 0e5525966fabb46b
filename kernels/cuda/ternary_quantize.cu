// ternary_quantize.cu: BitNet b1.58's weight quantiser on CUDA, for a group of weights at once
// (a model quantises all its BitLinear weights in one call a forward), equal to
// kernels/cpu/bitlinear.cpp bit for bit.
//
// The scale: absmean sums |w| in f64, 4096 elements per block (thread t: elements t, t + 256, ...
// in order, then a shared-memory tree), then one block per weight sums its partials the same way.
// absmedian is a radix select over the bits of |w| (non-negative floats order as their bits):
// four passes of 8-bit histograms whose integer counts no order can change, weight by weight.
// Then one launch rounds every weight and writes W~ = beta * W_q where asked. For absmean the
// whole group takes three launches, whatever its size up to kGroupMax weights.
#include <algorithm>
#include <cstdint>

#include "cuda_common.cuh"
#include "cuda_kernels.h"

namespace bg::cuda {
namespace {

constexpr int kTree = 256;
constexpr int64_t kAbsSumChunk = 4096;
constexpr float kMinScale = 1e-5f;  // BitNet's clamp of beta
// Weights per launch: the table below stays under the 4 KB of kernel parameters every CUDA
// version takes. A larger group runs as several launches of this many.
constexpr int kGroupMax = 48;

// A launch's weights, read from parameter space (__grid_constant__: indexed in place, not copied
// per thread). Weight t owns chunks [chunk_end[t - 1], chunk_end[t]) (chunk_end[-1] = 0) of
// kAbsSumChunk elements of its flattened (N, K) array, in both the abs-sum and rounding passes.
struct GroupTable {
  const float* w[kGroupMax];
  int8_t* q[kGroupMax];
  void* tilde[kGroupMax];  // W~ in the launch's tilde type, or null
  float* beta[kGroupMax];
  int64_t n[kGroupMax], k[kGroupMax], row[kGroupMax];
  int64_t chunk_end[kGroupMax];
  uint64_t vector_ok;  // bit t: weight t takes 16-byte loads (K % 4 == 0, aligned tensors)
  int count;
};

// The weight owning chunk c, and c's first element in it.
struct ChunkPlace {
  int t;
  int64_t base;
};
__device__ __forceinline__ ChunkPlace place_of(const GroupTable& g, int64_t c) {
  int t = 0;
  while (c >= g.chunk_end[t]) ++t;
  return {t, (c - (t ? g.chunk_end[t - 1] : 0)) * kAbsSumChunk};
}

__device__ double block_tree_sum(double v, double* lane) {
  lane[threadIdx.x] = v;
  __syncthreads();
  for (int stride = kTree / 2; stride > 0; stride /= 2) {
    if (int(threadIdx.x) < stride) lane[threadIdx.x] += lane[threadIdx.x + stride];
    __syncthreads();
  }
  return lane[0];
}

// One block per chunk of any weight: partial[c] = the chunk's tree sum of |w|. Lane t sums
// elements t, t + 256, ... in order; a whole chunk's 16 are loaded before they are summed.
__global__ void abs_sum_chunks(double* partial, const __grid_constant__ GroupTable g) {
  __shared__ double lane[kTree];
  const ChunkPlace p = place_of(g, blockIdx.x);
  const int64_t len = min(kAbsSumChunk, g.n[p.t] - p.base);
  const float* w = g.w[p.t] + p.base;
  double acc = 0;
  if (len == kAbsSumChunk) {
    constexpr int kPerLane = kAbsSumChunk / kTree;
    float v[kPerLane];
#pragma unroll
    for (int i = 0; i < kPerLane; ++i) v[i] = w[threadIdx.x + i * kTree];
#pragma unroll
    for (int i = 0; i < kPerLane; ++i) acc += double(fabsf(v[i]));
  } else {
    for (int64_t i = threadIdx.x; i < len; i += kTree) acc += double(fabsf(w[i]));
  }
  const double s = block_tree_sum(acc, lane);
  if (threadIdx.x == 0) partial[blockIdx.x] = s;
}

// One block per weight: its partials summed by the same tree, beta = max(mean, 1e-5).
__global__ void abs_mean_finish(const double* partial, const __grid_constant__ GroupTable g) {
  __shared__ double lane[kTree];
  const int t = blockIdx.x;
  const int64_t first = t ? g.chunk_end[t - 1] : 0, chunks = g.chunk_end[t] - first;
  double acc = 0;
  for (int64_t i = threadIdx.x; i < chunks; i += kTree) acc += partial[first + i];
  const double total = block_tree_sum(acc, lane);
  if (threadIdx.x == 0)
    *g.beta[t] = fmaxf(g.n[t] ? float(total / double(g.n[t])) : 0.0f, kMinScale);
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

// W~ = float(q) * beta rounded once to O, as int8_dequantize computes it.
template <typename O>
__device__ __forceinline__ O tilde_value(int8_t q, float b) {
  return from_float<O>(__fmul_rn(float(q), b));
}

// One block per chunk, as in the abs-sum pass. Where the weight takes 16-byte loads, thread t
// rounds groups t, t + 256, t + 512, t + 768 of four elements (loaded together: a group never
// straddles rows, K % 4 == 0), storing four int8s and, where asked, four W~ values (W~ is
// contiguous: its index is the element's); else elements t, t + 256, ... one by one. Rows are
// found by a 32-bit division where the weight has fewer than 2^31 elements. The thread that
// writes a row's last element also zeroes its padding (the bytes K .. row - 1).
template <typename O>
__global__ void ternary_round(const __grid_constant__ GroupTable g) {
  const ChunkPlace p = place_of(g, blockIdx.x);
  const int t = p.t;
  const int64_t n = g.n[t], k = g.k[t], row = g.row[t];
  const float b = *g.beta[t];
  const float* w = g.w[t];
  int8_t* q = g.q[t];
  O* tilde = static_cast<O*>(g.tilde[t]);
  const bool narrow = n < (int64_t(1) << 31);
  auto row_of = [&](int64_t e) { return narrow ? int64_t(uint32_t(e) / uint32_t(k)) : e / k; };
  auto finish_row = [&](int64_t r) {  // zeros past K, the int8 kernels' padding
    for (int64_t c = k; c < row; ++c) q[r * row + c] = 0;
  };
  const int64_t len = min(kAbsSumChunk, n - p.base);
  if ((g.vector_ok >> t) & 1u) {
    constexpr int kGroups = kAbsSumChunk / 4 / kTree;
    float4 v[kGroups];
#pragma unroll
    for (int i = 0; i < kGroups; ++i) {
      const int64_t e = 4 * (threadIdx.x + i * kTree);
      if (e < len) v[i] = *reinterpret_cast<const float4*>(w + p.base + e);
    }
#pragma unroll
    for (int i = 0; i < kGroups; ++i) {
      const int64_t e = p.base + 4 * (threadIdx.x + i * kTree);
      if (e - p.base >= len) break;
      const int64_t r = row_of(e), c = e - r * k;
      const char4 x = make_char4(ternary_value(v[i].x, b), ternary_value(v[i].y, b),
                                 ternary_value(v[i].z, b), ternary_value(v[i].w, b));
      *reinterpret_cast<char4*>(q + r * row + c) = x;
      if (tilde) {
        struct alignas(4 * sizeof(O)) Four {
          O v[4];
        };
        *reinterpret_cast<Four*>(tilde + e) =
            Four{{tilde_value<O>(x.x, b), tilde_value<O>(x.y, b), tilde_value<O>(x.z, b),
                  tilde_value<O>(x.w, b)}};
      }
      if (c + 4 == k) finish_row(r);
    }
  } else {
    for (int64_t i = threadIdx.x; i < len; i += kTree) {
      const int64_t e = p.base + i, r = row_of(e), c = e - r * k;
      const int8_t x = ternary_value(w[e], b);
      q[r * row + c] = x;
      if (tilde) tilde[e] = tilde_value<O>(x, b);
      if (c + 1 == k) finish_row(r);
    }
  }
}

bool aligned(const void* p, uintptr_t bytes) { return reinterpret_cast<uintptr_t>(p) % bytes == 0; }

// Up to kGroupMax weights, all with W~ of one dtype or none.
void quantize_launch(const TernaryTarget* targets, int count, TernaryScale method, Scratch& scratch,
                     cudaStream_t s) {
  GroupTable g{};
  g.count = count;
  int64_t chunks = 0;
  DType tilde_dtype = DType::f32;
  for (int t = 0; t < count; ++t) {
    const TernaryTarget& x = targets[t];
    if (x.w.dtype != DType::f32 || x.wq.dtype != DType::i8 || x.beta.dtype != DType::f32)
      kernel_fail("ternary_quantize", "expects f32 weights, i8 output and an f32 scale");
    const int64_t k = x.wq.shape[1], row = x.wq.strides[0], n = x.wq.shape[0] * k;
    g.w[t] = static_cast<const float*>(x.w.data);
    g.q[t] = static_cast<int8_t*>(x.wq.data);
    g.beta[t] = static_cast<float*>(x.beta.data);
    g.tilde[t] = x.tilde.data;
    if (x.tilde.data) {
      if (x.tilde.dtype != DType::f32 && x.tilde.dtype != DType::bf16)
        kernel_fail("ternary_quantize",
                    std::string("W~ must be f32 or bf16, got ") + dtype_name(x.tilde.dtype));
      tilde_dtype = x.tilde.dtype;
    }
    if (n == 0 && x.wq.shape[0] > 0)  // no element to round: only the padding to zero
      BG_CUDA_CHECK(cudaMemsetAsync(x.wq.data, 0, size_t(x.wq.shape[0] * row), s));
    g.n[t] = n;
    g.k[t] = k;
    g.row[t] = row;
    chunks += (n + kAbsSumChunk - 1) / kAbsSumChunk;
    g.chunk_end[t] = chunks;
    const size_t tilde_bytes = dtype_size(tilde_dtype);
    const bool vector = k % 4 == 0 && row % 4 == 0 && aligned(x.w.data, 16) &&
                        aligned(x.wq.data, 4) &&
                        (!x.tilde.data || aligned(x.tilde.data, 4 * tilde_bytes));
    if (vector) g.vector_ok |= uint64_t(1) << t;
  }
  if (method == TernaryScale::absmean) {
    double* partial = static_cast<double*>(scratch.get(size_t(std::max<int64_t>(chunks, 1)) * 8));
    if (chunks) abs_sum_chunks<<<unsigned(chunks), kTree, 0, s>>>(partial, g);
    abs_mean_finish<<<unsigned(count), kTree, 0, s>>>(partial, g);
  } else {
    auto* mem = static_cast<uint8_t*>(scratch.get(256 * 4 + sizeof(SelectState)));
    auto* hist = reinterpret_cast<uint32_t*>(mem);
    auto* st = reinterpret_cast<SelectState*>(mem + 256 * 4);
    for (int t = 0; t < count; ++t) {
      const int64_t n = g.n[t];
      const SelectState init{0u, n ? uint32_t((n - 1) / 2) : 0u};
      BG_CUDA_CHECK(cudaMemsetAsync(hist, 0, 256 * 4, s));
      BG_CUDA_CHECK(cudaMemcpyAsync(st, &init, sizeof(init), cudaMemcpyHostToDevice, s));
      for (int shift = 24; shift >= 0; shift -= 8) {
        radix_histogram<<<grid_for(n, 256, 2048), 256, 0, s>>>(hist, st, g.w[t], n, shift);
        radix_pick<<<1, 1, 0, s>>>(st, hist, shift, g.beta[t]);
      }
    }
  }
  BG_CUDA_LAUNCH_CHECK();
  if (chunks > 0) {
    if (tilde_dtype == DType::bf16)
      ternary_round<__nv_bfloat16><<<unsigned(chunks), kTree, 0, s>>>(g);
    else
      ternary_round<float><<<unsigned(chunks), kTree, 0, s>>>(g);
  }
  BG_CUDA_LAUNCH_CHECK();
}

}  // namespace

void ternary_quantize_group(const TernaryTarget* targets, int count, TernaryScale method,
                            Scratch& scratch, StreamHandle stream) {
  const cudaStream_t s = as_stream(stream);
  // A launch takes up to kGroupMax weights whose W~ share one dtype (weights without W~ join
  // any launch).
  auto tilde_of = [&](int i) { return targets[i].tilde.data ? int(targets[i].tilde.dtype) : -1; };
  for (int first = 0; first < count;) {
    int last = first + 1, kind = tilde_of(first);
    while (last < count && last - first < kGroupMax &&
           (tilde_of(last) == kind || tilde_of(last) == -1 || kind == -1)) {
      if (kind == -1) kind = tilde_of(last);
      ++last;
    }
    quantize_launch(targets + first, last - first, method, scratch, s);
    first = last;
  }
}

}  // namespace bg::cuda
