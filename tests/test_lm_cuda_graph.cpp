// test_lm_cuda_graph.cpp: a GPT's training step captured as a CUDA graph (train.cuda_graph)
// against the eager step: the same losses and parameters, bit for bit, through the GPU paths a
// GPT-2 step takes (bf16 products with the bias and GELU epilogues, the fused attention, the
// softmax loss, the gradient clip, AdamW reading its step values from the device), with dropout
// (the replays' counters shifted on the device) and without.
#include "harness.h"
#include "models/lm_builder.h"
#include "models/lm_task.h"
#include "models/trainer.h"

namespace bg::test {
namespace {

struct GraphRun {
  std::vector<float> params, losses;
  std::vector<uint64_t> streams;  // the data and dropout streams' positions at the end
};

GraphRun train_small_gpt(bool graph, int64_t steps, double dropout, AttentionChoice attention) {
  const Device gpu = Device::cuda(0);
  const std::string text =
      "it was the best of times, it was the worst of times, it was the age of wisdom, it was "
      "the age of foolishness, it was the epoch of belief, it was the epoch of incredulity. ";
  CharTokenizer tok(text);
  std::vector<int32_t> tokens;
  for (int i = 0; i < 20; ++i) {
    const std::vector<int32_t> part = tok.encode(text);
    tokens.insert(tokens.end(), part.begin(), part.end());
  }
  ModelSpec spec;
  spec.type = ModelType::gpt;
  spec.gpt.block_size = 64;
  spec.gpt.n_layer = 2;
  spec.gpt.n_head = 2;
  spec.gpt.n_embd = 128;  // head dim 64: the fused attention kernels
  spec.gpt.dropout = dropout;  // the residual, attention and embedding dropouts
  spec.attention = attention;
  ComputeMode mode;
  mode.precision = MatmulPrecision::bf16;
  Generator init(1);
  const auto model = build_language_model(spec, tok, tokens, mode.on(gpu), gpu, init);
  FlatParameters params(model->named_parameters(), gpu);
  LanguageModelTaskConfig task_cfg;
  task_cfg.batch = 8;
  task_cfg.eval_iters = 1;
  task_cfg.seed = 5;
  task_cfg.step_buffers = graph;
  LanguageModelTask task(task_cfg, tok, *model, gpu);
  task.train_tokens = tokens;
  TrainerConfig c;
  c.steps = steps;
  c.eval_interval = 0;
  c.log_interval = steps;
  c.grad_clip = 1.0;
  c.schedule.lr = 3e-3;
  c.cuda_graph = graph;
  c.record_every_loss = true;
  Trainer trainer(c, params, task);
  const TrainResult r = trainer.run();
  CHECK(r.finished);
  return {params.values().to_vector<float>(), trainer.step_losses(), task.stream_positions()};
}

}  // namespace

TEST_CASE("cuda: a GPT's step replayed as a CUDA graph gives the eager step's bits") {
  BG_REQUIRE_CUDA();
  // Two eager steps, the capture (a step of its own), then seven replays. With dropout every
  // replay draws the eager step's masks (fused attention: the kernels' own; composed: the
  // dropout op on the probabilities), and the streams end where the eager run's do.
  for (const auto& [dropout, attention] :
       {std::pair{0.0, AttentionChoice::fused}, std::pair{0.1, AttentionChoice::fused},
        std::pair{0.1, AttentionChoice::composed}}) {
    CAPTURE(dropout);
    CAPTURE(enum_name(attention));
    const GraphRun eager = train_small_gpt(false, 10, dropout, attention);
    const GraphRun graph = train_small_gpt(true, 10, dropout, attention);
    REQUIRE(eager.losses.size() == 10);
    CHECK(eager.losses.back() < eager.losses.front());
    CHECK(graph.losses == eager.losses);
    CHECK(graph.params == eager.params);
    CHECK(graph.streams == eager.streams);
  }
}

}  // namespace bg::test
