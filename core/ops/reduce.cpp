// reduce.cpp: sum/mean/max/var over any set of dims, and sum_to (the gradient of
// broadcasting). Reduced dims that form one contiguous run are reduced in place as an
// (outer, extent, inner) block; any other set is permuted to the end first.
#include <algorithm>
#include <numeric>

#include "../dispatch.h"
#include "../ops.h"

namespace bg {
namespace {

std::vector<int> normalize_dims(std::vector<int> dims, int ndim, const char* op) {
  if (dims.empty()) {
    dims.resize(size_t(ndim));
    std::iota(dims.begin(), dims.end(), 0);
  }
  for (int& d : dims) d = normalize_dim(d, ndim, op);
  std::sort(dims.begin(), dims.end());
  BG_CHECK(std::adjacent_find(dims.begin(), dims.end()) == dims.end(), op, "repeated dim");
  return dims;
}

Shape reduced_shape(const Shape& shape, const std::vector<int>& dims, bool keepdim) {
  Shape out;
  for (int i = 0; i < int(shape.size()); ++i) {
    const bool r = std::binary_search(dims.begin(), dims.end(), i);
    if (!r)
      out.push_back(shape[size_t(i)]);
    else if (keepdim)
      out.push_back(1);
  }
  return out;
}

Tensor reduce_raw(ReduceOp op, const Tensor& x, const std::vector<int>& dims, bool keepdim) {
  const char* name = op == ReduceOp::sum ? "sum" : op == ReduceOp::max ? "max" : "sum_squares";
  check_float(x, name, "input");
  Tensor xc = compute_input(x);
  int64_t outer = 1, extent = 1, inner = 1;
  const bool run = x.ndim() == 0 || dims.back() - dims.front() + 1 == int(dims.size());
  if (run) {
    for (int i = 0; i < x.ndim(); ++i) {
      const int64_t s = x.shape()[size_t(i)];
      if (i < (dims.empty() ? 0 : dims.front()))
        outer *= s;
      else if (i <= (dims.empty() ? -1 : dims.back()))
        extent *= s;
      else
        inner *= s;
    }
  } else {
    std::vector<int> perm;
    for (int i = 0; i < x.ndim(); ++i)
      if (!std::binary_search(dims.begin(), dims.end(), i)) perm.push_back(i);
    for (int d : dims) perm.push_back(d);
    xc = xc.detach().permute(perm).contiguous();
    for (int i = 0; i < x.ndim(); ++i) {
      const int64_t s = x.shape()[size_t(i)];
      if (std::binary_search(dims.begin(), dims.end(), i))
        extent *= s;
      else
        outer *= s;
    }
  }
  Tensor out = empty(reduced_shape(x.shape(), dims, keepdim), xc.dtype(), x.device());
  if (extent == 0) {
    BG_CHECK(op != ReduceOp::max, name, "cannot take the max of an empty dimension of ",
             shape_str(x.shape()));
    out.fill_(0.0);
  } else {
    ScratchArena scratch(x.device());
    BG_DISPATCH(x.device(), reduce, op, out.kview(), xc.kview(), outer, extent, inner, scratch,
                stream_for(x.device()));
  }
  return compute_output(out, x.dtype());
}

}  // namespace

Tensor sum(const Tensor& x, std::vector<int> dims_in, bool keepdim) {
  const std::vector<int> dims = normalize_dims(std::move(dims_in), x.ndim(), "sum");
  Tensor out = reduce_raw(ReduceOp::sum, x, dims, keepdim);
  const Shape in_shape = x.shape(), kept = reduced_shape(x.shape(), dims, true);
  record(out, "sum", {x}, [in_shape, kept](const Tensor& g) {
    return std::vector<Tensor>{g.reshape(kept).expand(in_shape)};
  });
  return out;
}

Tensor sum_squares(const Tensor& x) {
  std::vector<int> all(size_t(x.ndim()));
  for (int i = 0; i < x.ndim(); ++i) all[size_t(i)] = i;
  Tensor out = reduce_raw(ReduceOp::sum_squares, x, all, false);
  const Tensor xd = x.detach();
  record(out, "sum_squares", {x}, [xd](const Tensor& g) {
    return std::vector<Tensor>{xd * (g * 2.0)};  // d/dx sum(x^2) = 2x
  });
  return out;
}

Tensor mean(const Tensor& x, std::vector<int> dims_in, bool keepdim) {
  const std::vector<int> dims = normalize_dims(std::move(dims_in), x.ndim(), "mean");
  int64_t count = 1;
  for (int d : dims) count *= x.shape()[size_t(d)];
  return mul_scalar(sum(x, dims, keepdim), 1.0 / double(count));
}

Tensor max(const Tensor& x, std::vector<int> dims_in, bool keepdim) {
  const std::vector<int> dims = normalize_dims(std::move(dims_in), x.ndim(), "max");
  Tensor out = reduce_raw(ReduceOp::max, x, dims, keepdim);
  const Shape kept = reduced_shape(x.shape(), dims, true);
  const Tensor xd = x.detach(), od = out.detach();
  record(out, "max", {x}, [=](const Tensor& g) {
    // Ties share the gradient equally (like torch.amax).
    const Tensor hit = eq(xd, od.reshape(kept));
    const Tensor count = sum(cast(hit, g.dtype()), dims, true);
    const Tensor share = g.reshape(kept) / count;
    return std::vector<Tensor>{where(hit, share, zeros({}, g.dtype(), g.device()))};
  });
  return out;
}

Tensor var(const Tensor& x, std::vector<int> dims_in, bool keepdim, int correction) {
  const std::vector<int> dims = normalize_dims(std::move(dims_in), x.ndim(), "var");
  int64_t count = 1;
  for (int d : dims) count *= x.shape()[size_t(d)];
  BG_CHECK(count - correction > 0, "var", "needs more than ", correction, " elements, got ", count);
  const Tensor centered = x - mean(x, dims, true);
  return mul_scalar(sum(centered * centered, dims, keepdim), 1.0 / double(count - correction));
}

Tensor column_sums(const Tensor& x) {
  check_float(x, "column_sums", "input");
  BG_CHECK(x.ndim() >= 1, "column_sums", "expects (..., C), got a scalar");
  const int64_t c = x.size(-1), rows = c == 0 ? 0 : x.numel() / c;
  // CUDA reduces f16/bf16 into f32 in the kernel; the CPU widens them first (compute_input).
  const Tensor xc = x.is_cuda() ? x.contiguous() : compute_input(x);
  const DType out_dtype = xc.dtype() == DType::f64 ? DType::f64 : DType::f32;
  Tensor out = empty({c}, out_dtype, x.device());
  if (rows == 0) return out.fill_(0.0);
  ScratchArena scratch(x.device());
  BG_DISPATCH(x.device(), reduce, ReduceOp::sum, out.kview(), xc.kview(), 1, rows, c, scratch,
              stream_for(x.device()));
  return out;
}

Tensor sum_to(const Tensor& x, const Shape& shape) {
  if (x.shape() == shape) return x;
  BG_CHECK(int(shape.size()) <= x.ndim(), "sum_to", "cannot sum ", shape_str(x.shape()), " to ",
           shape_str(shape));
  const int lead = x.ndim() - int(shape.size());
  std::vector<int> dims;
  for (int i = 0; i < x.ndim(); ++i) {
    if (i < lead) {
      dims.push_back(i);
      continue;
    }
    const int64_t want = shape[size_t(i - lead)];
    if (want == 1 && x.shape()[size_t(i)] != 1)
      dims.push_back(i);
    else
      BG_CHECK(want == x.shape()[size_t(i)], "sum_to", "cannot sum ", shape_str(x.shape()), " to ",
               shape_str(shape));
  }
  if (dims.empty()) return x.reshape(shape);
  return sum(x, dims, true).reshape(shape);
}

}  // namespace bg
