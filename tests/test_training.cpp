// test_training.cpp: whole training runs. Loss goes down on a tiny corpus; two runs with the
// same seed give bitwise-identical parameters (CPU and CUDA); CUDA and CPU runs agree.
#include <cstring>

#include "core/optim.h"
#include "data/text.h"
#include "harness.h"
#include "models/char_mlp.h"

namespace bg::test {
namespace {

std::string tiny_corpus() {
  std::string s;
  const char* words[] = {"the cat sat on the mat. ", "a dog ran in the fog. ", "to be or not to be. "};
  for (int i = 0; i < 300; ++i) s += words[(i * 7 + i / 3) % 3];
  return s;
}

struct RunResult {
  std::vector<float> params;
  std::vector<double> losses;
};

RunResult train_tiny(Device device, int steps) {
  const std::string text = tiny_corpus();
  const CharVocab vocab(text);
  const std::vector<int32_t> tokens = vocab.encode(text);
  CharMLPConfig cfg;
  cfg.vocab_size = vocab.size();
  cfg.context = 6;
  cfg.n_embd = 7;
  cfg.n_hidden = 45;
  cfg.n_layer = 2;
  cfg.dropout = 0.1;
  Generator init(5), data(6), drop(7);
  CharMLP model(cfg, init);
  FlatParameters params(model.named_parameters(), device);
  AdamW opt(params, {0.9, 0.99, 1e-8, 0.01});
  RunResult r;
  for (int s = 0; s < steps; ++s) {
    params.zero_grad();
    Tensor x, y;
    sample_windows(tokens, 33, cfg.context, data, device, &x, &y);
    Tensor loss = cross_entropy(model.forward(x, drop), y.slice(1, cfg.context - 1, cfg.context).reshape({33}));
    loss.backward();
    opt.step(1e-2, clip_grad_norm(params, 1.0).scale);
    r.losses.push_back(loss.item());
  }
  r.params = params.values().to_vector<float>();
  return r;
}

bool bitwise_equal(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

double mean_of(const std::vector<double>& v, size_t lo, size_t hi) {
  double s = 0;
  for (size_t i = lo; i < hi; ++i) s += v[i];
  return s / double(hi - lo);
}

}  // namespace

TEST_CASE("cpu: a tiny model learns and two runs are bitwise identical") {
  const RunResult a = train_tiny(Device::cpu(), 120), b = train_tiny(Device::cpu(), 120);
  CHECK(mean_of(a.losses, 100, 120) < 0.6 * mean_of(a.losses, 0, 10));
  CHECK(bitwise_equal(a.params, b.params));
  CHECK(a.losses == b.losses);
}

TEST_CASE("cuda: training is bitwise reproducible on the GPU and agrees with the CPU") {
  BG_REQUIRE_CUDA();
  const RunResult a = train_tiny(Device::cuda(0), 120), b = train_tiny(Device::cuda(0), 120);
  CHECK(bitwise_equal(a.params, b.params));
  CHECK(a.losses == b.losses);
  CHECK(mean_of(a.losses, 100, 120) < 0.6 * mean_of(a.losses, 0, 10));
  // Same seeds, same batches and dropout masks: the CPU run follows the same trajectory.
  const RunResult c = train_tiny(Device::cpu(), 20), g = train_tiny(Device::cuda(0), 20);
  for (size_t i = 0; i < 20; ++i) CHECK(g.losses[i] == doctest::Approx(c.losses[i]).epsilon(1e-3));
}

}  // namespace bg::test
