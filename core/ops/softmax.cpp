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

Tensor cross_entropy(const Tensor& logits, const Tensor& targets, int64_t ignore_index,
                     const std::string& reduction) {
  check_float(logits, "cross_entropy", "logits");
  check_same_device(logits, targets, "cross_entropy");
  BG_CHECK(targets.dtype() == DType::i64 || targets.dtype() == DType::i32, "cross_entropy",
           "targets must be i32 or i64, got ", dtype_name(targets.dtype()));
  BG_CHECK(logits.ndim() >= 2, "cross_entropy", "logits must be (..., V), got ",
           shape_str(logits.shape()));
  BG_CHECK(reduction == "mean" || reduction == "sum" || reduction == "none", "cross_entropy",
           "reduction must be mean, sum or none, got '", reduction, "'");
  const int64_t vocab = logits.size(-1), rows = logits.numel() / (vocab ? vocab : 1);
  BG_CHECK(targets.numel() == rows, "cross_entropy", "logits ", shape_str(logits.shape()), " need ",
           rows, " targets, got ", shape_str(targets.shape()));
  const Tensor lc = compute_input(logits.reshape({rows, vocab}));
  const Tensor tc = targets.detach().contiguous().reshape({rows});
  const DType sd = stats_dtype(lc.dtype());
  Tensor losses = empty({rows}, sd, logits.device());
  Tensor lse = empty({rows}, sd, logits.device());
  Tensor valid = empty({rows}, sd, logits.device());
  BG_DISPATCH(logits.device(), cross_entropy_forward, losses.kview(), lse.kview(), valid.kview(),
              lc.kview(), tc.kview(), ignore_index, stream_for(logits.device()));
  Tensor out, count;
  if (reduction == "none") {
    out = losses.reshape(targets.shape());
  } else if (reduction == "sum") {
    out = sum(losses);
  } else {
    count = sum(valid);
    out = sum(losses) / count;  // NaN when every row is ignored, as in PyTorch
  }
  out = out.detach();
  const Tensor lcs = lc.detach(), lses = lse.detach();
  const Shape logits_shape = logits.shape();
  const DType dt = logits.dtype();
  record(out, "cross_entropy", {logits}, [=](const Tensor& g) {
    Tensor scale =
        reduction == "mean" ? g / count : (reduction == "sum" ? g : ones({}, sd, g.device()));
    Tensor dl = empty(lcs.shape(), lcs.dtype(), lcs.device());
    BG_DISPATCH(lcs.device(), cross_entropy_backward, dl.kview(), lcs.kview(), lses.kview(),
                tc.kview(), ignore_index, scale.contiguous().kview(), stream_for(lcs.device()));
    if (reduction == "none") dl = dl * g.reshape({rows, 1}).to(dl.dtype());
    return std::vector<Tensor>{compute_output(dl, dt).reshape(logits_shape)};
  });
  return out;
}

std::pair<Tensor, Tensor> cross_entropy_sum_and_gradient(const Tensor& logits,
                                                         const Tensor& targets,
                                                         int64_t ignore_index) {
  check_float(logits, "cross_entropy", "logits");
  check_same_device(logits, targets, "cross_entropy");
  BG_CHECK(logits.ndim() == 2 && targets.numel() == logits.size(0), "cross_entropy",
           "expects logits (N, V) and N targets, got ", shape_str(logits.shape()), " and ",
           shape_str(targets.shape()));
  BG_CHECK(targets.dtype() == DType::i64 || targets.dtype() == DType::i32, "cross_entropy",
           "targets must be i32 or i64, got ", dtype_name(targets.dtype()));
  NoGradGuard no_grad;
  const int64_t rows = logits.size(0);
  const Tensor lc = compute_input(logits.detach().contiguous());
  const Tensor tc = targets.detach().contiguous().reshape({rows});
  const DType sd = stats_dtype(lc.dtype());
  Tensor losses = empty({rows}, sd, logits.device()), lse = empty({rows}, sd, logits.device()),
         valid = empty({rows}, sd, logits.device());
  const Device dev = logits.device();
  BG_DISPATCH(dev, cross_entropy_forward, losses.kview(), lse.kview(), valid.kview(), lc.kview(),
              tc.kview(), ignore_index, stream_for(dev));
  Tensor dl = empty(lc.shape(), lc.dtype(), dev);
  const Tensor unit = ones({}, sd, dev);
  BG_DISPATCH(dev, cross_entropy_backward, dl.kview(), lc.kview(), lse.kview(), tc.kview(),
              ignore_index, unit.kview(), stream_for(dev));
  return {sum(losses), compute_output(dl, logits.dtype())};
}

}  // namespace bg
