// kernel_list.h: every kernel, declared once. kernels/cpu/cpu_kernels.h includes this file
// inside namespace bg::cpu and kernels/cuda/cuda_kernels.h inside bg::cuda; each backend
// defines every function here (kernels/cpu/<file>.cpp, kernels/cuda/<file>.cu), so core's
// BG_DISPATCH names one kernel for either device. No include guard: it is meant to be included
// once per backend namespace. Adding a kernel: declare it here, define it in both backends.
//
// Shared contract: views carry sizes and strides in elements; CPU compute kernels take f32 or
// f64 (core widens f16/bf16 around them), CUDA compute kernels f32, f16 or bf16 with f32
// accumulation (f64 is CPU-only). Launches are asynchronous on `stream` (the CPU runs them at
// once); reductions use a fixed partition, so results repeat bit for bit.

// copy: dst <- src elementwise (same shape, any strides, any dtypes: converts).
void copy(const KView& dst, const KView& src, StreamHandle stream);
void fill(const KView& dst, double value, StreamHandle stream);
// random: uniform(lo=p0, hi=p1) | normal(mean=p0, std=p1) | bernoulli(keep=p0, value p1 else 0).
void random_fill(const KView& dst, RandomKind kind, double p0, double p1, uint64_t seed,
                 uint64_t offset, StreamHandle stream);
// random: out = x * (uniform(seed, offset + i) < keep ? scale : 0), the mask of
// bernoulli(keep, scale) regenerated from its counters (dropout's forward, and its backward on
// dy); contiguous. offset_shift: a device u64 added to offset (Generator::device_shift; CUDA
// only, nullptr for none).
void dropout_apply(const KView& out, const KView& x, double keep, double scale, uint64_t seed,
                   uint64_t offset, const uint64_t* offset_shift, StreamHandle stream);
// random: out = x + dropout_apply(y): the residual add fused with the dropout before it (same
// mask, and y's dropped value rounded to its dtype before the add, as the two ops would).
void dropout_add_apply(const KView& out, const KView& x, const KView& y, double keep, double scale,
                       uint64_t seed, uint64_t offset, const uint64_t* offset_shift,
                       StreamHandle stream);
// unary: contiguous, same dtype; on CUDA an f32 x may also have a bf16 out (forward) or a bf16
// dy (backward: the gradient of a bf16-stored output).
void unary_forward(UnaryOp op, const KView& out, const KView& x, double a, double b,
                   StreamHandle stream);
void unary_backward(UnaryOp op, const KView& dx, const KView& x, const KView& y, const KView& dy,
                    double a, StreamHandle stream);
// binary: out contiguous; a, b strided views of out's shape (stride 0 = broadcast).
// Comparisons write u8.
void binary_forward(BinaryOp op, const KView& out, const KView& a, const KView& b,
                    StreamHandle stream);
// binary: out = cond ? a : b; cond is u8; all views of out's shape.
void where_forward(const KView& out, const KView& cond, const KView& a, const KView& b,
                   StreamHandle stream);
// reduce: in contiguous (O, R, I) -> out contiguous (O, I), in in's dtype; on CUDA a sum of an
// f16/bf16 in may have an f32 out (its partials are f32: no rounding to in's dtype).
// ReduceOp::sum_squares sums x * x rounded to f32 (f64 on the CPU for f64), in sum's order:
// sum(x * x)'s bits for f32 and f64 in.
void reduce(ReduceOp op, const KView& out, const KView& in, int64_t outer, int64_t extent,
            int64_t inner, Scratch& scratch, StreamHandle stream);
// matmul: MatmulAlgo::standard. out (batch, M, N) = a (batch, M, K) @ b (batch, K, N) (+ bias)
// (+ residual); a and b share a dtype; on CUDA out may be f32 or bf16 for bf16 operands. The
// epilogue's bias (batch 1 only) is added to every row's accumulator before the one rounding to
// out's dtype, so an f32 out without a residual has the bits of the product plus a separate add.
// Its residual (K > 0; the residual stream a projection adds onto) enters the same f32 sums,
// in cuBLASLt's order (CUDA; the CPU adds it last). CUDA: cuBLAS (cuBLASLt where the epilogue
// adds anything), `precision` tf32 for f32 operands on tensor cores; CPU: Eigen, exactly in the
// operands' dtype (core never hands it a precision other than fp32). The GELU epilogue
// (gelu_input) is CUDA's alone (cuBLASLt's GELU_AUX, the tanh form, computed from the f32 sums
// before the rounding); so is the dGELU epilogue (dgelu_input: cuBLASLt's DGELU, the product
// rounded to out's dtype times the tanh form's derivative, one pass); the CPU refuses both (core
// composes gelu and its backward there).
void matmul(const KView& out, const KView& a, const KView& b, const MatmulEpilogue& epilogue,
            MatmulPrecision precision, StreamHandle stream);
// matmul: MatmulAlgo::naive, the reference algorithm: each output one fused multiply-add chain
// over k in order from zero (f32; f64 on the CPU for f64), any strides; both backends give the
// same bits.
void matmul_naive(const KView& out, const KView& a, const KView& b, StreamHandle stream);
// matmul: MatmulAlgo::lmul (kernels/lmul.h). f32 operands rounded to p.mantissa_bits, every
// product an L-Mul, summed in kernels/lmul.h's fixed order (chunks of kLmulChunk k, each a chain
// from zero, the chunk sums a chain from zero); any strides; both backends give the same bits.
void matmul_lmul(const KView& out, const KView& a, const KView& b, const LmulParams& p,
                 Scratch& scratch, StreamHandle stream);
// matmul: MatmulAlgo::batch_invariant (train.deterministic). Row i of out depends only on row i
// of a and on b, bit for bit: never on M, the batch count or the GPU's SM count. CUDA: cuBLASLt
// with one algorithm pinned per shape-without-M (no split-K); a must be row-major with rows of
// length K and every operand 16-byte aligned (core arranges both). CPU: each output the naive
// algorithm's fused multiply-add chain over k in order (the same bits as matmul_naive), run a
// row at a time across the columns. The epilogue as for matmul (the pinned algorithm with the
// bias and residual in its epilogue: a row still depends on its own rows of a and the residual).
// The GELU and dGELU epilogues too, on algorithms of their own table rows (elementwise on a
// row's own sums, so rows stay apart).
void matmul_batch_invariant(const KView& out, const KView& a, const KView& b,
                            const MatmulEpilogue& epilogue, const BatchInvariantGemm& opt,
                            StreamHandle stream);
// softmax: rows of the last dim, contiguous.
void softmax_forward(const KView& y, const KView& x, const SoftmaxOptions& opt,
                     StreamHandle stream);
void softmax_backward(const KView& dx, const KView& y, const KView& dy, const SoftmaxOptions& opt,
                      StreamHandle stream);
// attention: fused causal attention, softmax(scale q k^T + causal mask) v with the
// AttentionDropout mask, and its gradients. q, k, v, y, dq, dk, dv: (B, H, T, D) views with unit
// stride along the head dim (rows may be strided, e.g. slices of a packed qkv); lse, delta
// (B, H, T) contiguous (f32; f64 for f64 on the CPU). lse gets each query's log-sum-exp of its
// scaled scores; delta is backward scratch (rowsum(dy * y)). CUDA: flash-style tiles of 64
// queries x 64 keys, bf16 tensor cores, f32 accumulation and softmax, D = 64; no atomics (dk/dv
// from one block per key tile, dq from one block per query tile). CPU: any D, exact.
void attention_forward(const KView& y, const KView& lse, const KView& q, const KView& k,
                       const KView& v, double scale, const AttentionDropout& drop,
                       StreamHandle stream);
void attention_backward(const KView& dq, const KView& dk, const KView& dv, const KView& delta,
                        const KView& q, const KView& k, const KView& v, const KView& y,
                        const KView& dy, const KView& lse, double scale,
                        const AttentionDropout& drop, StreamHandle stream);
// cross_entropy: logits (N, V); targets (N) i32/i64; losses, lse (N) f32 (f64 for f64 logits,
// as are mean/rstd of layernorm and the scale below). valid (N) gets 1 for counted rows, 0 for
// ignored ones (the mean's denominator).
void cross_entropy_forward(const KView& losses, const KView& lse, const KView& valid,
                           const KView& logits, const KView& targets, int64_t ignore_index,
                           StreamHandle stream);
// dlogits = scale * (softmax - onehot) for valid rows, 0 for ignored; scale is an f32 scalar.
void cross_entropy_backward(const KView& dlogits, const KView& logits, const KView& lse,
                            const KView& targets, int64_t ignore_index, const KView& scale,
                            StreamHandle stream);
// embedding: weight (V, C), idx (N) i32/i64 -> out (N, C).
void embedding_forward(const KView& out, const KView& weight, const KView& idx,
                       StreamHandle stream);
// dweight (V, C) is overwritten; rows summed in ascending token position.
void embedding_backward(const KView& dweight, const KView& dout, const KView& idx, Scratch& scratch,
                        StreamHandle stream);
// layernorm (also RMSNorm when rms): x (N, C); weight/bias (C) may have data == nullptr, of x's
// dtype or (CUDA) f32 for a bf16/f16 x, dweight/dbias of theirs; y in x's dtype, or on CUDA bf16
// for f32 x; dy likewise.
void layernorm_forward(const KView& y, const KView& mean, const KView& rstd, const KView& x,
                       const KView& weight, const KView& bias, double eps, bool rms,
                       StreamHandle stream);
// dx_addend (x's shape and dtype, or data == nullptr): added to dx as a separate rounding, so dx
// equals add(dx_addend, dx) bit for bit.
void layernorm_backward(const KView& dx, const KView& dx_addend, const KView& dweight,
                        const KView& dbias, const KView& dy, const KView& x, const KView& weight,
                        const KView& mean, const KView& rstd, bool rms, Scratch& scratch,
                        StreamHandle stream);
// bitlinear: BitNet b1.58 (docs/bitlinear.md). Int8 operands are (rows, K) views whose rows are
// `row` bytes apart, row a multiple of 16 >= K, the bytes past K zero: the CUDA product reads
// whole 16-byte groups. Every scale multiplies to dequantise (W~ = beta W_q, x~ = step x_q).
// ternary_quantize_group: each of `count` weights w (N, K) f32 contiguous -> wq (N, K) i8 =
// clamp(rint(w / beta), -1, 1), beta (f32 scalar) = max(mean |w| or the lower median of |w|,
// 1e-5) and, where tilde has data, tilde = float(wq) * beta rounded to tilde's dtype
// (int8_dequantize's bits). The mean sums |w| in f64 over chunks of 4096 in one fixed tree that
// both backends share, so they give the same bits, and a weight's results do not depend on the
// others in the group. CUDA quantises the whole group in three launches (absmean).
void ternary_quantize_group(const TernaryTarget* targets, int count, TernaryScale method,
                            Scratch& scratch, StreamHandle stream);
// act_quantize: x (M, K) contiguous (f32; CUDA also bf16/f16; CPU f64) -> xq (M, K) i8, step (M)
// = gamma / Q, quant_scale (M) = Q / gamma, rstd (M) and mean (M; layer norm only, else null).
// x_n = (x - mean) * rstd (none: x), gamma = max(max |x_n|, 1e-5), xq = clamp(rint(x_n *
// quant_scale), -Q-1, Q). The row sums use 32 lane partials (element e in lane (e / 4) % 32, in
// order; fma for squares) folded by an xor butterfly, on both backends alike: the CPU and CUDA
// give the same bits.
void act_quantize(const KView& xq, const KView& step, const KView& quant_scale, const KView& mean,
                  const KView& rstd, const KView& x, const ActQuantOptions& opt,
                  StreamHandle stream);
// layernorm_quantize: layernorm_forward (y, mean, rstd from x, weight, bias) and act_quantize of
// y as stored (xq, step, quant_scale, q_mean, q_rstd), in one pass over x where the kernel can
// (CUDA: rows up to 1024 wide): each output equals the two kernels' in turn, bit for bit. y is
// contiguous, xq (rows, c) with act_quantize's padded rows.
void layernorm_quantize(const KView& y, const KView& mean, const KView& rstd, const KView& x,
                        const KView& weight, const KView& bias, double eps, bool rms,
                        const KView& xq, const KView& step, const KView& quant_scale,
                        const KView& q_mean, const KView& q_rstd, const ActQuantOptions& opt,
                        StreamHandle stream);
// bitlinear_input_backward: the input side of BitLinear's backward in one pass over x (M, K),
// from act_quantize's statistics (mean null unless layer norm; rstd null for none):
// x_tilde (M, K) f32/bf16 (CPU f32/f64) = step * xq, with xq recomputed from x as act_quantize
// rounds it: int8_dequantize(act_quantize(x).xq, step) bit for bit; and, unless dx is null
// (norm none: dx is dxn itself), dx (x's dtype) = the norm's backward of dxn (x's dtype, or
// bf16 for f32 x on CUDA): layernorm_backward's dx with no affine parameters, bit for bit.
void bitlinear_input_backward(const KView& dx, const KView& x_tilde, const KView& dxn,
                              const KView& x, const KView& mean, const KView& rstd,
                              const KView& step, const KView& quant_scale,
                              const ActQuantOptions& opt, StreamHandle stream);
// int8_linear: y (M, N) f32/bf16 (CPU f32/f64) = fma(float(acc) * step[m], beta, bias[n] or 0)
// (+ residual[m, n], an f32 add after that rounding, when residual has data: y's dtype and
// shape, contiguous), acc = xq[m] . wq[n] exact in int32. CUDA: int8 tensor cores (wgmma
// m64n128k32 on Hopper, mma.sync m16n8k32 elsewhere: the same bits), the rescale in the
// epilogue.
void int8_linear(const KView& y, const KView& xq, const KView& wq, const KView& step,
                 const KView& beta, const KView& bias, const KView& residual, StreamHandle stream);
// int8_dequantize: out (R, C) f32/bf16 (CPU f32/f64) = q * row_scale[r] * tensor_scale, each
// scale optional (null view), rounded to out's dtype once.
void int8_dequantize(const KView& out, const KView& q, const KView& row_scale,
                     const KView& tensor_scale, StreamHandle stream);
// pack_ternary: wq (N, K) i8 in {-1, 0, 1} -> packed (N, ceil(K / 4)) u8, 2 bits a weight:
// weight k of a row sits in byte k / 4 at bits 2 (k % 4), code = w + 1 (0: -1, 1: 0, 2: +1;
// 3 unused); codes past K are 1 (a zero weight). unpack_ternary is its inverse into an i8 view
// (rows `row` bytes apart, zeros past K, as the int8 kernels read).
void pack_ternary(const KView& packed, const KView& wq, StreamHandle stream);
void unpack_ternary(const KView& wq, const KView& packed, StreamHandle stream);
// w2_layout: packed (N, ceil(K / 4)) u8 (the export layout above) -> w2 (N, 32 ceil(K / 128))
// u8, the W2A8 kernels' layout: per row, blocks of 128 k of 32 bytes; in block h the
// little-endian u32 at byte 8t + 4u holds, at bits 8j + 2s, the code of
// k = 128h + 64u + 16s + 4t + j (1, a zero weight, past K).
void w2_layout(const KView& w2, const KView& packed, int64_t k, StreamHandle stream);
// w2a8_linear: y (M, N) = fma(float(acc) * step[m], beta, bias[n] or 0) as int8_linear, with
// acc = xq[m] . w[n] exact in int32 and w read from the w2 layout. CUDA: a dp4a GEMV at M = 1,
// int8 tensor cores with the weights unpacked in registers above (wgmma on Hopper, mma.sync
// elsewhere: the same bits).
void w2a8_linear(const KView& y, const KView& xq, const KView& w2, const KView& step,
                 const KView& beta, const KView& bias, StreamHandle stream);
// bitplane_pack: q (R, K) i8 in {-1, 0, 1} -> planes (2, R, B) u8, B = 16 ceil(K / 128): plane 0
// has bit k % 8 of byte k / 8 set where q = +1, plane 1 where q = -1; zeros past K.
void bitplane_pack(const KView& planes, const KView& q, StreamHandle stream);
// bitplane_linear: y (M, N) as int8_linear with acc = x . w of the ternary rows the planes hold,
// acc = 2 (popc(Px & Pw) + popc(Nx & Nw)) - popc((Px | Nx) & (Pw | Nw)). CUDA: b1 tensor cores
// (mma.sync m16n8k256 .and.popc).
void bitplane_linear(const KView& y, const KView& xp, const KView& wp, const KView& step,
                     const KView& beta, const KView& bias, StreamHandle stream);
// optimizer: f32 contiguous buffers of equal length; grad_scale (f32 scalar) may be null.
void adamw_step(const KView& param, const KView& grad, const KView& m, const KView& v,
                const AdamWParams& p, const KView& grad_scale, StreamHandle stream);
void sgd_step(const KView& param, const KView& grad, const KView& momentum_buf, float lr,
              float momentum, float weight_decay, const KView& grad_scale, StreamHandle stream);
// optimizer: flag (i64 scalar, 0 = none yet) becomes `step` if it is still 0 and value (an f32
// scalar: a loss, a gradient norm) is NaN or infinite. One thread; no host sync.
void mark_first_nonfinite(const KView& flag, const KView& value, int64_t step, StreamHandle stream);
// sick: BIDE/SICK. sick_forward runs the fused pass over every example's pattern range.
void sick_forward(const SickArgs& args, Scratch& scratch, StreamHandle stream);
// l (N) = BIDE logit of pattern y_n (i64) under (W_n, r_n). With logz (N, f32/f64) given,
// writes log p = l - logz into logp (same dtype as logz) instead of l.
void bide_logits(const KView& l, const KView& w, const KView& r, const KView& y, int bits,
                 const KView& logz, const KView& logp, StreamHandle stream);
// Gradient of log p(y_n) = l_y - log Z: dW = g r (1[z_y > 0] b_y - gw / s), dr = g (h_y - gr / s).
void bide_log_prob_backward(const KView& dw, const KView& dr, const KView& w, const KView& r,
                            const KView& y, const KView& gw, const KView& gr, const KView& s,
                            const KView& g, int bits, StreamHandle stream);
