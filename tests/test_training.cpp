// test_training.cpp: whole training runs. Loss goes down on a tiny corpus; two runs with the
// same seed give bitwise-identical parameters (CPU and CUDA); CUDA and CPU runs agree.
#include <cstring>

#include "core/graph.h"
#include "core/optim.h"
#include "data/text.h"
#include "data/tokenizer.h"
#include "harness.h"
#include "models/char_mlp.h"

namespace bg::test {
namespace {

std::string tiny_corpus() {
  std::string s;
  const char* words[] = {"the cat sat on the mat. ", "a dog ran in the fog. ",
                         "to be or not to be. "};
  for (int i = 0; i < 300; ++i) s += words[(i * 7 + i / 3) % 3];
  return s;
}

struct RunResult {
  std::vector<float> params;
  std::vector<double> losses;
};

RunResult train_tiny(Device device, int steps) {
  const std::string text = tiny_corpus();
  const CharTokenizer vocab(text);
  const std::vector<int32_t> tokens = vocab.encode(text);
  CharMLPConfig cfg;
  cfg.vocab_size = vocab.vocab_size();
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
    Tensor loss = cross_entropy(model.forward(x, drop),
                                y.slice(1, cfg.context - 1, cfg.context).reshape({33}));
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

namespace bg::test {

TEST_CASE("cuda: a captured CUDA graph step replays bitwise like eager steps") {
  BG_REQUIRE_CUDA();
  const Device gpu = Device::cuda(0);
  const std::string text = tiny_corpus();
  const CharTokenizer vocab(text);
  const std::vector<int32_t> tokens = vocab.encode(text);
  auto run = [&](bool graph_mode) {
    CharMLPConfig cfg;
    cfg.vocab_size = vocab.vocab_size();
    cfg.context = 6;
    cfg.n_embd = 7;
    cfg.n_hidden = 45;
    Generator init(5), data(6), drop(7);
    CharMLP model(cfg, init);
    FlatParameters params(model.named_parameters(), gpu);
    AdamW opt(params, {0.9, 0.99, 1e-8, 0.01});
    Tensor xb = empty({33, cfg.context}, DType::i64, gpu), yb = empty({33}, DType::i64, gpu);
    Tensor hyper = empty({3}, DType::f32, gpu), loss_buf = zeros({1}, DType::f32, gpu);
    auto step = [&] {
      params.zero_grad();
      Tensor loss = cross_entropy(model.forward(xb, drop), yb);
      loss.backward();
      opt.step_device(hyper, clip_grad_norm(params, 1.0).scale);
      loss_buf.copy_(loss.detach().reshape({1}));
    };
    std::unique_ptr<CudaGraph> graph;
    std::vector<float> losses;
    for (int s = 0; s < 12; ++s) {
      Tensor x, y;
      sample_windows(tokens, 33, cfg.context, data, gpu, &x, &y);
      xb.copy_(x);
      yb.copy_(y.slice(1, cfg.context - 1, cfg.context).reshape({33}));
      hyper.copy_(from_vector(opt.hyper_values(s + 1, 1e-2), {3}, gpu));
      if (graph_mode && s >= 2) {
        if (!graph) graph = std::make_unique<CudaGraph>(gpu, step);
        graph->replay();
      } else {
        step();
      }
      losses.push_back(float(loss_buf.item()));
    }
    return std::make_pair(params.values().to_vector<float>(), losses);
  };
  const auto eager = run(false), graphed = run(true);
  CHECK(bitwise_equal(eager.first, graphed.first));
  CHECK(eager.second == graphed.second);
}

}  // namespace bg::test
