// w2a8.cu: BitLinear inference on packed 2-bit weights (docs/bitlinear.md, "W2A8"): int8
// activations times ternary weights that stay 2 bits in memory and are unpacked in registers,
// int32 accumulation, the rescale fused. Batch 1 is a GEMV on dp4a; batch 2 and up run on int8
// tensor cores: Hopper's wgmma (w2a8_wgmma.cu) where the Hopper kernels run, mma.sync m16n8k32
// here otherwise. The weight layout is w2a8_common.cuh's. Codes are 0, 1, 2, never negative, so
// this file's kernels sum (w + 1) x and subtract sum(x) once: the integer result is exact either
// way.
#include <cstdint>

#include "cuda_kernels.h"
#include "device_runtime.h"
#include "int8_mma.cuh"
#include "w2a8_common.cuh"
#include "w2a8_tiles.h"

namespace bg::cuda {
namespace {

using namespace mma;
using w2a8::kBlockBytes;
using w2a8::kBlockK;
using w2a8::kCodeMask;

// One u32 of the kernel layout per thread: (row n, block h, quad t, half u).
__global__ void w2_layout_kernel(uint32_t* w2, const uint8_t* packed, int64_t n, int64_t k,
                                 int64_t bytes, int64_t blocks) {
  BG_GRID_LOOP(i, n * blocks * 8) {
    const int64_t r = i / (blocks * 8), rest = i - r * blocks * 8, h = rest / 8;
    const int t = int(rest % 8) / 2, u = int(rest % 2);
    uint32_t word = 0;
    for (int s = 0; s < 4; ++s) {
      const int64_t p = 32 * h + 16 * u + 4 * s + t;  // the export byte holding k = 4p .. 4p + 3
      const uint32_t byte = p < bytes ? packed[r * bytes + p] : 0x55u;  // past K: zero weights
      for (int j = 0; j < 4; ++j) {
        const uint32_t code = 4 * p + j < k ? (byte >> (2 * j)) & 3u : 1u;
        word |= code << (8 * j + 2 * s);
      }
    }
    w2[r * blocks * 8 + h * 8 + 2 * t + u] = word;
  }
}

// Batch 1: a block of kGemvWarps warps computes R groups of 8 outputs. Lane (r, t) = (lane / 4,
// lane % 4) reads u32 pair t of row r's 32-byte blocks, so a warp reads 8 rows' whole blocks
// (256 bytes) per load; the warps split K (blocks h = warp, warp + kGemvWarps, ...), each with
// 8 loads in flight (R groups x 8 / R blocks) and the next 8 issued before the current ones are
// used. x goes to shared memory once per block, summed on the way (the codes are w + 1) and
// permuted so that the 8 words lane t needs for a block are two 16-byte reads (the quads' rows
// read the same ones: a broadcast). The first weight loads are issued before x is staged.
constexpr int kGemvWarps = 8;
constexpr int kGemvMaxSmem = 200 * 1024;  // x at one byte a k: K up to 204800

template <typename O, int R>
__global__ void __launch_bounds__(kGemvWarps * 32)
    w2a8_gemv_kernel(O* y, const int8_t* x8, const uint8_t* w2, const float* step,
                     const float* beta, const float* bias, int64_t n, int64_t k16, int64_t blocks) {
  constexpr int kInFlight = 8 / R;  // blocks per row group per iteration
  extern __shared__ int4 xs[];      // block h: words 32h + 8t + 4u + s = x word 32h + 16u + 4s + t
  __shared__ int32_t partial[kGemvWarps][R][8];
  __shared__ int32_t warp_xsum[kGemvWarps];
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32, r = lane / 4, t = lane % 4;
  const uint2* wrow[R];
#pragma unroll
  for (int g = 0; g < R; ++g) {
    const int64_t row = (int64_t(blockIdx.x) * R + g) * 8 + r;
    wrow[g] = reinterpret_cast<const uint2*>(w2 + (row < n ? row : 0) * blocks * kBlockBytes) + t;
  }
  constexpr int64_t kStep = kInFlight * kGemvWarps;
  uint2 w[kInFlight][R];
  auto issue = [&](uint2(&dst)[kInFlight][R], int64_t h0) {
#pragma unroll
    for (int i = 0; i < kInFlight; ++i)
#pragma unroll
      for (int g = 0; g < R; ++g) {
        const int64_t h = h0 + i * kGemvWarps;
        dst[i][g] = h < blocks ? __ldg(wrow[g] + h * 4) : make_uint2(0, 0);
      }
  };
  issue(w, warp);

  const int32_t* x = reinterpret_cast<const int32_t*>(x8);
  int32_t* xw = reinterpret_cast<int32_t*>(xs);
  int32_t xsum = 0;
  for (int64_t i = threadIdx.x; i < blocks * 32; i += kGemvWarps * 32) {
    const int32_t v = 4 * i < k16 ? __ldg(x + i) : 0;
    const int64_t h = i / 32, u = (i / 16) % 2, s = (i / 4) % 4, q = i % 4;
    xw[h * 32 + q * 8 + u * 4 + s] = v;
    xsum = __dp4a(v, 0x01010101, xsum);
  }
  for (int off = 16; off > 0; off /= 2) xsum += __shfl_xor_sync(0xffffffffu, xsum, off);
  if (lane == 0) warp_xsum[warp] = xsum;
  __syncthreads();

  int32_t acc[R] = {};
  for (int64_t h0 = warp; h0 < blocks; h0 += kStep) {
    uint2 next[kInFlight][R];
    issue(next, h0 + kStep);
#pragma unroll
    for (int i = 0; i < kInFlight; ++i) {
      const int64_t h = h0 + i * kGemvWarps;
      if (h >= blocks) break;
      const int4 lo = xs[h * 8 + 2 * t], hi = xs[h * 8 + 2 * t + 1];
      const int32_t xv[8] = {lo.x, lo.y, lo.z, lo.w, hi.x, hi.y, hi.z, hi.w};
#pragma unroll
      for (int g = 0; g < R; ++g) {
#pragma unroll
        for (int s = 0; s < 4; ++s)
          acc[g] = __dp4a(int((w[i][g].x >> (2 * s)) & kCodeMask), xv[s], acc[g]);
#pragma unroll
        for (int s = 0; s < 4; ++s)
          acc[g] = __dp4a(int((w[i][g].y >> (2 * s)) & kCodeMask), xv[4 + s], acc[g]);
      }
    }
#pragma unroll
    for (int i = 0; i < kInFlight; ++i)
#pragma unroll
      for (int g = 0; g < R; ++g) w[i][g] = next[i][g];
  }
#pragma unroll
  for (int g = 0; g < R; ++g) {
    acc[g] += __shfl_xor_sync(0xffffffffu, acc[g], 1);
    acc[g] += __shfl_xor_sync(0xffffffffu, acc[g], 2);
    if (t == 0) partial[warp][g][r] = acc[g];
  }
  __syncthreads();
  if (threadIdx.x < 8 * R) {
    const int g = threadIdx.x / 8, rr = threadIdx.x % 8;
    const int64_t out = (int64_t(blockIdx.x) * R + g) * 8 + rr;
    if (out < n) {
      int32_t total = 0, sum_x = 0;
      for (int v = 0; v < kGemvWarps; ++v) {
        total += partial[v][g][rr];
        sum_x += warp_xsum[v];
      }
      y[out] = from_float<O>(rescale(total - sum_x, step[0], *beta, bias ? bias[out] : 0.0f));
    }
  }
}

template <typename O, int R>
void launch_gemv(O* y, const KView& xq, const KView& w2, const KView& step, const KView& beta,
                 const KView& bias, int64_t blocks, cudaStream_t stream) {
  const int64_t n = w2.shape[0], k = xq.shape[1];
  allow_shared_memory(w2a8_gemv_kernel<O, R>, kGemvMaxSmem);  // x may take over 48 KB
  w2a8_gemv_kernel<O, R>
      <<<unsigned((n + 8 * R - 1) / (8 * R)), kGemvWarps * 32, size_t(blocks) * kBlockK, stream>>>(
          y, static_cast<const int8_t*>(xq.data), static_cast<const uint8_t*>(w2.data),
          static_cast<const float*>(step.data), static_cast<const float*>(beta.data),
          static_cast<const float*>(bias.data), n, (k + 15) / 16 * 16, blocks);
  BG_CUDA_LAUNCH_CHECK();
}

// Batch 2 and up: tiles of BM x BN outputs, warps of (16 MI) x (8 NI), K steps of KB blocks
// (128 KB k) through kStages cp.async stages. x rows go to shared memory padded to 144 bytes
// (ldmatrix's eight rows then fall in distinct banks), the weights' 32-byte blocks as they are;
// each lane reads its u32 pair once a step and unpacks the four 32-k steps' B fragments from it
// with a shift and a mask each. sum(x) per row comes from the A fragments (dp4a against ones).
template <int MI, int NI, int WM, int WN, int kStages, int KB>
struct GemmConfig {
  static constexpr int kBM = 16 * MI * WM, kBN = 8 * NI * WN, kThreads = 32 * WM * WN;
  static constexpr int kPitchA = KB * kBlockK + 16;
  // Weight rows of several blocks are padded by 32 bytes, so the 8 rows a warp reads at once
  // spread over the banks.
  static constexpr int kPitchB = KB * kBlockBytes + (KB > 1 ? 32 : 0);
  static constexpr int kABytes = kBM * kPitchA, kStageBytes = kABytes + kBN * kPitchB;
  static constexpr int kSmemBytes = kStages * kStageBytes;
};

template <typename O, int MI, int NI, int WM, int WN, int kStages, int KB>
__global__ void __launch_bounds__(32 * WM * WN)
    w2a8_gemm_kernel(O* y, const int8_t* x, const uint8_t* w2, const float* step, const float* beta,
                     const float* bias, int64_t m, int64_t n, int64_t k16, int64_t lda,
                     int64_t blocks) {
  using C = GemmConfig<MI, NI, WM, WN, kStages, KB>;
  extern __shared__ __align__(16) uint8_t smem[];
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const int wm = warp / WN, wn = warp % WN;
  const int64_t m0 = int64_t(blockIdx.y) * C::kBM, n0 = int64_t(blockIdx.x) * C::kBN;
  const int64_t ldw = blocks * kBlockBytes;

  const int64_t steps = (blocks + KB - 1) / KB;
  auto load = [&](int64_t kt) {
    uint8_t* stage = smem + (kt % kStages) * C::kStageBytes;
    const int64_t k0 = kt * KB * kBlockK;
    for (int c = threadIdx.x; c < C::kBM * 8 * KB; c += C::kThreads) {
      const int r = c / (8 * KB), g = c % (8 * KB);
      const bool ok = m0 + r < m && k0 + g * 16 < k16;
      cp_async16(smem_addr(stage + r * C::kPitchA + g * 16),
                 ok ? x + (m0 + r) * lda + k0 + g * 16 : x, ok);
    }
    for (int c = threadIdx.x; c < C::kBN * 2 * KB; c += C::kThreads) {
      const int r = c / (2 * KB), g = c % (2 * KB);
      const bool ok = n0 + r < n && kt * KB + g / 2 < blocks;  // past the last block: zeros
      cp_async16(smem_addr(stage + C::kABytes + r * C::kPitchB + g * 16),
                 ok ? w2 + (n0 + r) * ldw + kt * KB * kBlockBytes + g * 16 : w2, ok);
    }
  };

  int32_t acc[MI][NI][4] = {};
  int32_t xsum[MI][2] = {};
  for (int s = 0; s < kStages - 1; ++s) {
    if (s < steps) load(s);
    cp_async_commit();
  }
  for (int64_t kt = 0; kt < steps; ++kt) {
    cp_async_wait<kStages - 2>();
    __syncthreads();  // stage kt is in; every warp is done with stage kt - 1
    if (kt + kStages - 1 < steps) load(kt + kStages - 1);
    cp_async_commit();
    const uint8_t* a_tile = smem + (kt % kStages) * C::kStageBytes;
    const uint8_t* b_tile = a_tile + C::kABytes;
#pragma unroll
    for (int kb = 0; kb < KB; ++kb) {
      uint2 bw[NI];
#pragma unroll
      for (int ni = 0; ni < NI; ++ni)
        bw[ni] =
            *reinterpret_cast<const uint2*>(b_tile + ((wn * NI + ni) * 8 + lane / 4) * C::kPitchB +
                                            kb * kBlockBytes + (lane % 4) * 8);
#pragma unroll
      for (int ks = 0; ks < 4; ++ks) {
        uint32_t a[MI][4];
#pragma unroll
        for (int mi = 0; mi < MI; ++mi) {
          const int r = (wm * MI + mi) * 16 + lane % 16;
          ldmatrix_x4(
              smem_addr(a_tile + r * C::kPitchA + kb * kBlockK + ks * 32 + (lane / 16) * 16),
              a[mi][0], a[mi][1], a[mi][2], a[mi][3]);
          xsum[mi][0] =
              __dp4a(int(a[mi][2]), 0x01010101, __dp4a(int(a[mi][0]), 0x01010101, xsum[mi][0]));
          xsum[mi][1] =
              __dp4a(int(a[mi][3]), 0x01010101, __dp4a(int(a[mi][1]), 0x01010101, xsum[mi][1]));
        }
#pragma unroll
        for (int ni = 0; ni < NI; ++ni) {
          const uint32_t word = ks < 2 ? bw[ni].x : bw[ni].y;
          const int shift = 4 * (ks % 2);
          const uint32_t b0 = (word >> shift) & kCodeMask, b1 = (word >> (shift + 2)) & kCodeMask;
#pragma unroll
          for (int mi = 0; mi < MI; ++mi) mma_s8(acc[mi][ni], a[mi], b0, b1);
        }
      }
    }
  }
  cp_async_wait<0>();

  int32_t sx[MI][2];  // sum(x) per row: the quad's four lanes hold a quarter of it each
#pragma unroll
  for (int mi = 0; mi < MI; ++mi)
#pragma unroll
    for (int half = 0; half < 2; ++half) {
      sx[mi][half] = xsum[mi][half];
      sx[mi][half] += __shfl_xor_sync(0xffffffffu, sx[mi][half], 1);
      sx[mi][half] += __shfl_xor_sync(0xffffffffu, sx[mi][half], 2);
    }
  store_fragments<O, MI, NI>(  // the codes are w + 1: subtract sum(x) once
      y, m, n, m0 + wm * MI * 16, n0 + wn * NI * 8, step, *beta, bias,
      [&](int mi, int ni, int half, int e) { return acc[mi][ni][half * 2 + e] - sx[mi][half]; });
}

template <typename O, int MI, int NI, int WM, int WN, int kStages, int KB>
void launch_gemm(O* y, const KView& xq, const KView& w2, const KView& step, const KView& beta,
                 const KView& bias, int64_t blocks, cudaStream_t stream) {
  using C = GemmConfig<MI, NI, WM, WN, kStages, KB>;
  auto kernel = w2a8_gemm_kernel<O, MI, NI, WM, WN, kStages, KB>;
  allow_shared_memory(kernel, C::kSmemBytes);
  const int64_t m = xq.shape[0], k = xq.shape[1], n = w2.shape[0];
  const dim3 grid(unsigned((n + C::kBN - 1) / C::kBN), unsigned((m + C::kBM - 1) / C::kBM));
  kernel<<<grid, C::kThreads, C::kSmemBytes, stream>>>(
      y, static_cast<const int8_t*>(xq.data), static_cast<const uint8_t*>(w2.data),
      static_cast<const float*>(step.data), static_cast<const float*>(beta.data),
      static_cast<const float*>(bias.data), m, n, (k + 15) / 16 * 16, xq.strides[0], blocks);
  BG_CUDA_LAUNCH_CHECK();
}

template <typename O>
void launch(const KView& yv, const KView& xq, const KView& w2, const KView& step, const KView& beta,
            const KView& bias, cudaStream_t stream) {
  O* y = static_cast<O*>(yv.data);
  const int64_t m = xq.shape[0], k = xq.shape[1];
  const int64_t blocks = (k + kBlockK - 1) / kBlockK;
  if (m == 1) {
    // Enough blocks to fill the GPU twice over, as many row groups a block as that allows
    // (x is staged once per block).
    const int64_t groups = (w2.shape[0] + 7) / 8;
    if (groups >= 1024)
      launch_gemv<O, 4>(y, xq, w2, step, beta, bias, blocks, stream);
    else if (groups >= 512)
      launch_gemv<O, 2>(y, xq, w2, step, beta, bias, blocks, stream);
    else
      launch_gemv<O, 1>(y, xq, w2, step, beta, bias, blocks, stream);
  } else if (m <= 16) {
    launch_gemm<O, 1, 1, 1, 4, 4, 4>(y, xq, w2, step, beta, bias, blocks, stream);
  } else if (m <= 64) {
    launch_gemm<O, 2, 4, 2, 4, 3, 2>(y, xq, w2, step, beta, bias, blocks, stream);
  } else {
    launch_gemm<O, 4, 4, 2, 4, 3, 2>(y, xq, w2, step, beta, bias, blocks, stream);
  }
}

}  // namespace

void w2_layout(const KView& w2, const KView& packed, int64_t k, StreamHandle stream) {
  const int64_t n = packed.shape[0], blocks = w2.shape[1] / kBlockBytes;
  if (n * blocks == 0) return;
  w2_layout_kernel<<<grid_for(n * blocks * 8, 256), 256, 0, as_stream(stream)>>>(
      static_cast<uint32_t*>(w2.data), static_cast<const uint8_t*>(packed.data), n, k,
      packed.shape[1], blocks);
  BG_CUDA_LAUNCH_CHECK();
}

void w2a8_linear(const KView& y, const KView& xq, const KView& w2, const KView& step,
                 const KView& beta, const KView& bias, StreamHandle stream) {
  const int64_t m = xq.shape[0], k = xq.shape[1];
  if (xq.dtype != DType::i8 || reinterpret_cast<uintptr_t>(xq.data) % 16 != 0 ||
      xq.strides[0] % 16 != 0 || xq.strides[0] < (k + 15) / 16 * 16)
    kernel_fail("w2a8_linear", "activations must be i8 rows of K, 16-byte aligned, zero-padded");
  if (w2.dtype != DType::u8 || w2.shape[1] != (k + kBlockK - 1) / kBlockK * kBlockBytes ||
      reinterpret_cast<uintptr_t>(w2.data) % 16 != 0)
    kernel_fail("w2a8_linear", "weights must be the 2-bit kernel layout of K columns");
  if (m == 0 || w2.shape[0] == 0) return;
  if (m == 1 && (k + kBlockK - 1) / kBlockK * kBlockK > kGemvMaxSmem)
    kernel_fail("w2a8_linear", "K above 204800 does not fit the GEMV's shared memory");
  if (y.dtype != DType::f32 && y.dtype != DType::bf16)
    kernel_fail("w2a8_linear", std::string("y must be f32 or bf16, got ") + dtype_name(y.dtype));
  if (m > 1 && kernel_family() == KernelFamily::best && hopper_kernels_available())
    return w2a8_linear_wgmma(y, xq, w2, step, beta, bias, -1, stream);
  if (y.dtype == DType::f32)
    launch<float>(y, xq, w2, step, beta, bias, as_stream(stream));
  else
    launch<__nv_bfloat16>(y, xq, w2, step, beta, bias, as_stream(stream));
}

}  // namespace bg::cuda
