// reduce.cu: sum/max over the middle axis of a contiguous (O, R, I) block, deterministically.
// The extent R is cut into fixed-size segments (kRowSegment for I == 1, kColSegment otherwise);
// each segment is reduced in a fixed order into an f32 partial, and passes repeat until one
// partial is left. The partition depends only on the shape, never on the GPU's SM count, so
// the bits are the same on any Hopper part and run to run. kSquare (ReduceOp::sum_squares, the
// first pass only) sums each element's square rounded to f32, sum(x * x)'s bits for f32 x.
#include "cuda_common.cuh"
#include "cuda_kernels.h"

namespace bg::cuda {
namespace {

constexpr int64_t kRowSegment = 2048;  // elements per warp when reducing contiguous rows
constexpr int64_t kColSegment = 64;    // rows per thread when reducing across rows

// The first pass's element: x, or x * x rounded once (no contraction into the sum's add).
template <bool kSquare>
__device__ __forceinline__ float reduce_input(float v) {
  return kSquare ? __fmul_rn(v, v) : v;
}

template <bool kMax, typename Tin, typename Tout, bool kSquare = false>
__global__ void reduce_rows_kernel(Tout* out, const Tin* in, int64_t segments_total,
                                   int64_t segments, int64_t extent) {
  const int64_t seg = int64_t(blockIdx.x) * (blockDim.x / 32) + threadIdx.x / 32;
  const int lane = threadIdx.x & 31;
  if (seg >= segments_total) return;
  const int64_t o = seg / segments, p = seg - o * segments;
  const int64_t begin = p * kRowSegment;
  const int64_t end = min(begin + kRowSegment, extent);
  const Tin* row = in + o * extent;
  float acc = kMax ? -INFINITY : 0.f;
  for (int64_t r = begin + lane; r < end; r += 32) {
    const float v = reduce_input<kSquare>(to_float(row[r]));
    acc = kMax ? fmaxf(acc, v) : acc + v;
  }
  acc = kMax ? warp_max(acc) : warp_sum(acc);
  if (lane == 0) out[seg] = from_float<Tout>(acc);
}

template <bool kMax, typename Tin, typename Tout, bool kSquare = false>
__global__ void reduce_cols_kernel(Tout* out, const Tin* in, int64_t outer, int64_t segments,
                                   int64_t extent, int64_t inner) {
  const int64_t total = outer * segments * inner;
  BG_GRID_LOOP(t, total) {
    const int64_t i = t % inner, op = t / inner, p = op % segments, o = op / segments;
    const int64_t begin = p * kColSegment, end = min(begin + kColSegment, extent);
    float acc = kMax ? -INFINITY : 0.f;
    for (int64_t r = begin; r < end; ++r) {
      const float v = reduce_input<kSquare>(to_float(in[(o * extent + r) * inner + i]));
      acc = kMax ? fmaxf(acc, v) : acc + v;
    }
    out[t] = from_float<Tout>(acc);
  }
}

template <bool kMax, typename Tin, typename Tout, bool kSquare = false>
void launch_pass(Tout* out, const Tin* in, int64_t outer, int64_t extent, int64_t inner,
                 int64_t segments, cudaStream_t s) {
  if (inner == 1) {
    const int64_t total = outer * segments;
    const int warps_per_block = 8;
    const unsigned grid = unsigned((total + warps_per_block - 1) / warps_per_block);
    reduce_rows_kernel<kMax, Tin, Tout, kSquare>
        <<<grid, 32 * warps_per_block, 0, s>>>(out, in, total, segments, extent);
  } else {
    const int64_t total = outer * segments * inner;
    reduce_cols_kernel<kMax, Tin, Tout, kSquare>
        <<<grid_for(total, 256), 256, 0, s>>>(out, in, outer, segments, extent, inner);
  }
  BG_CUDA_LAUNCH_CHECK();
}

template <bool kMax, typename T, typename Tout = T, bool kSquare = false>
void reduce_typed(Tout* out, const T* in, int64_t outer, int64_t extent, int64_t inner,
                  Scratch& scratch, cudaStream_t s) {
  if (extent == 0) {
    kernel_fail("reduce", "cannot reduce an empty extent on the GPU");
  }
  const int64_t seg_len = inner == 1 ? kRowSegment : kColSegment;
  int64_t segments = (extent + seg_len - 1) / seg_len;
  if (segments == 1)
    return launch_pass<kMax, T, Tout, kSquare>(out, in, outer, extent, inner, 1, s);
  // First pass into f32 partials (O, segments, I), then reduce the partials.
  float* partial =
      static_cast<float*>(scratch.get(sizeof(float) * size_t(outer * segments * inner)));
  launch_pass<kMax, T, float, kSquare>(partial, in, outer, extent, inner, segments, s);
  int64_t len = segments;
  while (true) {
    const int64_t next = (len + seg_len - 1) / seg_len;
    if (next == 1) return launch_pass<kMax, float, Tout>(out, partial, outer, len, inner, 1, s);
    float* nxt = static_cast<float*>(scratch.get(sizeof(float) * size_t(outer * next * inner)));
    launch_pass<kMax, float, float>(nxt, partial, outer, len, inner, next, s);
    partial = nxt;
    len = next;
  }
}

}  // namespace

void reduce(ReduceOp op, const KView& out, const KView& in, int64_t outer, int64_t extent,
            int64_t inner, Scratch& scratch, StreamHandle stream) {
  if (outer * inner == 0) return;
  if (out.dtype != in.dtype) {
    // An f16/bf16 input summed into an f32 output (kernel_list.h): the partials are f32 anyway.
    if (out.dtype != DType::f32 || op != ReduceOp::sum ||
        (in.dtype != DType::bf16 && in.dtype != DType::f16))
      kernel_fail("reduce", "the output takes the input's dtype, or f32 for an f16/bf16 sum");
    return dispatch_float(in.dtype, "reduce", [&](auto zero) {
      using T = decltype(zero);
      reduce_typed<false, T, float>(static_cast<float*>(out.data), static_cast<const T*>(in.data),
                                    outer, extent, inner, scratch, as_stream(stream));
    });
  }
  dispatch_float(in.dtype, "reduce", [&](auto zero) {
    using T = decltype(zero);
    auto* o = static_cast<T*>(out.data);
    const auto* i = static_cast<const T*>(in.data);
    if (op == ReduceOp::max) {
      reduce_typed<true, T>(o, i, outer, extent, inner, scratch, as_stream(stream));
    } else if (op == ReduceOp::sum_squares) {
      reduce_typed<false, T, T, true>(o, i, outer, extent, inner, scratch, as_stream(stream));
    } else {
      reduce_typed<false, T>(o, i, outer, extent, inner, scratch, as_stream(stream));
    }
  });
}

}  // namespace bg::cuda
