// sample.cpp: `bitgrad sample CKPT`: text from a trained GPT, and the KV-cached generation
// loop the end of `bitgrad train` shares.
#include <algorithm>
#include <atomic>
#include <cmath>
#include <csignal>
#include <cstdio>
#include <numeric>

#include "cli.h"
#include "core/error.h"
#include "data/text.h"
#include "lm_common.h"

namespace bg::cli {

int32_t sample_token(std::vector<float> logits, const SampleSettings& s, Generator& gen) {
  const size_t v = logits.size();
  if (s.temperature == 0)
    return int32_t(std::max_element(logits.begin(), logits.end()) - logits.begin());
  if (s.top_k > 0 && size_t(s.top_k) < v) {
    std::vector<float> sorted = logits;
    std::nth_element(sorted.begin(), sorted.begin() + (s.top_k - 1), sorted.end(),
                     std::greater<float>());
    const float kth = sorted[size_t(s.top_k - 1)];  // keep logits >= the k-th largest
    for (float& l : logits)
      if (l < kth) l = -INFINITY;
  }
  const double top = *std::max_element(logits.begin(), logits.end());
  std::vector<double> p(v);
  for (size_t i = 0; i < v; ++i) p[i] = std::exp((double(logits[i]) - top) / s.temperature);
  const double total = std::accumulate(p.begin(), p.end(), 0.0);
  const double u = rand({1}, gen, 0, 1, DType::f64).item() * total;
  double acc = 0;
  for (size_t i = 0; i < v; ++i)
    if (p[i] > 0 && (acc += p[i]) > u) return int32_t(i);
  for (size_t i = v; i-- > 0;)  // rounding left u past the sum: the last kept token
    if (p[i] > 0) return int32_t(i);
  return 0;
}

std::vector<int32_t> generate(const GPT& model, std::vector<int32_t> ids, const SampleSettings& s,
                              int64_t vocab_limit, Generator& gen, Device device,
                              const std::function<bool(int32_t)>& on_token) {
  BG_CHECK(!ids.empty(), "sample", "the prompt encodes to no tokens");
  const int64_t block = model.config().block_size;
  NoGradGuard no_grad;
  KVCache cache = model.new_cache(1, device);
  auto run_window = [&]() {  // the last block_size tokens from position 0
    cache.length = 0;
    const int64_t n = std::min<int64_t>(block, int64_t(ids.size()));
    const std::vector<int64_t> window(ids.end() - n, ids.end());
    return model.forward_cached(from_vector(window, {1, n}, device), cache);
  };
  Tensor logits = run_window();
  for (int64_t i = 0; i < s.new_tokens; ++i) {
    std::vector<float> row = logits.to_vector<float>();
    row.resize(size_t(vocab_limit));
    const int32_t next = sample_token(std::move(row), s, gen);
    ids.push_back(next);
    if (on_token && !on_token(next)) break;
    if (i + 1 == s.new_tokens) break;
    if (cache.length < block)
      logits = model.forward_cached(from_vector(std::vector<int64_t>{next}, {1, 1}, device), cache);
    else
      logits = run_window();  // positions shift once the window slides: recompute
  }
  return ids;
}

double peak_bf16_tflops(const std::string& name) {
  // Dense (no sparsity) BF16 tensor throughput from the vendor data sheets.
  struct Peak {
    const char* key;
    double tflops;
  };
  static const Peak peaks[] = {{"H200", 989.4}, {"H100 PCIe", 756.0}, {"H100", 989.4},
                               {"H800", 989.4}, {"GH200", 989.4},     {"A100", 312.0},
                               {"A800", 312.0}, {"L40S", 362.1},      {"L4", 121.0},
                               {"A10", 125.0},  {"RTX 4090", 165.2},  {"RTX 3090", 71.0}};
  for (const Peak& p : peaks)
    if (name.find(p.key) != std::string::npos) return p.tflops;
  return 0;
}

namespace {
// Ctrl-C ends the current sample after the token being drawn; what was written stays.
std::atomic<int> g_sample_stop{0};
extern "C" void stop_sampling(int sig) { g_sample_stop = sig; }
}  // namespace

int run_sample(const Args& args) {
  args.allow_only(
      {"prompt", "prompt-file", "tokens", "temperature", "top-k", "seed", "samples", "device"});
  args.exclusive("prompt", "prompt-file");
  BG_CHECK(args.positional.size() == 1, "sample",
           "usage: bitgrad sample CKPT [--prompt TEXT | --prompt-file F] [--tokens N] "
           "[--temperature T] [--top-k K] [--seed S] [--samples N] [--device D]");
  SampleSettings s;
  s.new_tokens = parse_integer(args.option("tokens", "500"), "--tokens", 1, 1 << 24);
  s.temperature = parse_number(args.option("temperature", "0.8"), "--temperature", 0, 100);
  s.top_k = parse_integer(args.option("top-k", "200"), "--top-k", 0, 1 << 24);
  const uint64_t seed =
      uint64_t(parse_integer(args.option("seed", "1337"), "--seed", 0, INT64_MAX));
  const int64_t samples = parse_integer(args.option("samples", "1"), "--samples", 1, 1000);
  const std::string prompt_file = args.option("prompt-file", "");
  const std::string prompt =
      prompt_file.empty() ? args.option("prompt", "\n") : read_text_file(prompt_file);
  const Device device = parse_device(args.option("device", "auto"));
  const auto ck = load_gpt_checkpoint(args.positional[0], device);
  const std::vector<int32_t> ids = ck->tokenizer->encode(prompt);
  const int64_t block = ck->model->config().block_size;
  BG_CHECK(!ids.empty(), "sample", "the prompt is empty");
  BG_CHECK(int64_t(ids.size()) <= block, "sample", "the prompt is ", ids.size(),
           " tokens, longer than the model's block_size = ", block);
  Generator gen(seed);
  g_sample_stop = 0;
  auto old_int = std::signal(SIGINT, stop_sampling);
  // Each token is written and flushed as it is drawn (its bytes: a UTF-8 character split over
  // two GPT-2 tokens completes with the second).
  auto write = [](const std::string& text) {
    std::fwrite(text.data(), 1, text.size(), stdout);
    std::fflush(stdout);
  };
  for (int64_t k = 0; k < samples && !g_sample_stop; ++k) {
    write(ck->tokenizer->decode(ids));
    generate(*ck->model, ids, s, ck->tokenizer->vocab_size(), gen, device, [&](int32_t id) {
      write(ck->tokenizer->decode({id}));
      return g_sample_stop == 0;
    });
    write("\n---------------\n");
  }
  std::signal(SIGINT, old_int);
  return g_sample_stop ? 130 : 0;
}

}  // namespace bg::cli
