// softmax.cpp: softmax / log_softmax over any dim (the last dim natively; others through a
// transposed view) and the fused softmax-cross-entropy.
#include "../dispatch.h"
#include "../ops.h"

namespace bg {
namespace {

Tensor softmax_last(const Tensor& x, const SoftmaxOptions& opt) {
  const bool log = opt.log;
  const char* name = opt.causal_rows ? "causal_softmax" : log ? "log_softmax" : "softmax";
  check_float(x, name, "input");
  BG_CHECK(x.ndim() >= 1, name, "needs at least 1-D input");
  const Tensor xc = compute_input(x);
  Tensor y = empty(xc.shape(), xc.dtype(), xc.device());
  BG_DISPATCH(x.device(), softmax_forward, y.kview(), xc.kview(), opt, stream_for(x.device()));
  Tensor out = compute_output(y, x.dtype());
  const Tensor ys = y.detach();
  const DType dt = x.dtype();
  record(out, name, {x}, [ys, opt, dt](const Tensor& g) {
    const Tensor gc = compute_input(g);
    Tensor dx = empty(ys.shape(), ys.dtype(), ys.device());
    BG_DISPATCH(ys.device(), softmax_backward, dx.kview(), ys.kview(), gc.kview(), opt,
                stream_for(ys.device()));
    return std::vector<Tensor>{compute_output(dx, dt)};
  });
  return out;
}

Tensor softmax_dim(const Tensor& x, int dim, bool log) {
  const int d = normalize_dim(dim, x.ndim(), log ? "log_softmax" : "softmax");
  SoftmaxOptions opt;
  opt.log = log;
  if (d == x.ndim() - 1 || x.ndim() == 0) return softmax_last(x, opt);
  return softmax_last(x.transpose(d, -1), opt).transpose(d, -1);
}

}  // namespace

Tensor softmax(const Tensor& x, int dim) { return softmax_dim(x, dim, false); }
Tensor log_softmax(const Tensor& x, int dim) { return softmax_dim(x, dim, true); }

Tensor causal_softmax(const Tensor& x, double scale, int64_t first_position) {
  BG_CHECK(x.ndim() >= 2 && x.size(-1) >= x.size(-2), "causal_softmax",
           "scores must be (..., T, S) with S >= T, got ", shape_str(x.shape()));
  BG_CHECK(first_position < 0 || first_position + x.size(-2) <= x.size(-1), "causal_softmax",
           "queries at positions ", first_position, "..", first_position + x.size(-2) - 1,
           " pass the ", x.size(-1), " keys");
  SoftmaxOptions opt;
  opt.scale = scale;
  opt.causal_rows = x.size(-2);
  opt.causal_offset = first_position;
  return softmax_last(x, opt);
}

namespace {

// One cross-entropy forward over logits (..., V), checked: the rows' losses, log-sum-exps and
// valid flags (stats dtype), with the logits as (rows, V) in their compute dtype and the targets
// as (rows).
struct RowLosses {
  Tensor logits, targets, losses, lse, valid;
};
RowLosses cross_entropy_rows(const Tensor& logits, const Tensor& targets, int64_t ignore_index) {
  check_float(logits, "cross_entropy", "logits");
  check_same_device(logits, targets, "cross_entropy");
  BG_CHECK(targets.dtype() == DType::i64 || targets.dtype() == DType::i32, "cross_entropy",
           "targets must be i32 or i64, got ", dtype_name(targets.dtype()));
  BG_CHECK(logits.ndim() >= 2, "cross_entropy", "logits must be (..., V), got ",
           shape_str(logits.shape()));
  const int64_t vocab = logits.size(-1), rows = logits.numel() / (vocab ? vocab : 1);
  BG_CHECK(targets.numel() == rows, "cross_entropy", "logits ", shape_str(logits.shape()), " need ",
           rows, " targets, got ", shape_str(targets.shape()));
  RowLosses r;
  r.logits = compute_input(logits.reshape({rows, vocab})).detach();
  r.targets = targets.detach().contiguous().reshape({rows});
  const DType sd = stats_dtype(r.logits.dtype());
  const Device dev = logits.device();
  r.losses = empty({rows}, sd, dev);
  r.lse = empty({rows}, sd, dev);
  r.valid = empty({rows}, sd, dev);
  BG_DISPATCH(dev, cross_entropy_forward, r.losses.kview(), r.lse.kview(), r.valid.kview(),
              r.logits.kview(), r.targets.kview(), ignore_index, stream_for(dev));
  return r;
}

// d(scale * summed loss)/d(logits) for the rows of `r`, in the logits' compute dtype.
Tensor cross_entropy_gradient(const RowLosses& r, int64_t ignore_index, const Tensor& scale) {
  const Device dev = r.logits.device();
  Tensor dl = empty(r.logits.shape(), r.logits.dtype(), dev);
  BG_DISPATCH(dev, cross_entropy_backward, dl.kview(), r.logits.kview(), r.lse.kview(),
              r.targets.kview(), ignore_index, scale.contiguous().kview(), stream_for(dev));
  return dl;
}

}  // namespace

Tensor cross_entropy(const Tensor& logits, const Tensor& targets, int64_t ignore_index,
                     const std::string& reduction) {
  BG_CHECK(reduction == "mean" || reduction == "sum" || reduction == "none", "cross_entropy",
           "reduction must be mean, sum or none, got '", reduction, "'");
  const RowLosses r = cross_entropy_rows(logits, targets, ignore_index);
  const DType sd = r.losses.dtype();
  Tensor out, count;
  if (reduction == "none") {
    out = r.losses.reshape(targets.shape());
  } else if (reduction == "sum") {
    out = sum(r.losses);
  } else {
    count = sum(r.valid);
    out = sum(r.losses) / count;  // NaN when every row is ignored, as in PyTorch
  }
  out = out.detach();
  const Shape logits_shape = logits.shape();
  const DType dt = logits.dtype();
  const int64_t rows = r.logits.size(0);
  record(out, "cross_entropy", {logits}, [=](const Tensor& g) {
    Tensor scale =
        reduction == "mean" ? g / count : (reduction == "sum" ? g : ones({}, sd, g.device()));
    Tensor dl = cross_entropy_gradient(r, ignore_index, scale);
    if (reduction == "none") dl = dl * g.reshape({rows, 1}).to(dl.dtype());
    return std::vector<Tensor>{compute_output(dl, dt).reshape(logits_shape)};
  });
  return out;
}

std::pair<Tensor, Tensor> cross_entropy_sum_and_gradient(const Tensor& logits,
                                                         const Tensor& targets,
                                                         int64_t ignore_index) {
  BG_CHECK(logits.ndim() == 2, "cross_entropy", "expects logits (N, V), got ",
           shape_str(logits.shape()));
  NoGradGuard no_grad;
  const RowLosses r = cross_entropy_rows(logits, targets, ignore_index);
  const Tensor dl =
      cross_entropy_gradient(r, ignore_index, ones({}, r.losses.dtype(), logits.device()));
  return {sum(r.losses), compute_output(dl, logits.dtype())};
}

}  // namespace bg
