// test_gemm_table.cpp: the deterministic mode's GEMM algorithm table (kernels/cuda/
// gemm_algo_table.inc). A training step of the baby GPT recipe (configs/shakespeare_char.yaml's
// shapes) in train.deterministic, in each precision and attention it runs in, must take every
// GEMM algorithm from an exact row of the table: none from a nearest row and none from cuBLASLt's
// heuristic, whose choice depends on the GPU model. (scripts/gemm_algo_table.sh makes the rows
// for every shipped config; scripts/cross_gpu_determinism.sh shows the bits equal on an H100
// and an H200.)
#include "core/optim.h"
#include "harness.h"
#include "kernels/cuda/device_runtime.h"
#include "models/gpt.h"

namespace bg::test {
namespace {

// One deterministic step (forward, backward, AdamW) of configs/shakespeare_char.yaml's model at
// its batch of 64 x 256 tokens.
void baby_gpt_step(MatmulPrecision precision, bool fused) {
  const Device gpu = Device::cuda(0);
  Generator init(1337), data(1);
  GPTConfig cfg;
  cfg.vocab_size = 65;
  cfg.block_size = 256;
  cfg.n_layer = 6;
  cfg.n_head = 6;
  cfg.n_embd = 384;
  cfg.dropout = 0.2;
  cfg.fused_attention = fused;
  GPT model(cfg, init);
  model.set_compute_mode(ComputeMode::deterministic_mode(precision));
  FlatParameters params(model.named_parameters(), gpu);
  const Tensor ids =
      (rand({64, 257}, data, 0, 65, DType::f64).to(DType::i64)).to(gpu);  // floors to 0..64
  Generator dropout(7);
  model.loss(ids.slice(1, 0, 256).contiguous(), ids.slice(1, 1, 257).contiguous(), dropout)
      .backward();
  AdamW opt(params, AdamWConfig());
  opt.step(1e-3);
  synchronize(gpu);
}

}  // namespace

TEST_CASE(
    "cuda: the baby gpt's deterministic gemms all come from exact rows of the algorithm table") {
  BG_REQUIRE_CUDA();
  struct Case {
    const char* name;
    MatmulPrecision precision;
    bool fused;
  };
  for (const Case c : {Case{"bf16 fused", MatmulPrecision::bf16, true},
                       Case{"bf16 composed", MatmulPrecision::bf16, false},
                       Case{"fp32 composed", MatmulPrecision::fp32, false},
                       Case{"tf32 composed", MatmulPrecision::tf32, false}}) {
    CAPTURE(c.name);
    const cuda::GemmAlgoSources before = cuda::batch_invariant_algo_sources();
    baby_gpt_step(c.precision, c.fused);
    const cuda::GemmAlgoSources after = cuda::batch_invariant_algo_sources();
    CHECK(after.nearest_row == before.nearest_row);
    CHECK(after.heuristic == before.heuristic);
    MESSAGE(std::string(c.name) << ": " << after.table - before.table
                                << " new products from table rows");
  }
}

}  // namespace bg::test
