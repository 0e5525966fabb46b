// sample.cpp: `bitgrad sample CKPT`: text from a trained GPT (models/gpt/generate.h), written as it
// is drawn.
#include <atomic>
#include <csignal>
#include <cstdio>

#include "cli.h"
#include "core/error.h"
#include "data/text.h"
#include "models/lm_builder.h"

namespace bg::cli {

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
  s.new_tokens =
      parse_integer(args.option("tokens", std::to_string(s.new_tokens)), "--tokens", 1, 1 << 24);
  s.temperature = parse_number(args.option("temperature", std::to_string(s.temperature)),
                               "--temperature", 0, 100);
  s.top_k = parse_integer(args.option("top-k", std::to_string(s.top_k)), "--top-k", 0, 1 << 24);
  const uint64_t seed =
      uint64_t(parse_integer(args.option("seed", "1337"), "--seed", 0, INT64_MAX));
  const int64_t samples = parse_integer(args.option("samples", "1"), "--samples", 1, 1000);
  const std::string prompt_file = args.option("prompt-file", "");
  const std::string prompt =
      prompt_file.empty() ? args.option("prompt", "\n") : read_text_file(prompt_file);
  const Device device = parse_device(args.option("device", "auto"));
  // Each token is written and flushed as it is drawn (its bytes: a UTF-8 character split over
  // two GPT-2 tokens completes with the second).
  auto write = [](const std::string& text) {
    std::fwrite(text.data(), 1, text.size(), stdout);
    std::fflush(stdout);
  };
  const auto loaded = load_language_model(args.positional[0], device);
  const LanguageModel& model = *loaded->model;
  const Tokenizer& tok = *loaded->tokenizer;
  std::vector<int32_t> ids = tok.encode(prompt);
  BG_CHECK(!ids.empty(), "sample", "the prompt is empty");
  const int64_t context = model.context();
  if (model.predicts_every_position()) {
    BG_CHECK(int64_t(ids.size()) <= context, "sample", "the prompt is ", ids.size(),
             " tokens, longer than the model's block_size = ", context);
  } else {
    // A fixed-context model reads exactly `context` tokens: a shorter prompt is padded on the
    // left with newlines (what separates the text's passages), when the vocabulary has one.
    const std::vector<int32_t> newline = tok.encode("\n");
    BG_CHECK(int64_t(ids.size()) >= context || newline.size() == 1, "sample", "the prompt is ",
             ids.size(), " tokens; this ", model.type(), " reads ", context,
             " and its vocabulary has no newline to pad with (give a longer --prompt)");
    if (int64_t(ids.size()) < context) ids.insert(ids.begin(), context - ids.size(), newline[0]);
  }
  Generator gen(seed);
  g_sample_stop = 0;
  auto old_int = std::signal(SIGINT, stop_sampling);
  for (int64_t k = 0; k < samples && !g_sample_stop; ++k) {
    write(tok.decode(ids));
    auto on_token = [&](int32_t id) {
      write(tok.decode({id}));
      return g_sample_stop == 0;
    };
    model.generate(ids, s, tok.vocab_size(), gen, device, on_token);
    write("\n---------------\n");
  }
  std::signal(SIGINT, old_int);
  return g_sample_stop ? 130 : 0;
}

}  // namespace bg::cli
