// tma.cu: the host side of tma.cuh, building tensor maps through the driver's
// cuTensorMapEncodeTiled, found through the runtime (cudaGetDriverEntryPointByVersion) so the
// build links no libcuda of its own. Encoding is a pure host computation (no device call), cheap
// enough to run at every launch.
#include <cudaTypedefs.h>

#include <mutex>

#include "tma.cuh"

namespace bg::cuda::tma {
namespace {

PFN_cuTensorMapEncodeTiled_v12000 encoder() {
  // The entry point belongs to the driver, the same for every device, so one lookup serves all.
  static PFN_cuTensorMapEncodeTiled_v12000 fn = nullptr;
  static std::once_flag once;
  std::call_once(once, [] {
    void* p = nullptr;
    cudaDriverEntryPointQueryResult found{};
    if (cudaGetDriverEntryPointByVersion("cuTensorMapEncodeTiled", &p, 12000, cudaEnableDefault,
                                         &found) == cudaSuccess &&
        found == cudaDriverEntryPointSuccess)
      fn = reinterpret_cast<PFN_cuTensorMapEncodeTiled_v12000>(p);
    else
      cudaGetLastError();  // clear it: the caller falls back to another kernel
  });
  return fn;
}

}  // namespace

bool encode_byte_rows_map(CUtensorMap* map, const void* base, int64_t rows, int64_t cols,
                          int64_t stride, int box_rows, int box_cols) {
  const auto encode = encoder();
  if (!encode) return false;  // the driver has no cuTensorMapEncodeTiled
  const cuuint64_t dims[2] = {cuuint64_t(cols), cuuint64_t(rows)};
  const cuuint64_t strides[1] = {cuuint64_t(stride)};
  const cuuint32_t box[2] = {cuuint32_t(box_cols), cuuint32_t(box_rows)};
  const cuuint32_t element_strides[2] = {1, 1};
  const CUresult r =
      encode(map, CU_TENSOR_MAP_DATA_TYPE_UINT8, 2, const_cast<void*>(base), dims, strides, box,
             element_strides, CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_128B,
             CU_TENSOR_MAP_L2_PROMOTION_L2_256B, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
  return r == CUDA_SUCCESS;
}

}  // namespace bg::cuda::tma
