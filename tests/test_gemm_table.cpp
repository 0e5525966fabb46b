// test_gemm_table.cpp: the deterministic mode's GEMM algorithm table (kernels/cuda/
// gemm_algo_table.inc). A training step of the baby GPT recipe (configs/shakespeare_char.yaml's
// shapes) in train.deterministic, in each precision and attention it runs in, must take every
// GEMM algorithm from an exact row of the table: none from a nearest row and none from cuBLASLt's
// heuristic, whose choice depends on the GPU model. (scripts/gemm_algo_table.sh makes the rows
// for every shipped config; scripts/cross_gpu_determinism.sh shows the bits equal on an H100
// and an H200.)
#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "core/optim.h"
#include "harness.h"
#include "kernels/cuda/device_runtime.h"
#include "models/gpt/gpt.h"

namespace bg::test {
namespace {

// One deterministic step (forward, backward, AdamW) of configs/shakespeare_char.yaml's model at
// its batch of 64 x 256 tokens; the parameters after it.
std::vector<std::vector<float>> baby_gpt_step(MatmulPrecision precision, bool fused) {
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
  std::vector<std::vector<float>> out;
  for (const auto& [name, p] : model.named_parameters())
    out.push_back(p.detach().to(Device::cpu()).contiguous().to_vector<float>());
  return out;
}

// Sets an environment variable for a scope, restoring what was there.
class ScopedEnv {
 public:
  ScopedEnv(const char* name, const std::string& value) : name_(name) {
    const char* old = std::getenv(name);
    had_ = old != nullptr;
    if (had_) old_ = old;
    setenv(name, value.c_str(), 1);
  }
  ~ScopedEnv() {
    if (had_)
      setenv(name_, old_.c_str(), 1);
    else
      unsetenv(name_);
  }
  ScopedEnv(const ScopedEnv&) = delete;
  ScopedEnv& operator=(const ScopedEnv&) = delete;

 private:
  const char* name_;
  bool had_ = false;
  std::string old_;
};

// The lines BITGRAD_GEMM_ALGO_LOG got for one step: each product's key, configuration and source.
std::vector<std::string> logged_choices(const std::string& path) {
  std::vector<std::string> lines;
  std::ifstream in(path);
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
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

// The control for the simulated-device test (test_partition.cpp): the simulation must reach
// what can follow the device. With the table off, cuBLASLt's heuristic chooses the baby GPT's
// bf16 algorithms for 16 simulated SMs differently from 132 (the weight gradients' split of K
// above all): the dependence the table removes, shown on one GPU.
TEST_CASE(
    "cuda: a simulated device changes the heuristic's choice that the algorithm table fixes") {
  BG_REQUIRE_CUDA();
  const std::string log =
      scratch_path("gemm_algo_control.log");
  ScopedEnv no_table("BITGRAD_GEMM_TABLE", "0");
  ScopedEnv logged("BITGRAD_GEMM_ALGO_LOG", log);
  std::vector<std::vector<std::string>> choices;
  std::vector<std::vector<std::vector<float>>> params;
  for (int sms : {132, 16}) {
    std::filesystem::remove(log);
    cuda::simulate_device({sms, 0, 0});
    params.push_back(baby_gpt_step(MatmulPrecision::bf16, false));
    cuda::simulate_device({});
    choices.push_back(logged_choices(log));
    CAPTURE(sms);
    CHECK(!choices.back().empty());  // every product came from the heuristic and was logged
  }
  std::filesystem::remove(log);
  REQUIRE(choices[0].size() == choices[1].size());
  int64_t differ = 0;
  for (size_t i = 0; i < choices[0].size(); ++i) differ += choices[0][i] != choices[1][i];
  MESSAGE(differ << " of " << choices[0].size()
                 << " products chose another algorithm for 16 SMs; parameters "
                 << std::string(params[0] == params[1] ? "equal" : "differ") << " after the step");
  CHECK(differ > 0);
}

}  // namespace bg::test
