// cpu_kernels.h: the CPU reference implementation of every kernel (Eigen where it helps).
// Compute kernels take f32 or f64 views; core converts f16/bf16 to f32 around them.
// The CUDA twins in kernels/cuda/cuda_kernels.h have the same names and signatures.
#pragma once
#include "../attention_dropout.h"
#include "../bide_values.h"
#include "../kernel_types.h"
#include "../optimizer_params.h"
#include "../philox.h"

namespace bg {

namespace cpu {

// copy.cpp: dst <- src elementwise (same shape, any strides, any dtypes: converts).
void copy(const KView& dst, const KView& src, StreamHandle stream);
void fill(const KView& dst, double value, StreamHandle stream);
// random.cpp: uniform(lo=p0, hi=p1) | normal(mean=p0, std=p1) | bernoulli(keep=p0, value p1 else
// 0).
void random_fill(const KView& dst, RandomKind kind, double p0, double p1, uint64_t seed,
                 uint64_t offset, StreamHandle stream);
// out = x * (uniform(seed, offset + i) < keep ? scale : 0), the mask of bernoulli(keep, scale)
// regenerated from its counters (dropout's forward, and its backward on dy); contiguous.
void dropout_apply(const KView& out, const KView& x, double keep, double scale, uint64_t seed,
                   uint64_t offset, StreamHandle stream);
// out = x + dropout_apply(y): the residual add fused with the dropout before it (same mask, and
// y's dropped value rounded to its dtype before the add, as the two ops would); contiguous.
void dropout_add_apply(const KView& out, const KView& x, const KView& y, double keep, double scale,
                       uint64_t seed, uint64_t offset, StreamHandle stream);
// unary.cpp: contiguous, same dtype.
void unary_forward(UnaryOp op, const KView& out, const KView& x, double a, double b,
                   StreamHandle stream);
void unary_backward(UnaryOp op, const KView& dx, const KView& x, const KView& y, const KView& dy,
                    double a, StreamHandle stream);
// binary.cpp: out contiguous; a, b strided views of out's shape (stride 0 = broadcast).
// Comparisons write u8.
void binary_forward(BinaryOp op, const KView& out, const KView& a, const KView& b,
                    StreamHandle stream);
// binary.cpp: out = cond ? a : b; cond is u8; all views of out's shape.
void where_forward(const KView& out, const KView& cond, const KView& a, const KView& b,
                   StreamHandle stream);
// reduce.cpp: in contiguous (O, R, I) -> out contiguous (O, I).
void reduce(ReduceOp op, const KView& out, const KView& in, int64_t outer, int64_t extent,
            int64_t inner, Scratch& scratch, StreamHandle stream);
// matmul.cpp: out (batch, M, N) = a (batch, M, K) @ b (batch, K, N); any strides.
// `precision` is the CUDA knob; the CPU always computes exactly in the operands' dtype.
void matmul(const KView& out, const KView& a, const KView& b, MatmulPrecision precision,
            StreamHandle stream);
// softmax.cpp: rows of the last dim, contiguous.
void softmax_forward(const KView& y, const KView& x, const SoftmaxOptions& opt,
                     StreamHandle stream);
void softmax_backward(const KView& dx, const KView& y, const KView& dy, const SoftmaxOptions& opt,
                      StreamHandle stream);
// attention.cpp: the fused causal attention's reference (any head dim; f32/f64 views as in the
// CUDA kernels, lse/delta in the inputs' dtype), computing softmax(scale q k^T + causal mask),
// the AttentionDropout mask, and its gradients exactly.
void attention_forward(const KView& y, const KView& lse, const KView& q, const KView& k,
                       const KView& v, double scale, const AttentionDropout& drop,
                       StreamHandle stream);
void attention_backward(const KView& dq, const KView& dk, const KView& dv, const KView& delta,
                        const KView& q, const KView& k, const KView& v, const KView& y,
                        const KView& dy, const KView& lse, double scale,
                        const AttentionDropout& drop, StreamHandle stream);
// cross_entropy.cpp: logits (N, V); targets (N) i32/i64; losses, lse (N) f32
// (f64 for f64 logits, as are mean/rstd of layernorm and the scale below).
// valid (N) gets 1 for counted rows, 0 for ignored ones (the mean's denominator).
void cross_entropy_forward(const KView& losses, const KView& lse, const KView& valid,
                           const KView& logits, const KView& targets, int64_t ignore_index,
                           StreamHandle stream);
// dlogits = scale * (softmax - onehot) for valid rows, 0 for ignored; scale is an f32 scalar.
void cross_entropy_backward(const KView& dlogits, const KView& logits, const KView& lse,
                            const KView& targets, int64_t ignore_index, const KView& scale,
                            StreamHandle stream);
// embedding.cpp: weight (V, C), idx (N) i32/i64 -> out (N, C).
void embedding_forward(const KView& out, const KView& weight, const KView& idx,
                       StreamHandle stream);
// dweight (V, C) is overwritten; rows summed in ascending token position.
void embedding_backward(const KView& dweight, const KView& dout, const KView& idx, Scratch& scratch,
                        StreamHandle stream);
// layernorm.cpp (also RMSNorm when rms): x (N, C); weight/bias (C) may have data == nullptr.
void layernorm_forward(const KView& y, const KView& mean, const KView& rstd, const KView& x,
                       const KView& weight, const KView& bias, double eps, bool rms,
                       StreamHandle stream);
// dx_addend (x's shape and dtype, or data == nullptr): added to dx as a separate rounding, so dx
// equals add(dx_addend, dx) bit for bit.
void layernorm_backward(const KView& dx, const KView& dx_addend, const KView& dweight,
                        const KView& dbias, const KView& dy, const KView& x, const KView& weight,
                        const KView& mean, const KView& rstd, bool rms, Scratch& scratch,
                        StreamHandle stream);
// optimizer.cpp: f32 contiguous buffers of equal length; grad_scale (f32 scalar) may be null.
void adamw_step(const KView& param, const KView& grad, const KView& m, const KView& v,
                const AdamWParams& p, const KView& grad_scale, StreamHandle stream);
void sgd_step(const KView& param, const KView& grad, const KView& momentum_buf, float lr,
              float momentum, float weight_decay, const KView& grad_scale, StreamHandle stream);
// optimizer.cpp: flag (i64 scalar, 0 = none yet) becomes `step` if it is still 0 and value (a
// f32 scalar: a loss, a gradient norm) is NaN or infinite. One thread; no host sync.
void mark_first_nonfinite(const KView& flag, const KView& value, int64_t step, StreamHandle stream);

// sick.cpp: BIDE/SICK. sick_forward runs the fused pass over every example's pattern range.
void sick_forward(const SickArgs& args, Scratch& scratch, StreamHandle stream);
// l (N) = BIDE logit of pattern y_n (i64) under (W_n, r_n). With logz (N, f32/f64) given,
// writes log p = l - logz into logp (same dtype as logz) instead of l.
void bide_logits(const KView& l, const KView& w, const KView& r, const KView& y, int bits,
                 const KView& logz, const KView& logp, StreamHandle stream);
// Gradient of log p(y_n) = l_y - log Z: dW = g r (1[z_y > 0] b_y - gw / s), dr = g (h_y - gr / s).
void bide_log_prob_backward(const KView& dw, const KView& dr, const KView& w, const KView& r,
                            const KView& y, const KView& gw, const KView& gr, const KView& s,
                            const KView& g, int bits, StreamHandle stream);

}  // namespace cpu
}  // namespace bg
