// ops.h: every differentiable operation bitgrad has. Each is defined once, in
// core/ops/<family>.cpp: shape checks, dispatch to kernels/cpu/<op>.cpp or kernels/cuda/<op>.cu,
// and its backward right beside it. f16/bf16 CPU tensors compute in f32 and round once.
#pragma once
#include <optional>
#include <vector>

#include "autograd.h"
#include "compute_mode.h"
#include "rng.h"
#include "tensor.h"

namespace bg {

// Elementwise binary with NumPy broadcasting.
Tensor add(const Tensor& a, const Tensor& b);
Tensor sub(const Tensor& a, const Tensor& b);
Tensor mul(const Tensor& a, const Tensor& b);
Tensor div(const Tensor& a, const Tensor& b);
Tensor maximum(const Tensor& a, const Tensor& b);
Tensor minimum(const Tensor& a, const Tensor& b);
// Comparisons give u8 masks and carry no gradient.
Tensor eq(const Tensor& a, const Tensor& b);
Tensor lt(const Tensor& a, const Tensor& b);
Tensor gt(const Tensor& a, const Tensor& b);

// dst += src in place (src broadcast to dst's shape); no autograd. dst must be contiguous.
void add_(const Tensor& dst, const Tensor& src);

// Scalar forms: a * x + b in one pass.
Tensor affine(const Tensor& x, double a, double b);
Tensor add_scalar(const Tensor& x, double s);
Tensor mul_scalar(const Tensor& x, double s);

// Elementwise unary.
Tensor exp(const Tensor& x);
Tensor log(const Tensor& x);
Tensor tanh(const Tensor& x);
Tensor relu(const Tensor& x);
Tensor gelu(const Tensor& x);  // tanh approximation (GPT-2)
// gelu stored as out_dtype: x's, or bf16 for f32 x, written directly by the CUDA kernel when the
// output only feeds a bf16 matmul and would be rounded there anyway.
Tensor gelu(const Tensor& x, DType out_dtype);
// gelu whose output only feeds matmuls of `consumer`: stored as stored_dtype says.
Tensor gelu(const Tensor& x, const ComputeMode& consumer);
// The exact GELU, 0.5 x (1 + erf(x / sqrt 2)): PyTorch's nn.GELU() and nanoGPT's; out_dtype as
// for gelu.
Tensor gelu_erf(const Tensor& x);
// y = gelu(x) (tanh form) computed elsewhere (a GEMM's epilogue: linear_gelu), returned with
// gelu's backward from x attached: the backward gelu(x) would have.
Tensor attach_gelu_backward(const Tensor& x, const Tensor& y);
Tensor gelu_erf(const Tensor& x, DType out_dtype);
Tensor gelu_erf(const Tensor& x, const ComputeMode& consumer);
Tensor silu(const Tensor& x);
Tensor sigmoid(const Tensor& x);
Tensor neg(const Tensor& x);
Tensor sqrt(const Tensor& x);
Tensor rsqrt(const Tensor& x);
Tensor abs(const Tensor& x);
// log(1 + e^x), computed without overflow.
Tensor softplus(const Tensor& x);
// log Gamma(x) for x > 0; its gradient is digamma(x).
Tensor lgamma(const Tensor& x);

// Reductions over `dims` (negative counts from the end); empty dims = all.
Tensor sum(const Tensor& x, std::vector<int> dims = {}, bool keepdim = false);
// The sum of every element's square (a 0-d tensor) in one pass over x, without the squares'
// tensor: each square rounded to f32 (f64 for f64), summed in sum's order, so for f32 and f64 x
// the bits of sum(x * x).
Tensor sum_squares(const Tensor& x);
Tensor mean(const Tensor& x, std::vector<int> dims = {}, bool keepdim = false);
Tensor max(const Tensor& x, std::vector<int> dims = {}, bool keepdim = false);
Tensor var(const Tensor& x, std::vector<int> dims = {}, bool keepdim = false, int correction = 1);
// Sums a broadcast result back down to `shape` (the gradient of broadcasting).
Tensor sum_to(const Tensor& x, const Shape& shape);
// The sums over every row of x (..., C): C values in f32 (f64 for f64) whatever x's float
// dtype, never rounded to x's f16/bf16 (a bias gradient from a bf16 output gradient). No
// autograd record: for backward functions.
Tensor column_sums(const Tensor& x);

// (..., M, K) @ (..., K, N); batch dims broadcast; transposed views cost no copy. `mode` says
// how (precision, algorithm; its backward products run the same way); mode.on(device) is what a
// device runs, anything else is refused. Under bf16 precision an operand may arrive as bf16
// already (a producer stored it for this matmul), beside an f32 one. consumer == matmul stores
// the product as stored_dtype says (bf16 under bf16 precision on CUDA, rounded once from the
// f32 accumulators) for a reader that rounds to bf16 anyway.
// "" when matmul runs `mode` on `device`; else why not, in one line (ggml's supports_op).
std::string matmul_supports(const ComputeMode& mode, Device device);
Tensor matmul(const Tensor& a, const Tensor& b, const ComputeMode& mode = ComputeMode(),
              Consumer consumer = Consumer::any);
// x (..., in) @ weight (out, in)^T + bias (out) (+ residual, the output's shape): PyTorch's
// layout. Where the algorithm has an epilogue (standard, batch_invariant) the bias and the
// residual are added to the f32 accumulators before the one rounding to the output's dtype, so
// consumer == matmul may narrow a biased product (the bias rounded to bf16 first, as cuBLASLt
// and PyTorch's autocast do) and a projection onto the residual stream writes the stream in one
// pass; the reference algorithms add them separately and keep the output's natural dtype.
// A defined gelu_input says x = gelu(gelu_input) (tanh form), as linear_gelu made it: where
// the product's mode has the dGELU epilogue (CUDA, gelu_in_epilogue's algorithms, bf16
// precision, bf16 x and gelu_input of x's shape, contiguous, x's width a multiple of 8), the
// backward hands gelu_input its gradient, computed in the input-gradient GEMM's epilogue
// (bf16(g W) * gelu'(gelu_input), cuBLASLt's DGELU: GELU's backward without a pass of its own;
// the derivative's arithmetic is cuBLASLt's), and x none; elsewhere it is ignored and x gets its
// gradient.
Tensor linear(const Tensor& x, const Tensor& weight, const Tensor& bias = Tensor(),
              const ComputeMode& mode = ComputeMode(), Consumer consumer = Consumer::any,
              const Tensor& residual = Tensor(), const Tensor& gelu_input = Tensor());

// a @ b for a backward's own products, with no autograd record: 2-D operands rounded to bf16
// under bf16 precision on CUDA (left as they are otherwise), the result f32 (f64 for f64
// operands), or with narrow_output the operands' dtype (bf16 under bf16 precision, rounded once
// from the f32 accumulators in the epilogue); k_over_rows marks a weight gradient (K runs over
// the samples), which the batch-invariant algorithm may split in a fixed order.
Tensor gradient_product(const Tensor& a, const Tensor& b, const ComputeMode& mode, bool k_over_rows,
                        bool narrow_output = false);
// gelu(linear(x, weight, bias, mode, Consumer::matmul), mode): the GELU (tanh form) of a product
// stored for the next matmul. Where gelu_in_epilogue says so the GEMM's epilogue applies it
// (cuBLASLt's GELU_AUX: from the f32 sums plus the bias, before the one rounding; the
// pre-activation kept for the backward, which is gelu's and linear's); elsewhere the two ops.
// A given pre receives the pre-activation (x's shape but the weight's rows, with the product's
// record) where the epilogue ran, for the linear that reads the GELU (its gelu_input), and is
// left undefined elsewhere.
Tensor linear_gelu(const Tensor& x, const Tensor& weight, const Tensor& bias,
                   const ComputeMode& mode, Tensor* pre = nullptr);
// Whether linear_gelu takes the epilogue: CUDA, cuBLASLt's algorithms (the standard one or the
// deterministic mode's pinned ones), bf16 precision (a bf16 product), f32/bf16 operands, N a
// multiple of 8, a bias of the weight's dtype if any.
bool gelu_in_epilogue(const ComputeMode& mode, const Tensor& x, const Tensor& weight,
                      const Tensor& bias);
// into += gradient_product(a, b, mode, k_over_rows) (its operands and precision; into f32, or
// the operands' dtype where they stay as they are), added in the GEMM's epilogue in place where
// the algorithm has one (cuBLASLt's C = D): a weight gradient summed over chunks of rows without
// a separate add per chunk. A defined a_row_sums (M contiguous f32 values) receives the sums of
// a's rows over K: for a weight-gradient product g^T x, the bias gradient, summed by cuBLASLt as
// it loads g (BGRADB: CUDA's standard algorithm), else column_sums of a^T, its bits as before.
void gradient_product_into(const Tensor& into, const Tensor& a, const Tensor& b,
                           const ComputeMode& mode, bool k_over_rows,
                           const Tensor& a_row_sums = Tensor());
Tensor softmax(const Tensor& x, int dim = -1);
Tensor log_softmax(const Tensor& x, int dim = -1);
// softmax(scale * x) over the last dim of attention scores x (..., T, S), S >= T: query row i
// sees keys j <= i + S - T (S > T when cached keys precede the queries); hidden entries are 0.
// One pass instead of scale + mask + softmax, and no mask tensor.
// Row i of the (..., T, S) scores is the query at position first_position + i and sees keys
// 0 .. first_position + i; first_position -1 means S - T (the queries are the last T positions).
Tensor causal_softmax(const Tensor& x, double scale, int64_t first_position = -1);
// logits (N, V), targets (N) i32/i64. Mean over rows whose target != ignore_index
// (reduction "mean"), their sum ("sum") or per-row losses ("none"). Never materialises
// probabilities.
Tensor cross_entropy(const Tensor& logits, const Tensor& targets, int64_t ignore_index = -100,
                     const std::string& reduction = "mean");
// logits (N, V), no autograd: the summed cross-entropy (rows whose target is ignore_index add
// nothing) and its gradient d(sum)/d(logits) in logits' dtype, made in one call (what a caller
// that makes the gradient beside the logits needs: linear_cross_entropy's chunks).
std::pair<Tensor, Tensor> cross_entropy_sum_and_gradient(const Tensor& logits,
                                                         const Tensor& targets,
                                                         int64_t ignore_index = -100);
// cross_entropy(linear(x, weight, no bias, mode, Consumer::loss), targets) for reduction mean or
// sum, without the (N, V) logits or their gradient: rows go through in chunks of chunk_rows,
// each chunk's logits, loss and gradients made and freed before the next (the gradients for a
// unit loss gradient, scaled in backward). x (..., C), weight (V, C), targets (...). Rows that
// fit one chunk are the plain composition, bit for bit. extra_column (...), when given, is one
// more logit per row (column V, in its own dtype; the logits are cast to it): a hybrid head's
// second normaliser, differentiable.
Tensor linear_cross_entropy(const Tensor& x, const Tensor& weight, const Tensor& targets,
                            const ComputeMode& mode = ComputeMode(), int64_t chunk_rows = 4096,
                            int64_t ignore_index = -100, const std::string& reduction = "mean",
                            const Tensor& extra_column = Tensor());

// weight (V, C), idx (...) i32/i64 -> (..., C).
Tensor embedding(const Tensor& weight, const Tensor& idx);
// Zeroes with probability p and scales the rest by 1/(1-p); identity when !training or p == 0.
Tensor dropout(const Tensor& x, double p, bool training, Generator& gen);
// x + dropout(y, p) in one pass (a residual add after dropout): the same mask and numbers as the
// two ops, one tensor fewer written and read. x and y share shape and dtype.
Tensor dropout_add(const Tensor& x, const Tensor& y, double p, bool training, Generator& gen);
Tensor layernorm(const Tensor& x, const Tensor& weight, const Tensor& bias, double eps = 1e-5);
// layernorm stored as out_dtype (x's, or bf16 for f32 x), as gelu(x, out_dtype).
Tensor layernorm(const Tensor& x, const Tensor& weight, const Tensor& bias, double eps,
                 DType out_dtype);
// layernorm whose output only feeds matmuls of `consumer`: stored as stored_dtype says.
Tensor layernorm(const Tensor& x, const Tensor& weight, const Tensor& bias, double eps,
                 const ComputeMode& consumer);
Tensor rmsnorm(const Tensor& x, const Tensor& weight, double eps = 1e-6);
// q, k, v (B, H, T, D) -> (B, H, T, D); composed of matmul/causal_softmax/dropout, its two
// products computed as `mode` says.
Tensor causal_self_attention(const Tensor& q, const Tensor& k, const Tensor& v, double dropout_p,
                             bool training, Generator& gen,
                             const ComputeMode& mode = ComputeMode());

// qkv (B, T, 3C), c_attn's packed queries, keys and values of n_head heads -> y (B, T, C):
// softmax(q k^T / sqrt(D) + causal mask) v per head, attention dropout included, in one fused
// kernel per pass (no T x T tensor; no head transposes). CUDA: bf16 tensor-core operands with
// f32 accumulation, head dim 64, so it honours bf16 precision only (fused_attention_supports
// says why not otherwise); the CPU kernel computes fp32. Its dropout mask is its own
// (kernels/attention_dropout.h).
Tensor fused_causal_attention(const Tensor& qkv, int64_t n_head, double dropout_p, bool training,
                              Generator& gen, const ComputeMode& mode = ComputeMode());
// "" when the fused kernel runs heads of head_dim under `mode` on `device`; else why not.
std::string fused_attention_supports(const ComputeMode& mode, Device device, int64_t head_dim);

Tensor concat(const std::vector<Tensor>& xs, int dim);
std::vector<Tensor> split(const Tensor& x, const std::vector<int64_t>& sizes, int dim);
// cond (u8) ? a : b, all broadcast together.
Tensor where(const Tensor& cond, const Tensor& a, const Tensor& b);
Tensor masked_fill(const Tensor& x, const Tensor& mask, double value);
Tensor cast(const Tensor& x, DType dtype);

// Random tensors from a counter-based generator (identical on CPU and CUDA).
Tensor rand(const Shape& shape, Generator& gen, double lo = 0, double hi = 1,
            DType dtype = DType::f32, Device device = Device::cpu());
Tensor randn(const Shape& shape, Generator& gen, double mean = 0, double std = 1,
             DType dtype = DType::f32, Device device = Device::cpu());
// value with probability keep, else 0.
Tensor bernoulli(const Shape& shape, Generator& gen, double keep, double value = 1,
                 DType dtype = DType::f32, Device device = Device::cpu());

inline Tensor operator+(const Tensor& a, const Tensor& b) { return add(a, b); }
inline Tensor operator-(const Tensor& a, const Tensor& b) { return sub(a, b); }
inline Tensor operator*(const Tensor& a, const Tensor& b) { return mul(a, b); }
inline Tensor operator/(const Tensor& a, const Tensor& b) { return div(a, b); }
inline Tensor operator-(const Tensor& x) { return neg(x); }
inline Tensor operator+(const Tensor& x, double s) { return add_scalar(x, s); }
inline Tensor operator-(const Tensor& x, double s) { return add_scalar(x, -s); }
inline Tensor operator*(const Tensor& x, double s) { return mul_scalar(x, s); }
inline Tensor operator/(const Tensor& x, double s) { return mul_scalar(x, 1.0 / s); }
inline Tensor operator*(double s, const Tensor& x) { return mul_scalar(x, s); }

}  // namespace bg
