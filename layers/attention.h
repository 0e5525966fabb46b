// attention.h: multi-head causal self-attention with one fused QKV projection (nanoGPT's
// c_attn/c_proj), the projections built by the linear factory.
#pragma once
#include <memory>

#include "linear.h"

namespace bg {

class CausalSelfAttention : public Module {
 public:
  // fused: fused_causal_attention on the packed qkv (one kernel per pass), else the composed
  // matmul + causal_softmax + dropout + matmul. Both run in the module's compute mode; the
  // fused kernel refuses a mode it cannot honour (fused_attention_supports).
  CausalSelfAttention(int64_t n_embd, int64_t n_head, bool bias, double dropout, Generator& init,
                      double proj_std, bool fused = false, const LinearSpec& linear = LinearSpec());
  // (B, T, C) -> (B, T, C); with a residual, residual + that (the output dropout fused into the
  // add: same numbers, one pass fewer).
  Tensor forward(const Tensor& x, Generator& gen, const Tensor& residual = Tensor()) const;
  // Inference with a key/value cache: x (B, T, C) holds positions past..past+T-1; their keys
  // and values are written into k_cache/v_cache (B, H, capacity, D) and the queries attend to
  // positions 0..past+T-1. No dropout, no gradients.
  // Under a deterministic compute mode the queries' outputs are, bit for bit, the training
  // forward's at the same positions (sampler = trainer): the attention runs over the cache's
  // whole capacity (block_size, the length training runs), as the training forward does, with
  // the positions past the cache masked. A residual is added as forward adds it (in c_proj's
  // epilogue), so the residual stream's bits are training's too.
  Tensor forward_cached(const Tensor& x, const Tensor& k_cache, const Tensor& v_cache, int64_t past,
                        const Tensor& residual = Tensor()) const;
  std::shared_ptr<LinearLayer> c_attn, c_proj;

 private:
  Tensor forward_cached_as_trained(const Tensor& x, const Tensor& k_cache, const Tensor& v_cache,
                                   int64_t past, const Tensor& residual) const;
  // c_proj(y), plus the residual when one is given (no dropout: inference).
  Tensor project(const Tensor& y, const Tensor& residual) const;
  int64_t n_embd_, n_head_;
  double dropout_;
  bool fused_;
};

}  // namespace bg
