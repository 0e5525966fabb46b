// usage.cpp: every command's usage and flags, written once: `bitgrad help` prints them all,
// `bitgrad <command> --help` prints one.
#include <cstdio>
#include <string>
#include <vector>

#include "cli.h"

namespace bg::cli {
namespace {

struct Flag {
  const char* name;  // "--tokens N"
  const char* help;
};

struct Command {
  const char* name;
  const char* synopsis;
  const char* summary;
  std::vector<Flag> flags;
};

const Flag kSetFlag = {
    "--set KEY.PATH=VALUE",
    "override one config key (repeatable); `bitgrad config train` lists the keys"};

// The commands in the order `bitgrad help` lists them (a table, built once at start).
const std::vector<Command> kCommands = {
      {"fit-bide",
       "fit-bide CONFIG [--set key=value ...]",
       "fit BIDE distributions (built-in samplers or sample files) with exact SICK normalisation",
       {kSetFlag}},
      {"train",
       "train CONFIG [--set key=value ...]",
       "train the model a YAML config describes (char MLP or GPT); checkpoints in run.out_dir",
       {kSetFlag}},
      {"launch",
       "launch --gpus N | --cpus N CONFIG [--set key=value ...]",
       "train one config data-parallel: N ranks of `bitgrad train` on this host (one per GPU, over "
       "NCCL; or N CPU processes over sockets); the same global batch as one process, and under "
       "train.deterministic the same checkpoint bits",
       {{"--gpus N", "ranks on GPUs 0..N-1"},
        {"--cpus N", "ranks as CPU processes (run.device: cpu)"},
        kSetFlag}},
      {"check-determinism",
       "check-determinism CONFIG [--runs N] [--steps S] [--out DIR] [--record FILE] "
       "[--compare FILE] [--set key=value ...]",
       "train N short runs in train.deterministic's mode and compare every checkpoint tensor; "
       "then a GPT's batch invariance (logits, dx) and sampler = trainer logits, or a "
       "forecaster's (forecasts alone vs with the file; KV-cached head outputs); exit 1 on any "
       "difference",
       {{"--runs N", "runs to compare (default 3)"},
        {"--steps S", "steps per run (default 20)"},
        {"--out DIR", "where the runs go (default runs/check_determinism)"},
        {"--record FILE", "write the checkpoint's dataset digests, to compare on another machine "
                          "(only when every check passed)"},
        {"--compare FILE", "check the checkpoint against a record another machine wrote"},
        kSetFlag}},
      {"sample",
       "sample CKPT|PACKED [--prompt TEXT | --prompt-file FILE] [options]",
       "text from a trained GPT checkpoint, written as it is generated",
       {{"--prompt TEXT", "the text to continue (default: a newline)"},
        {"--prompt-file FILE", "read the prompt from FILE (not with --prompt)"},
        {"--tokens N", "tokens to generate per sample (default 500)"},
        {"--temperature T", "softmax temperature; 0 is greedy (default 0.8)"},
        {"--top-k K", "draw from the K most likely tokens; 0 keeps all (default 200)"},
        {"--seed S", "random seed (default 1337)"},
        {"--samples N", "independent samples (default 1)"},
        {"--device D", "auto, cpu, cuda or cuda:N (default auto)"}}},
      {"eval",
       "eval CKPT|PACKED [--data FILE] [--batch-size B] [--device D] [--per-token FILE]",
       "loss (nats/token), bits per byte and perplexity of a GPT over every token of a "
       "validation set",
       {{"--data FILE", "a text file or an llm.c .bin shard (default: the run's own split)"},
        {"--batch-size B", "block_size windows per forward pass (default 8)"},
        {"--device D", "auto, cpu, cuda or cuda:N (default auto)"},
        {"--per-token FILE", "write each scored position's target id and its nats (CSV)"},
        {"FORECASTER", "a forecaster checkpoint is scored on each series' last data.horizon "
                       "points instead: CRPS, wQL, MASE, 80% coverage, NLL, and their ratios to "
                       "seasonal naive; its options --data, --horizon, --season M, --samples N, "
                       "--seed S, --truth FILE (a synthetic file's true laws), --json FILE, "
                       "--device"}}},
      {"forecast",
       "forecast CKPT --data FILE --out FILE.csv [--horizon H] [--context C] [--samples N] "
       "[--quantiles LIST]",
       "probabilistic forecasts of the points after each series of a file (a forecaster "
       "checkpoint): the mean and quantiles per step, and optionally every sample path",
       {{"--data FILE", "series: CSV unique_id,ds,y or one value a line (required)"},
        {"--out FILE", "CSV unique_id,ds,mean,q0.1,... (required)"},
        {"--horizon H", "steps ahead, any number (default: the run's data.horizon)"},
        {"--context C",
         "the fewest values each draw conditions on: the window slides to the last C values when "
         "the block is full (default: half model.block_size and one)"},
        {"--samples N", "sample paths per series (default 100)"},
        {"--quantiles LIST", "levels in (0, 1), comma-separated (default 0.1,...,0.9); exact "
                             "off the law for one step"},
        {"--seed S", "with the series' id, keys its random stream (default 0)"},
        {"--paths FILE", "also write every path: unique_id,ds,path,y"},
        {"--device D", "auto, cpu, cuda or cuda:N (default auto)"}}},
      {"export",
       "export CKPT (--packed | --format safetensors|llmc [--dtype fp32|bf16]) --out PATH",
       "--packed: a BitLinear GPT's inference file, ternary weights at 2 bits, which sample and "
       "eval run on the packed kernels with the checkpoint's logits; --format safetensors: a "
       "folder in transformers' GPT2LMHeadModel layout (model.safetensors, config.json); --format "
       "llmc: a .bin in llm.c's GPT-2 checkpoint layout (dense GPT-2-shaped models with biases; "
       "the vocabulary padded to a multiple of 128 with zero rows, as llm.c pads it)",
       {{"--packed", "2-bit BitLinear weights"},
        {"--format F", "safetensors or llmc: the weights for another tool"},
        {"--dtype D", "llmc: fp32 (default) or bf16"},
        {"--out PATH", "the file (--packed, llmc) or folder (safetensors) to write; not CKPT"}}},
      {"import",
       "import FILE --out CKPT.h5 [--tokenizer gpt2|byte] [--gpt2-dir DIR] [--vocab-size N]",
       "pretrained GPT-2 weights (a Hugging Face folder or .safetensors file with config.json "
       "beside it, or an llm.c .bin) as a checkpoint that sample, eval and export read; no "
       "optimizer state (fine-tune with model.init_from: FILE)",
       {{"--out FILE", "the checkpoint to write (required)"},
        {"--tokenizer T", "gpt2 (default) or byte, for a model over 256 ids"},
        {"--gpt2-dir DIR", "GPT-2's tokenizer files (default: a FILE folder's own vocab.json and "
                           "merges.txt, else datasets/gpt2)"},
        {"--vocab-size N", "embedding rows, at least the file's token ids (default: the token "
                           "ids; an llm.c file's padded rows are dropped, as its softmax "
                           "ignores them)"}}},
      {"plot",
       "plot [LABEL=]METRICS.csv ... --out FILE.svg [--title TEXT]",
       "validation and training loss of several train runs (their metrics.csv) in one SVG",
       {{"--out FILE", "the SVG to write (required)"},
        {"--title TEXT", "a prefix for the panel titles"}}},
      {"prepare",
       "prepare TEXT --out DIR [--tokenizer gpt2|byte] [--gpt2-dir DIR] [--val-fraction F]",
       "a text file to llm.c token shards DIR/train.bin and DIR/val.bin",
       {{"--out DIR", "output folder (required)"},
        {"--tokenizer gpt2|byte", "vocabulary (default gpt2)"},
        {"--gpt2-dir DIR", "folder with encoder.json and vocab.bpe (default datasets/gpt2)"},
        {"--val-fraction F", "last fraction of the characters held out (default 0.1)"}}},
      {"bench",
       "bench sick|attention|norms|gemm|bitlinear|lmul|bide_head|forecast [options]",
       "GPU kernel benchmarks: medians over rotated inputs, JSON with the GPU named",
       {{"--out FILE", "write the JSON here"},
        {"--reps N", "timed repetitions per case (default 30)"},
        {"--batch B", "sick: only this batch (64 or 16384)"},
        {"--part P", "bitlinear: training, inference or all (default all)"},
        {"--mantissa-bits M", "lmul: the operands' mantissa width (default 23)"},
        {"--dtype fp32|fp16", "sick: only this SICK precision"},
        {"--variant V", "sick: only bruteforce or precomputed"}}},
      {"config",
       "config train|fit-bide [--markdown]",
       "every config key of a command with its type, default, range and meaning",
       {{"--markdown", "print a Markdown table (docs/config.md is made from it)"}}},
      {"checksum",
       "checksum FILE.h5",
       "SHA-256 of every dataset of an HDF5 file (bit-for-bit comparisons of checkpoints)",
       {}},
      {"info", "info", "build and device information", {}},
      {"help", "help", "this list of every command and flag", {}},
      {"version", "version  (or --version)", "the release and what this build holds (CUDA and its architectures)", {}},
};

void print(const Command& c) {
  std::printf("  bitgrad %s\n      %s\n", c.synopsis, c.summary);
  for (const Flag& f : c.flags) std::printf("      %-24s %s\n", f.name, f.help);
}

}  // namespace

bool is_command(const std::string& name) {
  for (const Command& c : kCommands)
    if (name == c.name) return true;
  return false;
}

void print_usage(const std::string& name) {
  for (const Command& c : kCommands)
    if (name == c.name) {
      std::printf("usage:\n");
      print(c);
      return;
    }
}

void print_all_usage() {
  std::printf("usage: bitgrad <command> [args]   (bitgrad <command> --help: that command)\n\n");
  for (const Command& c : kCommands) {
    print(c);
    std::printf("\n");
  }
}

}  // namespace bg::cli
