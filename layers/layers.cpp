#include "layers.h"

#include <cmath>

namespace bg {

Linear::Linear(int64_t in, int64_t out, bool with_bias, Generator& gen, double init_std) {
  BG_CHECK(in > 0 && out > 0, "linear", "sizes must be positive, got in ", in, ", out ", out);
  weight = register_parameter("weight", randn({out, in}, gen, 0.0, init_std));
  if (with_bias) bias = register_parameter("bias", zeros({out}));
}

Embedding::Embedding(int64_t num, int64_t dim, Generator& gen, double init_std) {
  BG_CHECK(num > 0 && dim > 0, "embedding", "sizes must be positive, got ", num, " x ", dim);
  weight = register_parameter("weight", randn({num, dim}, gen, 0.0, init_std));
}

LayerNorm::LayerNorm(int64_t dim, bool with_bias, double eps) : eps_(eps) {
  weight = register_parameter("weight", ones({dim}));
  if (with_bias) bias = register_parameter("bias", zeros({dim}));
}

RMSNorm::RMSNorm(int64_t dim, double eps) : eps_(eps) {
  weight = register_parameter("weight", ones({dim}));
}

CausalSelfAttention::CausalSelfAttention(int64_t n_embd, int64_t n_head, bool bias, double dropout,
                                         Generator& init, double proj_std, bool fused)
    : n_embd_(n_embd), n_head_(n_head), dropout_(dropout), fused_(fused) {
  BG_CHECK(n_head > 0 && n_embd % n_head == 0, "attention", "n_embd ", n_embd,
           " is not divisible by n_head ", n_head);
  c_attn = register_module("c_attn", std::make_shared<Linear>(n_embd, 3 * n_embd, bias, init));
  c_proj =
      register_module("c_proj", std::make_shared<Linear>(n_embd, n_embd, bias, init, proj_std));
}

Tensor dropout_then_add(const Tensor& y, double p, bool training, Generator& gen,
                        const Tensor& residual) {
  return residual.defined() ? dropout_add(residual, y, p, training, gen)
                            : dropout(y, p, training, gen);
}

Tensor CausalSelfAttention::forward(const Tensor& x, Generator& gen, const Tensor& residual) const {
  const int64_t b = x.size(0), t = x.size(1), hd = n_embd_ / n_head_;
  if (fused_) {
    // qkv only feeds the attention kernel, which reads bf16 operands; its y (in qkv's dtype)
    // feeds c_proj the same way.
    const Tensor qkv = c_attn->forward_for_bf16_consumer(x);
    return dropout_then_add(
        c_proj->forward(fused_causal_attention(qkv, n_head_, dropout_, training(), gen)), dropout_,
        training(), gen, residual);
  }
  const auto qkv = split(c_attn->forward(x), {n_embd_, n_embd_, n_embd_}, 2);
  auto heads = [&](const Tensor& z) { return z.reshape({b, t, n_head_, hd}).transpose(1, 2); };
  const Tensor y =
      causal_self_attention(heads(qkv[0]), heads(qkv[1]), heads(qkv[2]), dropout_, training(), gen);
  return dropout_then_add(c_proj->forward(y.transpose(1, 2).reshape({b, t, n_embd_})), dropout_,
                          training(), gen, residual);
}

Tensor CausalSelfAttention::forward_cached(const Tensor& x, const Tensor& k_cache,
                                           const Tensor& v_cache, int64_t past) const {
  const int64_t b = x.size(0), t = x.size(1), hd = n_embd_ / n_head_, total = past + t;
  BG_CHECK(total <= k_cache.size(2), "attention", "cache holds ", k_cache.size(2),
           " positions, asked for ", total);
  const auto qkv = split(c_attn->forward(x), {n_embd_, n_embd_, n_embd_}, 2);
  auto heads = [&](const Tensor& z) { return z.reshape({b, t, n_head_, hd}).transpose(1, 2); };
  k_cache.slice(2, past, total).copy_(heads(qkv[1]));
  v_cache.slice(2, past, total).copy_(heads(qkv[2]));
  // Query i (position past + i) sees keys 0..past + i.
  const Tensor att =
      causal_softmax(matmul(heads(qkv[0]), k_cache.slice(2, 0, total).transpose(-2, -1)),
                     1.0 / std::sqrt(double(hd)));
  const Tensor y = matmul(att, v_cache.slice(2, 0, total));
  return c_proj->forward(y.transpose(1, 2).reshape({b, t, n_embd_}));
}

MLP::MLP(int64_t n_embd, bool bias, double dropout, Generator& init, double proj_std, GeluForm gelu)
    : dropout_(dropout), gelu_(gelu) {
  c_fc = register_module("c_fc", std::make_shared<Linear>(n_embd, 4 * n_embd, bias, init));
  c_proj =
      register_module("c_proj", std::make_shared<Linear>(4 * n_embd, n_embd, bias, init, proj_std));
}

Tensor MLP::forward(const Tensor& x, Generator& gen, const Tensor& residual) const {
  // GELU's input and output each feed one matmul: stored in the dtype those matmuls read.
  const Tensor h = c_fc->forward_for_bf16_consumer(x);
  const DType act_dtype = matmul_operand_dtype(h);
  const Tensor act = gelu_ == GeluForm::erf ? gelu_erf(h, act_dtype) : gelu(h, act_dtype);
  return dropout_then_add(c_proj->forward(act), dropout_, training(), gen, residual);
}

}  // namespace bg
