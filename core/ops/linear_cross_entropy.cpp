// linear_cross_entropy.cpp: a softmax head's loss and gradients without its (N, V) logits.
//
// cross_entropy(linear(x, W)) holds the logits and, in backward, their gradient: two (N, V)
// tensors, 1.65 GB each in bf16 for GPT-2's 16,384 positions. Here the rows go through in
// chunks: each chunk's logits, its summed loss and, when x or W needs a gradient, its gradients
// for a unit loss gradient are made by the ordinary ops (the compute mode's matmuls and the
// cross-entropy kernels, so every precision and the deterministic mode apply) and freed before
// the next chunk. The loss's gradient is a scalar times each valid row's unit gradient (mean or
// sum), so backward only scales: dx = s dx_unit, dW = s sum over chunks of dW_unit, summed in
// chunk order.
#include "../dispatch.h"
#include "../ops.h"

namespace bg {

Tensor linear_cross_entropy(const Tensor& x, const Tensor& weight, const Tensor& targets,
                            const ComputeMode& mode, int64_t chunk_rows, int64_t ignore_index,
                            const std::string& reduction) {
  const char* op = "linear_cross_entropy";
  BG_CHECK(reduction == "mean" || reduction == "sum", op, "reduction must be mean or sum, got '",
           reduction, "' (per-row losses need cross_entropy over the logits)");
  BG_CHECK(chunk_rows >= 1, op, "chunk_rows must be at least 1, got ", chunk_rows);
  BG_CHECK(weight.ndim() == 2, op, "weight must be (V, C), got ", shape_str(weight.shape()));
  BG_CHECK(x.ndim() >= 1 && x.size(-1) == weight.size(1), op, "input ", shape_str(x.shape()),
           " does not match weight ", shape_str(weight.shape()));
  check_same_device(x, weight, op);
  check_same_device(x, targets, op);
  const int64_t c = weight.size(1), rows = c ? x.numel() / c : 0;
  BG_CHECK(targets.numel() == rows, op, "input ", shape_str(x.shape()), " needs ", rows,
           " targets, got ", shape_str(targets.shape()));
  BG_CHECK(targets.dtype() == DType::i64 || targets.dtype() == DType::i32, op,
           "targets must be i32 or i64, got ", dtype_name(targets.dtype()));
  const Tensor x2 = x.reshape({rows, c}), t = targets.detach().contiguous().reshape({rows});
  const bool grad_x = needs_grad({x}), grad_w = needs_grad({weight});
  // A leaf of W's values that the chunks' backward passes accumulate into, in chunk order.
  Tensor w_leaf = weight.detach();
  if (grad_w) w_leaf.requires_grad_();
  Tensor total;
  std::vector<Tensor> dx_parts;
  for (int64_t lo = 0; lo < rows; lo += chunk_rows) {
    const int64_t hi = std::min(rows, lo + chunk_rows);
    Tensor xc = x2.slice(0, lo, hi).detach();
    if (grad_x) xc.requires_grad_();
    const Tensor loss = cross_entropy(linear(xc, w_leaf, Tensor(), mode, Consumer::loss),
                                      t.slice(0, lo, hi), ignore_index, "sum");
    if (grad_x || grad_w) loss.backward();
    if (grad_x) dx_parts.push_back(xc.grad());
    total = total.defined() ? total + loss.detach() : loss.detach();
  }
  const DType sd = total.defined() ? total.dtype() : stats_dtype(compute_dtype(x));
  if (!total.defined()) total = zeros({}, sd, x.device());
  Tensor count;
  if (reduction == "mean") {
    // Rows whose target is not ignored (NaN when none is, as cross_entropy).
    count = full({}, double(rows), sd, x.device()) -
            sum(eq(t.to(DType::f64), full({rows}, double(ignore_index), DType::f64, t.device()))
                    .to(sd));
  }
  Tensor out = (reduction == "mean" ? total / count : total).detach();
  const Tensor dw_unit = grad_w ? w_leaf.grad() : Tensor();
  const Shape x_shape = x.shape();
  record(out, op, {x, weight}, [=](const Tensor& g) {
    const Tensor s = reduction == "mean" ? g / count : g;
    Tensor dx, dw;
    if (grad_x)
      dx = (dx_parts.size() == 1 ? dx_parts[0] : concat(dx_parts, 0)).reshape(x_shape) *
           s.to(dx_parts[0].dtype());
    if (grad_w) dw = dw_unit * s.to(dw_unit.dtype());
    return std::vector<Tensor>{dx, dw};
  });
  return out;
}

}  // namespace bg
