// shape.cpp: concat and split. Split returns views; concat copies each part into a slice.
#include "../dispatch.h"
#include "../ops.h"

namespace bg {

Tensor concat(const std::vector<Tensor>& xs, int dim) {
  BG_CHECK(!xs.empty(), "concat", "needs at least one tensor");
  const Tensor& first = xs[0];
  const int d = normalize_dim(dim, first.ndim(), "concat");
  Shape out_shape = first.shape();
  out_shape[size_t(d)] = 0;
  for (const Tensor& x : xs) {
    check_same_device(first, x, "concat");
    BG_CHECK(x.dtype() == first.dtype(), "concat", "dtype mismatch: ", dtype_name(first.dtype()),
             " and ", dtype_name(x.dtype()));
    BG_CHECK(x.ndim() == first.ndim(), "concat", "rank mismatch: ", shape_str(first.shape()),
             " and ", shape_str(x.shape()));
    for (int i = 0; i < x.ndim(); ++i)
      BG_CHECK(i == d || x.shape()[size_t(i)] == first.shape()[size_t(i)], "concat", "shapes ",
               shape_str(first.shape()), " and ", shape_str(x.shape()), " differ outside dim ", d);
    out_shape[size_t(d)] += x.shape()[size_t(d)];
  }
  Tensor out = empty(out_shape, first.dtype(), first.device());
  std::vector<int64_t> sizes;
  int64_t offset = 0;
  for (const Tensor& x : xs) {
    const int64_t n = x.shape()[size_t(d)];
    out.slice(d, offset, offset + n).copy_(x.detach());
    sizes.push_back(n);
    offset += n;
  }
  record(out, "concat", xs, [sizes, d](const Tensor& g) {
    std::vector<Tensor> grads;
    int64_t off = 0;
    for (int64_t n : sizes) {
      grads.push_back(g.slice(d, off, off + n));
      off += n;
    }
    return grads;
  });
  return out;
}

std::vector<Tensor> split(const Tensor& x, const std::vector<int64_t>& sizes, int dim) {
  const int d = normalize_dim(dim, x.ndim(), "split");
  int64_t total = 0;
  for (int64_t s : sizes) {
    BG_CHECK(s >= 0, "split", "negative size ", s);
    total += s;
  }
  BG_CHECK(total == x.shape()[size_t(d)], "split", "sizes add up to ", total, " but dim ", d,
           " of ", shape_str(x.shape()), " has ", x.shape()[size_t(d)]);
  std::vector<Tensor> parts;
  int64_t off = 0;
  for (int64_t s : sizes) {
    parts.push_back(x.slice(d, off, off + s));
    off += s;
  }
  return parts;
}

}  // namespace bg
