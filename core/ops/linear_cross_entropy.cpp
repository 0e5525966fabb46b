// linear_cross_entropy.cpp: a softmax head's loss and gradients without its (N, V) logits.
//
// cross_entropy(linear(x, W)) holds the logits and, in backward, their gradient: two (N, V)
// tensors, 1.65 GB each in bf16 for GPT-2's 16,384 positions. Here the rows go through in
// chunks: each chunk's logits, its summed loss and, when x or W needs a gradient, its gradients
// for a unit loss gradient are made by the ordinary ops (the compute mode's matmuls and the
// cross-entropy kernels, so every precision and the deterministic mode apply) and freed before
// the next chunk. The loss's gradient is a scalar times each valid row's unit gradient (mean or
// sum), so backward only scales: dx = s dx_unit, dW = s sum over chunks of dW_unit, summed in
// chunk order. Rows that fit one chunk take the plain composition (its autograd, its bits): the
// chunked path costs a dW accumulation per chunk and saves nothing there.
// An extra column (the hybrid head's BIDE log-normaliser) is one more logit per row, column V,
// concatenated to each chunk's logits in its dtype; its gradient is gathered per chunk as dx's.
#include "../dispatch.h"
#include "../ops.h"

namespace bg {

Tensor linear_cross_entropy(const Tensor& x, const Tensor& weight, const Tensor& targets,
                            const ComputeMode& mode, int64_t chunk_rows, int64_t ignore_index,
                            const std::string& reduction, const Tensor& extra_column) {
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
  if (extra_column.defined()) {
    check_same_device(x, extra_column, op);
    BG_CHECK(extra_column.numel() == rows && dtype_is_float(extra_column.dtype()), op,
             "the extra column must hold one float per row (", rows, "), got ",
             dtype_name(extra_column.dtype()), " ", shape_str(extra_column.shape()));
  }
  const Tensor x2 = x.reshape({rows, c}), t = targets.detach().contiguous().reshape({rows});
  const Tensor e2 = extra_column.defined() ? extra_column.reshape({rows, 1}) : Tensor();
  // One chunk's logits: the product, and the extra column after it in the column's dtype.
  auto chunk_logits = [&](const Tensor& xc, const Tensor& w, const Tensor& ec) {
    const Tensor l = linear(xc, w, Tensor(), mode, Consumer::loss);
    return ec.defined() ? concat({l.to(ec.dtype()), ec}, 1) : l;
  };
  if (rows <= chunk_rows)
    return cross_entropy(chunk_logits(x2, weight, e2), t, ignore_index, reduction);
  // The chunks' losses summed in chunk order.
  auto add_to = [](const Tensor& sum_so_far, const Tensor& loss) {
    return sum_so_far.defined() ? sum_so_far + loss : loss;
  };
  const bool grad_x = needs_grad({x}), grad_w = needs_grad({weight}),
             grad_e = e2.defined() && needs_grad({e2});
  Tensor total, dw_unit;
  std::vector<Tensor> dx_parts, de_parts;
  // Under bf16 precision on CUDA the chunks run linear's products directly (its bf16 operands,
  // f32 accumulators, the logits stored for the loss): W rounded to bf16 once, not per chunk,
  // and dW's chunks summed in the GEMM's epilogue in place, not by an add each. Elsewhere each
  // chunk is linear's autograd, its dW accumulated in a leaf of W's values.
  const bool direct = x.is_cuda() && mode.precision == MatmulPrecision::bf16;
  const Tensor w16 = direct ? weight.detach().to(DType::bf16) : Tensor();
  Tensor w_leaf = direct ? Tensor() : weight.detach();
  if (grad_w && !direct) w_leaf.requires_grad_();
  for (int64_t lo = 0; lo < rows; lo += chunk_rows) {
    const int64_t hi = std::min(rows, lo + chunk_rows);
    Tensor xc = x2.slice(0, lo, hi).detach();
    Tensor ec = e2.defined() ? e2.slice(0, lo, hi).detach() : Tensor();
    if (grad_e && !direct) ec.requires_grad_();
    Tensor loss;
    if (direct) {
      const Tensor x16 = xc.to(DType::bf16);
      const Tensor product = gradient_product(x16, w16.transpose(0, 1), mode, false, true);
      const Tensor logits = ec.defined() ? concat({product.to(ec.dtype()), ec}, 1) : product;
      if (!(grad_x || grad_w || grad_e)) {  // the loss alone (eval)
        total = add_to(total, cross_entropy(logits, t.slice(0, lo, hi), ignore_index, "sum"));
        continue;
      }
      const auto [chunk_loss, dl] =
          cross_entropy_sum_and_gradient(logits, t.slice(0, lo, hi), ignore_index);
      loss = chunk_loss;
      const int64_t v = w16.size(0);
      const Tensor g = ec.defined() ? dl.slice(1, 0, v).to(DType::bf16) : dl;
      if (grad_x) dx_parts.push_back(gradient_product(g, w16, mode, false));  // f32
      if (grad_w && !dw_unit.defined())
        dw_unit = gradient_product(g.transpose(0, 1), x16, mode, true);
      else if (grad_w)
        gradient_product_into(dw_unit, g.transpose(0, 1), x16, mode, true);
      if (grad_e) de_parts.push_back(dl.slice(1, v, v + 1).contiguous());
    } else {
      if (grad_x) xc.requires_grad_();
      loss = cross_entropy(chunk_logits(xc, w_leaf, ec), t.slice(0, lo, hi), ignore_index, "sum");
      if (grad_x || grad_w || grad_e) loss.backward();
      if (grad_x) dx_parts.push_back(xc.grad());
    }
    if (grad_e && !direct) de_parts.push_back(ec.grad());
    total = add_to(total, loss.detach());
  }
  const DType sd = total.defined() ? total.dtype() : stats_dtype(compute_dtype(x));
  if (!total.defined()) total = zeros({}, sd, x.device());
  Tensor count;
  if (reduction == "mean") {
    // Rows whose target is not ignored (NaN when none is, as cross_entropy), compared in the
    // loss's dtype (f32 on CUDA, which has no f64 kernels): exact for ids and an ignore index
    // below 2^24 in magnitude, and a count below 2^24 rows.
    count = full({}, double(rows), sd, x.device()) -
            sum(eq(t.to(sd), full({rows}, double(ignore_index), sd, t.device())).to(sd));
  }
  Tensor out = (reduction == "mean" ? total / count : total).detach();
  if (grad_w && !direct) dw_unit = w_leaf.grad();
  const Shape x_shape = x.shape();
  const Shape e_shape = extra_column.defined() ? extra_column.shape() : Shape();
  std::vector<Tensor> inputs = {x, weight};
  if (extra_column.defined()) inputs.push_back(extra_column);
  const size_t n_inputs = inputs.size();
  const DType x_dtype = x.dtype(), w_dtype = weight.dtype(),
              e_dtype = extra_column.defined() ? extra_column.dtype() : DType::f32;
  record(out, op, inputs, [=](const Tensor& g) {
    const Tensor s = reduction == "mean" ? g / count : g;
    // Scaled in f32 at least (a bf16 scale would bias every gradient by its rounding), then
    // stored in the input's dtype.
    auto scaled = [&](const Tensor& unit, DType dtype) {
      const DType wide = unit.dtype() == DType::f64 ? DType::f64 : DType::f32;
      return (unit.to(wide) * s.to(wide)).to(dtype);
    };
    std::vector<Tensor> grads(n_inputs);
    if (grad_x) grads[0] = scaled(concat(dx_parts, 0), x_dtype).reshape(x_shape);
    if (grad_w) grads[1] = scaled(dw_unit, w_dtype);
    if (grad_e) grads[2] = scaled(concat(de_parts, 0), e_dtype).reshape(e_shape);
    return grads;
  });
  return out;
}

}  // namespace bg
