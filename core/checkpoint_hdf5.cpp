#include "checkpoint_hdf5.h"

#include <cstdio>
#include <sstream>

#include "core/error.h"

namespace bg::h5 {

hid_t h5_type(DType t) {
  switch (t) {
    case DType::f64:
      return H5T_NATIVE_DOUBLE;
    case DType::i64:
      return H5T_NATIVE_INT64;
    case DType::i32:
      return H5T_NATIVE_INT32;
    case DType::u8:
      return H5T_NATIVE_UINT8;
    default:
      return H5T_NATIVE_FLOAT;
  }
}

DType stored_dtype(DType t) {
  if (t == DType::f64 || t == DType::i64 || t == DType::i32 || t == DType::u8) return t;
  return DType::f32;  // f16/bf16 and small ints are widened
}

const char* class_name(H5T_class_t c) {
  switch (c) {
    case H5T_INTEGER:
      return "an integer";
    case H5T_FLOAT:
      return "a float";
    case H5T_STRING:
      return "a string";
    case H5T_ENUM:
      return "an enum (a bool?)";
    case H5T_ARRAY:
      return "an array";
    case H5T_COMPOUND:
      return "a compound";
    default:
      return "of another HDF5 type";
  }
}

// The name of a numeric datatype HDF5 converts exactly ("f32le", "i64be", "u8le"), or "" for a
// float or integer that is not standard: a changed exponent bias, field position, bit offset or
// precision, which HDF5 would convert into other numbers (zeros, NaN) without complaint.
std::string exact_numeric_type(hid_t type) {
  const H5T_class_t cls = H5Tget_class(type);
  const size_t size = H5Tget_size(type);
  const H5T_order_t order = H5Tget_order(type);
  if (order != H5T_ORDER_LE && order != H5T_ORDER_BE && !(size == 1 && order == H5T_ORDER_NONE))
    return "";
  if (H5Tget_offset(type) != 0 || H5Tget_precision(type) != 8 * size) return "";
  H5T_pad_t lsb = H5T_PAD_ERROR, msb = H5T_PAD_ERROR;
  if (H5Tget_pad(type, &lsb, &msb) < 0 || lsb != H5T_PAD_ZERO || msb != H5T_PAD_ZERO) return "";
  const std::string end = order == H5T_ORDER_BE ? "be" : "le", bits = std::to_string(8 * size);
  if (cls == H5T_INTEGER) {
    const H5T_sign_t sign = H5Tget_sign(type);
    const bool width = size == 1 || size == 2 || size == 4 || size == 8;
    if (!width || (sign != H5T_SGN_NONE && sign != H5T_SGN_2)) return "";
    return (sign == H5T_SGN_NONE ? "u" : "i") + bits + end;
  }
  if (cls != H5T_FLOAT) return "";
  size_t f[5] = {};  // sign position, exponent position and size, mantissa position and size
  if (H5Tget_fields(type, &f[0], &f[1], &f[2], &f[3], &f[4]) < 0) return "";
  struct Ieee {
    size_t size, f[5], ebias;
  };
  static constexpr Ieee kIeee[] = {
      {2, {15, 10, 5, 0, 10}, 15}, {4, {31, 23, 8, 0, 23}, 127}, {8, {63, 52, 11, 0, 52}, 1023}};
  for (const Ieee& ieee : kIeee)
    if (size == ieee.size && std::equal(f, f + 5, ieee.f) && H5Tget_ebias(type) == ieee.ebias &&
        H5Tget_norm(type) == H5T_NORM_IMPLIED && H5Tget_inpad(type) == H5T_PAD_ZERO)
      return "f" + bits + end;
  return "";
}

// Refuses a float or integer datatype that is not exact (above), naming it.
void check_exact_numeric(hid_t type, const std::string& path, const std::string& what) {
  if (!exact_numeric_type(type).empty()) return;
  size_t f[5] = {};
  const bool is_float = H5Tget_class(type) == H5T_FLOAT;
  if (is_float) H5Tget_fields(type, &f[0], &f[1], &f[2], &f[3], &f[4]);
  fail("checkpoint", path, ": ", what, " is stored as a non-standard ",
       is_float ? "float" : "integer", " (", H5Tget_size(type), " bytes, precision ",
       H5Tget_precision(type), " at bit ", H5Tget_offset(type),
       is_float ? str_cat(", exponent bias ", H5Tget_ebias(type), " in bits ", f[1], "..",
                          f[1] + f[2] - 1)
                : std::string(),
       "); bitgrad reads IEEE floats and whole-byte integers only");
}

}  // namespace bg::h5
