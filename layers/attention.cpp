#include "attention.h"

#include <cmath>

#include "residual.h"

namespace bg {

CausalSelfAttention::CausalSelfAttention(int64_t n_embd, int64_t n_head, bool bias, double dropout,
                                         Generator& init, double proj_std, bool fused,
                                         const LinearSpec& linear)
    : n_embd_(n_embd), n_head_(n_head), dropout_(dropout), fused_(fused) {
  BG_CHECK(n_head > 0 && n_embd % n_head == 0, "attention", "n_embd ", n_embd,
           " is not divisible by n_head ", n_head);
  c_attn = register_module(
      "c_attn", make_linear(linear, n_embd, 3 * n_embd, bias, init, 0.02, MatmulSite::projection));
  c_proj = register_module(
      "c_proj", make_linear(linear, n_embd, n_embd, bias, init, proj_std, MatmulSite::projection));
}

Tensor CausalSelfAttention::forward(const Tensor& x, Generator& gen, const Tensor& residual) const {
  const int64_t b = x.size(0), t = x.size(1), hd = n_embd_ / n_head_;
  if (fused_) {
    // qkv only feeds the attention kernel, which reads bf16 operands; its y (in qkv's dtype)
    // feeds c_proj the same way.
    const Tensor qkv = c_attn->forward(x, Consumer::matmul);
    const Tensor y = fused_causal_attention(qkv, n_head_, dropout_, training(), gen,
                                            compute_mode().at(MatmulSite::attention));
    return project_then_add(*c_proj, y, dropout_, training(), gen, residual);
  }
  const auto qkv = split(c_attn->forward(x), {n_embd_, n_embd_, n_embd_}, 2);
  auto heads = [&](const Tensor& z) { return z.reshape({b, t, n_head_, hd}).transpose(1, 2); };
  const Tensor y = causal_self_attention(heads(qkv[0]), heads(qkv[1]), heads(qkv[2]), dropout_,
                                         training(), gen, compute_mode().at(MatmulSite::attention));
  return project_then_add(*c_proj, y.transpose(1, 2).reshape({b, t, n_embd_}), dropout_, training(),
                          gen, residual);
}

Tensor CausalSelfAttention::project(const Tensor& y, const Tensor& residual) const {
  return residual.defined() ? c_proj->forward_onto(y, residual) : c_proj->forward(y);
}

Tensor CausalSelfAttention::forward_cached(const Tensor& x, const Tensor& k_cache,
                                           const Tensor& v_cache, int64_t past,
                                           const Tensor& residual) const {
  const int64_t b = x.size(0), t = x.size(1), hd = n_embd_ / n_head_, total = past + t;
  BG_CHECK(total <= k_cache.size(2), "attention", "cache holds ", k_cache.size(2),
           " positions, asked for ", total);
  if (compute_mode().deterministic)
    return forward_cached_as_trained(x, k_cache, v_cache, past, residual);
  const auto qkv = split(c_attn->forward(x), {n_embd_, n_embd_, n_embd_}, 2);
  auto heads = [&](const Tensor& z) { return z.reshape({b, t, n_head_, hd}).transpose(1, 2); };
  k_cache.slice(2, past, total).copy_(heads(qkv[1]));
  v_cache.slice(2, past, total).copy_(heads(qkv[2]));
  // Query i (position past + i) sees keys 0..past + i.
  const Tensor att =
      causal_softmax(matmul(heads(qkv[0]), k_cache.slice(2, 0, total).transpose(-2, -1),
                            compute_mode().at(MatmulSite::attention)),
                     1.0 / std::sqrt(double(hd)));
  const Tensor y =
      matmul(att, v_cache.slice(2, 0, total), compute_mode().at(MatmulSite::attention));
  return project(y.transpose(1, 2).reshape({b, t, n_embd_}), residual);
}

// The training forward's arithmetic for the new positions. Every product sees the shapes and
// layouts training gives it (the batch-invariant matmul keys its algorithm on them; only M, the
// query count, differs, which it never depends on): scores against all `capacity` keys, the
// causal mask placing the queries at past.., probabilities times all `capacity` values. Keys
// and values past the cache are finite (zeros or an earlier window's) and masked, as training's
// later positions are. The fused kernel runs on the training layout too: a (B, capacity, 3C)
// qkv with the queries in their rows.
Tensor CausalSelfAttention::forward_cached_as_trained(const Tensor& x, const Tensor& k_cache,
                                                      const Tensor& v_cache, int64_t past,
                                                      const Tensor& residual) const {
  const int64_t b = x.size(0), t = x.size(1), hd = n_embd_ / n_head_, total = past + t,
                capacity = k_cache.size(2), c = n_embd_;
  auto heads = [&](const Tensor& z) { return z.reshape({b, t, n_head_, hd}).transpose(1, 2); };
  auto rows = [&](const Tensor& cache) {  // (B, H, capacity, D) -> (B, capacity, C)
    return cache.transpose(1, 2).reshape({b, capacity, c});
  };
  if (fused_) {
    const Tensor qkv = c_attn->forward(x, Consumer::matmul);
    k_cache.slice(2, past, total).copy_(heads(qkv.slice(2, c, 2 * c)));
    v_cache.slice(2, past, total).copy_(heads(qkv.slice(2, 2 * c, 3 * c)));
    const Tensor full = zeros({b, capacity, 3 * c}, qkv.dtype(), x.device());
    full.slice(1, past, total).slice(2, 0, c).copy_(qkv.slice(2, 0, c));
    full.slice(2, c, 2 * c).copy_(rows(k_cache));
    full.slice(2, 2 * c, 3 * c).copy_(rows(v_cache));
    Generator unused;
    const Tensor y = fused_causal_attention(full, n_head_, 0.0, false, unused,
                                            compute_mode().at(MatmulSite::attention));
    return project(y.slice(1, past, total), residual);
  }
  const auto qkv = split(c_attn->forward(x), {c, c, c}, 2);
  k_cache.slice(2, past, total).copy_(heads(qkv[1]));
  v_cache.slice(2, past, total).copy_(heads(qkv[2]));
  // Training's product sees k^T as a contiguous (D, T) matrix (its k is a strided view).
  const Tensor scores = matmul(heads(qkv[0]), k_cache.transpose(-2, -1).contiguous(),
                               compute_mode().at(MatmulSite::attention));
  const Tensor att = causal_softmax(scores, 1.0 / std::sqrt(double(hd)), past);
  const Tensor y = matmul(att, v_cache, compute_mode().at(MatmulSite::attention));
  return project(y.transpose(1, 2).reshape({b, t, n_embd_}), residual);
}

}  // namespace bg
