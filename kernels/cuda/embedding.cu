// embedding.cu: row gather, and a deterministic backward without floating-point atomics:
// token positions are stably radix-sorted by id (CUB), then each run of equal ids is summed
// by one block in ascending position order. An id outside [0, V) gathers a NaN row.
#include <algorithm>
#include <cub/block/block_scan.cuh>
#include <cub/device/device_radix_sort.cuh>

#include "cuda_common.cuh"
#include "cuda_kernels.h"

namespace bg::cuda {
namespace {

template <typename T, typename I>
__global__ void embedding_forward_kernel(T* out, const T* weight, const I* idx, int64_t n,
                                         int64_t vocab, int64_t c) {
  BG_GRID_LOOP(t, n * c) {
    const int64_t i = t / c, j = t - i * c;
    const int64_t row = int64_t(idx[i]);
    out[t] = (row >= 0 && row < vocab) ? weight[row * c + j] : from_float<T>(NAN);
  }
}

__global__ void iota_kernel(int32_t* p, int64_t n) {
  BG_GRID_LOOP(i, n) { p[i] = int32_t(i); }
}

template <typename T, typename I>
__global__ void embedding_backward_kernel(T* dweight, const T* dout, const I* sorted_ids,
                                          const int32_t* sorted_pos, int64_t n, int64_t vocab,
                                          int64_t c) {
  const int64_t j = blockIdx.x;
  const I id = sorted_ids[j];
  if (j > 0 && sorted_ids[j - 1] == id) return;  // not the start of a run
  if (int64_t(id) < 0 || int64_t(id) >= vocab) return;
  // The run's end by binary search (the ids are sorted), not by walking it.
  int64_t lo = j + 1, hi = n;
  while (lo < hi) {
    const int64_t mid = lo + (hi - lo) / 2;
    if (sorted_ids[mid] <= id) lo = mid + 1; else hi = mid;
  }
  const int64_t end = lo;
  // A frequent token's run is thousands of rows: kAhead rows are loaded before any is added, then
  // added in run order (the same sum as one row at a time, with kAhead loads in flight).
  constexpr int kAhead = 8;
  for (int64_t col = int64_t(blockIdx.y) * blockDim.x + threadIdx.x; col < c;
       col += int64_t(gridDim.y) * blockDim.x) {
    float acc = 0.f;
    for (int64_t k0 = j; k0 < end; k0 += kAhead) {
      float v[kAhead];
#pragma unroll
      for (int a = 0; a < kAhead; ++a)
        v[a] = k0 + a < end ? to_float(dout[int64_t(sorted_pos[k0 + a]) * c + col]) : 0.f;
#pragma unroll
      for (int a = 0; a < kAhead; ++a)
        if (k0 + a < end) acc += v[a];
    }
    dweight[int64_t(id) * c + col] = from_float<T>(acc);
  }
}

// Small vocabularies: block (row, chunk) sums, in position order, the rows of one chunk of
// kScanChunk token positions whose id is `row` into partial[chunk][row]; a second kernel adds
// the chunks' partials in chunk order. Deterministic (a fixed partition), no sort, and every SM
// busy even for a 65-character vocabulary.
constexpr int64_t kScanChunk = 512;
constexpr int kScanThreads = 128;
constexpr int kScanPerThread = int(kScanChunk) / kScanThreads;
// The block first lists, in position order, the chunk's positions holding `row` (each thread
// tests 4 consecutive positions; an exclusive scan of the counts places them), then every
// column sums just those rows, in that order.
template <typename T, typename I>
__global__ void __launch_bounds__(kScanThreads)
    embedding_backward_scan_kernel(float* partial, const T* dout, const I* idx, int64_t n,
                                   int64_t vocab, int64_t c) {
  using Scan = cub::BlockScan<int, kScanThreads>;
  __shared__ typename Scan::TempStorage scan_storage;
  __shared__ int32_t matches[kScanChunk];
  __shared__ int total;
  const int64_t row = blockIdx.x, chunk = blockIdx.y;
  const int64_t first = chunk * kScanChunk + int64_t(threadIdx.x) * kScanPerThread;
  bool hit[kScanPerThread];
  int count = 0;
#pragma unroll
  for (int j = 0; j < kScanPerThread; ++j) {
    hit[j] = first + j < n && int64_t(idx[first + j]) == row;
    count += hit[j];
  }
  int offset, sum;
  Scan(scan_storage).ExclusiveSum(count, offset, sum);
#pragma unroll
  for (int j = 0; j < kScanPerThread; ++j)
    if (hit[j]) matches[offset++] = int32_t(first + j);
  if (threadIdx.x == 0) total = sum;
  __syncthreads();
  for (int64_t col = threadIdx.x; col < c; col += blockDim.x) {
    float acc = 0.f;
    for (int k = 0; k < total; ++k) acc += to_float(dout[int64_t(matches[k]) * c + col]);
    partial[(chunk * vocab + row) * c + col] = acc;
  }
}
template <typename T>
__global__ void embedding_sum_chunks_kernel(T* dweight, const float* partial, int64_t chunks,
                                            int64_t vc) {
  BG_GRID_LOOP(t, vc) {
    float acc = 0.f;
    for (int64_t k = 0; k < chunks; ++k) acc += partial[k * vc + t];
    dweight[t] = from_float<T>(acc);
  }
}

constexpr int64_t kScanWork = int64_t(1) << 22;  // vocab x tokens below which the scan wins

}  // namespace

void embedding_forward(const KView& out, const KView& weight, const KView& idx,
                       StreamHandle stream) {
  const int64_t n = idx.numel(), vocab = weight.shape[0], c = weight.shape[1];
  if (n * c == 0) return;
  dispatch_float(weight.dtype, "embedding", [&](auto zero) {
    using T = decltype(zero);
    dispatch_index(idx.dtype, "embedding", [&](auto izero) {
      using I = decltype(izero);
      embedding_forward_kernel<T, I><<<grid_for(n * c, 256), 256, 0, as_stream(stream)>>>(
          static_cast<T*>(out.data), static_cast<const T*>(weight.data),
          static_cast<const I*>(idx.data), n, vocab, c);
    });
  });
  BG_CUDA_LAUNCH_CHECK();
}

void embedding_backward(const KView& dweight, const KView& dout, const KView& idx, Scratch& scratch,
                        StreamHandle stream) {
  const int64_t n = idx.numel(), vocab = dweight.shape[0], c = dweight.shape[1];
  auto s = as_stream(stream);
  if (vocab * n <= kScanWork && vocab * c > 0) {
    dispatch_float(dweight.dtype, "embedding_backward", [&](auto zero) {
      using T = decltype(zero);
      dispatch_index(idx.dtype, "embedding_backward", [&](auto izero) {
        using I = decltype(izero);
        const int64_t chunks = std::max<int64_t>(1, (n + kScanChunk - 1) / kScanChunk);
        auto* partial =
            static_cast<float*>(scratch.get(sizeof(float) * size_t(chunks * vocab * c)));
        if (n > 0) {
          embedding_backward_scan_kernel<T, I>
              <<<dim3(unsigned(vocab), unsigned(chunks)), kScanThreads, 0, s>>>(
                  partial, static_cast<const T*>(dout.data), static_cast<const I*>(idx.data), n,
                  vocab, c);
          BG_CUDA_LAUNCH_CHECK();
        } else {
          BG_CUDA_CHECK(cudaMemsetAsync(partial, 0, sizeof(float) * size_t(vocab * c), s));
        }
        embedding_sum_chunks_kernel<T><<<grid_for(vocab * c, 256), 256, 0, s>>>(
            static_cast<T*>(dweight.data), partial, chunks, vocab * c);
      });
    });
    BG_CUDA_LAUNCH_CHECK();
    return;
  }
  BG_CUDA_CHECK(cudaMemsetAsync(dweight.data, 0, size_t(vocab * c) * dtype_size(dweight.dtype), s));
  if (n * c == 0) return;
  if (n > INT32_MAX) kernel_fail("embedding_backward", "more than 2^31 indices");
  dispatch_float(dweight.dtype, "embedding_backward", [&](auto zero) {
    using T = decltype(zero);
    dispatch_index(idx.dtype, "embedding_backward", [&](auto izero) {
      using I = decltype(izero);
      auto* pos = static_cast<int32_t*>(scratch.get(sizeof(int32_t) * size_t(n)));
      auto* sorted_pos = static_cast<int32_t*>(scratch.get(sizeof(int32_t) * size_t(n)));
      auto* sorted_ids = static_cast<I*>(scratch.get(sizeof(I) * size_t(n)));
      iota_kernel<<<grid_for(n, 256), 256, 0, s>>>(pos, n);
      BG_CUDA_LAUNCH_CHECK();
      size_t temp_bytes = 0;
      const auto* ids = static_cast<const I*>(idx.data);
      BG_CUDA_CHECK(cub::DeviceRadixSort::SortPairs(nullptr, temp_bytes, ids, sorted_ids, pos,
                                                    sorted_pos, int(n), 0, int(sizeof(I) * 8), s));
      void* temp = scratch.get(temp_bytes);
      BG_CUDA_CHECK(cub::DeviceRadixSort::SortPairs(temp, temp_bytes, ids, sorted_ids, pos,
                                                    sorted_pos, int(n), 0, int(sizeof(I) * 8), s));
      const int threads = 128;
      const int64_t col_blocks = (c + threads - 1) / threads;
      dim3 grid(unsigned(n), unsigned(col_blocks < 65535 ? col_blocks : 65535));
      embedding_backward_kernel<T, I><<<grid, threads, 0, s>>>(static_cast<T*>(dweight.data),
                                                               static_cast<const T*>(dout.data),
                                                               sorted_ids, sorted_pos, n, vocab, c);
    });
  });
  BG_CUDA_LAUNCH_CHECK();
}

}  // namespace bg::cuda
