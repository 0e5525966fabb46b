// cross_entropy.cu: fused log-softmax + NLL, one block per row. The forward keeps only the
// row's log-sum-exp; the backward recomputes softmax from it, so probabilities never hit memory.
// A target outside [0, V) yields a NaN loss for its row (the GPU cannot throw; the NaN stops
// training with the step named); host-side loaders validate ids before they get here.
#include "cuda_common.cuh"
#include "cuda_kernels.h"

namespace bg::cuda {
namespace {

template <typename T, typename I>
__global__ void cross_entropy_forward_kernel(float* losses, float* lse, float* valid,
                                             const T* logits, const I* targets, int64_t vocab,
                                             int64_t ignore) {
  __shared__ float scratch[32];
  const int64_t r = blockIdx.x;
  const T* row = logits + r * vocab;
  float mx = -INFINITY;
  for (int64_t c = threadIdx.x; c < vocab; c += blockDim.x) mx = fmaxf(mx, to_float(row[c]));
  mx = block_reduce<true>(mx, scratch);
  float s = 0.f;
  for (int64_t c = threadIdx.x; c < vocab; c += blockDim.x) s += expf(to_float(row[c]) - mx);
  s = block_reduce<false>(s, scratch);
  if (threadIdx.x == 0) {
    const float row_lse = mx + logf(s);
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

template <typename T, typename I>
__global__ void cross_entropy_backward_kernel(T* dlogits, const T* logits, const float* lse,
                                              const I* targets, int64_t vocab, int64_t ignore,
                                              const float* scale) {
  const int64_t r = blockIdx.x;
  const int64_t t = int64_t(targets[r]);
  const float g = *scale, row_lse = lse[r];
  for (int64_t c = threadIdx.x; c < vocab; c += blockDim.x) {
    const float p = expf(to_float(logits[r * vocab + c]) - row_lse);
    dlogits[r * vocab + c] = from_float<T>(t == ignore ? 0.f : g * (p - (c == t ? 1.f : 0.f)));
  }
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
      cross_entropy_forward_kernel<T, I><<<unsigned(rows), 256, 0, as_stream(stream)>>>(
          static_cast<float*>(losses.data), static_cast<float*>(lse.data),
          static_cast<float*>(valid.data), static_cast<const T*>(logits.data),
          static_cast<const I*>(targets.data), vocab, ignore_index);
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
      cross_entropy_backward_kernel<T, I><<<unsigned(rows), 256, 0, as_stream(stream)>>>(
          static_cast<T*>(dlogits.data), static_cast<const T*>(logits.data),
          static_cast<const float*>(lse.data), static_cast<const I*>(targets.data), vocab,
          ignore_index, static_cast<const float*>(scale.data));
    });
  });
  BG_CUDA_LAUNCH_CHECK();
}

}  // namespace bg::cuda
