// bitlinear_backward.cu: the input side of BitLinear's backward in one pass over x
// (kernel_list.h's bitlinear_input_backward). The forward keeps x and act_quantize's per-row
// statistics, not x_q: this kernel recomputes x_q from x with act_quantize's expressions and
// writes x~ = step * x_q, the weight gradient's operand (int8_dequantize's bits), and in the
// same pass the parameter-free norm's backward of dx_n (layernorm_dx_kernel's bits: the same
// lane-strided sums, element j in lane j % 32, and the same expressions). One warp per row; the
// row of x and of dx_n is first staged in shared memory by 16-byte cp.async copies, all issued
// before any is waited on, so a warp has both whole rows in flight at once.
#include <algorithm>
#include <cstdint>

#include "bitlinear_common.cuh"
#include "cp_async.cuh"
#include "cuda_common.cuh"
#include "cuda_kernels.h"
#include "layernorm_rows.h"

namespace bg::cuda {
namespace {

constexpr int kMaxWarps = 8;
constexpr int kStagedBytesPerBlock = 48 * 1024;  // no opt-in needed below this

__host__ __device__ constexpr int64_t round16(int64_t bytes) { return (bytes + 15) / 16 * 16; }

// Copies n elements of T from global src to shared dst (16-byte aligned): 16-byte cp.async
// copies when the row allows, which complete at the caller's cp.async wait, else element by
// element.
template <typename T>
__device__ __forceinline__ void stage_row(T* dst, const T* src, int64_t n, int lane) {
  const int64_t bytes = n * int64_t(sizeof(T));
  if (bytes % 16 == 0 && reinterpret_cast<uintptr_t>(src) % 16 == 0) {
    const uint32_t d = mma::smem_addr(dst);
    const unsigned char* s = reinterpret_cast<const unsigned char*>(src);
    for (int64_t i = lane; i < bytes / 16; i += 32)
      mma::cp_async16(d + uint32_t(16 * i), s + 16 * i, true);
  } else {
    for (int64_t i = lane; i < n; i += 32) dst[i] = src[i];
  }
}

// T: x and dx; TG: dx_n (T, or bf16 for f32 x); O: x~. staged: rows read from shared memory
// (else straight from global memory: rows too wide to stage). dx null: x~ only (norm none).
template <typename T, typename TG, typename O>
__global__ void bitlinear_input_backward_kernel(T* dx, O* x_tilde, const TG* dxn, const T* x,
                                                const float* mean, const float* rstd,
                                                const float* step, const float* quant_scale,
                                                int64_t rows, int64_t k, BitNorm norm, float q_max,
                                                bool staged) {
  extern __shared__ __align__(16) unsigned char smem[];
  const int warp = threadIdx.x / 32, lane = threadIdx.x & 31;
  const int64_t r = int64_t(blockIdx.x) * (blockDim.x / 32) + warp;
  if (r >= rows) return;  // warps only synchronise among their own lanes
  const T* xr = x + r * k;
  const TG* gr = dx ? dxn + r * k : nullptr;
  if (staged) {
    const int64_t x_bytes = round16(k * int64_t(sizeof(T)));
    const int64_t per_warp = x_bytes + (dx ? round16(k * int64_t(sizeof(TG))) : 0);
    T* xs = reinterpret_cast<T*>(smem + warp * per_warp);
    stage_row(xs, xr, k, lane);
    xr = xs;
    if (dx) {
      TG* gs = reinterpret_cast<TG*>(smem + warp * per_warp + x_bytes);
      stage_row(gs, gr, k, lane);
      gr = gs;
    }
    mma::cp_async_commit();
    mma::cp_async_wait<0>();
    __syncwarp();
  }
  const float mu = norm == BitNorm::layer ? mean[r] : 0.f;
  const float rs = norm == BitNorm::none ? 1.f : rstd[r];
  const float inv = quant_scale[r], st = step[r], lo = -q_max - 1.0f;
  const int n = int(k);  // rows are shorter than 2^31 elements
  O* xt = x_tilde + r * k;
  // x~: act_quantize's normed value and rounding, int8_dequantize's product.
  auto tilde = [&](float normed) {
    return from_float<O>(__fmul_rn(float(round_clamped(__fmul_rn(normed, inv), lo, q_max)), st));
  };
  if (!dx) {
    for (int j = lane; j < n; j += 32) {
      const float v = to_float(xr[j]);
      xt[j] = tilde(norm == BitNorm::none ? v : __fmul_rn(__fsub_rn(v, mu), rs));
    }
    return;
  }
  // dx: layernorm_dx_kernel's row with no weight and no addend, its expressions as written
  // there; x~ from the same normalised value in the second pass.
  const bool rms = norm == BitNorm::rms;
  float mean_g = 0.f, mean_gx = 0.f;
  for (int j = lane; j < n; j += 32) {
    const float g = to_float(gr[j]);
    mean_g += g;
    mean_gx += g * (to_float(xr[j]) - mu) * rs;
  }
  mean_g = rms ? 0.f : warp_sum(mean_g) / float(k);
  mean_gx = warp_sum(mean_gx) / float(k);
  T* dxr = dx + r * k;
  auto outputs = [&](float xv, float gv, T& dx_out, O& xt_out) {
    const float g = gv;
    const float xhat = (xv - mu) * rs;
    dx_out = from_float<T>(rs * (g - mean_g - xhat * mean_gx));
    xt_out = tilde(xhat);
  };
  // The outputs depend on their own element alone, so a lane may take 8 contiguous ones: one
  // 16-byte load of x and of dx_n, one 16-byte store of dx and of x~, where all are 2-byte
  // types and the rows are 16-byte aligned (the training case: bf16 throughout).
  if constexpr (sizeof(T) == 2 && sizeof(TG) == 2 && sizeof(O) == 2) {
    auto aligned = [](const void* p) { return reinterpret_cast<uintptr_t>(p) % 16 == 0; };
    if (n % 8 == 0 && aligned(xr) && aligned(gr) && aligned(dxr) && aligned(xt)) {
      for (int c = lane; c < n / 8; c += 32) {
        const uint4 xv = reinterpret_cast<const uint4*>(xr)[c];
        const uint4 gv = reinterpret_cast<const uint4*>(gr)[c];
        uint4 dv, tv;
        const T* xh = reinterpret_cast<const T*>(&xv);
        const TG* gh = reinterpret_cast<const TG*>(&gv);
        T* dh = reinterpret_cast<T*>(&dv);
        O* th = reinterpret_cast<O*>(&tv);
#pragma unroll
        for (int i = 0; i < 8; ++i) outputs(to_float(xh[i]), to_float(gh[i]), dh[i], th[i]);
        reinterpret_cast<uint4*>(dxr)[c] = dv;
        reinterpret_cast<uint4*>(xt)[c] = tv;
      }
      return;
    }
  }
  for (int j = lane; j < n; j += 32) outputs(to_float(xr[j]), to_float(gr[j]), dxr[j], xt[j]);
}

}  // namespace

void bitlinear_input_backward(const KView& dx, const KView& x_tilde, const KView& dxn,
                              const KView& x, const KView& mean, const KView& rstd,
                              const KView& step, const KView& quant_scale,
                              const ActQuantOptions& opt, StreamHandle stream) {
  const int64_t rows = x.shape[0], k = x.shape[1];
  if (rows == 0 || k == 0) return;
  if (dx.data && opt.norm == BitNorm::none)
    kernel_fail("bitlinear_input_backward", "norm none has no backward: dx is dx_n itself");
  const float q_max = float((1 << (opt.bits - 1)) - 1);
  const cudaStream_t s = as_stream(stream);
  // Rows layernorm_backward takes in its block-per-row kernel sum in another order: there dx
  // comes from it, and this kernel writes x~ alone.
  if (dx.data && layernorm_backward_block_rows(x.dtype, k)) {
    NoScratch none;  // scratch is for dweight and dbias only
    layernorm_backward(dx, KView(), KView(), KView(), dxn, x, KView(), mean, rstd,
                       opt.norm == BitNorm::rms, none, stream);
    return bitlinear_input_backward(KView(), x_tilde, KView(), x, mean, rstd, step, quant_scale,
                                    opt, stream);
  }
  auto launch = [&](auto xt, auto gt, auto* out) {
    using T = decltype(xt);
    using TG = decltype(gt);
    using O = std::remove_pointer_t<decltype(out)>;
    const int64_t per_warp =
        round16(k * int64_t(sizeof(T))) + (dx.data ? round16(k * int64_t(sizeof(TG))) : 0);
    // As many warps as the 48 KB of shared memory hold (up to 8); rows wider than that stream
    // from global memory with the same arithmetic.
    const bool staged = per_warp <= kStagedBytesPerBlock;
    const int warps =
        staged ? int(std::min<int64_t>(kMaxWarps, kStagedBytesPerBlock / per_warp)) : kMaxWarps;
    const unsigned grid = unsigned((rows + warps - 1) / warps);
    bitlinear_input_backward_kernel<T, TG, O>
        <<<grid, warps * 32, staged ? size_t(warps * per_warp) : 0, s>>>(
            static_cast<T*>(dx.data), out, static_cast<const TG*>(dxn.data),
            static_cast<const T*>(x.data), static_cast<const float*>(mean.data),
            static_cast<const float*>(rstd.data), static_cast<const float*>(step.data),
            static_cast<const float*>(quant_scale.data), rows, k, opt.norm, q_max, staged);
  };
  auto with_output = [&](auto xt, auto gt) {
    if (x_tilde.dtype == DType::f32)
      launch(xt, gt, static_cast<float*>(x_tilde.data));
    else if (x_tilde.dtype == DType::bf16)
      launch(xt, gt, static_cast<__nv_bfloat16*>(x_tilde.data));
    else
      kernel_fail("bitlinear_input_backward",
                  std::string("x_tilde must be f32 or bf16, got ") + dtype_name(x_tilde.dtype));
  };
  if (dx.data)
    dispatch_float_or_bf16(x.dtype, dxn.dtype, "bitlinear_input_backward", "dx_n", with_output);
  else
    dispatch_float(x.dtype, "bitlinear_input_backward",
                   [&](auto zero) { with_output(zero, zero); });
  BG_CUDA_LAUNCH_CHECK();
}

}  // namespace bg::cuda
