// train.cpp: `bitgrad train CONFIG`: reads the config (train_config.cpp), builds the data and
// the model, and hands them to the library's Trainer (models/trainer.h), which runs the loop,
// evaluates, checkpoints, resumes and reports. What is left here is the language-model task:
// a micro-batch's loss, the validation loss and what a checkpoint says about the model.
#include "train.h"

#include <cstdio>
#include <cstdlib>
#include <filesystem>

#include "cli.h"
#include "core/allocator.h"
#include "core/config.h"
#include "core/device.h"
#include "core/distributed.h"
#include "core/sha256.h"
#include "data/text.h"
#include "data/token_shards.h"
#include "kernels/cuda/device_runtime.h"
#include "models/generate.h"
#include "models/lm_task.h"
#include "models/trainer.h"

namespace bg::cli {
namespace {
// model.vocab_size pads the tokenizer's ids up to at most the next multiple of this.
constexpr int64_t kMaxVocabPadding = 1024;
}  // namespace

int run_train(const Args& args) {
  args.allow_only({});
  BG_CHECK(args.positional.size() == 1, "train",
           "usage: bitgrad train CONFIG [--set key=value ...]");
  ConfigReader reader(args.positional[0], args.overrides);
  const TrainConfig cfg = read_train_config(reader);
  // Data parallel (bitgrad launch, torchrun, mpirun): this process is one rank; on CUDA it
  // trains on the GPU its LOCAL_RANK names. Rank 0 alone prints and writes.
  const DistEnv dist = read_dist_env();
  Device device = parse_device(cfg.device);
  if (dist.world > 1 && device.is_cuda()) {
    BG_CHECK(dist.local_rank < cuda_device_count(), "train", "LOCAL_RANK=", dist.local_rank,
             " but this host has ", cuda_device_count(), " CUDA device(s)");
    device = Device::cuda(dist.local_rank);
    cuda::set_device(dist.local_rank);
  }
  const bool lead = dist.rank == 0;
  if (!lead) (void)std::freopen("/dev/null", "w", stdout);
  const ComputeMode mode = cfg.mode.on(device);
  // Before any work: an unwritable output folder, or a resume with nothing to resume, would
  // otherwise surface only at the first save.
  if (lead) check_output_dir(cfg.trainer.out_dir, "train");
  // No output may be one of the run's inputs (a config or data file inside out_dir).
  std::vector<std::string> inputs = train_inputs(cfg);
  inputs.push_back(args.positional[0]);
  for (const char* name : kRunOutputs)
    check_output_file(cfg.trainer.out_dir + "/" + name, "train", "run.out_dir's", inputs);
  const std::string last_path = cfg.trainer.out_dir + "/last.h5";
  BG_CHECK(!cfg.trainer.resume || std::filesystem::exists(last_path), "train",
           "run.resume is true but there is no checkpoint to resume: ", last_path,
           " does not exist (set run.resume: false to start from scratch)");
  std::printf("# effective config (%s)\n%s", args.positional[0].c_str(),
              reader.effective_yaml().c_str());
  // Every rank joins before the data and the model are built: a config that differs between
  // ranks is refused here, naming the rank.
  const std::string yaml = reader.effective_yaml();
  const std::unique_ptr<ProcessGroup> group =
      make_process_group(dist, device, sha256_hex(yaml.data(), yaml.size()));
  if (dist.world == 1 && cfg.trainer.shard_optimizer)
    std::printf(
        "train.shard_optimizer: one process keeps the whole optimizer state (it shards "
        "over the ranks of a data-parallel run)\n");
  if (dist.world > 1)
    std::printf(
        "data parallel: %d ranks over %s; train.grad_accum = %lld micro-batches per step, "
        "%lld on each rank%s\n",
        dist.world, group->transport().c_str(), (long long)cfg.trainer.grad_accum,
        (long long)(cfg.trainer.grad_accum / dist.world),
        cfg.trainer.shard_optimizer ? "; AdamW's state sharded over the ranks" : "");

  // Data: nanoGPT's prepare scripts split the text, then encode each part; or llm.c shards.
  std::unique_ptr<Tokenizer> tok;
  std::vector<int32_t> train_tokens, val_tokens;
  if (cfg.tokenizer == "gpt2") check_data_path(cfg.gpt2_dir, "data.gpt2_dir");
  if (cfg.train_bin.empty()) {
    check_data_path(cfg.data_path, "data.path");
    const std::string text = read_text_file(cfg.data_path);
    tok = make_tokenizer(cfg.tokenizer, text, cfg.gpt2_dir);
    const size_t cut = split_point(text, cfg.val_fraction);
    train_tokens = tok->encode(text.substr(0, cut));
    val_tokens = tok->encode(text.substr(cut));
  } else {
    tok = make_tokenizer(cfg.tokenizer, "", cfg.gpt2_dir);
    train_tokens = read_tokens(cfg.train_bin, *tok);
    val_tokens = read_tokens(cfg.val_bin, *tok);
  }
  const std::string train_source = cfg.train_bin.empty() ? cfg.data_path : cfg.train_bin;
  const std::string val_source = cfg.train_bin.empty() ? cfg.data_path : cfg.val_bin;
  const int64_t context = cfg.model.context;
  BG_CHECK(int64_t(val_tokens.size()) > context, "train", val_source, ": validation split has ",
           val_tokens.size(), " tokens, fewer than context + 1 = ", context + 1);
  BG_CHECK(int64_t(train_tokens.size()) > context, "train", train_source, ": training split has ",
           train_tokens.size(), " tokens, fewer than context + 1 = ", context + 1);

  // Model, in the run's compute mode.
  Generator init(cfg.seed);
  std::unique_ptr<CharMLP> mlp;
  std::unique_ptr<GPT> gpt;
  Module* model = nullptr;
  if (cfg.model_type == "gpt") {
    GPTConfig g = cfg.gpt;
    if (g.vocab_size == 0) g.vocab_size = tok->vocab_size();
    BG_CHECK(g.vocab_size >= tok->vocab_size(), "train", "model.vocab_size ", g.vocab_size,
             " is smaller than the ", tok->kind(), " tokenizer's ", tok->vocab_size());
    // Padding is for the GEMMs' tile sizes (GPT-2's 50257 -> 50304): every padded row costs
    // embedding, head and optimizer work, and no token ever uses it.
    const int64_t pad_limit = (tok->vocab_size() + kMaxVocabPadding - 1) / kMaxVocabPadding *
                              kMaxVocabPadding;
    BG_CHECK(g.vocab_size <= pad_limit, "config", "model.vocab_size: ", g.vocab_size,
             " pads the ", tok->kind(), " tokenizer's ", tok->vocab_size(), " ids with ",
             g.vocab_size - tok->vocab_size(), " rows no token uses (pad to at most ", pad_limit,
             ", the next multiple of ", kMaxVocabPadding, ")");
    if (g.head == HeadKind::bide) {  // the BIDE head's support: exactly the tokenizer's ids
      GPTConfig unpadded = g;        // a padded vocabulary's extra ids are never targets
      unpadded.vocab_size = tok->vocab_size();
      g.bide.support = target_vocabulary(unpadded);
      const int fewest = bits_for_vocabulary(g.bide.support);
      BG_CHECK(g.bide.bits == 0 || (int64_t(1) << g.bide.bits) >= g.bide.support, "config",
               "head.bide.bits: ", g.bide.bits, " bits hold ", int64_t(1) << g.bide.bits,
               " ids, the ", tok->kind(), " targets number ", g.bide.support, " (use ", fewest,
               " or more)");
      BG_CHECK(g.bide.bits <= fewest + kMaxBideSpareBits, "config", "head.bide.bits: ",
               g.bide.bits, " bits make ", int64_t(1) << g.bide.bits, " patterns for the ",
               tok->kind(), " tokenizer's ", g.bide.support,
               " targets; the unrestricted normaliser and the GPU pass cost 2^bits, not the "
               "targets (use ", fewest, " to ", fewest + kMaxBideSpareBits, ", or 0)");
      BG_CHECK(g.bide.softmax_ids < g.bide.support, "config",
               "head.bide.softmax_ids: ", g.bide.softmax_ids, " leaves the BIDE none of the ",
               tok->kind(), " tokenizer's ", g.bide.support, " ids (use at most ",
               g.bide.support - 1, ")");
    }
    g.fused_attention = choose_fused_attention(cfg.attention, mode, device, g.n_embd / g.n_head);
    gpt = std::make_unique<GPT>(g, init);
    model = gpt.get();
    // A BIDE head's token code other than the id: ranked by the training tokens (resume loads
    // the saved one, and compares).
    if (g.head == HeadKind::bide && g.bide.code != BideTokenCode::id) {
      BG_CHECK(g.predict_tokens == 1, "config", "head.bide.code: ", enum_name(g.bide.code),
               " ranks single tokens; byte_pair targets take id");
      gpt->bide_head()->set_code(token_code(gpt->config().bide, train_tokens));
    }
  } else {
    CharMLPConfig m = cfg.model;
    m.vocab_size = tok->vocab_size();
    mlp = std::make_unique<CharMLP>(m, init);
    model = mlp.get();
  }
  model->set_compute_mode(mode);
  FlatParameters params(model->named_parameters(), device);
  std::printf(
      "data: %zu train / %zu val tokens, vocab %lld | model: %s, %lld parameters | device: %s | "
      "compute: %s\n",
      train_tokens.size(), val_tokens.size(), (long long)tok->vocab_size(), cfg.model_type.c_str(),
      (long long)params.numel(), device.str().c_str(), mode.str().c_str());

  const LanguageModelTaskConfig task_cfg{cfg.model_type,
                                         cfg.batch,
                                         context,
                                         cfg.eval_iters,
                                         cfg.seed,
                                         cfg.val_fraction,
                                         reader.effective_yaml(),
                                         cfg.resume_mode_change};
  LanguageModelTask task(task_cfg, *tok, *model, gpt.get(), mlp.get(), device);
  task.train_tokens = std::move(train_tokens);
  task.val_tokens = std::move(val_tokens);
  task.val_source = val_source;
  TrainerConfig tc = cfg.trainer;
  tc.tree_reduce = mode.deterministic;
  // BITGRAD_PROFILE_STEPS=FIRST:COUNT: the steps a profiler records (scripts/gpt2_breakdown.sh).
  if (const char* p = std::getenv("BITGRAD_PROFILE_STEPS"); p && *p) {
    const std::string text = p;
    const size_t colon = text.find(':');
    BG_CHECK(colon != std::string::npos, "train", "BITGRAD_PROFILE_STEPS is '", text,
             "', expected FIRST:COUNT (steps from 0)");
    tc.profile_first =
        parse_integer(text.substr(0, colon), "BITGRAD_PROFILE_STEPS's FIRST", 0, tc.steps - 1);
    tc.profile_count =
        parse_integer(text.substr(colon + 1), "BITGRAD_PROFILE_STEPS's COUNT", 1, tc.steps);
  }
  tc.tokens_per_step = double(cfg.batch * tc.grad_accum * context);
  // MFU as nanoGPT estimates it (PaLM appendix B): 6 N + 12 L C T FLOPs per token, N the
  // non-embedding parameters, against the GPU's dense bf16 peak.
  if (gpt && device.is_cuda()) {
    const GPTConfig& g = gpt->config();
    tc.flops_per_token = 6.0 * double(gpt->non_embedding_parameters()) +
                         12.0 * double(g.n_layer * g.n_embd * g.block_size);
    tc.peak_tflops = peak_bf16_tflops(cuda::device_name(device.index)) * dist.world;
  }
  Trainer trainer(tc, params, task);
  trainer.set_process_group(group.get());
  // The run's config and its loss curve are there from the start, the curve redrawn at each
  // evaluation (not only when the run ends).
  if (lead) write_file_atomic(cfg.trainer.out_dir + "/config.yaml", reader.effective_yaml());
  trainer.after_evaluation([&](const std::string& metrics) {
    write_file_atomic(cfg.trainer.out_dir + "/loss.svg", loss_plot(metrics));
  });
  const TrainResult result = trainer.run();
  if (device.is_cuda()) {
    // The allocator's high-water mark plus what lives outside it (cuBLAS/cuBLASLt workspaces,
    // the CUDA context): the figure the mode's memory cost is measured by.
    std::printf("device memory: peak %.1f MiB allocated, %.1f MiB in use on the GPU\n",
                double(cuda_allocator_stats(device.index).peak_allocated) / 1048576.0,
                double(cuda::device_memory_used()) / 1048576.0);
  }
  if (result.stop_signal) return 130;
  if (!result.finished || !lead) return 0;  // run.stop_after_steps; rank 0 writes the outputs
  write_file_atomic(cfg.trainer.out_dir + "/loss.svg", loss_plot(result.metrics_csv));

  // A sample from the trained model with `bitgrad sample`'s temperature and top-k, its prompt the
  // start of the validation data, as long as fits one context window (so the KV cache never
  // slides: the CPU's deterministic sampler recomputes the window per token once it does).
  model->train(false);
  const int64_t prompt_len =
      gpt ? std::min<int64_t>(std::max<int64_t>(context / 2, 1), 16) : context;
  const std::vector<int32_t> prompt(task.val_tokens.begin(), task.val_tokens.begin() + prompt_len);
  Generator sample_gen(cfg.seed + 4), unused;
  SampleSettings settings;
  if (gpt) settings.new_tokens = std::min(settings.new_tokens, context - prompt_len);
  const std::vector<int32_t> text =
      gpt ? generate(*gpt, prompt, settings, tok->vocab_size(), sample_gen, device)
          : generate_windowed([&](const Tensor& x) { return mlp->forward(x, unused); }, context,
                              prompt, settings, sample_gen, device);
  std::printf(
      "done: %lld steps in %.1f s | final train loss %.4f | best val loss %.4f | outputs in "
      "%s\n",
      (long long)result.steps_run, result.seconds, result.last_loss, result.best_val,
      cfg.trainer.out_dir.c_str());
  std::printf(
      "sample (%lld tokens, temperature %.1f, top-k %lld; prompt: the first %lld tokens of "
      "the validation data):\n%s\n",
      (long long)settings.new_tokens, settings.temperature, (long long)settings.top_k,
      (long long)prompt_len, tok->decode(text).c_str());
  return 0;
}

}  // namespace bg::cli
