// bitplane.cu: TritNet's AND-only decomposition of a ternary product on b1 tensor cores
// (docs/bitlinear.md, "Bit-plane"). A ternary row is two bit planes, P (value +1) and N (-1);
// with Z = P | N (nonzero),
//   x . w = popc(Px & Pw) + popc(Nx & Nw) - popc(Px & Nw) - popc(Nx & Pw)
//         = 2 (popc(Px & Pw) + popc(Nx & Nw)) - popc(Zx & Zw),
// three mma.sync.m16n8k256.b1.and.popc a fragment pair, the Z fragments formed in registers by
// an OR. Hopper runs AND natively (XOR.popc is emulated), so the decomposition uses AND only.
// The planes are rows of bits (bit k % 8 of byte k / 8), rows padded with zeros to 16 bytes:
// byte for byte the layout the s8 kernel reads, 32 one-bit elements where it has 4 bytes, so
// the same ldmatrix addressing feeds the b1 fragments. Epilogue as int8_mma.cuh.
#include <cstdint>

#include "cuda_kernels.h"
#include "int8_mma.cuh"

namespace bg::cuda {
namespace {

using namespace mma;

// One byte of each plane per thread: bits k = 8b .. 8b + 7 of row r.
__global__ void bitplane_pack_kernel(uint8_t* planes, const int8_t* q, int64_t rows, int64_t k,
                                     int64_t ld, int64_t row_bytes) {
  BG_GRID_LOOP(i, rows * row_bytes) {
    const int64_t r = i / row_bytes, b = i - r * row_bytes;
    uint32_t pos = 0, neg = 0;
    for (int j = 0; j < 8; ++j) {
      const int64_t e = 8 * b + j;
      const int v = e < k ? q[r * ld + e] : 0;
      pos |= uint32_t(v > 0) << j;
      neg |= uint32_t(v < 0) << j;
    }
    planes[i] = uint8_t(pos);
    planes[rows * row_bytes + i] = uint8_t(neg);
  }
}

constexpr int kBK = 64;  // bytes of a row a stage: 512 bits, two k = 256 steps
constexpr int kPitch = kBK + 16;

template <int MI, int NI, int WM, int WN, int kStages>
struct PlaneConfig {
  static constexpr int kBM = 16 * MI * WM, kBN = 8 * NI * WN, kThreads = 32 * WM * WN;
  static constexpr int kPlaneA = kBM * kPitch, kPlaneB = kBN * kPitch;
  static constexpr int kStageBytes = 2 * (kPlaneA + kPlaneB);
  static constexpr int kSmemBytes = kStages * kStageBytes;
};

template <typename O, int MI, int NI, int WM, int WN, int kStages>
__global__ void __launch_bounds__(32 * WM * WN)
    bitplane_gemm_kernel(O* y, const uint8_t* xp, const uint8_t* wp, const float* step,
                         const float* beta, const float* bias, int64_t m, int64_t n,
                         int64_t row_bytes) {
  static_assert(NI % 2 == 0, "B fragments come in ldmatrix pairs");
  using C = PlaneConfig<MI, NI, WM, WN, kStages>;
  extern __shared__ __align__(16) uint8_t smem[];
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const int wm = warp / WN, wn = warp % WN;
  const int64_t m0 = int64_t(blockIdx.y) * C::kBM, n0 = int64_t(blockIdx.x) * C::kBN;
  const int64_t steps = (row_bytes + kBK - 1) / kBK;
  const int64_t x_plane = m * row_bytes, w_plane = n * row_bytes;

  auto load = [&](int64_t kt) {
    uint8_t* stage = smem + (kt % kStages) * C::kStageBytes;
    const int64_t k0 = kt * kBK;
    for (int c = threadIdx.x; c < 2 * C::kBM * 4; c += C::kThreads) {
      const int p = c / (C::kBM * 4), r = (c / 4) % C::kBM, g = c % 4;
      const bool ok = m0 + r < m && k0 + g * 16 < row_bytes;
      cp_async16(smem_addr(stage + p * C::kPlaneA + r * kPitch + g * 16),
                 ok ? xp + p * x_plane + (m0 + r) * row_bytes + k0 + g * 16 : xp, ok);
    }
    for (int c = threadIdx.x; c < 2 * C::kBN * 4; c += C::kThreads) {
      const int p = c / (C::kBN * 4), r = (c / 4) % C::kBN, g = c % 4;
      const bool ok = n0 + r < n && k0 + g * 16 < row_bytes;
      cp_async16(smem_addr(stage + 2 * C::kPlaneA + p * C::kPlaneB + r * kPitch + g * 16),
                 ok ? wp + p * w_plane + (n0 + r) * row_bytes + k0 + g * 16 : wp, ok);
    }
  };

  int32_t agree[MI][NI][4] = {}, nonzero[MI][NI][4] = {};
  for (int s = 0; s < kStages - 1; ++s) {
    if (s < steps) load(s);
    cp_async_commit();
  }
  for (int64_t kt = 0; kt < steps; ++kt) {
    cp_async_wait<kStages - 2>();
    __syncthreads();
    if (kt + kStages - 1 < steps) load(kt + kStages - 1);
    cp_async_commit();
    const uint8_t* stage = smem + (kt % kStages) * C::kStageBytes;
#pragma unroll
    for (int kk = 0; kk < kBK / 32; ++kk) {
      uint32_t a[2][MI][4], b[2][NI][2];
#pragma unroll
      for (int p = 0; p < 2; ++p) {
#pragma unroll
        for (int mi = 0; mi < MI; ++mi) {
          const int r = (wm * MI + mi) * 16 + lane % 16;
          ldmatrix_x4(smem_addr(stage + p * C::kPlaneA + r * kPitch + kk * 32 + (lane / 16) * 16),
                      a[p][mi][0], a[p][mi][1], a[p][mi][2], a[p][mi][3]);
        }
#pragma unroll
        for (int q = 0; q < NI / 2; ++q) {
          const int r = wn * NI * 8 + q * 16 + lane % 8 + (lane / 16) * 8;
          ldmatrix_x4(smem_addr(stage + 2 * C::kPlaneA + p * C::kPlaneB + r * kPitch + kk * 32 +
                                ((lane / 8) % 2) * 16),
                      b[p][2 * q][0], b[p][2 * q][1], b[p][2 * q + 1][0], b[p][2 * q + 1][1]);
        }
      }
#pragma unroll
      for (int mi = 0; mi < MI; ++mi) {
        const uint32_t az[4] = {a[0][mi][0] | a[1][mi][0], a[0][mi][1] | a[1][mi][1],
                                a[0][mi][2] | a[1][mi][2], a[0][mi][3] | a[1][mi][3]};
#pragma unroll
        for (int ni = 0; ni < NI; ++ni) {
          mma_b1_and(agree[mi][ni], a[0][mi], b[0][ni][0], b[0][ni][1]);
          mma_b1_and(agree[mi][ni], a[1][mi], b[1][ni][0], b[1][ni][1]);
          mma_b1_and(nonzero[mi][ni], az, b[0][ni][0] | b[1][ni][0], b[0][ni][1] | b[1][ni][1]);
        }
      }
    }
  }
  cp_async_wait<0>();

  store_fragments<O, MI, NI>(y, m, n, m0 + wm * MI * 16, n0 + wn * NI * 8, step, *beta, bias,
                             [&](int mi, int ni, int half, int e) {
                               const int i = half * 2 + e;  // 2 (agreements) - nonzero pairs
                               return 2 * agree[mi][ni][i] - nonzero[mi][ni][i];
                             });
}

template <typename O, int MI, int NI, int WM, int WN, int kStages>
void launch_gemm(const KView& yv, const KView& xp, const KView& wp, const KView& step,
                 const KView& beta, const KView& bias, cudaStream_t stream) {
  using C = PlaneConfig<MI, NI, WM, WN, kStages>;
  auto kernel = bitplane_gemm_kernel<O, MI, NI, WM, WN, kStages>;
  allow_shared_memory(kernel, C::kSmemBytes);
  const int64_t m = xp.shape[1], n = wp.shape[1];
  const dim3 grid(unsigned((n + C::kBN - 1) / C::kBN), unsigned((m + C::kBM - 1) / C::kBM));
  kernel<<<grid, C::kThreads, C::kSmemBytes, stream>>>(
      static_cast<O*>(yv.data), static_cast<const uint8_t*>(xp.data),
      static_cast<const uint8_t*>(wp.data), static_cast<const float*>(step.data),
      static_cast<const float*>(beta.data), static_cast<const float*>(bias.data), m, n,
      xp.shape[2]);
  BG_CUDA_LAUNCH_CHECK();
}

template <typename O>
void launch(const KView& y, const KView& xp, const KView& wp, const KView& step, const KView& beta,
            const KView& bias, cudaStream_t stream) {
  if (xp.shape[1] <= 16)
    launch_gemm<O, 1, 2, 1, 4, 4>(y, xp, wp, step, beta, bias, stream);
  else
    launch_gemm<O, 2, 4, 4, 2, 3>(y, xp, wp, step, beta, bias, stream);
}

}  // namespace

void bitplane_pack(const KView& planes, const KView& q, StreamHandle stream) {
  const int64_t rows = q.shape[0], row_bytes = planes.shape[2];
  if (rows * row_bytes == 0) return;
  bitplane_pack_kernel<<<grid_for(rows * row_bytes, 256), 256, 0, as_stream(stream)>>>(
      static_cast<uint8_t*>(planes.data), static_cast<const int8_t*>(q.data), rows, q.shape[1],
      q.strides[0], row_bytes);
  BG_CUDA_LAUNCH_CHECK();
}

void bitplane_linear(const KView& y, const KView& xp, const KView& wp, const KView& step,
                     const KView& beta, const KView& bias, StreamHandle stream) {
  if (xp.dtype != DType::u8 || wp.dtype != DType::u8 || xp.shape[2] != wp.shape[2] ||
      xp.shape[2] % 16 != 0 || reinterpret_cast<uintptr_t>(xp.data) % 16 != 0 ||
      reinterpret_cast<uintptr_t>(wp.data) % 16 != 0)
    kernel_fail("bitplane_linear", "planes must be contiguous (2, rows, bytes) u8, 16-byte rows");
  if (xp.shape[1] == 0 || wp.shape[1] == 0) return;
  if (y.dtype == DType::f32)
    launch<float>(y, xp, wp, step, beta, bias, as_stream(stream));
  else if (y.dtype == DType::bf16)
    launch<__nv_bfloat16>(y, xp, wp, step, beta, bias, as_stream(stream));
  else
    kernel_fail("bitplane_linear",
                std::string("y must be f32 or bf16, got ") + dtype_name(y.dtype));
}

}  // namespace bg::cuda
