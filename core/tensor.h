// tensor.h: the Tensor handle. A Tensor shares ownership of a TensorImpl (storage + offset +
// shape + strides + dtype); views share storage. Autograd state (requires_grad, grad, the node
// that produced it) lives on the impl. Math lives in ops.h, never here.
#pragma once
#include <cstdint>
#include <functional>
#include <iosfwd>
#include <memory>
#include <string>
#include <vector>

#include "allocator.h"
#include "device.h"
#include "error.h"

namespace bg {

using Shape = std::vector<int64_t>;
struct Node;

struct TensorImpl {
  std::shared_ptr<Storage> storage;
  int64_t offset = 0;  // in elements
  Shape shape, strides;
  DType dtype = DType::f32;
  bool requires_grad = false;
  std::shared_ptr<TensorImpl> grad;
  std::shared_ptr<Node> grad_fn;
};

std::string shape_str(const Shape& s);
int64_t shape_numel(const Shape& s);
Shape contiguous_strides(const Shape& s);

class Tensor {
 public:
  Tensor() = default;
  explicit Tensor(std::shared_ptr<TensorImpl> impl) : impl_(std::move(impl)) {}

  bool defined() const { return impl_ != nullptr; }
  TensorImpl* impl() const { return impl_.get(); }
  const std::shared_ptr<TensorImpl>& impl_ptr() const { return impl_; }

  const Shape& shape() const { return impl_->shape; }
  const Shape& strides() const { return impl_->strides; }
  int ndim() const { return int(impl_->shape.size()); }
  int64_t size(int dim) const;
  int64_t numel() const { return shape_numel(impl_->shape); }
  DType dtype() const { return impl_->dtype; }
  Device device() const { return impl_->storage->device(); }
  bool is_cuda() const { return device().is_cuda(); }
  bool is_contiguous() const;
  void* data_ptr() const;
  template <typename T>
  T* data() const {
    return static_cast<T*>(data_ptr());
  }
  KView kview() const;  // the kernels' view of this tensor

  // Views and conversions (autograd-aware; all defined in core/ops/view.cpp).
  Tensor reshape(const Shape& shape) const;  // a view when strides allow, else a copy
  Tensor view(const Shape& shape) const;     // always a view; throws if impossible
  Tensor transpose(int d0, int d1) const;
  Tensor permute(const std::vector<int>& dims) const;
  Tensor slice(int dim, int64_t start, int64_t end) const;
  Tensor unsqueeze(int dim) const;
  Tensor squeeze(int dim) const;
  Tensor expand(const Shape& shape) const;
  Tensor contiguous() const;
  Tensor to(Device device) const;
  Tensor to(DType dtype) const;
  Tensor to(Device device, DType dtype) const;
  Tensor clone() const;

  // Autograd.
  bool requires_grad() const { return impl_->requires_grad; }
  Tensor& requires_grad_(bool on = true);
  Tensor grad() const { return Tensor(impl_->grad); }
  void set_grad(const Tensor& g) { impl_->grad = g.impl_; }
  Tensor detach() const;  // same storage, no history
  void backward(const Tensor& grad = Tensor()) const;

  // In place, outside autograd (optimizers, initialisation, gradient buffers).
  const Tensor& fill_(double value) const;
  const Tensor& copy_(const Tensor& src) const;  // same shape; converts dtype/device

  // Host access.
  template <typename T>
  std::vector<T> to_vector() const;  // converts through a host copy
  double item() const;
  std::string str(int64_t max_values = 8) const;

 private:
  std::shared_ptr<TensorImpl> impl_;
};

std::ostream& operator<<(std::ostream& os, const Tensor& t);

// Factories.
Tensor empty(const Shape& shape, DType dtype = DType::f32, Device device = Device::cpu());
Tensor zeros(const Shape& shape, DType dtype = DType::f32, Device device = Device::cpu());
Tensor ones(const Shape& shape, DType dtype = DType::f32, Device device = Device::cpu());
Tensor full(const Shape& shape, double value, DType dtype = DType::f32,
            Device device = Device::cpu());
Tensor scalar_tensor(double value, DType dtype = DType::f32, Device device = Device::cpu());
Tensor arange(int64_t n, DType dtype = DType::i64, Device device = Device::cpu());
Tensor empty_like(const Tensor& t);
Tensor zeros_like(const Tensor& t);
// Host values (f32/f64/i32/i64/u8 vectors) into a tensor of the matching dtype.
template <typename T>
Tensor from_vector(const std::vector<T>& values, const Shape& shape, Device device = Device::cpu());
// A view of `base`'s storage with the given geometry (no autograd; used by view ops).
Tensor make_view(const Tensor& base, const Shape& shape, const Shape& strides, int64_t offset);

}  // namespace bg
