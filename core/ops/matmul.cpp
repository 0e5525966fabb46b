// matmul.cpp: batched matmul with broadcast batch dims (matmul_rows, which linear.cpp shares),
// and the gradient products the backward passes run. Batch dims are collapsed to one strided dim
// when the strides allow it, so a transposed or broadcast operand reaches the kernel with no copy.
#include "../dispatch.h"
#include "../ops.h"
#include "matmul_rows.h"

namespace bg {

bool bias_in_epilogue(const ComputeMode& mode) {
  return mode.algo == MatmulAlgo::standard || mode.algo == MatmulAlgo::batch_invariant;
}

bool gelu_epilogues(const ComputeMode& mode) { return bias_in_epilogue(mode); }

namespace {


// The one place a matmul algorithm picks its kernels: (batch, M, K) @ (batch, K, N) views.
// An epilogue (a bias, a residual) only for the algorithms bias_in_epilogue names.
void run_matmul_kernel(const ComputeMode& mode, Rows rows, Device dev, const KView& out,
                       const KView& a, const KView& b, const MatmulEpilogue& epilogue) {
  BG_CHECK((!epilogue.bias.data && !epilogue.residual.data) || bias_in_epilogue(mode), "matmul",
           "the ", enum_name(mode.algo), " algorithm adds nothing in its epilogue");
  switch (mode.algo) {
    case MatmulAlgo::standard:
      return BG_DISPATCH(dev, matmul, out, a, b, epilogue, mode.precision, stream_for(dev));
    case MatmulAlgo::naive:
      return BG_DISPATCH(dev, matmul_naive, out, a, b, stream_for(dev));
    case MatmulAlgo::batch_invariant: {
      const BatchInvariantGemm opt{mode.precision, rows == Rows::summed_over};
      return BG_DISPATCH(dev, matmul_batch_invariant, out, a, b, epilogue, opt, stream_for(dev));
    }
    case MatmulAlgo::lmul: {
      ScratchArena scratch(dev);
      return BG_DISPATCH(dev, matmul_lmul, out, a, b, lmul_params(mode.lmul_mantissa_bits), scratch,
                         stream_for(dev));
    }
  }
}

// Each precision x algorithm, answered: a switch over the precisions with no default, so a new
// precision does not compile (-Werror=switch) until its row says which algorithms run it.
std::string precision_row(const ComputeMode& mode) {
  switch (mode.precision) {
    case MatmulPrecision::fp32:
      return "";
    case MatmulPrecision::tf32:
      if (mode.algo == MatmulAlgo::naive)
        return "the naive algorithm multiplies in fp32 or on bf16 operands; tf32 is cuBLAS's";
      if (mode.algo == MatmulAlgo::lmul)
        return "L-Mul multiplies f32 operands rounded to lmul.mantissa_bits; train.precision tf32 "
               "would round them first (use fp32)";
      return "";
    case MatmulPrecision::bf16:
      if (mode.algo == MatmulAlgo::lmul)
        return "L-Mul multiplies f32 operands rounded to lmul.mantissa_bits; train.precision bf16 "
               "would round them first (use fp32)";
      return "";
  }
  return str_cat("the precision '", enum_name(mode.precision), "' is not known here");
}

}  // namespace

// An allowlist: each algorithm names the precisions it runs; a new algorithm is refused here
// (and the compiler flags the switch) until its row is written.
std::string matmul_supports(const ComputeMode& mode, Device dev) {
  if (mode.on(dev) != mode)
    return str_cat(enum_name(mode.precision),
                   " precision is a CUDA mode; the CPU computes fp32 (resolve the mode with "
                   "ComputeMode::on(device))");
  switch (mode.algo) {
    case MatmulAlgo::standard:
      if (mode.deterministic)
        return "deterministic mode needs a batch-invariant algorithm; 'standard' is not one";
      return precision_row(mode);
    case MatmulAlgo::naive:
    case MatmulAlgo::batch_invariant:
      return precision_row(mode);
    case MatmulAlgo::lmul:
      if (mode.lmul_mantissa_bits < 1 || mode.lmul_mantissa_bits > 23)
        return str_cat("lmul.mantissa_bits must be in [1, 23], got ", mode.lmul_mantissa_bits);
      return precision_row(mode);
  }
  return str_cat("the matmul algorithm '", enum_name(mode.algo), "' is not known here");
}

namespace {

// Refuses a mode this matmul cannot honour, in one line.
void check_mode(const ComputeMode& mode, Device dev) {
  const std::string why = matmul_supports(mode, dev);
  BG_CHECK(why.empty(), "matmul", why);
}

// Views t (batch..., R, C), already expanded to batch_shape, as (B, R, C). False when the
// batch dims cannot share one stride.
bool collapse_batch(const Tensor& t, const Shape& batch_shape, KView* out) {
  const int nb = int(batch_shape.size());
  int64_t batch = 1, stride = 0;
  bool have_stride = false;
  for (int i = nb - 1; i >= 0; --i) {
    const int64_t s = t.shape()[size_t(i)], st = t.strides()[size_t(i)];
    if (s != 1) {
      if (!have_stride) {
        stride = st;
        have_stride = true;
      } else if (st != stride * batch && !(st == 0 && stride == 0)) {
        return false;
      }
    }
    batch *= s;
  }
  KView v = t.kview();
  v.ndim = 3;
  v.shape[0] = batch;
  v.strides[0] = have_stride ? stride : 0;
  v.shape[1] = t.shape()[size_t(nb)];
  v.strides[1] = t.strides()[size_t(nb)];
  v.shape[2] = t.shape()[size_t(nb + 1)];
  v.strides[2] = t.strides()[size_t(nb + 1)];
  *out = v;
  return true;
}

bool blas_compatible(const KView& v) {
  return v.shape[1] == 1 || v.shape[2] == 1 || v.strides[1] == 1 || v.strides[2] == 1;
}

bool aligned16(const KView& v) {
  const int64_t esize = int64_t(dtype_size(v.dtype));
  return reinterpret_cast<uintptr_t>(v.data) % 16 == 0 &&
         (v.shape[0] == 1 || v.strides[0] * esize % 16 == 0);
}

// What the pinned cuBLASLt path needs (kernel_list.h): every matrix of the batch at a 16-byte
// boundary and, where rows are kept apart, a's rows as contiguous rows of length K, so that the
// layout the algorithm is chosen from never depends on M.
bool pinned_ready(const KView& v, bool rows_of_k) {
  if (!aligned16(v)) return false;
  return !rows_of_k || (v.strides[2] == 1 && (v.shape[1] == 1 || v.strides[1] == v.shape[2]));
}

// t (batch..., R, C) copied into matrices of contiguous rows whose batch stride is rounded up to
// 16 bytes (a fresh allocation starts on a 256-byte boundary), viewed as (B, R, C).
KView aligned_copy(const Tensor& t, const Shape& batch_shape, Tensor* keep) {
  const int64_t r = t.size(-2), c = t.size(-1), per16 = 16 / int64_t(dtype_size(t.dtype()));
  int64_t b = 1;
  for (int64_t d : batch_shape) b *= d;
  const int64_t padded = (r * c + per16 - 1) / per16 * per16;
  *keep = empty({b, padded}, t.dtype(), t.device()).slice(1, 0, r * c).view({b, r, c});
  keep->copy_(t.reshape({b, r, c}));
  KView v = keep->kview();
  v.shape[0] = b;
  return v;
}

// The product of a and b with no autograd record: operands in `operand` dtype (cast when they
// are not), the result in `out_dtype` (f32 for bf16 operands keeps the f32 accumulation); a
// defined `bias` (N values, out_dtype, 2-D operands) is added in the epilogue, and so is a
// defined `residual` (the result's shape and dtype, 2-D operands). A defined `dest` (contiguous,
// the result's shape and dtype, 16-byte aligned) is written instead of a new tensor; it may be
// the residual itself (cuBLASLt's C = D: an accumulation in place). A defined `gelu_input`
// (contiguous, the result's 2-D shape and dtype) takes the product plus bias, and the result is
// its tanh GELU (CUDA's cuBLASLt algorithms: kernel_list.h's GELU epilogue). A defined
// `a_row_sums` (M contiguous f32 values, 2-D operands) receives a's sums over K (kernel_list.h's
// row-sum epilogue). A defined `dgelu_input` (contiguous, the result's 2-D shape and dtype)
// makes the result the product times GELU's derivative at it (kernel_list.h's dGELU epilogue).
Tensor product(const Tensor& a, const Tensor& b, const Shape& batch, DType operand, DType out_dtype,
               const ComputeMode& mode, Rows rows, const Tensor& bias = Tensor(),
               const Tensor& residual = Tensor(), const Tensor& dest = Tensor(),
               const Tensor& gelu_input = Tensor(), const Tensor& a_row_sums = Tensor(),
               const Tensor& dgelu_input = Tensor()) {
  const int64_t m = a.size(-2), k = a.size(-1), n = b.size(-1);
  Shape ea = batch, eb = batch;
  ea.insert(ea.end(), {m, k});
  eb.insert(eb.end(), {k, n});
  Tensor ac = operand == a.dtype() ? a.detach() : a.detach().to(operand);
  Tensor bc = operand == b.dtype() ? b.detach() : b.detach().to(operand);
  ac = ac.expand(ea);
  bc = bc.expand(eb);
  KView va, vb;
  // cuBLAS needs one unit-stride dim per operand; the naive kernels take any strides.
  if (!collapse_batch(ac, batch, &va) || (a.is_cuda() && !blas_compatible(va))) {
    ac = ac.contiguous();
    collapse_batch(ac, batch, &va);
  }
  if (!collapse_batch(bc, batch, &vb) || (b.is_cuda() && !blas_compatible(vb))) {
    bc = bc.contiguous();
    collapse_batch(bc, batch, &vb);
  }
  Shape out_shape = batch;
  out_shape.insert(out_shape.end(), {m, n});
  if (dest.defined())
    BG_CHECK(batch.empty() && dest.shape() == out_shape && dest.dtype() == out_dtype &&
                 dest.is_contiguous() && reinterpret_cast<uintptr_t>(dest.data_ptr()) % 16 == 0,
             "matmul", "a destination must be the product's contiguous, aligned 2-D shape");
  Tensor out = dest.defined() ? dest : empty(out_shape, out_dtype, a.device());
  KView vo;
  collapse_batch(out, batch, &vo);
  MatmulEpilogue epilogue;
  // The kernels take a contiguous, 16-byte-aligned bias and residual of the output's dtype.
  auto aligned = [&](const Tensor& t) {
    Tensor c = t.detach().to(out_dtype).contiguous();
    if (reinterpret_cast<uintptr_t>(c.data_ptr()) % 16 != 0)
      c = empty(c.shape(), out_dtype, c.device()).copy_(c);
    return c;
  };
  Tensor bias_c, residual_c;
  if (bias.defined()) {
    bias_c = aligned(bias);
    epilogue.bias = bias_c.kview();
  }
  if (gelu_input.defined()) {
    BG_CHECK(batch.empty() && gelu_input.shape() == out.shape() &&
                 gelu_input.dtype() == out_dtype && gelu_input.is_contiguous(),
             "matmul", "a GELU input needs 2-D operands and the product's contiguous shape");
    epilogue.gelu_input = gelu_input.kview();
    collapse_batch(gelu_input, batch, &epilogue.gelu_input);
  }
  if (dgelu_input.defined()) {
    BG_CHECK(batch.empty() && dgelu_input.shape() == out.shape() &&
                 dgelu_input.dtype() == out_dtype && dgelu_input.is_contiguous(),
             "matmul", "a dGELU input needs 2-D operands and the product's contiguous shape");
    epilogue.dgelu_input = dgelu_input.kview();
    collapse_batch(dgelu_input, batch, &epilogue.dgelu_input);
  }
  if (a_row_sums.defined()) {
    BG_CHECK(batch.empty() && a_row_sums.shape() == Shape{m} && a_row_sums.dtype() == DType::f32 &&
                 a_row_sums.is_contiguous(),
             "matmul", "row sums need 2-D operands and M contiguous f32 values");
    epilogue.a_row_sums = a_row_sums.kview();
  }
  if (residual.defined()) {
    BG_CHECK(batch.empty() && residual.shape() == out.shape(), "matmul",
             "a residual needs 2-D operands and the product's shape");
    residual_c = aligned(residual);
    epilogue.residual = residual_c.kview();
    collapse_batch(residual_c, batch, &epilogue.residual);
  }
  if (mode.algo == MatmulAlgo::batch_invariant && a.is_cuda()) {
    // Rare shapes (odd sizes, misaligned views) take a copy; the values are the same.
    Tensor a_copy, b_copy, out_padded;
    if (!pinned_ready(va, rows == Rows::kept_apart)) va = aligned_copy(ac, batch, &a_copy);
    if (!pinned_ready(vb, false)) vb = aligned_copy(bc, batch, &b_copy);
    if (!pinned_ready(vo, false)) {
      vo = aligned_copy(out, batch, &out_padded);
      run_matmul_kernel(mode, rows, a.device(), vo, va, vb, epilogue);
      return out_padded.reshape(out_shape).contiguous();
    }
  }
  run_matmul_kernel(mode, rows, a.device(), vo, va, vb, epilogue);
  return out;
}

Shape batch_of(const Tensor& t) { return Shape(t.shape().begin(), t.shape().end() - 2); }

// t rounded to bf16 in its own layout: a transposed view of a contiguous tensor (linear's
// weight^T) is cast as the contiguous tensor and transposed back, a contiguous-speed cast
// instead of a strided one; cuBLAS takes the transposed operand as it is.
Tensor to_bf16(const Tensor& t) {
  const Tensor base = t.ndim() >= 2 ? t.transpose(-1, -2) : t;
  if (t.ndim() >= 2 && !t.is_contiguous() && base.is_contiguous())
    return base.detach().to(DType::bf16).transpose(-1, -2);
  return t.detach().to(DType::bf16);
}

}  // namespace

namespace {

// The operands' checks; whether they mix bf16 with f32 (bf16 precision rounds f32 operands to
// bf16, so one may arrive as bf16 already: a producer that stored it for this matmul, as
// stored_dtype says).
bool check_operands(const Tensor& a, const Tensor& b, const ComputeMode& mode) {
  check_float(a, "matmul", "a");
  check_float(b, "matmul", "b");
  check_same_device(a, b, "matmul");
  check_mode(mode, a.device());
  const bool bf16_mix = a.is_cuda() && mode.precision == MatmulPrecision::bf16 &&
                        ((a.dtype() == DType::bf16 && b.dtype() == DType::f32) ||
                         (a.dtype() == DType::f32 && b.dtype() == DType::bf16));
  BG_CHECK(a.dtype() == b.dtype() || bf16_mix, "matmul", "dtype mismatch: ", dtype_name(a.dtype()),
           " and ", dtype_name(b.dtype()));
  BG_CHECK(mode.algo != MatmulAlgo::lmul || a.dtype() == DType::f32, "matmul",
           "L-Mul is defined on f32 bit patterns; ", dtype_name(a.dtype()),
           " operands are refused");
  BG_CHECK(a.ndim() >= 2 && b.ndim() >= 2, "matmul", "operands must be at least 2-D, got ",
           shape_str(a.shape()), " and ", shape_str(b.shape()));
  BG_CHECK(b.size(-2) == a.size(-1), "matmul", "inner dimensions differ: ", shape_str(a.shape()),
           " @ ", shape_str(b.shape()));
  return bf16_mix;
}

// The batch dims of a and b, broadcast.
Shape broadcast_batch(const Tensor& a, const Tensor& b) {
  const Shape ab(a.shape().begin(), a.shape().end() - 2),
      bb(b.shape().begin(), b.shape().end() - 2);
  const size_t nb = std::max(ab.size(), bb.size());
  Shape batch(nb);
  for (size_t i = 0; i < nb; ++i) {
    const int64_t da = i < nb - ab.size() ? 1 : ab[i - (nb - ab.size())];
    const int64_t db = i < nb - bb.size() ? 1 : bb[i - (nb - bb.size())];
    BG_CHECK(da == db || da == 1 || db == 1, "matmul", "batch dims of ", shape_str(a.shape()),
             " and ", shape_str(b.shape()), " cannot broadcast");
    batch[i] = da == 1 ? db : da;
  }
  return batch;
}

// A residual the epilogue cannot take (another dtype than the product's) is added after it.
Tensor add_residual_after(const Tensor& a, const Tensor& b, const ComputeMode& mode,
                          Consumer consumer, Rows rows, const ProductExtras& extras) {
  ProductExtras without;
  without.bias = extras.bias;
  Tensor out = matmul_rows(a, b, mode, consumer, rows, without);
  BG_CHECK(out.dtype() == extras.residual.dtype(), "linear", "the residual is ",
           dtype_name(extras.residual.dtype()), " but the product is ", dtype_name(out.dtype()));
  return out + extras.residual;
}

// What the bf16 product's backward keeps: the rounded operands, their shapes and dtypes, and
// where the weight gradient and GELU's backward go.
struct Bf16Saved {
  Tensor a16, b16;
  Shape a_shape, b_shape;
  DType da, db;
  ComputeMode run;
  bool has_bias, has_residual, weight_in_place;
  Tensor weight, gelu_pre;
};

std::vector<Tensor> bf16_backward(const Bf16Saved& s, const Tensor& g) {
  const Tensor g16 = g.detach().to(DType::bf16);
  const Tensor bt = s.b16.transpose(-1, -2), at = s.a16.transpose(-1, -2);
  const Shape gb = batch_of(g16);
  std::vector<Tensor> grads{
      s.gelu_pre.defined()
          ? product(g16, bt, gb, DType::bf16, s.da, s.run, Rows::kept_apart, Tensor(), Tensor(),
                    Tensor(), Tensor(), Tensor(), s.gelu_pre)
          : sum_to(product(g16, bt, gb, DType::bf16, s.da, s.run, Rows::kept_apart), s.a_shape),
      Tensor()};
  const Tensor buffer = s.weight_in_place ? leaf_gradient_buffer(s.weight) : Tensor();
  // The bias gradient: the incoming gradient as it came (bf16 for a bf16 output), summed in f32
  // and kept f32. A bf16 one is what the weight-gradient product reads, so with that product in
  // place cuBLASLt sums it there (BGRADB; the order of the sums is its own). An f32 gradient
  // keeps its own sums (bf16's rounding would move them).
  Tensor bias_grad;
  if (buffer.defined()) {  // (N, K) += g^T a, the sum over rows in the epilogue
    if (s.has_bias && g.dtype() == DType::bf16)
      bias_grad = empty({g16.size(1)}, DType::f32, g16.device());
    gradient_product_into(buffer, g16.transpose(0, 1), s.a16, s.run, true, bias_grad);
  } else {
    grads[1] = sum_to(product(at, g16, gb, DType::bf16, s.db, s.run, Rows::summed_over), s.b_shape);
  }
  if (s.has_bias) grads.push_back(bias_grad.defined() ? bias_grad : column_sums(g));
  if (s.has_residual) grads.push_back(g);  // out = residual + ...: passed through
  return grads;
}

// bf16 precision: f32 operands rounded to bf16 once, the products kept f32. The backward reuses
// the rounded copies and rounds the incoming gradient once for both of its products. Each
// gradient has its operand's dtype: f32 for f32 operands (the weights), bf16 for an operand that
// arrived as bf16 (as under PyTorch's autocast; its producer's backward reads bf16 then). A bias
// is added to the f32 accumulators in the output's dtype: f32, or rounded to bf16 for a bf16
// output (cuBLASLt takes no f32 bias there; PyTorch's autocast rounds it too).
Tensor bf16_product(const Tensor& a, const Tensor& b, const Shape& batch, const ComputeMode& run,
                    Consumer consumer, Rows rows, const ProductExtras& x) {
  const DType out_dtype = stored_dtype(run, consumer, DType::f32, a.device());
  if (x.residual.defined() && x.residual.dtype() != out_dtype)
    return add_residual_after(a, b, run, consumer, rows, x);
  Bf16Saved s{to_bf16(a), to_bf16(b), a.shape(), b.shape(), a.dtype(), b.dtype(), run,
              x.bias.defined(), x.residual.defined(), false, x.weight, Tensor()};
  Tensor out;
  if (x.gelu_out) {
    BG_CHECK(batch.empty() && !x.residual.defined(), "matmul",
             "the GELU epilogue takes 2-D operands and no residual");
    out = empty({a.size(0), b.size(1)}, out_dtype, a.device());
    *x.gelu_out = product(s.a16, s.b16, batch, DType::bf16, out_dtype, run, rows, x.bias, Tensor(),
                          Tensor(), out);
  } else {
    out = product(s.a16, s.b16, batch, DType::bf16, out_dtype, run, rows, x.bias, x.residual);
  }
  const Tensor& w = x.weight;
  s.weight_in_place = w.defined() && batch.empty() && a.is_cuda() &&
                      run.algo == MatmulAlgo::standard && w.dtype() == DType::f32 &&
                      w.ndim() == 2 && w.size(0) == b.size(1) && w.size(1) == b.size(0);
  // a = gelu(pre): the input-gradient product applies GELU's backward in its epilogue and hands
  // pre its gradient, so a's own GELU record is passed by (the gradient of pre through a's other
  // readers, if any, still reaches pre through it: the sum is the same).
  const Tensor& pre = x.a_gelu_input;
  const bool through_gelu =
      pre.defined() && batch.empty() && a.is_cuda() && gelu_epilogues(run) &&
      a.dtype() == DType::bf16 && pre.dtype() == DType::bf16 && pre.shape() == s.a_shape &&
      pre.is_contiguous() && pre.device() == a.device() && s.a_shape[1] % 8 == 0 &&
      reinterpret_cast<uintptr_t>(pre.data_ptr()) % 16 == 0;
  if (through_gelu) s.gelu_pre = pre.detach();
  std::vector<Tensor> inputs{through_gelu ? pre : a, b};
  if (s.has_bias) inputs.push_back(x.bias);
  if (s.has_residual) inputs.push_back(x.residual);
  record(out, "matmul", inputs, [s](const Tensor& g) { return bf16_backward(s, g); });
  return out;
}

// Other precisions: the product keeps the operands' dtype, whoever reads it; the gradients are
// products in the mode's backward (L-Mul's exact backward multiplies exactly).
Tensor exact_product(const Tensor& a, const Tensor& b, const Shape& batch, const ComputeMode& mode,
                     const ComputeMode& run, Consumer consumer, Rows rows,
                     const ProductExtras& x) {
  BG_CHECK(!x.gelu_out, "matmul", "the GELU epilogue runs under bf16 precision only");
  const DType operand = compute_dtype(a);
  if (x.residual.defined() && (x.residual.dtype() != operand || operand != a.dtype()))
    return add_residual_after(a, b, mode, consumer, rows, x);
  Tensor out = compute_output(
      product(a, b, batch, operand, operand, run, rows, x.bias, x.residual), a.dtype());
  const Tensor ad = a.detach(), bd = b.detach();
  const ComputeMode grad_mode = mode.backward();
  const bool has_bias = x.bias.defined(), has_residual = x.residual.defined();
  const Shape bias_shape = has_bias ? x.bias.shape() : Shape{};
  std::vector<Tensor> inputs{a, b};
  if (has_bias) inputs.push_back(x.bias);
  if (has_residual) inputs.push_back(x.residual);
  record(
      out, "matmul", inputs,
      [ad, bd, grad_mode, has_bias, has_residual, bias_shape](const Tensor& g) {
        const Consumer any = Consumer::any;
        const ComputeMode& gm = grad_mode;
        std::vector<Tensor> grads{
            sum_to(matmul_rows(g, bd.transpose(-1, -2), gm, any, Rows::kept_apart), ad.shape()),
            sum_to(matmul_rows(ad.transpose(-1, -2), g, gm, any, Rows::summed_over), bd.shape())};
        if (has_bias) grads.push_back(sum_to(g, bias_shape));
        if (has_residual) grads.push_back(g);
        return grads;
      });
  return out;
}

}  // namespace

Tensor matmul_rows(const Tensor& a, const Tensor& b, const ComputeMode& mode, Consumer consumer,
                   Rows rows, const ProductExtras& extras) {
  const bool bf16_mix = check_operands(a, b, mode);
  const Shape batch = broadcast_batch(a, b);
  // The precision applies to f32 operands on CUDA (f16/bf16 operands are what they are).
  ComputeMode run = mode;
  if (!bf16_mix && !(a.is_cuda() && a.dtype() == DType::f32)) run.precision = MatmulPrecision::fp32;
  if (run.precision == MatmulPrecision::bf16)
    return bf16_product(a, b, batch, run, consumer, rows, extras);
  return exact_product(a, b, batch, mode, run, consumer, rows, extras);
}

Tensor matmul(const Tensor& a, const Tensor& b, const ComputeMode& mode, Consumer consumer) {
  return matmul_rows(a, b, mode, consumer, Rows::kept_apart);
}

Tensor gradient_product(const Tensor& a, const Tensor& b, const ComputeMode& mode, bool k_over_rows,
                        bool narrow_output) {
  check_float(a, "gradient_product", "a");
  check_float(b, "gradient_product", "b");
  check_same_device(a, b, "gradient_product");
  check_mode(mode, a.device());
  BG_CHECK(a.ndim() == 2 && b.ndim() == 2 && a.size(1) == b.size(0), "gradient_product",
           "expects (M, K) @ (K, N), got ", shape_str(a.shape()), " @ ", shape_str(b.shape()));
  ComputeMode run = mode;
  const bool bf16 = a.is_cuda() && mode.precision == MatmulPrecision::bf16;
  const DType operand = bf16 ? DType::bf16 : compute_dtype(a);
  if (!bf16 && operand != DType::f32) run.precision = MatmulPrecision::fp32;
  const DType out_dtype = bf16 && !narrow_output ? DType::f32 : operand;
  return product(a, b, {}, operand, out_dtype, run,
                 k_over_rows ? Rows::summed_over : Rows::kept_apart);
}

void gradient_product_into(const Tensor& into, const Tensor& a, const Tensor& b,
                           const ComputeMode& mode, bool k_over_rows, const Tensor& a_row_sums) {
  check_float(a, "gradient_product_into", "a");
  check_float(b, "gradient_product_into", "b");
  check_same_device(a, b, "gradient_product_into");
  check_same_device(a, into, "gradient_product_into");
  check_mode(mode, a.device());
  BG_CHECK(a.ndim() == 2 && b.ndim() == 2 && a.size(1) == b.size(0) && into.ndim() == 2 &&
               into.size(0) == a.size(0) && into.size(1) == b.size(1),
           "gradient_product_into", "expects (M, N) += (M, K) @ (K, N), got ",
           shape_str(into.shape()), " += ", shape_str(a.shape()), " @ ", shape_str(b.shape()));
  ComputeMode run = mode;
  const bool bf16 = a.is_cuda() && mode.precision == MatmulPrecision::bf16;
  const DType operand = bf16 ? DType::bf16 : compute_dtype(a);
  if (!bf16 && operand != DType::f32) run.precision = MatmulPrecision::fp32;
  const DType out_dtype = bf16 ? DType::f32 : operand;
  const Rows rows = k_over_rows ? Rows::summed_over : Rows::kept_apart;
  // In cuBLASLt's epilogue (C = D = into, beta = 1): f32 accumulators plus into, rounded once,
  // the bits of an f32 product added separately. Elsewhere the separate add (the CPU kernel adds
  // its residual after writing the product, so it cannot alias them).
  if (a_row_sums.defined())
    BG_CHECK(a_row_sums.shape() == Shape{a.size(0)} && a_row_sums.dtype() == DType::f32 &&
                 a_row_sums.is_contiguous() && a_row_sums.device() == a.device(),
             "gradient_product_into", "row sums must be ", a.size(0), " contiguous f32 values");
  const bool in_place = a.is_cuda() && bias_in_epilogue(run) && a.size(1) > 0 &&
                        into.dtype() == out_dtype && into.is_contiguous() &&
                        reinterpret_cast<uintptr_t>(into.data_ptr()) % 16 == 0;
  // The row sums ride along on the standard algorithm's epilogue (aligned as fresh memory is).
  const bool sums_in_epilogue = in_place && a_row_sums.defined() &&
                                run.algo == MatmulAlgo::standard &&
                                reinterpret_cast<uintptr_t>(a_row_sums.data_ptr()) % 16 == 0;
  if (in_place)
    product(a, b, {}, operand, out_dtype, run, rows, Tensor(), into, into, Tensor(),
            sums_in_epilogue ? a_row_sums : Tensor());
  else
    add_(into, product(a, b, {}, operand, out_dtype, run, rows).to(into.dtype()));
  if (a_row_sums.defined() && !sums_in_epilogue)
    a_row_sums.copy_(column_sums(a.transpose(0, 1)));
}

}  // namespace bg
