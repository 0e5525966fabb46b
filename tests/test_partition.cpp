// test_partition.cpp: partition invariance (issue 15). Every reduction's split must be a
// constant of the shape, never the SM count or the occupancy, so GPUs with different SM counts
// give the same bits. The test runs the same work on a CUDA green context of 16 SMs and on the
// whole GPU and compares every output bit for bit: a GPT training step in train.deterministic's
// mode (embedding, LayerNorm, pinned GEMMs, fused or composed attention, GELU, cross-entropy,
// and the whole backward), the optimizer step, wide-row norms with their fixed-chunk dweight
// partials, a reduction, and the SICK pass with its gradients.
#include "core/bide.h"
#include "core/optim.h"
#include "harness.h"
#include "kernels/cuda/device_runtime.h"
#include "models/gpt/gpt.h"

namespace bg::test {
namespace {

std::vector<float> host(const Tensor& t) {
  return t.detach().to(DType::f32).to(Device::cpu()).contiguous().to_vector<float>();
}

// One deterministic GPT step (loss, every gradient, AdamW) from fixed weights and data.
std::vector<std::vector<float>> gpt_step(MatmulPrecision precision, bool fused) {
  const Device gpu = Device::cuda(0);
  Generator init(5), data(6);
  GPTConfig cfg;
  cfg.vocab_size = 65;
  cfg.block_size = 64;
  cfg.n_layer = 2;
  cfg.n_head = 2;
  cfg.n_embd = 128;
  cfg.dropout = 0.1;
  cfg.fused_attention = fused;
  GPT model(cfg, init);
  model.set_compute_mode(ComputeMode::deterministic_mode(precision));
  FlatParameters params(model.named_parameters(), gpu);
  std::vector<int64_t> ids(16 * 65);
  const std::vector<double> u = rand({16 * 65}, data, 0, 65, DType::f64).to_vector<double>();
  for (size_t i = 0; i < ids.size(); ++i) ids[i] = int64_t(u[i]) % 65;
  const Tensor all = from_vector(ids, {16, 65}, gpu);
  Generator dropout(7);
  const Tensor loss = model.loss(all.slice(1, 0, 64), all.slice(1, 1, 65), dropout);
  loss.backward();
  std::vector<std::vector<float>> out{host(loss)};
  for (const auto& [name, p] : model.named_parameters()) out.push_back(host(p.grad()));
  AdamWConfig adamw;
  AdamW opt(params, adamw);
  opt.step(1e-3);
  for (const auto& [name, p] : model.named_parameters()) out.push_back(host(p));
  return out;
}

// Wide-row LayerNorm (block per row, dweight/dbias partials over fixed 32-row chunks), a sum
// over many rows, and the SICK pass with gradients at a batch whose slice count is N-dependent.
std::vector<std::vector<float>> kernels_step() {
  const Device gpu = Device::cuda(0);
  Generator gen(8);
  const Tensor x = randn({3000, 4096}, gen, 0, 1, DType::f32, gpu).requires_grad_(true);
  const Tensor w = randn({4096}, gen, 1, 0.1, DType::f32, gpu).requires_grad_(true);
  const Tensor b = randn({4096}, gen, 0, 0.1, DType::f32, gpu).requires_grad_(true);
  const Tensor dy = randn({3000, 4096}, gen, 0, 1, DType::f32, gpu);
  layernorm(x, w, b, 1e-5).backward(dy);
  std::vector<std::vector<float>> out{host(x.grad()), host(w.grad()), host(b.grad()),
                                      host(sum(x.detach() * dy, {0}))};
  for (bool invariant : {false, true}) {
    BideOptions opt;
    opt.code.bits = 16;
    opt.code.type = BideValueType::f16;
    opt.batch_invariant = invariant;
    const Tensor bw = (randn({100, 32, 16}, gen, 0, 0.05, DType::f32, gpu)).requires_grad_(true);
    const Tensor br = (randn({100, 32}, gen, 0, 0.2, DType::f32, gpu)).requires_grad_(true);
    std::vector<int64_t> y(100);
    for (size_t i = 0; i < y.size(); ++i) y[i] = int64_t(i * 577 % 30000);
    sum(bide_log_prob(bw, br, from_vector(y, {100}, gpu), opt)).backward();
    out.push_back(host(bw.grad()));
    out.push_back(host(br.grad()));
  }
  return out;
}

}  // namespace

TEST_CASE("cuda: a deterministic step and the reduction kernels give the same bits on 16 SMs") {
  BG_REQUIRE_CUDA();
  int granted = 0;
  std::string why;
  const StreamHandle few = cuda::stream_create_on_sms(16, &granted, &why);
  if (!few) return skip_case("no CUDA green context: " + why);
  const int all_sms = cuda::device_info(0).sm_count;
  MESSAGE("green context of " << granted << " SMs against the whole GPU's " << all_sms);
  REQUIRE(granted < all_sms);
  struct Run {
    const char* name;
    std::function<std::vector<std::vector<float>>()> fn;
  };
  for (const Run& run :
       {Run{"gpt fp32 composed", [] { return gpt_step(MatmulPrecision::fp32, false); }},
        Run{"gpt bf16 fused", [] { return gpt_step(MatmulPrecision::bf16, true); }},
        Run{"gpt tf32 composed", [] { return gpt_step(MatmulPrecision::tf32, false); }},
        Run{"norms, sum, sick", [] { return kernels_step(); }}}) {
    CAPTURE(run.name);
    const auto whole = run.fn();
    std::vector<std::vector<float>> part;
    {
      ScopedStream on_few(Device::cuda(0), few);
      part = run.fn();
    }
    REQUIRE(whole.size() == part.size());
    for (size_t i = 0; i < whole.size(); ++i) {
      CAPTURE(i);  // which output: the loss, then each gradient, then each parameter
      CHECK(whole[i] == part[i]);
    }
  }
}

// The same step under devices the code is told it runs on (cuda::simulate_device: SM count, SM
// clock, L2 size, which reports and every launch decision see, and under which the GEMM table's
// fallback and cuBLASLt's launch run): an H100 PCIe's 114 SMs, a whole GH100's 144, a cut-down
// 78-SM part, 16 SMs, and 16 simulated SMs on a 16-SM green context. Every output bit must equal
// the unsimulated step's: no result may follow the GPU model.
TEST_CASE("cuda: a deterministic bf16 step gives the same bits under simulated devices") {
  BG_REQUIRE_CUDA();
  struct Simulated {
    const char* name;
    cuda::SimulatedDevice device;
    bool on_16_sms;
  };
  const std::vector<Simulated> devices = {{"114 SMs, 1755 MHz, 50 MiB L2", {114, 1755, 50}, false},
                                          {"144 SMs, 1980 MHz, 60 MiB L2", {144, 1980, 60}, false},
                                          {"78 SMs, 1200 MHz, 40 MiB L2", {78, 1200, 40}, false},
                                          {"16 SMs", {16, 0, 0}, false},
                                          {"16 SMs on a 16-SM green context", {16, 0, 0}, true}};
  int granted = 0;
  std::string why;
  const StreamHandle few = cuda::stream_create_on_sms(16, &granted, &why);
  for (const auto& [name, fused] : {std::pair<const char*, bool>{"bf16 fused", true},
                                    std::pair<const char*, bool>{"bf16 composed", false}}) {
    CAPTURE(name);
    const auto real = gpt_step(MatmulPrecision::bf16, fused);
    for (const Simulated& sim : devices) {
      CAPTURE(sim.name);
      if (sim.on_16_sms && !few) {
        MESSAGE("skipped " << sim.name << ": no CUDA green context: " << why);
        continue;
      }
      cuda::simulate_device(sim.device);
      const cuda::DeviceInfo seen = cuda::device_info(0);
      CHECK(seen.simulated);
      CHECK(seen.sm_count == sim.device.sm_count);
      std::vector<std::vector<float>> out;
      if (sim.on_16_sms) {
        ScopedStream on_few(Device::cuda(0), few);
        out = gpt_step(MatmulPrecision::bf16, fused);
      } else {
        out = gpt_step(MatmulPrecision::bf16, fused);
      }
      cuda::simulate_device({});
      REQUIRE(out.size() == real.size());
      for (size_t i = 0; i < out.size(); ++i) {
        CAPTURE(i);  // the loss, then each gradient, then each parameter
        CHECK(out[i] == real[i]);
      }
    }
  }
  CHECK_FALSE(cuda::device_info(0).simulated);
}

}  // namespace bg::test
