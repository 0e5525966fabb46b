// copy.cpp (CPU): strided copy with dtype conversion, and fill. Conversions go through double,
// except same-dtype copies, which move raw bytes so 64-bit integers stay exact.
#include <cstring>

#include "cpu_common.h"
#include "cpu_kernels.h"

namespace bg::cpu {
namespace {

double load(const void* base, DType t, int64_t i) {
  switch (t) {
    case DType::f32:
      return static_cast<const float*>(base)[i];
    case DType::f64:
      return static_cast<const double*>(base)[i];
    case DType::f16:
      return double(static_cast<const Eigen::half*>(base)[i]);
    case DType::bf16:
      return double(static_cast<const Eigen::bfloat16*>(base)[i]);
    case DType::i8:
      return static_cast<const int8_t*>(base)[i];
    case DType::u8:
      return static_cast<const uint8_t*>(base)[i];
    case DType::i16:
      return static_cast<const int16_t*>(base)[i];
    case DType::u16:
      return static_cast<const uint16_t*>(base)[i];
    case DType::i32:
      return static_cast<const int32_t*>(base)[i];
    case DType::i64:
      return double(static_cast<const int64_t*>(base)[i]);
  }
  return 0;
}

void store(void* base, DType t, int64_t i, double x) {
  switch (t) {
    case DType::f32:
      static_cast<float*>(base)[i] = float(x);
      break;
    case DType::f64:
      static_cast<double*>(base)[i] = x;
      break;
    case DType::f16:
      static_cast<Eigen::half*>(base)[i] = Eigen::half(float(x));
      break;
    case DType::bf16:
      static_cast<Eigen::bfloat16*>(base)[i] = Eigen::bfloat16(float(x));
      break;
    case DType::i8:
      static_cast<int8_t*>(base)[i] = int8_t(x);
      break;
    case DType::u8:
      static_cast<uint8_t*>(base)[i] = uint8_t(x);
      break;
    case DType::i16:
      static_cast<int16_t*>(base)[i] = int16_t(x);
      break;
    case DType::u16:
      static_cast<uint16_t*>(base)[i] = uint16_t(x);
      break;
    case DType::i32:
      static_cast<int32_t*>(base)[i] = int32_t(x);
      break;
    case DType::i64:
      static_cast<int64_t*>(base)[i] = int64_t(x);
      break;
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
