// attention.cpp: fused causal self-attention over a packed qkv (c_attn's output). The kernels
// see each of q, k, v as a strided (B, H, T, D) view into qkv (and y, dqkv likewise), so no head
// transposes are copied and no T x T tensor exists in either pass.
#include <cmath>

#include "../dispatch.h"
#include "../ops.h"

namespace bg {
namespace {

// Heads [h0 .. h0 + H) of a contiguous (B, T, W) tensor starting at column `col`: (B, H, T, D).
KView heads_view(const Tensor& x, int64_t col, int64_t n_head, int64_t head_dim) {
  KView v = x.kview();
  const int64_t b = x.size(0), t = x.size(1), w = x.size(2);
  v.data = static_cast<char*>(v.data) + col * int64_t(dtype_size(x.dtype()));
  v.ndim = 4;
  const int64_t shape[4] = {b, n_head, t, head_dim}, strides[4] = {t * w, head_dim, w, 1};
  for (int d = 0; d < 4; ++d) {
    v.shape[d] = shape[d];
    v.strides[d] = strides[d];
  }
  return v;
}

AttentionDropout attention_dropout(int64_t heads, int64_t t, double p, bool training,
                                   Generator& gen) {
  AttentionDropout drop;
  if (!training || p == 0.0) return drop;
  drop.seed = gen.seed;
  drop.counter_base = gen.take(4 * attention_dropout_counters(heads, t)) / 4;
  drop.counter_shift = gen.device_shift;
  // 16-bit uniforms: the keep probability is threshold / 65536 (within 2^-17 of 1 - p), and
  // the survivors are scaled by its exact inverse so the expectation is unchanged.
  drop.keep_threshold = uint32_t(std::max(1.0, std::round((1.0 - p) * 65536.0)));
  drop.keep_scale = 65536.0 / double(drop.keep_threshold);
  return drop;
}

}  // namespace

std::string fused_attention_supports(const ComputeMode& mode, Device device, int64_t head_dim) {
  // Its products are its own: tiles of 64 queries x 64 keys in a fixed order whatever B and H,
  // so they honour the batch-invariant algorithm (tests/test_batch_invariance.cpp), not others.
  switch (mode.algo) {  // an allowlist: a new algorithm is refused until its row is written
    case MatmulAlgo::standard:
    case MatmulAlgo::batch_invariant:
      break;
    case MatmulAlgo::naive:
    case MatmulAlgo::lmul:
      return str_cat("its products are its own, not the '", enum_name(mode.algo),
                     "' matmul algorithm's");
  }
  if (!device.is_cuda()) return mode.on(device) == mode ? "" : "the CPU computes fp32";
  switch (mode.precision) {  // every precision answered: a new one is a compile error
    case MatmulPrecision::fp32:
    case MatmulPrecision::tf32:
      return str_cat(
          "the CUDA kernel multiplies bf16 operands on tensor cores, and the mode's "
          "precision is ",
          enum_name(mode.precision));
    case MatmulPrecision::bf16:
      break;
  }
  if (head_dim != 64) return str_cat("the CUDA kernel needs head_dim 64, got ", head_dim);
  return "";
}

Tensor fused_causal_attention(const Tensor& qkv, int64_t n_head, double dropout_p, bool training,
                              Generator& gen, const ComputeMode& mode) {
  const char* name = "fused_causal_attention";
  check_float(qkv, name, "qkv");
  BG_CHECK(qkv.ndim() == 3 && qkv.size(2) % 3 == 0, name, "qkv must be (B, T, 3C), got ",
           shape_str(qkv.shape()));
  const int64_t b = qkv.size(0), t = qkv.size(1), c = qkv.size(2) / 3;
  BG_CHECK(n_head > 0 && c % n_head == 0, name, "C = ", c, " is not divisible by n_head ", n_head);
  BG_CHECK(dropout_p >= 0.0 && dropout_p < 1.0, name, "dropout must be in [0, 1), got ", dropout_p);
  const int64_t d = c / n_head;
  const Device dev = qkv.device();
  const std::string unsupported = fused_attention_supports(mode, dev, d);
  BG_CHECK(unsupported.empty(), name, "cannot run in mode ", mode.str(), " on ", dev.str(), ": ",
           unsupported, " (the composed ops, model.attention: composed, run any mode)");
  const Tensor qc = compute_input(qkv);
  const DType cd = qc.dtype(), sd = stats_dtype(cd);
  Tensor y = empty({b, t, c}, cd, dev);
  Tensor lse = empty({b, n_head, t}, sd, dev);
  const AttentionDropout drop = attention_dropout(b * n_head, t, dropout_p, training, gen);
  const double scale = 1.0 / std::sqrt(double(d));
  BG_DISPATCH(dev, attention_forward, heads_view(y, 0, n_head, d), lse.kview(),
              heads_view(qc, 0, n_head, d), heads_view(qc, c, n_head, d),
              heads_view(qc, 2 * c, n_head, d), scale, drop, stream_for(dev));
  Tensor out = compute_output(y, qkv.dtype());
  const Tensor ys = y.detach(), qs = qc.detach(), lses = lse.detach();
  const DType dt = qkv.dtype();
  record(out, name, {qkv}, [=](const Tensor& g) {
    const Tensor gc = compute_output(compute_input(g), cd);  // the kernels read dy in qkv's dtype
    Tensor dqkv = empty({b, t, 3 * c}, cd, dev);
    Tensor delta = empty({b, n_head, t}, sd, dev);
    BG_DISPATCH(dev, attention_backward, heads_view(dqkv, 0, n_head, d),
                heads_view(dqkv, c, n_head, d), heads_view(dqkv, 2 * c, n_head, d), delta.kview(),
                heads_view(qs, 0, n_head, d), heads_view(qs, c, n_head, d),
                heads_view(qs, 2 * c, n_head, d), heads_view(ys, 0, n_head, d),
                heads_view(gc, 0, n_head, d), lses.kview(), scale, drop, stream_for(dev));
    return std::vector<Tensor>{compute_output(dqkv, dt)};
  });
  return out;
}

}  // namespace bg
