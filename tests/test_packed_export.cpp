// test_packed_export.cpp: the packed inference file of a BitLinear GPT (models/gpt/gpt_packed.h).
// A model rebuilt from it gives the latent model's logits bit for bit (full forward and the
// KV-cached sampler, with and without a BitLinear LM head, on the CPU and CUDA), stores no
// latent weights, and a bad file (missing array, wrong shape, wrong scale count, a bad scale, an
// unused code) is refused in one line.
#include <unistd.h>

#include <cstring>
#include <functional>

#include "core/checkpoint.h"
#include "core/optim.h"
#include "harness.h"
#include "models/gpt/gpt_packed.h"

namespace bg::test {
namespace {

std::string tmp_file(const std::string& name) {
  return scratch_path("packed_" + name);
}

GPTConfig tiny_config(bool lm_head) {
  GPTConfig cfg;
  cfg.vocab_size = 13;
  cfg.block_size = 16;
  cfg.n_layer = 2;
  cfg.n_head = 2;
  cfg.n_embd = 40;
  cfg.bias = true;
  cfg.linear.kind = LinearKind::bitlinear;
  cfg.head = lm_head ? HeadKind::bitlinear : HeadKind::softmax;
  cfg.fused_attention = false;
  return cfg;
}

// The packed file's datasets, one of them changed by `edit` (name -> tensor; undefined drops it).
void write_edited(const std::string& from, const std::string& to,
                  const std::function<Tensor(const std::string&, const Tensor&)>& edit) {
  const CheckpointReader ck(from);
  CheckpointWriter out(to);
  for (const std::string& name : ck.datasets()) {
    const bool codes = name.find("weight_packed") != std::string::npos;
    const Tensor t = edit(name, ck.tensor(name, codes ? DType::u8 : DType::f32));
    if (t.defined()) out.tensor(name, t);
  }
  out.commit();
}

std::vector<float> floats(const Tensor& t) {
  return t.to(Device::cpu()).to(DType::f32).contiguous().to_vector<float>();
}

}  // namespace

TEST_CASE("a gpt from its packed file gives the latent model's logits bit for bit in every mode") {
  for (Device device : {Device::cpu(), Device::cuda(0)}) {
    if (device.is_cuda() && !cuda_available()) continue;
    ComputeMode lmul_attention;  // L-Mul in attention's products; the BitLinear layers exact
    lmul_attention.algo = MatmulAlgo::lmul;
    lmul_attention.lmul_mantissa_bits = 7;
    lmul_attention.lmul_scope = LmulScope::attention;
    for (const ComputeMode& base :
         {ComputeMode(), ComputeMode::deterministic_mode(), lmul_attention})
      for (bool lm_head : {false, true}) {
        CAPTURE(lm_head);
        const std::string mode_text = base.str();
        CAPTURE(mode_text);
        const GPTConfig cfg = tiny_config(lm_head);
        Generator init(5);
        GPT latent(cfg, init);
        const ComputeMode mode = base.on(device);
        latent.set_compute_mode(mode);
        latent.train(false);
        const std::string path = tmp_file("packed.h5");
        {
          CheckpointWriter ck(path);
          const PackedSizes sizes = save_packed_gpt(latent, ck);
          CHECK(sizes.matrices == 2 * 4 + (lm_head ? 1 : 0));
          CHECK(sizes.code_bytes * 8 == sizes.fp16_bytes);  // 40 and 160 inputs: whole bytes
          ck.commit();
        }
        const CheckpointReader ck(path);
        CHECK(!ck.has("transformer.h.0.attn.c_attn.weight"));  // no latent weights stored
        CHECK(ck.has("transformer.h.0.attn.c_attn.weight_packed"));
        CHECK(ck.has("transformer.h.0.attn.c_attn.bias"));
        CHECK(ck.has("lm_head.weight_packed") == lm_head);
        Generator other(99);  // different initial values: everything must come from the file
        GPT packed(cfg, other);
        packed.set_compute_mode(mode);
        load_packed_weights(packed, ck, device);
        const auto named = packed.named_parameters();
        CHECK(named.size() + 2 * 4 == latent.named_parameters().size());
        load_parameters(ck, named);
        FlatParameters on_device(named, device), latent_params(latent.named_parameters(), device);
        packed.train(false);
        NoGradGuard no_grad;
        Generator unused;
        std::vector<int64_t> ids(3 * 16);
        for (size_t i = 0; i < ids.size(); ++i) ids[i] = int64_t((i * 5 + i / 3) % 13);
        const Tensor idx = from_vector(ids, {3, 16}, device);
        const std::vector<float> want = floats(latent.forward(idx, unused));
        CHECK(std::memcmp(floats(packed.forward(idx, unused)).data(), want.data(),
                          want.size() * 4) == 0);
        KVCache ca = latent.new_cache(3, device), cb = packed.new_cache(3, device);
        for (int64_t t = 0; t < 16; t += 5) {
          const Tensor step = idx.slice(1, t, std::min<int64_t>(t + 5, 16)).contiguous();
          CHECK(floats(packed.forward_cached(step, cb)) == floats(latent.forward_cached(step, ca)));
        }
        std::remove(path.c_str());
      }
  }
}

TEST_CASE("cpu: a bad packed file is refused in one line") {
  const GPTConfig cfg = tiny_config(false);
  Generator init(6);
  GPT latent(cfg, init);
  const std::string good = tmp_file("good.h5"), bad = tmp_file("bad.h5");
  {
    CheckpointWriter ck(good);
    save_packed_gpt(latent, ck);
    ck.commit();
  }
  const std::string layer = "transformer.h.1.mlp.c_fc";
  auto refused = [&](const std::function<Tensor(const std::string&, const Tensor&)>& edit,
                     const std::string& message) {
    write_edited(good, bad, edit);
    GPT model(cfg, init);
    const CheckpointReader ck(bad);
    CHECK_THROWS_WITH(load_packed_weights(model, ck, Device::cpu()),
                      doctest::Contains(message.c_str()));
  };
  refused([&](const std::string& n,
              const Tensor& t) { return n == layer + ".weight_packed" ? Tensor() : t; },
          "missing tensor '" + layer + ".weight_packed'");
  refused(
      [&](const std::string& n, const Tensor& t) {
        return n == layer + ".weight_packed" ? t.slice(1, 0, 5).contiguous() : t;
      },
      "tensor '" + layer + ".weight_packed' has shape (160, 5), expected (160, 10)");
  refused([&](const std::string& n,
              const Tensor& t) { return n == layer + ".weight_scale" ? ones({3}) : t; },
          "'" + layer + ".weight_scale' holds 3 values, expected 1");
  refused([&](const std::string& n,
              const Tensor& t) { return n == layer + ".weight_scale" ? zeros({1}) : t; },
          "'" + layer + ".weight_scale' is 0, expected a positive scale");
  refused(
      [&](const std::string& n, const Tensor& t) {
        if (n != layer + ".weight_packed") return t;
        Tensor c = t.clone();
        std::vector<uint8_t> v = c.to_vector<uint8_t>();
        v[23] = 0xFF;
        return from_vector(v, t.shape());
      },
      "holds code 3, which no ternary weight has (row 2, byte 3)");
  // A dense model has nothing to pack.
  GPTConfig dense = cfg;
  dense.linear.kind = LinearKind::dense;
  GPT dense_model(dense, init);
  CheckpointWriter ck(bad);
  CHECK_THROWS_WITH(save_packed_gpt(dense_model, ck), doctest::Contains("no BitLinear layers"));
  std::remove(good.c_str());
  std::remove(bad.c_str());
}

}  // namespace bg::test
