// test_cross_backend.cpp: can the CPU replay a GPU fp32 deterministic run bit for bit? Every op
// of a GPT step in train.deterministic's fp32 mode, run on the CPU and on CUDA from the same
// inputs, compared element by element. The ops built to give the CPU's bits (IEEE add and
// multiply, gathers, the naive product's fixed fused multiply-add chain, counter-based dropout)
// must; for the others the case reports how many elements agree and by how many units in the
// last place the rest differ: the evidence of which operations stop a replay
// (docs/determinism.md, "CPU and GPU").
#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <sstream>

#include "core/optim.h"
#include "harness.h"

namespace bg::test {
namespace {

struct BitAgreement {
  int64_t equal = 0, total = 0;
  int64_t max_ulps = 0;
};

// The float's place on one integer line (negatives mirrored), so ulps are differences.
int64_t ordered_bits(float x) {
  int32_t i;
  std::memcpy(&i, &x, sizeof(i));
  return i < 0 ? int64_t(std::numeric_limits<int32_t>::min()) - i : i;
}

BitAgreement agreement(const Tensor& cpu, const Tensor& gpu) {
  const std::vector<float> a = cpu.detach().contiguous().to_vector<float>();
  const std::vector<float> b = gpu.detach().to(Device::cpu()).contiguous().to_vector<float>();
  REQUIRE(a.size() == b.size());
  BitAgreement r;
  r.total = int64_t(a.size());
  for (size_t i = 0; i < a.size(); ++i) {
    const int64_t ulps = std::llabs(ordered_bits(a[i]) - ordered_bits(b[i]));
    r.equal += ulps == 0;
    r.max_ulps = std::max(r.max_ulps, ulps);
  }
  return r;
}

// One op on both backends from the same inputs: its output and each input's gradient under a
// fixed upstream gradient.
struct Compared {
  std::string name;
  std::vector<BitAgreement> parts;  // the output, then each input's gradient
  double rel = 0;                   // relative L2 error of the output
};

Compared compare_op(const std::string& name, const std::vector<Tensor>& inputs_cpu,
                    const std::function<Tensor(const std::vector<Tensor>&, Device)>& fn,
                    bool with_backward = true) {
  std::vector<Tensor> outs, grads[2];
  for (int d = 0; d < 2; ++d) {
    const Device dev = d ? Device::cuda(0) : Device::cpu();
    std::vector<Tensor> in;
    for (const Tensor& t : inputs_cpu) {
      Tensor x = t.to(dev);
      if (with_backward && t.dtype() == DType::f32) x = x.detach().requires_grad_(true);
      in.push_back(x);
    }
    const Tensor y = fn(in, dev);
    outs.push_back(y);
    if (with_backward) {
      Generator g(99);
      const Tensor dy = randn(y.shape(), g, 0, 1, DType::f32).to(dev);
      y.backward(dy);
      for (const Tensor& x : in)
        if (x.requires_grad()) grads[d].push_back(x.grad());
    }
  }
  Compared c{name, {agreement(outs[0], outs[1])}, rel_err(outs[1].to(Device::cpu()), outs[0])};
  for (size_t i = 0; i < grads[0].size(); ++i)
    c.parts.push_back(agreement(grads[0][i], grads[1][i]));
  return c;
}

std::string report(const Compared& c) {
  std::ostringstream s;
  s << c.name << ":";
  const char* part_names[] = {" out", " d0", " d1", " d2", " d3"};
  for (size_t i = 0; i < c.parts.size() && i < 5; ++i)
    s << part_names[i] << " " << c.parts[i].equal << "/" << c.parts[i].total << " equal (max "
      << c.parts[i].max_ulps << " ulp)";
  return s.str();
}

bool all_equal(const Compared& c) {
  for (const BitAgreement& p : c.parts)
    if (p.equal != p.total) return false;
  return true;
}

}  // namespace

TEST_CASE("cuda: which fp32 deterministic ops give the CPU's bits (the CPU replaying a GPU run)") {
  BG_REQUIRE_CUDA();
  const ComputeMode mode = ComputeMode::deterministic_mode(MatmulPrecision::fp32);
  ComputeMode naive;
  naive.algo = MatmulAlgo::naive;
  Generator gen(2026);
  const int64_t rows = 512, c = 384, vocab = 65;
  const Tensor x = randn({rows, c}, gen), w = randn({3 * c, c}, gen, 0, 0.05),
               bias = randn({3 * c}, gen, 0, 0.1), ln_w = randn({c}, gen, 1, 0.1),
               ln_b = randn({c}, gen, 0, 0.1), logits = randn({rows, vocab}, gen, 0, 2),
               table = randn({vocab, c}, gen), qkv = randn({4, 64, 3 * c}, gen, 0, 1);
  std::vector<int64_t> target_ids(rows);
  for (int64_t i = 0; i < rows; ++i) target_ids[size_t(i)] = (i * 37) % vocab;
  const Tensor targets = from_vector(target_ids, {rows}, Device::cpu());

  // Built to give the CPU's bits: must.
  for (const Compared& op :
       {compare_op("add", {x, x * 0.5}, [](auto&in, Device) { return in[0] + in[1]; }),
        compare_op("mul", {x, x * 0.5}, [](auto&in, Device) { return in[0] * in[1]; }),
        compare_op("matmul naive (the fixed fma chain)", {x, w},
                   [&](auto&in, Device) { return matmul(in[0], in[1].transpose(0, 1), naive); }),
        compare_op("embedding", {table},
                   [&](auto&in, Device dev) { return embedding(in[0], targets.to(dev)); })}) {
    MESSAGE(report(op));
    CAPTURE(op.name);
    CHECK(all_equal(op));
  }

  // The rest of a GPT step: reported, and close as fp32 results must be whatever their bits.
  auto split_heads = [&](const Tensor& t, int part) {
    return t.slice(2, part * c, (part + 1) * c).reshape({4, 64, 6, 64}).transpose(1, 2);
  };
  const std::vector<std::pair<std::string, std::function<Compared()>>> measured = {
      {"linear",
       [&] {
         return compare_op("linear, deterministic fp32 (cuBLASLt vs the chain)", {x, w, bias},
                           [&](auto& in, Device) { return linear(in[0], in[1], in[2], mode); });
       }},
      {"layernorm",
       [&] {
         return compare_op("layernorm", {x, ln_w, ln_b},
                           [](auto& in, Device) { return layernorm(in[0], in[1], in[2], 1e-5); });
       }},
      {"gelu",
       [&] {
         return compare_op("gelu (tanh)", {x}, [](auto& in, Device) { return gelu(in[0]); });
       }},
      {"exp", [&] { return compare_op("exp", {x}, [](auto& in, Device) { return exp(in[0]); }); }},
      {"tanh",
       [&] { return compare_op("tanh", {x}, [](auto& in, Device) { return tanh(in[0]); }); }},
      {"softmax",
       [&] {
         return compare_op("softmax", {logits},
                           [](auto& in, Device) { return softmax(in[0], -1); });
       }},
      {"cross_entropy",
       [&] {
         return compare_op("cross_entropy", {logits}, [&](auto& in, Device dev) {
           return cross_entropy(in[0], targets.to(dev));
         });
       }},
      {"attention",
       [&] {
         return compare_op(
             "causal attention, composed (4 x 6 heads, T 64, D 64)", {qkv}, [&](auto& in, Device) {
               Generator none(1);
               return causal_self_attention(split_heads(in[0], 0), split_heads(in[0], 1),
                                            split_heads(in[0], 2), 0.0, false, none, mode);
             });
       }},
      {"adamw", [&] {
         // One step of the same parameters and gradients on both devices.
         std::vector<float> values[2];
         const std::vector<float> g = randn({3 * c * c}, gen).to_vector<float>();
         for (int d = 0; d < 2; ++d) {
           FlatParameters p({{"w", w.clone()}}, d ? Device::cuda(0) : Device::cpu());
           p.grads().copy_(from_vector(g, {int64_t(g.size())}).to(p.grads().device()));
           AdamW opt(p, AdamWConfig());
           opt.step(6e-4);
           values[d] = p.values().to(Device::cpu()).to_vector<float>();
         }
         const int64_t n = int64_t(values[0].size());
         const Tensor cpu = from_vector(values[0], {n}), gpu = from_vector(values[1], {n});
         return Compared{"adamw step", {agreement(cpu, gpu)}, rel_err(gpu, cpu)};
       }}};
  int64_t replayable = 0;
  for (const auto& [name, run] : measured) {
    CAPTURE(name);
    const Compared op = run();
    MESSAGE(report(op) << std::string(all_equal(op) ? "  -> the CPU's bits" : "  -> differs"));
    CHECK(op.rel < 1e-5);
    replayable += all_equal(op);
  }
  MESSAGE(replayable << " of " << measured.size() << " measured ops give the CPU's bits");
}

}  // namespace bg::test
