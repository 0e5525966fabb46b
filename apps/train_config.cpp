// train_config.cpp: the keys of `bitgrad train`, checked (README lists them).
#include <sstream>

#include "cli.h"
#include "core/config.h"
#include "plot.h"
#include "train.h"

namespace bg::cli {

LanguageModelRun read_train_config(ConfigReader& r) {
  LanguageModelRun c;
  c.trainer.command = "train";
  c.trainer.out_dir = read_out_dir(r, "run");
  c.seed = uint64_t(r.integer("run.seed", 1337, 0, INT64_MAX));
  c.device = r.string("run.device", "auto");
  c.trainer.resume = r.boolean("run.resume", false);
  if (c.trainer.resume)
    c.resume_mode_change = r.boolean("run.resume_mode_change", false);
  else
    r.not_used("run.resume_mode_change", "run.resume is false");
  // Stop (saving last.h5, as on SIGINT) after this many steps of this invocation: time-boxed
  // jobs, and the interrupted-and-resumed test.
  c.trainer.stop_after = r.integer("run.stop_after_steps", 0, 0, int64_t(1) << 40);
  // Text (data.path, split by data.val_fraction) or llm.c shards (data.train_bin/val_bin).
  c.data.train_bin = r.string("data.train_bin", "");
  if (c.data.train_bin.empty()) {
    c.data.path = r.string("data.path");
    c.data.val_fraction = r.number("data.val_fraction", 0.1, 0.0, 0.5);
    r.not_used("data.val_bin", "data.train_bin is not set (data.path is split instead)");
  } else {
    c.data.val_bin = r.string("data.val_bin");
    r.not_used("data.path", "data.train_bin is set (token shards replace the text file)");
    r.not_used("data.val_fraction", "data.train_bin is set (data.val_bin holds the split)");
  }
  // byte_pair: bytes in, the next two bytes predicted jointly (a BIDE head over 16 bits).
  c.data.tokenizer = r.choice("data.tokenizer", "char", {"char", "byte", "byte_pair", "gpt2"});
  if (!c.data.train_bin.empty() && c.data.tokenizer == "char")
    r.fail_at("data.tokenizer", "token shards need a fixed vocabulary: byte, byte_pair or gpt2");
  if (c.data.tokenizer == "gpt2")
    c.data.gpt2_dir = r.string("data.gpt2_dir", "datasets/gpt2");
  else
    r.not_used("data.gpt2_dir", "data.tokenizer is " + c.data.tokenizer);
  c.model.type = r.choice("model.type", ModelType::char_mlp);
  const std::string other_model = std::string("model.type is ") + enum_name(c.model.type);
  if (c.model.type == ModelType::char_mlp) {
    c.model.mlp.context = r.integer("model.context", 16, 1, 4096);
    c.model.mlp.n_embd = r.integer("model.n_embd", 32, 1, 65536);
    c.model.mlp.n_hidden = r.integer("model.n_hidden", 256, 1, 1 << 20);
    c.model.mlp.n_layer = r.integer("model.n_layer", 2, 0, 64);
    c.model.mlp.dropout = r.number("model.dropout", 0.0, 0.0, 0.95);
    for (const char* k : {"block_size", "n_head", "bias", "attention", "vocab_size", "gelu",
                          "linear", "head", "input"})
      r.not_used(std::string("model.") + k, other_model);
    if (c.data.tokenizer == "byte_pair")
      r.fail_at("data.tokenizer",
                "byte_pair predicts two bytes jointly: a model.type gpt "
                "with model.head bide");
    r.not_used("bitlinear", other_model);
    r.not_used("head", other_model);
  } else {
    c.model.gpt.block_size = r.integer("model.block_size", 256, 1, 1 << 20);
    c.model.gpt.n_layer = r.integer("model.n_layer", 6, 1, 256);
    c.model.gpt.n_head = r.integer("model.n_head", 6, 1, 1024);
    c.model.gpt.n_embd = r.integer("model.n_embd", 384, 1, 1 << 16);
    if (c.model.gpt.n_embd % c.model.gpt.n_head != 0)
      r.fail_at("model.n_head", "n_embd " + std::to_string(c.model.gpt.n_embd) +
                                    " is not divisible by n_head " + std::to_string(c.model.gpt.n_head));
    c.model.gpt.dropout = r.number("model.dropout", 0.0, 0.0, 0.95);
    c.model.gpt.bias = r.boolean("model.bias", false);
    // auto: the fused kernel where it can honour the run's compute mode (the CPU; CUDA under
    // bf16 precision with head_dim 64), the composed ops elsewhere.
    c.model.attention = r.choice("model.attention", AttentionChoice::automatic);
    c.model.gpt.linear.kind = r.choice("model.linear", LinearKind::dense);
    if (c.model.gpt.linear.kind == LinearKind::bitlinear) {
      // BitNet b1.58 (docs/bitlinear.md): the projections, and optionally the tied LM head.
      BitLinearOptions& o = c.model.gpt.linear.bitlinear;
      o.weight_scale = r.choice("bitlinear.weight_scale", TernaryScale::absmean);
      o.act.bits = int(r.integer("bitlinear.act_bits", 8, 2, 8));
      o.act.norm = r.choice("bitlinear.norm", BitNorm::rms);
      if (r.boolean("bitlinear.lm_head", false)) c.model.gpt.head = HeadKind::bitlinear;
    } else {
      r.not_used("bitlinear", "model.linear is dense");
    }
    // The output head: the tied softmax, or a BIDE over the next token's bits (models/gpt_head.h).
    if (r.choice("model.head", "softmax", {"softmax", "bide"}) == "bide") {
      if (c.model.gpt.head == HeadKind::bitlinear)
        r.fail_at("model.head",
                  "bide replaces the tied head that bitlinear.lm_head makes "
                  "BitLinear; set one of the two");
      c.model.gpt.head = HeadKind::bide;
      BideHeadSpec& b = c.model.gpt.bide;
      b.bits = int(r.integer("head.bide.bits", 0, 0, 24));  // 0: the fewest for the vocabulary
      r.default_is("head.bide.bits", "the fewest that hold the vocabulary");
      b.hidden = r.integer("head.bide.hidden", 32, 1, kMaxBideHidden);
      b.precision = r.choice("head.bide.sick.dtype", SickPrecision::fp32);
      b.variant = r.choice("head.bide.sick.variant", SickVariant::automatic);
      if (b.variant == SickVariant::precomputed && b.hidden > kMaxPrecomputedSickHidden)
        r.fail_at("head.bide.sick.variant",
                  "the precomputed kernel holds up to " +
                      std::to_string(kMaxPrecomputedSickHidden) +
                      " hidden units; use bruteforce or auto for head.bide.hidden " +
                      std::to_string(b.hidden));
      // Which pattern stands for which id: the id, or its frequency rank in the training data.
      b.code = r.choice("head.bide.code", BideTokenCode::id);
      // A hybrid: the K most frequent ids get softmax logits of their own, the BIDE the rest.
      b.softmax_ids = r.integer("head.bide.softmax_ids", 0, 0, 1 << 24);
      if (b.softmax_ids > 0 && b.code == BideTokenCode::id)
        r.fail_at("head.bide.softmax_ids",
                  "the softmax takes the most frequent ids, the first patterns of "
                  "head.bide.code: frequency or frequent_first; set one");
      if (b.softmax_ids == 0 && b.code == BideTokenCode::frequent_first)
        r.fail_at("head.bide.code",
                  "frequent_first ranks the hybrid's softmax ids first; set "
                  "head.bide.softmax_ids > 0 (or use frequency)");
      // Its softmax rows: a matrix of their own, or the token embedding's rows of those ids.
      b.tie_softmax = r.boolean("head.bide.tie_softmax", false);
      if (b.tie_softmax && b.softmax_ids == 0)
        r.fail_at("head.bide.tie_softmax",
                  "ties the hybrid's softmax rows to the token embedding; set "
                  "head.bide.softmax_ids > 0");
    } else {
      r.not_used("head", "model.head is softmax");
      if (c.data.tokenizer == "byte_pair")
        r.fail_at("data.tokenizer",
                  "byte_pair predicts 65,536 pair ids jointly, which only model.head: bide "
                  "has an output over");
    }
    c.model.gpt.predict_tokens = c.data.tokenizer == "byte_pair" ? 2 : 1;
    // How a token enters: its embedding row, or its id's bits through a linear layer.
    c.model.gpt.input = r.choice("model.input", InputKind::embedding);
    if (c.model.gpt.input == InputKind::bits && c.model.gpt.head != HeadKind::bide)
      r.fail_at("model.input",
                "bits leaves no token embedding for the softmax head to tie to; "
                "use model.head: bide");
    if (c.model.gpt.input == InputKind::bits && c.model.gpt.bide.tie_softmax)
      r.fail_at("head.bide.tie_softmax",
                "model.input: bits leaves no token embedding to tie the softmax rows to");
    // tanh: GPT-2 and llm.c; erf: nanoGPT's nn.GELU(), so nanoGPT evaluates the model exactly.
    c.model.gpt.gelu = r.choice("model.gelu", GeluForm::tanh);
    // 0: the tokenizer's size; more pads the embedding (GPT-2's 50257 -> 50304, a multiple of
    // 64 for the GEMMs); padded ids are never targets and never sampled.
    c.model.gpt.vocab_size = r.integer("model.vocab_size", 0, 0, 1 << 24);
    if (c.data.tokenizer == "byte_pair" && c.model.gpt.vocab_size != 0 && c.model.gpt.vocab_size != 256)
      r.fail_at("model.vocab_size",
                "byte_pair pairs ids as first * 256 + second: leave "
                "model.vocab_size at 0 (256)");
    for (const char* k : {"context", "n_hidden"})
      r.not_used(std::string("model.") + k, other_model);
  }
  c.trainer.steps = r.integer("train.steps", 1000, 1, int64_t(1) << 40);
  c.batch = r.integer("train.batch_size", 64, 1, 1 << 24);
  c.trainer.grad_accum = r.integer("train.grad_accum", 1, 1, 1 << 16);
  c.trainer.shard_optimizer = r.boolean("train.shard_optimizer", false);
  c.trainer.eval_interval = r.integer("train.eval_interval", 250, 1, int64_t(1) << 40);
  c.eval_iters = r.integer("train.eval_iters", 20, 1, 1 << 20);
  c.trainer.log_interval = r.integer("train.log_interval", 100, 1, int64_t(1) << 40);
  c.trainer.grad_clip = r.number("train.grad_clip", 1.0, 0.0, 1e9);
  c.mode = read_compute_mode(r);
  // A char MLP has no attention: an L-Mul scope of attention alone would change nothing.
  if (c.model.type == ModelType::char_mlp && c.mode.algo == MatmulAlgo::lmul &&
      c.mode.lmul_scope == LmulScope::attention)
    r.fail_at("lmul.scope",
              "a char_mlp has no attention products; use mlp (its hidden layers) "
              "or all");
  c.trainer.optimizer = r.choice("optimizer.type", OptimizerKind::adamw);
  read_adamw_and_schedule(r, {1e-3, {0.9, 0.999}, 0.0, "constant", 0.0}, c.trainer.steps,
                          &c.trainer.adamw, &c.trainer.schedule, c.trainer.optimizer == OptimizerKind::adamw);
  if (c.trainer.optimizer == OptimizerKind::sgd)
    c.trainer.momentum = r.number("optimizer.momentum", 0.9, 0.0, 1.0);
  else
    r.not_used("optimizer.momentum", "optimizer.type is adamw");
  BG_CHECK(!(c.trainer.shard_optimizer && c.trainer.optimizer == OptimizerKind::sgd), "config",
           "train.shard_optimizer shards AdamW's state; optimizer.type is sgd");
  r.finish();
  return c;
}

// Train and validation loss against step, from the metrics CSV (resumed runs included).
std::string loss_plot(const std::string& metrics_csv) {
  auto [train, val] = plot::metrics_series(parse_metrics_csv(metrics_csv, "metrics.csv"), "train",
                                           "#1f77b4");
  val.label = "val";
  val.color = "#d62728";
  train.dashed = false;
  return plot::svg({{"loss (cross-entropy, nats per token)", "step", "loss", {train, val}}}, 1, 640,
                   360);
}

}  // namespace bg::cli
