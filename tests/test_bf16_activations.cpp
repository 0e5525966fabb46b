// test_bf16_activations.cpp: train.activations: bf16, the GPT's residual stream in bf16. The
// mode's key, checkpoint attribute and comparison; the LayerNorm of a bf16 input with f32
// parameters (their gradients f32, the pending residual gradient folded in bf16) on the CPU and
// against it on CUDA; a GPT whose stream is bf16 tracks the f32 stream and repeats bit for bit.
#include <cstring>
#include <filesystem>

#include "core/checkpoint.h"
#include "core/config.h"
#include "data/text.h"
#include "data/tokenizer.h"
#include "gpt_train_loop.h"
#include "models/forecast/forecaster.h"
#include "harness.h"

namespace bg::test {
namespace {

ComputeMode bf16_stream() {
  ComputeMode m = precision_mode(MatmulPrecision::bf16);
  m.activations = ActivationDtype::bf16;
  return m;
}

}  // namespace

TEST_CASE("cpu: train.activations is read, checked, saved, loaded and compared") {
  ConfigReader r("", {"train.precision=bf16", "train.activations=bf16"});
  const ComputeMode m = read_compute_mode(r);
  r.finish();
  CHECK(m == bf16_stream());
  CHECK(m.str() == "bf16 bf16-activations");
  ConfigReader fp32("", {"train.activations=bf16"});
  CHECK_THROWS_WITH((read_compute_mode(fp32), fp32.finish()),
                    doctest::Contains("train.activations: bf16 activations are the operands of "
                                      "bf16 matmuls; set train.precision: bf16"));
  ConfigReader bad("", {"train.precision=bf16", "train.activations=f16"});
  CHECK_THROWS_WITH((read_compute_mode(bad), bad.finish()),
                    doctest::Contains("'f16' is not one of: fp32, bf16"));
  // The CPU computes fp32: the stream stays f32 there, and nothing narrows.
  CHECK(m.on(Device::cpu()) == ComputeMode());
  CHECK(activation_dtype(m, Device::cpu()) == DType::f32);
  CHECK(stored_dtype(m, Consumer::any, DType::f32, Device::cpu()) == DType::f32);
  CHECK(activation_dtype(m, Device::cuda(0)) == DType::bf16);
  CHECK(stored_dtype(m, Consumer::any, DType::f32, Device::cuda(0)) == DType::bf16);
  CHECK(stored_dtype(precision_mode(MatmulPrecision::bf16), Consumer::any, DType::f32,
                     Device::cuda(0)) == DType::f32);
  ComputeMode plain = m;
  plain.activations = ActivationDtype::fp32;
  CHECK(compute_mode_difference(plain, m) == "train.activations: fp32 vs bf16");
  CHECK(inference_mode(m) == ComputeMode());  // sample and eval run fp32 unless deterministic
  ComputeMode det = ComputeMode::deterministic_mode(MatmulPrecision::bf16);
  det.activations = ActivationDtype::bf16;
  CHECK(inference_mode(det) == det);  // sampler = trainer
  const std::string dir = scratch_path("act_mode");
  std::filesystem::create_directories(dir);
  {
    CheckpointWriter ck(dir + "/mode.h5");
    save_compute_mode(ck, det);
    ck.commit();
  }
  CHECK(load_compute_mode(CheckpointReader(dir + "/mode.h5"), "mode.h5") == det);
  {  // bf16 activations with fp32 precision cannot have run
    CheckpointWriter ck(dir + "/bad.h5");
    save_compute_mode(ck, ComputeMode());
    ck.attr("compute_activations", std::string("bf16"));
    ck.commit();
  }
  CHECK_THROWS_WITH(load_compute_mode(CheckpointReader(dir + "/bad.h5"), "bad.h5"),
                    doctest::Contains("the recorded mode's train.activations: bf16 activations are the operands of bf16 matmuls"));
  std::filesystem::remove_all(dir);
}

TEST_CASE("cpu: one rule says which models bf16 activations run") {
  const ComputeMode m = bf16_stream();
  GPTConfig dense;
  CHECK(activations_problem(m, &dense).empty());
  CHECK(activations_problem(ComputeMode(), nullptr).empty());
  CHECK(activations_problem(m, nullptr) ==
        "bf16 activations are a transformer trunk's (model.type: gpt or forecaster)");
  ForecasterConfig forecaster;
  CHECK(trunk_activations_problem(m, forecaster).empty());
  forecaster.linear.kind = LinearKind::bitlinear;
  CHECK(trunk_activations_problem(m, forecaster).find("model.linear: bitlinear") !=
        std::string::npos);
  GPTConfig bitlinear = dense;
  bitlinear.linear.kind = LinearKind::bitlinear;
  CHECK(activations_problem(m, &bitlinear).find("model.linear: bitlinear") != std::string::npos);
  GPTConfig bide = dense;
  bide.head = HeadKind::bide;
  CHECK(activations_problem(m, &bide).find("model.head: bide") != std::string::npos);
}

TEST_CASE("cpu: a bf16 input's layernorm takes f32 parameters and keeps their gradients f32") {
  Generator gen(51);
  const Tensor x32 = randn({6, 37}, gen, 0, 1, DType::f32).to(DType::bf16).to(DType::f32);
  const Tensor w0 = randn({37}, gen, 1, 0.2), b0 = randn({37}, gen, 0, 0.2);
  const Tensor up = randn({6, 37}, gen, 0, 1).to(DType::bf16);
  // The f32 reference on the same (bf16-exact) values; the CPU computes a bf16 input in f32, so
  // the outputs and gradients are the reference's rounded to their dtypes.
  std::vector<Tensor> got, want;
  for (int narrow = 0; narrow < 2; ++narrow) {
    const Tensor x = (narrow ? x32.to(DType::bf16) : x32).detach().requires_grad_(true);
    const Tensor w = w0.detach().requires_grad_(true), b = b0.detach().requires_grad_(true);
    const Tensor y = layernorm(x, w, b, 1e-5);
    CHECK(y.dtype() == x.dtype());
    y.backward(narrow ? up : up.to(DType::f32));
    CHECK(w.grad().dtype() == DType::f32);
    CHECK(b.grad().dtype() == DType::f32);
    CHECK(x.grad().dtype() == x.dtype());
    (narrow ? got : want) = {y, x.grad(), w.grad(), b.grad()};
  }
  CHECK(bit_mismatches(got[0], want[0].to(DType::bf16)) == 0);
  CHECK(bit_mismatches(got[1], want[1].to(DType::bf16)) == 0);
  CHECK(bit_mismatches(got[2], want[2]) == 0);
  CHECK(bit_mismatches(got[3], want[3]) == 0);
  // Parameters of another 16-bit dtype, or f32 parameters for an f64 input, are refused.
  const Tensor xb = x32.to(DType::bf16);
  CHECK_THROWS_WITH(layernorm(xb, w0.to(DType::f16), Tensor(), 1e-5),
                    doctest::Contains("parameter dtype f16 differs from input dtype bf16"));
  CHECK_THROWS_WITH(layernorm(x32.to(DType::f64), w0, Tensor(), 1e-5),
                    doctest::Contains("parameter dtype f32 differs from input dtype f64"));
  CHECK_THROWS_WITH(layernorm(xb, w0, b0.to(DType::bf16), 1e-5),
                    doctest::Contains("weight dtype f32 differs from bias dtype bf16"));
}

TEST_CASE("cuda: a bf16 layernorm with f32 parameters agrees with the CPU and folds in bf16") {
  BG_REQUIRE_CUDA();
  const Device gpu = Device::cuda(0);
  // Odd widths, GPT-2's 768 and a wide row (one block per row in the forward); a transposed
  // (non-contiguous) input.
  for (int64_t c : {37, 768, 2100}) {
    for (bool transposed : {false, true}) {
      CAPTURE(c);
      CAPTURE(transposed);
      Generator gen(uint64_t(60 + c));
      const Tensor x0 = transposed ? randn({c, 5}, gen, 0, 1).to(DType::bf16).transpose(0, 1)
                                   : randn({5, c}, gen, 0, 1).to(DType::bf16);
      const Tensor w0 = randn({c}, gen, 1, 0.2), b0 = randn({c}, gen, 0, 0.2);
      const Tensor up = randn({5, c}, gen, 0, 1).to(DType::bf16);
      std::vector<Tensor> out[2];
      for (int cuda = 0; cuda < 2; ++cuda) {
        const Device d = cuda ? gpu : Device::cpu();
        const Tensor x = x0.to(d).detach().requires_grad_(true);
        const Tensor w = w0.to(d).detach().requires_grad_(true);
        const Tensor b = b0.to(d).detach().requires_grad_(true);
        const Tensor y = layernorm(x, w, b, 1e-5);
        y.backward(up.to(d));
        CHECK(y.dtype() == DType::bf16);
        CHECK(w.grad().dtype() == DType::f32);
        out[cuda] = {y.to(Device::cpu()), x.grad().to(Device::cpu()), w.grad().to(Device::cpu()),
                     b.grad().to(Device::cpu())};
      }
      CHECK(rel_err(out[1][0], out[0][0]) < 1e-2);  // one bf16 rounding apart at most
      CHECK(rel_err(out[1][1], out[0][1]) < 1e-2);
      CHECK(rel_err(out[1][2], out[0][2]) < 1e-4);  // f32 sums of the same bf16 products
      CHECK(rel_err(out[1][3], out[0][3]) < 1e-4);
    }
  }
  // The residual stream's pending gradient (bf16) is folded into dx in the kernel: x's gradient
  // equals the two gradients taken apart and added in bf16, bit for bit.
  Generator gen(70);
  const Tensor x0 = randn({7, 3, 768}, gen, 0, 1).to(DType::bf16).to(gpu);
  const Tensor w = randn({768}, gen, 1, 0.1).to(gpu), b = randn({768}, gen, 0, 0.1).to(gpu);
  const Tensor up = randn({7, 3, 768}, gen, 0, 1).to(DType::bf16).to(gpu);
  const Tensor side = randn({7, 3, 768}, gen, 0, 1).to(DType::bf16).to(gpu);
  auto ln_term = [&](const Tensor& x) { return sum((layernorm(x, w, b, 1e-5) * up).to(DType::f32)); };
  auto side_term = [&](const Tensor& x) { return sum((x * side).to(DType::f32)); };
  const Tensor xa = x0.detach().requires_grad_(true);
  const Tensor x = xa * 2.0;
  (side_term(x) + ln_term(x)).backward();
  const Tensor x_ln = x0.detach().requires_grad_(true), x_side = x0.detach().requires_grad_(true);
  ln_term(x_ln * 2.0).backward();
  side_term(x_side * 2.0).backward();
  CHECK(xa.grad().dtype() == DType::bf16);
  CHECK(bit_mismatches(xa.grad(), x_ln.grad() + x_side.grad()) == 0);
}

namespace {

// `steps` AdamW steps of a 2-layer, 128-wide GPT (head dim 64: the fused attention kernel) on
// the cat/dog text in `mode` on CUDA, with or without dropout.
GptRun train_stream(const ComputeMode& mode, int steps, double dropout, bool fused = true) {
  const std::string text = cat_dog_text();
  const CharTokenizer vocab(text);
  GPTConfig c;
  c.vocab_size = vocab.vocab_size();
  c.block_size = 12;
  c.n_layer = 2;
  c.n_head = 2;
  c.n_embd = 128;
  c.dropout = dropout;
  c.bias = true;
  c.fused_attention = fused;
  Generator init(5);
  GPT model(c, init);
  return train_gpt_steps(model, vocab.encode(text), Device::cuda(0), steps, mode);
}

}  // namespace

TEST_CASE("cuda: a gpt with a bf16 residual stream tracks the f32 stream and repeats bit for bit") {
  BG_REQUIRE_CUDA();
  const Device gpu = Device::cuda(0);
  {  // The stream is bf16 from the embedding to the head's input; the parameters stay f32.
    Generator init(3), gen(4);
    GPTConfig c;
    c.vocab_size = 11;
    c.block_size = 8;
    c.n_layer = 1;
    c.n_head = 2;
    c.n_embd = 128;
    c.dropout = 0.0;
    c.fused_attention = true;
    GPT model(c, init);
    model.set_compute_mode(bf16_stream());
    FlatParameters params(model.named_parameters(), gpu);
    const Tensor idx = from_vector<int64_t>({1, 2, 3, 4, 5, 6, 7, 8}, {1, 8}, gpu);
    const Tensor e = model.embed(idx, gen);
    CHECK(e.dtype() == DType::bf16);
    CHECK(model.hidden_from_embeddings(e, gen).dtype() == DType::bf16);
    CHECK(params.values().dtype() == DType::f32);
    // The KV-cached sampler (the default mode's, as at the end of training) reads the stream in
    // bf16 too: its last logits are the full forward's within bf16 roundings.
    model.train(false);
    NoGradGuard no_grad;
    const Tensor full = model.forward(idx, gen).slice(1, 7, 8).reshape({11}).to(DType::f32);
    KVCache cache = model.new_cache(1, gpu);
    model.forward_cached(idx.slice(1, 0, 5), cache);
    const Tensor last = model.forward_cached(idx.slice(1, 5, 8), cache).reshape({11});
    CHECK(rel_err(last.to(DType::f32).to(Device::cpu()), full.to(Device::cpu())) < 5e-2);
  }
  for (double dropout : {0.0, 0.1}) {
    for (bool fused : {true, false}) {
      CAPTURE(dropout);
      CAPTURE(fused);
      // One step from the same weights: the loss and every gradient within bf16 roundings of
      // the f32 stream's.
      const GptRun f1 = train_stream(precision_mode(MatmulPrecision::bf16), 1, dropout, fused);
      const GptRun a1 = train_stream(bf16_stream(), 1, dropout, fused);
      CHECK(a1.losses[0] == doctest::Approx(f1.losses[0]).epsilon(1e-2));
      const int64_t n = int64_t(f1.grads.size());
      CHECK(rel_err(from_vector(a1.grads, {n}), from_vector(f1.grads, {n})) < 3e-2);
      // Ten steps track it as bf16 precision tracks fp32; twenty learn the text.
      const GptRun f32 = train_stream(precision_mode(MatmulPrecision::bf16), 20, dropout, fused);
      const GptRun a = train_stream(bf16_stream(), 20, dropout, fused);
      const GptRun b = train_stream(bf16_stream(), 20, dropout, fused);
      std::string both;
      for (size_t i = 0; i < 20; ++i)
        both += std::to_string(a.losses[i]) + "/" + std::to_string(f32.losses[i]) + " ";
      INFO("bf16 stream / f32 stream losses: ", both);
      for (size_t i = 0; i < 10; ++i)
        CHECK(a.losses[i] == doctest::Approx(f32.losses[i]).epsilon(3e-2));
      CHECK(a.losses.back() < 0.6 * a.losses.front());
      CHECK(f32.losses.back() < 0.6 * f32.losses.front());
      CHECK(a.losses == b.losses);
      CHECK(std::memcmp(a.params.data(), b.params.data(), a.params.size() * sizeof(float)) == 0);
    }
  }
  // Under train.deterministic too (the batch-invariant GEMMs with bf16 outputs and residuals).
  ComputeMode det = ComputeMode::deterministic_mode(MatmulPrecision::bf16);
  det.activations = ActivationDtype::bf16;
  const GptRun d1 = train_stream(det, 10, 0.1), d2 = train_stream(det, 10, 0.1);
  const GptRun f32 = train_stream(ComputeMode::deterministic_mode(MatmulPrecision::bf16), 10, 0.1);
  for (size_t i = 0; i < 10; ++i) CHECK(d1.losses[i] == doctest::Approx(f32.losses[i]).epsilon(3e-2));
  CHECK(d1.losses == d2.losses);
  CHECK(std::memcmp(d1.params.data(), d2.params.data(), d1.params.size() * sizeof(float)) == 0);
}

}  // namespace bg::test
