// cross_entropy.cu: fused log-softmax + NLL, one block per row. The forward reads the row once
// (an online log-sum-exp) and keeps only its log-sum-exp; the backward recomputes softmax from
// it, so probabilities never hit memory. Rows move as 16-byte packs where they are aligned.
// A target outside [0, V) yields a NaN loss for its row (the GPU cannot throw; the NaN stops
// training with the step named); host-side loaders validate ids before they get here.
#include "cuda_common.cuh"
#include "cuda_kernels.h"

namespace bg::cuda {
namespace {

// 16 bytes of a row: 4 f32 or 8 f16/bf16 logits moved by one load or store.
template <typename T>
struct alignas(16) Pack16 {
  static constexpr int kCount = 16 / int(sizeof(T));
  T v[kCount];
};

// Runs f(c, x) over a row's logits, kVec at a time from 16-byte packs (kVec 1: one by one).
template <typename T, int kVec, typename F>
__device__ __forceinline__ void for_each_logit(const T* row, int64_t vocab, F&& f) {
  if constexpr (kVec == 1) {
    for (int64_t c = threadIdx.x; c < vocab; c += blockDim.x) f(c, to_float(row[c]));
  } else {
    for (int64_t c = int64_t(threadIdx.x) * kVec; c < vocab; c += int64_t(blockDim.x) * kVec) {
      const Pack16<T> p = *reinterpret_cast<const Pack16<T>*>(row + c);
#pragma unroll
      for (int j = 0; j < kVec; ++j) f(c + j, to_float(p.v[j]));
    }
  }
}

// One pass over the row: each thread keeps a running max and the sum of exp(x - max), rescaled
// when the max grows (online log-sum-exp); the block then combines the threads' pairs in a
// fixed order.
template <typename T, typename I, int kVec>
__global__ void cross_entropy_forward_kernel(float* losses, float* lse, float* valid,
                                             const T* logits, const I* targets, int64_t vocab,
                                             int64_t ignore) {
  __shared__ float scratch[32];
  const int64_t r = blockIdx.x;
  const T* row = logits + r * vocab;
  float mx = -INFINITY, sum = 0.f;
  for_each_logit<T, kVec>(row, vocab, [&](int64_t, float x) {
    if (x > mx) {
      sum = sum * expf(mx - x) + 1.f;  // exp(-inf) = 0 for the first finite value
      mx = x;
    } else if (x > -INFINITY) {
      sum += expf(x - mx);
    } else if (x != x) {
      sum = x;  // NaN logits give a NaN loss
    }
  });
  const float row_max = block_reduce<true>(mx, scratch);
  const float scaled = mx == -INFINITY ? (sum != sum ? sum : 0.f) : sum * expf(mx - row_max);
  const float s = block_reduce<false>(scaled, scratch);
  if (threadIdx.x == 0) {
    const float row_lse = row_max + logf(s);
    const int64_t t = int64_t(targets[r]);
    lse[r] = row_lse;
    valid[r] = t == ignore ? 0.f : 1.f;
    if (t == ignore) {
      losses[r] = 0.f;
    } else if (t < 0 || t >= vocab) {
      losses[r] = NAN;
    } else {
      losses[r] = row_lse - to_float(row[t]);
    }
  }
}

template <typename T, typename I, int kVec>
__global__ void cross_entropy_backward_kernel(T* dlogits, const T* logits, const float* lse,
                                              const I* targets, int64_t vocab, int64_t ignore,
                                              const float* scale) {
  const int64_t r = blockIdx.x;
  const int64_t t = int64_t(targets[r]);
  const float g = t == ignore ? 0.f : *scale, row_lse = lse[r];
  T* out = dlogits + r * vocab;
  auto grad = [&](int64_t c, float x) { return g * (expf(x - row_lse) - (c == t ? 1.f : 0.f)); };
  if constexpr (kVec == 1) {
    for_each_logit<T, 1>(logits + r * vocab, vocab,
                         [&](int64_t c, float x) { out[c] = from_float<T>(grad(c, x)); });
  } else {
    const T* row = logits + r * vocab;
    for (int64_t c = int64_t(threadIdx.x) * kVec; c < vocab; c += int64_t(blockDim.x) * kVec) {
      const Pack16<T> p = *reinterpret_cast<const Pack16<T>*>(row + c);
      Pack16<T> d;
#pragma unroll
      for (int j = 0; j < kVec; ++j) d.v[j] = from_float<T>(grad(c + j, to_float(p.v[j])));
      *reinterpret_cast<Pack16<T>*>(out + c) = d;
    }
  }
}

// Rows move as 16-byte packs when every row starts on a 16-byte boundary.
template <typename T>
bool rows_in_packs(const void* a, const void* b, int64_t vocab) {
  constexpr int n = Pack16<T>::kCount;
  return vocab % n == 0 && reinterpret_cast<uintptr_t>(a) % 16 == 0 &&
         reinterpret_cast<uintptr_t>(b) % 16 == 0;
}

}  // namespace

void cross_entropy_forward(const KView& losses, const KView& lse, const KView& valid,
                           const KView& logits, const KView& targets, int64_t ignore_index,
                           StreamHandle stream) {
  const int64_t rows = logits.shape[0], vocab = logits.shape[1];
  if (rows == 0) return;
  dispatch_float(logits.dtype, "cross_entropy", [&](auto zero) {
    using T = decltype(zero);
    dispatch_index(targets.dtype, "cross_entropy", [&](auto izero) {
      using I = decltype(izero);
      auto launch = [&](auto kernel) {
        kernel<<<unsigned(rows), 256, 0, as_stream(stream)>>>(
            static_cast<float*>(losses.data), static_cast<float*>(lse.data),
            static_cast<float*>(valid.data), static_cast<const T*>(logits.data),
            static_cast<const I*>(targets.data), vocab, ignore_index);
      };
      if (rows_in_packs<T>(logits.data, logits.data, vocab))
        launch(cross_entropy_forward_kernel<T, I, Pack16<T>::kCount>);
      else
        launch(cross_entropy_forward_kernel<T, I, 1>);
    });
  });
  BG_CUDA_LAUNCH_CHECK();
}

void cross_entropy_backward(const KView& dlogits, const KView& logits, const KView& lse,
                            const KView& targets, int64_t ignore_index, const KView& scale,
                            StreamHandle stream) {
  const int64_t rows = logits.shape[0], vocab = logits.shape[1];
  if (rows == 0) return;
  dispatch_float(logits.dtype, "cross_entropy_backward", [&](auto zero) {
    using T = decltype(zero);
    dispatch_index(targets.dtype, "cross_entropy_backward", [&](auto izero) {
      using I = decltype(izero);
      auto launch = [&](auto kernel) {
        kernel<<<unsigned(rows), 256, 0, as_stream(stream)>>>(
            static_cast<T*>(dlogits.data), static_cast<const T*>(logits.data),
            static_cast<const float*>(lse.data), static_cast<const I*>(targets.data), vocab,
            ignore_index, static_cast<const float*>(scale.data));
      };
      if (rows_in_packs<T>(logits.data, dlogits.data, vocab))
        launch(cross_entropy_backward_kernel<T, I, Pack16<T>::kCount>);
      else
        launch(cross_entropy_backward_kernel<T, I, 1>);
    });
  });
  BG_CUDA_LAUNCH_CHECK();
}

}  // namespace bg::cuda
