#include "tensor.h"

#include <cmath>
#include <cstring>
#include <iomanip>
#include <sstream>

#include "../kernels/cuda/device_runtime.h"
#include "dispatch.h"
#include "ops.h"

namespace bg {

std::string shape_str(const Shape& s) {
  std::ostringstream os;
  os << "(";
  for (size_t i = 0; i < s.size(); ++i) os << (i ? ", " : "") << s[i];
  os << (s.size() == 1 ? ",)" : ")");
  return os.str();
}

int64_t shape_numel(const Shape& s) {
  int64_t n = 1;
  for (int64_t d : s) n *= d;
  return n;
}

Shape contiguous_strides(const Shape& s) {
  Shape st(s.size());
  int64_t acc = 1;
  for (int i = int(s.size()) - 1; i >= 0; --i) {
    st[size_t(i)] = acc;
    acc *= s[size_t(i)];
  }
  return st;
}

int64_t Tensor::size(int dim) const {
  // A 0-d tensor has no sizes (normalize_dim lets reductions name its dim 0): a shape read off a
  // file, such as a weight of shape [], is refused here rather than read out of bounds.
  BG_CHECK(ndim() > 0, "size", "a 0-d tensor has no dim ", dim);
  return shape()[size_t(normalize_dim(dim, ndim(), "size"))];
}

bool Tensor::is_contiguous() const {
  int64_t expect = 1;
  for (int i = ndim() - 1; i >= 0; --i) {
    if (shape()[size_t(i)] != 1 && strides()[size_t(i)] != expect) return false;
    expect *= shape()[size_t(i)];
  }
  return true;
}

void* Tensor::data_ptr() const {
  return static_cast<char*>(impl_->storage->data()) + impl_->offset * int64_t(dtype_size(dtype()));
}

KView Tensor::kview() const {
  BG_CHECK(ndim() <= kMaxDims, "tensor", "at most ", kMaxDims, " dims are supported, got ", ndim());
  KView v;
  v.data = data_ptr();
  v.dtype = dtype();
  v.ndim = ndim();
  for (int i = 0; i < v.ndim; ++i) {
    v.shape[i] = shape()[size_t(i)];
    v.strides[i] = strides()[size_t(i)];
  }
  return v;
}

Tensor& Tensor::requires_grad_(bool on) {
  BG_CHECK(!on || dtype_is_float(dtype()), "requires_grad",
           "only floating tensors can require grad, got ", dtype_name(dtype()));
  impl_->requires_grad = on;
  return *this;
}

Tensor Tensor::detach() const {
  auto impl = std::make_shared<TensorImpl>();
  impl->storage = impl_->storage;
  impl->offset = impl_->offset;
  impl->shape = impl_->shape;
  impl->strides = impl_->strides;
  impl->dtype = impl_->dtype;
  return Tensor(impl);
}

const Tensor& Tensor::fill_(double value) const {
  BG_DISPATCH(device(), fill, kview(), value, stream_for(device()));
  return *this;
}

const Tensor& Tensor::copy_(const Tensor& src) const {
  BG_CHECK(src.shape() == shape(), "copy_", "shape ", shape_str(src.shape()), " into ",
           shape_str(shape()));
  Tensor s = src.device() == device() ? src : src.to(device());
  BG_DISPATCH(device(), copy, kview(), s.kview(), stream_for(device()));
  return *this;
}

namespace {
template <typename T>
DType dtype_of();
template <>
DType dtype_of<float>() {
  return DType::f32;
}
template <>
DType dtype_of<double>() {
  return DType::f64;
}
template <>
DType dtype_of<int8_t>() {
  return DType::i8;
}
template <>
DType dtype_of<uint8_t>() {
  return DType::u8;
}
template <>
DType dtype_of<int16_t>() {
  return DType::i16;
}
template <>
DType dtype_of<uint16_t>() {
  return DType::u16;
}
template <>
DType dtype_of<int32_t>() {
  return DType::i32;
}
template <>
DType dtype_of<int64_t>() {
  return DType::i64;
}
}  // namespace

template <typename T>
std::vector<T> Tensor::to_vector() const {
  Tensor host = to(Device::cpu(), dtype_of<T>()).contiguous();
  std::vector<T> out(size_t(host.numel()));
  if (!out.empty()) std::memcpy(out.data(), host.data_ptr(), out.size() * sizeof(T));
  return out;
}
template std::vector<float> Tensor::to_vector<float>() const;
template std::vector<double> Tensor::to_vector<double>() const;
template std::vector<int8_t> Tensor::to_vector<int8_t>() const;
template std::vector<uint8_t> Tensor::to_vector<uint8_t>() const;
template std::vector<int16_t> Tensor::to_vector<int16_t>() const;
template std::vector<uint16_t> Tensor::to_vector<uint16_t>() const;
template std::vector<int32_t> Tensor::to_vector<int32_t>() const;
template std::vector<int64_t> Tensor::to_vector<int64_t>() const;

double Tensor::item() const {
  BG_CHECK(numel() == 1, "item", "needs one element, tensor has shape ", shape_str(shape()));
  return to_vector<double>()[0];
}

std::string Tensor::str(int64_t max_values) const {
  std::ostringstream os;
  os << "Tensor" << shape_str(shape()) << " " << dtype_name(dtype()) << " " << device().str();
  if (requires_grad()) os << " requires_grad";
  std::vector<double> v = to_vector<double>();
  os << " [";
  for (int64_t i = 0; i < int64_t(v.size()) && i < max_values; ++i)
    os << (i ? ", " : "") << std::setprecision(6) << v[size_t(i)];
  if (int64_t(v.size()) > max_values) os << ", ...";
  os << "]";
  return os.str();
}

std::ostream& operator<<(std::ostream& os, const Tensor& t) { return os << t.str(); }

Tensor empty(const Shape& shape, DType dtype, Device device) {
  for (int64_t d : shape)
    BG_CHECK(d >= 0, "empty", "negative dimension in shape ", shape_str(shape));
  auto impl = std::make_shared<TensorImpl>();
  impl->storage = std::make_shared<Storage>(size_t(shape_numel(shape)) * dtype_size(dtype), device);
  impl->shape = shape;
  impl->strides = contiguous_strides(shape);
  impl->dtype = dtype;
  return Tensor(impl);
}

Tensor full(const Shape& shape, double value, DType dtype, Device device) {
  Tensor t = empty(shape, dtype, device);
  if (t.numel()) t.fill_(value);
  return t;
}
Tensor zeros(const Shape& shape, DType dtype, Device device) {
  return full(shape, 0.0, dtype, device);
}
Tensor ones(const Shape& shape, DType dtype, Device device) {
  return full(shape, 1.0, dtype, device);
}
Tensor scalar_tensor(double value, DType dtype, Device device) {
  return full({}, value, dtype, device);
}
Tensor empty_like(const Tensor& t) { return empty(t.shape(), t.dtype(), t.device()); }
Tensor zeros_like(const Tensor& t) { return zeros(t.shape(), t.dtype(), t.device()); }

Tensor arange(int64_t n, DType dtype, Device device) {
  std::vector<int64_t> v(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) v[size_t(i)] = i;
  return from_vector(v, {n}, device).to(dtype);
}

template <typename T>
Tensor from_vector(const std::vector<T>& values, const Shape& shape, Device device) {
  BG_CHECK(int64_t(values.size()) == shape_numel(shape), "from_vector", values.size(),
           " values for shape ", shape_str(shape));
  Tensor t = empty(shape, dtype_of<T>(), Device::cpu());
  if (!values.empty()) std::memcpy(t.data_ptr(), values.data(), values.size() * sizeof(T));
  return device.is_cpu() ? t : t.to(device);
}
template Tensor from_vector<float>(const std::vector<float>&, const Shape&, Device);
template Tensor from_vector<double>(const std::vector<double>&, const Shape&, Device);
template Tensor from_vector<int32_t>(const std::vector<int32_t>&, const Shape&, Device);
template Tensor from_vector<int64_t>(const std::vector<int64_t>&, const Shape&, Device);
template Tensor from_vector<uint8_t>(const std::vector<uint8_t>&, const Shape&, Device);
template Tensor from_vector<uint16_t>(const std::vector<uint16_t>&, const Shape&, Device);
template Tensor from_vector<int16_t>(const std::vector<int16_t>&, const Shape&, Device);
template Tensor from_vector<int8_t>(const std::vector<int8_t>&, const Shape&, Device);

Tensor make_view(const Tensor& base, const Shape& shape, const Shape& strides, int64_t offset) {
  auto impl = std::make_shared<TensorImpl>();
  impl->storage = base.impl()->storage;
  impl->offset = offset;
  impl->shape = shape;
  impl->strides = strides;
  impl->dtype = base.dtype();
  return Tensor(impl);
}

}  // namespace bg
