// config_meanings.cpp: one line per config key, what it means (`bitgrad config`, docs/config.md).
// `bitgrad config` refuses a key that a command reads and this table does not explain, and an
// entry here that no command reads.
#include "cli.h"

namespace bg::cli {

const std::map<std::string, std::string>& config_key_meanings() {
  static const std::map<std::string, std::string> m = {
      // run: where outputs go and which device
      {"run.name", "run name; outputs go to runs/<name> unless run.out_dir is set"},
      {"run.out_dir", "output folder (checkpoints, metrics.csv, config.yaml, plots)"},
      {"run.seed", "seeds the run's random streams (initialisation, data, dropout)"},
      {"run.device", "auto (CUDA when present), cpu, cuda or cuda:N"},
      {"run.resume", "continue from out_dir/last.h5 exactly where it stopped"},
      {"run.resume_mode_change",
       "with run.resume: continue even though the checkpoint's compute mode differs from the "
       "config's (the run then holds two arithmetics)"},
      {"run.stop_after_steps",
       "stop after this many steps of this invocation, saving last.h5 (0: off)"},
      // data (train)
      {"data.path", "text file, split at data.val_fraction of its characters (nanoGPT's split)"},
      {"data.val_fraction", "last fraction of the text's characters held out for validation"},
      {"data.train_bin", "llm.c token shard to train on (bitgrad prepare), instead of data.path"},
      {"data.val_bin", "llm.c token shard to validate on, with data.train_bin"},
      {"data.tokenizer",
       "char (the text's byte set), byte (256 ids), byte_pair (bytes in, the next two bytes "
       "predicted jointly by a BIDE head over 16 bits) or gpt2 (GPT-2 BPE)"},
      {"data.gpt2_dir", "folder with GPT-2's encoder.json and vocab.bpe"},
      // model (train)
      {"model.type", "char_mlp or gpt"},
      {"model.context", "char_mlp: characters of context"},
      {"model.n_embd", "char_mlp: embedding width per character; gpt: model width"},
      {"model.n_hidden", "char_mlp: hidden width"},
      {"model.n_layer", "char_mlp: hidden layers; gpt: transformer blocks"},
      {"model.dropout", "dropout probability"},
      {"model.block_size", "gpt: context length (position embeddings)"},
      {"model.n_head", "gpt: attention heads (must divide n_embd)"},
      {"model.bias", "gpt: biases in the linears and LayerNorms"},
      {"model.attention",
       "gpt: fused (one kernel per pass; CUDA needs bf16 precision and head dim 64), composed "
       "(any mode) or auto (fused where it honours the mode)"},
      {"model.linear", "gpt: the projections' layer kind, dense or bitlinear (BitNet b1.58)"},
      {"model.gelu", "gpt: tanh (GPT-2, llm.c) or erf (nanoGPT's nn.GELU())"},
      {"model.head",
       "gpt: softmax (tied to the token embedding) or bide (the next token's id as a bit "
       "pattern, normalised exactly over the vocabulary by SICK)"},
      {"head.bide.bits", "bits per token id (at least enough for the vocabulary)"},
      {"head.bide.hidden", "H, the BIDE head's hidden units"},
      {"head.bide.sick.dtype", "W and r inside the CUDA SICK kernel: fp32 or fp16"},
      {"head.bide.sick.variant",
       "how SICK walks the patterns: auto, bruteforce or precomputed (H <= 64)"},
      {"head.bide.code",
       "which pattern stands for which id: id, frequency (ids ranked by their count in the "
       "training data), or frequent_first (the hybrid's softmax_ids most frequent ids, then "
       "the rest in id order)"},
      {"head.bide.softmax_ids",
       "K > 0: a hybrid head, the K most frequent ids with softmax logits of their own "
       "(K x n_embd), the BIDE over the rest, one exact normaliser; needs code frequency or "
       "frequent_first"},
      {"head.bide.tie_softmax",
       "the hybrid's softmax rows are the token embedding's rows of those ids (needs "
       "model.input embedding)"},
      {"model.input",
       "gpt: embedding (a vocab_size x n_embd table) or bits (the id's bits in {-1, +1} "
       "through a linear layer; needs model.head bide)"},
      {"model.vocab_size",
       "gpt: 0 = the tokenizer's size; larger pads the embedding (GPT-2: 50304)"},
      {"bitlinear.weight_scale", "ternary weight scale: absmean or absmedian of |W|"},
      {"bitlinear.act_bits", "activation bits per row after the norm (2 to 8)"},
      {"bitlinear.norm", "parameter-free norm before the activation quantiser"},
      {"bitlinear.lm_head", "the tied LM head as a BitLinear product too"},
      // train
      {"train.steps", "optimizer steps"},
      {"train.batch_size",
       "train: sequences per micro-batch; fit-bide: samples per distribution per step"},
      {"train.grad_accum",
       "micro-batches per optimizer step, over all ranks of a data-parallel run (each runs "
       "grad_accum / ranks)"},
      {"train.shard_optimizer",
       "data parallel: each rank keeps and updates 1/N of AdamW's state (ZeRO-1); checkpoints "
       "hold the whole state"},
      {"train.eval_interval", "steps between validation passes (and checkpoints)"},
      {"train.eval_iters", "batches per validation pass"},
      {"train.log_interval", "steps between progress lines"},
      {"train.grad_clip", "global gradient-norm clip (0: off)"},
      {"train.precision",
       "CUDA matmul operands: fp32, tf32 or bf16 (fp32 accumulation and master weights; the CPU "
       "computes fp32)"},
      {"train.deterministic",
       "batch-invariant arithmetic: the same bits run to run and whatever the batch "
       "(docs/determinism.md)"},
      {"train.matmul", "standard, or lmul: multiplies as L-Mul integer adds (docs/lmul.md)"},
      {"train.ema", "fit-bide: EMA factor of the reported loss"},
      {"train.cuda_graph", "fit-bide: capture a training step as a CUDA graph and replay it"},
      {"lmul.mantissa_bits", "operands rounded to this many mantissa bits (7: bf16's)"},
      {"lmul.scope", "which matmuls multiply by L-Mul: attention, mlp or all"},
      {"lmul.backward", "the gradients' products: lmul too, or exact"},
      // optimizer and schedule (both commands)
      {"optimizer.type", "adamw or sgd"},
      {"optimizer.lr", "peak learning rate"},
      {"optimizer.betas", "AdamW's beta1 and beta2, each in [0, 1)"},
      {"optimizer.eps", "AdamW's epsilon"},
      {"optimizer.weight_decay", "decoupled weight decay, on parameters of 2 or more dims"},
      {"optimizer.momentum", "SGD momentum"},
      {"schedule.type", "learning-rate schedule: constant, cosine, linear or exponential"},
      {"schedule.warmup_steps", "linear warmup steps"},
      {"schedule.min_lr", "floor (cosine, linear) or end point (exponential)"},
      {"schedule.stage2_step", "BitNet's second stage from this 0-based step on (0: one stage)"},
      {"schedule.stage2_lr_scale", "the learning rate's factor in the second stage"},
      {"schedule.stage2_weight_decay", "the weight decay in the second stage"},
      // fit-bide
      {"bide.dtype", "value type: float16, bfloat16, uint8, uint16, int8, int16 or uint"},
      {"bide.bits", "bits for bide.dtype uint (cost grows as 2^B)"},
      {"bide.hidden", "H, hidden units of the BIDE MLP (default 2B)"},
      {"bide.range",
       "where each distribution's mass lies: auto (the training values' range, widened), all "
       "(every "
       "pattern) or [lo, hi]"},
      {"bide.auto_margin", "bide.range auto: the widening, as a fraction of max - min"},
      {"bide.support", "[lo, hi): restrict every distribution to these patterns (bide.range all)"},
      {"sick.variant", "how SICK walks the 2^B patterns: auto, bruteforce or precomputed"},
      {"sick.dtype", "W and r inside the CUDA kernel: fp32 or fp16"},
      {"eval.samples", "held-out samples per built-in distribution"},
      {"eval.plot_bins", "bins of the CDF and density plots"},
      {"distributions[].kind", "a built-in law (normal, gamma, ...) or file"},
      {"distributions[].name", "the name in the summary and plots (default: the kind)"},
      {"distributions[].mu", "normal, lognormal, laplace: location"},
      {"distributions[].sigma", "normal, lognormal: scale"},
      {"distributions[].alpha", "gamma: shape; pareto: shape"},
      {"distributions[].beta", "gamma: rate"},
      {"distributions[].x_m", "pareto: scale (the minimum)"},
      {"distributions[].lambda", "poisson: mean; weibull: scale"},
      {"distributions[].n", "binomial: trials"},
      {"distributions[].p", "binomial: success probability"},
      {"distributions[].nu", "student_t: degrees of freedom"},
      {"distributions[].scale", "student_t: scale"},
      {"distributions[].low", "uniform: lower end"},
      {"distributions[].high", "uniform: upper end"},
      {"distributions[].rate", "exponential: rate"},
      {"distributions[].a", "beta: alpha"},
      {"distributions[].b", "beta: beta; laplace: scale"},
      {"distributions[].k", "weibull: shape"},
      {"distributions[].weights", "mixture: component weights (positive)"},
      {"distributions[].means", "mixture: component means"},
      {"distributions[].stds", "mixture: component standard deviations (positive)"},
      {"distributions[].path", "file: the samples file"},
      {"distributions[].format", "file: auto, text, csv or hdf5"},
      {"distributions[].column", "file: csv column (index or header name)"},
      {"distributions[].dataset", "file: hdf5 dataset name"},
      {"distributions[].skip_invalid", "file: skip values that do not parse instead of refusing"},
      {"distributions[].val_fraction", "file: fraction of the samples held out"},
  };
  return m;
}

}  // namespace bg::cli
