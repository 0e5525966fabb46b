// copy.cpp (CPU): strided copy with dtype conversion, and fill. Conversions go through double,
// except same-dtype copies, which move raw bytes so 64-bit integers stay exact.
#include <cstring>
#include <type_traits>

#include "cpu_common.h"
#include "cpu_kernels.h"

namespace bg::cpu {
namespace {

// The element types of the two 16-bit floats in the dtype table (kernel_types.h).
using Half = Eigen::half;
using BFloat16 = Eigen::bfloat16;

template <typename E>
double to_double(E v) {
  return double(v);
}
// Halves round double -> float -> half (Eigen converts from float).
template <typename E>
E from_double(double x) {
  if constexpr (std::is_same_v<E, Half> || std::is_same_v<E, BFloat16>)
    return E(float(x));
  else
    return E(x);
}

double load(const void* base, DType t, int64_t i) {
  switch (t) {
#define BG_LOAD(name, bytes, is_float, element) \
  case DType::name:                             \
    return to_double(static_cast<const element*>(base)[i]);
    BG_DTYPES(BG_LOAD)
#undef BG_LOAD
  }
  return 0;
}

void store(void* base, DType t, int64_t i, double x) {
  switch (t) {
#define BG_STORE(name, bytes, is_float, element)              \
  case DType::name:                                           \
    static_cast<element*>(base)[i] = from_double<element>(x); \
    break;
    BG_DTYPES(BG_STORE)
#undef BG_STORE
  }
}

}  // namespace

void copy(const KView& dst, const KView& src, StreamHandle) {
  const int64_t n = dst.numel();
  if (n != src.numel()) kernel_fail("copy", "element counts differ");
  if (dst.dtype == src.dtype && dst.contiguous() && src.contiguous()) {
    std::memmove(dst.data, src.data, size_t(n) * dtype_size(dst.dtype));
    return;
  }
  StridedWalker wd(dst), ws(src);
  const size_t es = dtype_size(dst.dtype);
  for (int64_t i = 0; i < n; ++i, wd.next(), ws.next()) {
    if (dst.dtype == src.dtype) {
      std::memcpy(static_cast<char*>(dst.data) + wd.offset * int64_t(es),
                  static_cast<const char*>(src.data) + ws.offset * int64_t(es), es);
    } else {
      store(dst.data, dst.dtype, wd.offset, load(src.data, src.dtype, ws.offset));
    }
  }
}

void fill(const KView& dst, double value, StreamHandle) {
  StridedWalker w(dst);
  for (int64_t i = 0, n = dst.numel(); i < n; ++i, w.next())
    store(dst.data, dst.dtype, w.offset, value);
}

}  // namespace bg::cpu
