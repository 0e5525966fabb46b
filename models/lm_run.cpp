#include "lm_run.h"

#include <cstdio>

#include "data/token_streams.h"
#include "models/lm_builder.h"
#include "models/lm_task.h"

namespace bg {
namespace {

// A sample from the trained model with `bitgrad sample`'s temperature and top-k, its prompt the
// start of the validation data, as long as fits one context window (so a GPT's KV cache never
// slides: the CPU's deterministic sampler recomputes the window per token once it does).
void print_sample(LanguageModel& model, const Tokenizer& tok, const std::vector<int32_t>& val,
                  uint64_t seed, Device device) {
  model.train(false);
  const int64_t context = model.context();
  const int64_t prompt_len = model.predicts_every_position()
                                 ? std::min<int64_t>(std::max<int64_t>(context / 2, 1), 16)
                                 : context;
  const std::vector<int32_t> prompt(val.begin(), val.begin() + prompt_len);
  Generator gen(seed + 4);
  SampleSettings settings;
  if (model.predicts_every_position())
    settings.new_tokens = std::min(settings.new_tokens, context - prompt_len);
  const std::vector<int32_t> text =
      model.generate(prompt, settings, tok.vocab_size(), gen, device);
  std::printf(
      "sample (%lld tokens, temperature %.1f, top-k %lld; prompt: the first %lld tokens of the "
      "validation data):\n%s\n",
      (long long)settings.new_tokens, settings.temperature, (long long)settings.top_k,
      (long long)prompt_len, tok.decode(text).c_str());
}

}  // namespace

int train_token_model(const TrainRun& run, const RunContext& context,
                      const RunPlace& place) {
  const Device device = place.device;
  const ComputeMode& mode = place.mode;
  const bool lead = place.dist.rank == 0;
  TokenStreams data = load_token_streams(run.data, model_context(run.model));
  Generator init(run.seed);
  ModelSpec spec = run.model;
  if (run.trainer.resume) spec.init_from.clear();  // last.h5 holds every weight
  const std::unique_ptr<LanguageModel> model =
      build_language_model(spec, *data.tokenizer, data.train, mode, device, init);
  FlatParameters params(model->named_parameters(), device);
  std::printf(
      "data: %zu train / %zu val tokens, vocab %lld | model: %s, %lld parameters | device: %s | "
      "compute: %s\n",
      data.train.size(), data.val.size(), (long long)data.tokenizer->vocab_size(), model->type(),
      (long long)params.numel(), device.str().c_str(), mode.str().c_str());

  const LanguageModelTaskConfig task_cfg{run.batch,
                                         run.eval_iters,
                                         run.seed,
                                         run.data,
                                         context.effective_yaml,
                                         run.resume_mode_change,
                                         run.trainer.cuda_graph && device.is_cuda()};
  LanguageModelTask task(task_cfg, *data.tokenizer, *model, device);
  task.train_tokens = std::move(data.train);
  task.val_tokens = std::move(data.val);
  task.val_source = data.val_source;
  const TrainResult result = run_trainer(
      run, context, place, {&params, model->flops_per_token(), model->context()}, task);
  if (result.stop_signal) return 130;
  if (!result.finished || !lead) return 0;  // run.stop_after_steps; rank 0 writes the outputs
  print_sample(*model, *data.tokenizer, task.val_tokens, run.seed, device);
  return 0;
}

}  // namespace bg
