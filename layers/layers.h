// layers.h: the standard layers. Weights follow PyTorch's layouts and names (Linear.weight is
// (out, in)) so checkpoints map onto nanoGPT's state_dict.
#pragma once
#include "module.h"

namespace bg {

class Linear : public Module {
 public:
  Linear(int64_t in, int64_t out, bool bias, Generator& gen, double init_std = 0.02);
  Tensor forward(const Tensor& x) const { return linear(x, weight, bias); }
  // For an output whose consumer reads bf16 operands anyway (the attention kernel, GELU before a
  // bf16 matmul): without a bias, the product is stored in the dtype the matmul computes in
  // (bf16 under bf16 precision on CUDA); with one, the bias is added in f32 as usual.
  Tensor forward_for_bf16_consumer(const Tensor& x) const {
    return bias.defined() ? forward(x) : linear(x, weight, Tensor(), matmul_operand_dtype(weight));
  }
  Tensor weight, bias;
};

class Embedding : public Module {
 public:
  Embedding(int64_t num, int64_t dim, Generator& gen, double init_std = 0.02);
  Tensor forward(const Tensor& idx) const { return embedding(weight, idx); }
  Tensor weight;
};

class LayerNorm : public Module {
 public:
  LayerNorm(int64_t dim, bool bias, double eps = 1e-5);
  Tensor forward(const Tensor& x) const { return layernorm(x, weight, bias, eps_); }
  // For an output whose only consumer is a matmul: stored in the dtype that matmul reads
  // (bf16 under bf16 precision on CUDA), with no separate cast pass.
  Tensor forward_for_matmul(const Tensor& x) const {
    return layernorm(x, weight, bias, eps_, matmul_operand_dtype(x));
  }
  Tensor weight, bias;

 private:
  double eps_;
};

class RMSNorm : public Module {
 public:
  RMSNorm(int64_t dim, double eps = 1e-6);
  Tensor forward(const Tensor& x) const { return rmsnorm(x, weight, eps_); }
  Tensor weight;

 private:
  double eps_;
};

// Multi-head causal self-attention with one fused QKV projection (nanoGPT's c_attn/c_proj).
class CausalSelfAttention : public Module {
 public:
  CausalSelfAttention(int64_t n_embd, int64_t n_head, bool bias, double dropout, Generator& init,
                      double proj_std, bool fused = false);
  // (B, T, C) -> (B, T, C); with a residual, residual + that (the output dropout fused into the
  // add: same numbers, one pass fewer).
  Tensor forward(const Tensor& x, Generator& gen, const Tensor& residual = Tensor()) const;
  // Inference with a key/value cache: x (B, T, C) holds positions past..past+T-1; their keys
  // and values are written into k_cache/v_cache (B, H, capacity, D) and the queries attend to
  // positions 0..past+T-1. No dropout, no gradients.
  Tensor forward_cached(const Tensor& x, const Tensor& k_cache, const Tensor& v_cache,
                        int64_t past) const;
  std::shared_ptr<Linear> c_attn, c_proj;

 private:
  int64_t n_embd_, n_head_;
  double dropout_;
  bool fused_;  // fused_causal_attention on the packed qkv, else the composed ops
};

// dropout(y), or residual + dropout(y) in one pass when a residual is given.
Tensor dropout_then_add(const Tensor& y, double p, bool training, Generator& gen,
                        const Tensor& residual);

// GPT-2 and llm.c use the tanh approximation; nanoGPT's nn.GELU() is the exact erf form.
enum class GeluForm { tanh, erf };

// Linear(4C) -> GELU -> Linear(C) -> dropout.
class MLP : public Module {
 public:
  MLP(int64_t n_embd, bool bias, double dropout, Generator& init, double proj_std,
      GeluForm gelu = GeluForm::tanh);
  Tensor forward(const Tensor& x, Generator& gen, const Tensor& residual = Tensor()) const;
  std::shared_ptr<Linear> c_fc, c_proj;

 private:
  double dropout_;
  GeluForm gelu_;
};

}  // namespace bg
