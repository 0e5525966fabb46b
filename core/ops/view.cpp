// view.cpp: views (reshape/view/transpose/permute/slice/unsqueeze/squeeze/expand), which share
// storage, and the copying conversions (contiguous, to device/dtype, clone), with backward.
#include <algorithm>
#include <numeric>

#include "../../kernels/cuda/device_runtime.h"
#include "../dispatch.h"
#include "../ops.h"

namespace bg {
namespace {

Shape infer_shape(const Shape& shape, int64_t numel, const char* op, const Shape& from) {
  Shape out = shape;
  int infer = -1;
  int64_t known = 1;
  for (size_t i = 0; i < out.size(); ++i) {
    if (out[i] == -1) {
      BG_CHECK(infer < 0, op, "only one dimension can be -1 in ", shape_str(shape));
      infer = int(i);
    } else {
      BG_CHECK(out[i] >= 0, op, "invalid dimension ", out[i], " in ", shape_str(shape));
      known *= out[i];
    }
  }
  if (infer >= 0) {
    BG_CHECK(known != 0 && numel % known == 0, op, "cannot reshape ", shape_str(from), " into ",
             shape_str(shape));
    out[size_t(infer)] = numel / known;
  }
  BG_CHECK(shape_numel(out) == numel, op, "cannot reshape ", shape_str(from), " (", numel,
           " elements) into ", shape_str(shape));
  return out;
}

// Strides for viewing (shape, strides) as new_shape without copying, if possible
// (the algorithm of PyTorch's computeStride: match chunks of contiguous dims).
bool view_strides(const Shape& shape, const Shape& strides, const Shape& new_shape, Shape* out) {
  out->assign(new_shape.size(), 0);
  if (shape_numel(shape) == 0 || shape.empty()) {
    *out = contiguous_strides(new_shape);
    return true;
  }
  int64_t view_d = int64_t(new_shape.size()) - 1;
  int64_t chunk_base_stride = strides.empty() ? 1 : strides.back();
  int64_t tensor_numel = 1, view_numel = 1;
  for (int64_t d = int64_t(shape.size()) - 1; d >= 0; --d) {
    tensor_numel *= shape[size_t(d)];
    if (d == 0 ||
        (shape[size_t(d - 1)] != 1 && strides[size_t(d - 1)] != tensor_numel * chunk_base_stride)) {
      while (view_d >= 0 && (view_numel < tensor_numel || new_shape[size_t(view_d)] == 1)) {
        (*out)[size_t(view_d)] = view_numel * chunk_base_stride;
        view_numel *= new_shape[size_t(view_d)];
        --view_d;
      }
      if (view_numel != tensor_numel) return false;
      if (d > 0) {
        chunk_base_stride = strides[size_t(d - 1)];
        tensor_numel = 1;
        view_numel = 1;
      }
    }
  }
  return view_d == -1;
}

}  // namespace

Tensor Tensor::view(const Shape& shape_in) const {
  const Shape new_shape = infer_shape(shape_in, numel(), "view", shape());
  Shape new_strides;
  BG_CHECK(view_strides(shape(), strides(), new_shape, &new_strides), "view", "cannot view ",
           shape_str(shape()), " with strides ", shape_str(strides()), " as ", shape_str(new_shape),
           " (use reshape)");
  Tensor out = make_view(*this, new_shape, new_strides, impl()->offset);
  const Shape old_shape = shape();
  record(out, "view", {*this},
         [old_shape](const Tensor& g) { return std::vector<Tensor>{g.reshape(old_shape)}; });
  return out;
}

Tensor Tensor::reshape(const Shape& shape_in) const {
  const Shape new_shape = infer_shape(shape_in, numel(), "reshape", shape());
  Shape st;
  if (view_strides(shape(), strides(), new_shape, &st)) return view(new_shape);
  return contiguous().view(new_shape);
}

Tensor Tensor::transpose(int d0, int d1) const {
  d0 = normalize_dim(d0, ndim(), "transpose");
  d1 = normalize_dim(d1, ndim(), "transpose");
  std::vector<int> perm(static_cast<size_t>(ndim()));
  std::iota(perm.begin(), perm.end(), 0);
  std::swap(perm[size_t(d0)], perm[size_t(d1)]);
  return permute(perm);
}

Tensor Tensor::permute(const std::vector<int>& dims) const {
  BG_CHECK(int(dims.size()) == ndim(), "permute", "got ", dims.size(), " dims for a ", ndim(),
           "-d tensor");
  Shape sh(dims.size()), st(dims.size());
  std::vector<int> inverse(dims.size(), -1);
  for (size_t i = 0; i < dims.size(); ++i) {
    const int d = normalize_dim(dims[i], ndim(), "permute");
    BG_CHECK(inverse[size_t(d)] < 0, "permute", "dim ", d, " repeated");
    inverse[size_t(d)] = int(i);
    sh[i] = shape()[size_t(d)];
    st[i] = strides()[size_t(d)];
  }
  Tensor out = make_view(*this, sh, st, impl()->offset);
  record(out, "permute", {*this},
         [inverse](const Tensor& g) { return std::vector<Tensor>{g.permute(inverse)}; });
  return out;
}

Tensor Tensor::slice(int dim, int64_t start, int64_t end) const {
  dim = normalize_dim(dim, ndim(), "slice");
  const int64_t n = shape()[size_t(dim)];
  if (start < 0) start += n;
  if (end < 0) end += n;
  BG_CHECK(0 <= start && start <= end && end <= n, "slice", "range [", start, ", ", end,
           ") out of bounds for dim ", dim, " of size ", n);
  Shape sh = shape();
  sh[size_t(dim)] = end - start;
  Tensor out = make_view(*this, sh, strides(), impl()->offset + start * strides()[size_t(dim)]);
  const Shape full_shape = shape();
  record(out, "slice", {*this}, [full_shape, dim, start, end](const Tensor& g) {
    Tensor z = zeros(full_shape, g.dtype(), g.device());
    z.slice(dim, start, end).copy_(g);
    return std::vector<Tensor>{z};
  });
  return out;
}

Tensor Tensor::unsqueeze(int dim) const {
  const int d = dim < 0 ? dim + ndim() + 1 : dim;
  BG_CHECK(d >= 0 && d <= ndim(), "unsqueeze", "dim ", dim, " out of range for ", ndim(),
           "-d tensor");
  Shape sh = shape();
  sh.insert(sh.begin() + d, 1);
  return view(sh);
}

Tensor Tensor::squeeze(int dim) const {
  const int d = normalize_dim(dim, ndim(), "squeeze");
  BG_CHECK(shape()[size_t(d)] == 1, "squeeze", "dim ", dim, " has size ", shape()[size_t(d)],
           ", not 1");
  Shape sh = shape();
  sh.erase(sh.begin() + d);
  return view(sh);
}

Tensor Tensor::expand(const Shape& target) const {
  BG_CHECK(target.size() >= size_t(ndim()), "expand", "cannot expand ", shape_str(shape()), " to ",
           shape_str(target));
  const size_t lead = target.size() - size_t(ndim());
  Shape st(target.size(), 0), sh = target;
  for (size_t i = 0; i < target.size(); ++i) {
    if (i < lead) continue;
    const int64_t have = shape()[i - lead];
    if (sh[i] == -1) sh[i] = have;
    BG_CHECK(have == sh[i] || have == 1, "expand", "cannot expand ", shape_str(shape()), " to ",
             shape_str(target));
    st[i] = have == sh[i] ? strides()[i - lead] : 0;
  }
  Tensor out = make_view(*this, sh, st, impl()->offset);
  const Shape old_shape = shape();
  record(out, "expand", {*this},
         [old_shape](const Tensor& g) { return std::vector<Tensor>{sum_to(g, old_shape)}; });
  return out;
}

Tensor Tensor::contiguous() const {
  if (is_contiguous()) return *this;
  Tensor out = empty(shape(), dtype(), device());
  BG_DISPATCH(device(), copy, out.kview(), kview(), stream_for(device()));
  record(out, "contiguous", {*this}, [](const Tensor& g) { return std::vector<Tensor>{g}; });
  return out;
}

Tensor Tensor::clone() const {
  Tensor out = empty(shape(), dtype(), device());
  BG_DISPATCH(device(), copy, out.kview(), kview(), stream_for(device()));
  record(out, "clone", {*this}, [](const Tensor& g) { return std::vector<Tensor>{g}; });
  return out;
}

Tensor Tensor::to(DType dt) const {
  if (dt == dtype()) return *this;
  Tensor out = empty(shape(), dt, device());
  BG_DISPATCH(device(), copy, out.kview(), kview(), stream_for(device()));
  if (dtype_is_float(dt)) {
    const DType from = dtype();
    record(out, "cast", {*this},
           [from](const Tensor& g) { return std::vector<Tensor>{g.to(from)}; });
  }
  return out;
}

Tensor Tensor::to(Device dev) const {
  if (dev == device()) return *this;
  Tensor src = detach().contiguous();
  Tensor out = empty(shape(), dtype(), dev);
  const size_t bytes = size_t(numel()) * dtype_size(dtype());
  if (bytes) {
    const Device gpu = dev.is_cuda() ? dev : device();
    cuda::set_device(gpu.index);
    // Wait for work that produced the source before copying off its device.
    if (device().is_cuda() && dev.is_cuda()) synchronize(device());
    cuda::memcpy_async(out.data_ptr(), src.data_ptr(), bytes, stream_for(gpu));
    if (dev.is_cpu()) synchronize(device());
  }
  const Device from = device();
  record(out, "to_device", {*this},
         [from](const Tensor& g) { return std::vector<Tensor>{g.to(from)}; });
  return out;
}

Tensor Tensor::to(Device dev, DType dt) const {
  // Convert on the GPU side of a transfer: narrower bytes cross the bus.
  if (dev.is_cuda() && dtype_size(dt) > dtype_size(dtype())) return to(dev).to(dt);
  return to(dt).to(dev);
}

Tensor cast(const Tensor& x, DType dtype) { return x.to(dtype); }

}  // namespace bg
