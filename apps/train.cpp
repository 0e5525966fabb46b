// train.cpp: `bitgrad train CONFIG`: reads the config, builds data, model and optimizer, and
// runs the training loop with periodic evaluation, a progress line and a metrics file.
#include <atomic>
#include <chrono>
#include <cmath>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <sstream>

#include "cli.h"
#include "core/checkpoint.h"
#include "core/config.h"
#include "core/optim.h"
#include "data/text.h"
#include "kernels/cuda/device_runtime.h"
#include "lm_common.h"
#include "models/char_mlp.h"
#include "models/gpt.h"
#include "plot.h"

namespace bg::cli {
namespace {

struct TrainConfig {
  std::string out_dir, device, data_path, model_type, tokenizer, gpt2_dir, train_bin, val_bin;
  uint64_t seed = 0;
  bool resume = false;
  int64_t stop_after = 0;  // 0: run to train.steps
  double val_fraction = 0.1;
  CharMLPConfig model;
  GPTConfig gpt;
  int64_t steps = 0, batch = 0, grad_accum = 1, eval_interval = 0, eval_iters = 0, log_interval = 0;
  double grad_clip = 0;
  MatmulPrecision precision = MatmulPrecision::fp32;
  std::string optimizer;
  double momentum = 0;
  AdamWConfig adamw;
  LrSchedule schedule;
};

TrainConfig read_config(ConfigReader& r) {
  TrainConfig c;
  const std::string name = r.string("run.name", "run");
  c.out_dir = r.string("run.out_dir", "runs/" + name);
  c.seed = uint64_t(r.integer("run.seed", 1337, 0, INT64_MAX));
  c.device = r.string("run.device", "auto");
  c.resume = r.boolean("run.resume", false);
  // Stop (saving last.h5, as on SIGINT) after this many steps of this invocation: time-boxed
  // jobs, and the interrupted-and-resumed test.
  c.stop_after = r.integer("run.stop_after_steps", 0, 0, int64_t(1) << 40);
  // Text (data.path, split by data.val_fraction) or llm.c shards (data.train_bin/val_bin).
  c.train_bin = r.string("data.train_bin", "");
  if (c.train_bin.empty()) {
    c.data_path = r.string("data.path");
    c.val_fraction = r.number("data.val_fraction", 0.1, 0.0, 0.5);
    r.not_used("data.val_bin", "data.train_bin is not set (data.path is split instead)");
  } else {
    c.val_bin = r.string("data.val_bin");
    r.not_used("data.path", "data.train_bin is set (token shards replace the text file)");
    r.not_used("data.val_fraction", "data.train_bin is set (data.val_bin holds the split)");
  }
  c.tokenizer = r.choice("data.tokenizer", "char", {"char", "byte", "gpt2"});
  if (!c.train_bin.empty() && c.tokenizer == "char")
    r.fail_at("data.tokenizer", "token shards need a fixed vocabulary: byte or gpt2");
  if (c.tokenizer == "gpt2")
    c.gpt2_dir = r.string("data.gpt2_dir", "../shared/data/gpt2");
  else
    r.not_used("data.gpt2_dir", "data.tokenizer is " + c.tokenizer);
  c.model_type = r.choice("model.type", "char_mlp", {"char_mlp", "gpt"});
  const std::string other_model = "model.type is " + c.model_type;
  if (c.model_type == "char_mlp") {
    c.model.context = r.integer("model.context", 16, 1, 4096);
    c.model.n_embd = r.integer("model.n_embd", 32, 1, 65536);
    c.model.n_hidden = r.integer("model.n_hidden", 256, 1, 1 << 20);
    c.model.n_layer = r.integer("model.n_layer", 2, 0, 64);
    c.model.dropout = r.number("model.dropout", 0.0, 0.0, 0.95);
    for (const char* k : {"block_size", "n_head", "bias", "attention", "vocab_size", "gelu"})
      r.not_used(std::string("model.") + k, other_model);
  } else {
    c.gpt.block_size = r.integer("model.block_size", 256, 1, 1 << 20);
    c.gpt.n_layer = r.integer("model.n_layer", 6, 1, 256);
    c.gpt.n_head = r.integer("model.n_head", 6, 1, 1024);
    c.gpt.n_embd = r.integer("model.n_embd", 384, 1, 1 << 16);
    if (c.gpt.n_embd % c.gpt.n_head != 0)
      r.fail_at("model.n_head", "n_embd " + std::to_string(c.gpt.n_embd) +
                                    " is not divisible by n_head " + std::to_string(c.gpt.n_head));
    c.gpt.dropout = r.number("model.dropout", 0.0, 0.0, 0.95);
    c.gpt.bias = r.boolean("model.bias", false);
    c.gpt.fused_attention = r.choice("model.attention", "fused", {"fused", "composed"}) == "fused";
    // tanh: GPT-2 and llm.c; erf: nanoGPT's nn.GELU(), so nanoGPT evaluates the model exactly.
    c.gpt.gelu =
        r.choice("model.gelu", "tanh", {"tanh", "erf"}) == "erf" ? GeluForm::erf : GeluForm::tanh;
    // 0: the tokenizer's size; more pads the embedding (GPT-2's 50257 -> 50304, a multiple of
    // 64 for the GEMMs); padded ids are never targets and never sampled.
    c.gpt.vocab_size = r.integer("model.vocab_size", 0, 0, 1 << 24);
    c.model.context = c.gpt.block_size;
    for (const char* k : {"context", "n_hidden"})
      r.not_used(std::string("model.") + k, other_model);
  }
  c.steps = r.integer("train.steps", 1000, 1, int64_t(1) << 40);
  c.batch = r.integer("train.batch_size", 64, 1, 1 << 24);
  c.grad_accum = r.integer("train.grad_accum", 1, 1, 1 << 16);
  c.eval_interval = r.integer("train.eval_interval", 250, 1, int64_t(1) << 40);
  c.eval_iters = r.integer("train.eval_iters", 20, 1, 1 << 20);
  c.log_interval = r.integer("train.log_interval", 100, 1, int64_t(1) << 40);
  c.grad_clip = r.number("train.grad_clip", 1.0, 0.0, 1e9);
  // CUDA matmuls: fp32, tf32 or bf16 operands (fp32 accumulation, fp32 master weights,
  // activations and optimizer state in every mode). The CPU always computes in fp32.
  const std::string precision = r.choice("train.precision", "fp32", {"fp32", "tf32", "bf16"});
  c.precision = precision == "bf16"   ? MatmulPrecision::bf16
                : precision == "tf32" ? MatmulPrecision::tf32
                                      : MatmulPrecision::fp32;
  c.optimizer = r.choice("optimizer.type", "adamw", {"adamw", "sgd"});
  read_adamw_and_schedule(r, {1e-3, {0.9, 0.999}, 0.0, "constant", 0.0}, c.steps, &c.adamw,
                          &c.schedule, c.optimizer == "adamw");
  if (c.optimizer == "sgd")
    c.momentum = r.number("optimizer.momentum", 0.9, 0.0, 1.0);
  else
    r.not_used("optimizer.momentum", "optimizer.type is adamw");
  r.finish();
  return c;
}

std::string format_duration(double s) {
  char buf[32];
  if (s < 60)
    std::snprintf(buf, sizeof buf, "%.0fs", s);
  else
    std::snprintf(buf, sizeof buf, "%dm%02ds", int(s) / 60, int(s) % 60);
  return buf;
}

// SIGINT / SIGTERM ask the loop to save a checkpoint and stop after the current step.
std::atomic<int> g_stop_signal{0};
extern "C" void request_stop(int sig) { g_stop_signal = sig; }

// Train and validation loss against step, from the metrics CSV (resumed runs included).
std::string loss_plot(const std::string& metrics_csv) {
  plot::Series train{"train", "#1f77b4", {}, {}}, val{"val", "#d62728", {}, {}};
  std::istringstream in(metrics_csv);
  std::string line;
  std::getline(in, line);  // header
  while (std::getline(in, line)) {
    std::istringstream row(line);
    std::string fields[3];
    for (std::string& f : fields) std::getline(row, f, ',');
    // A row that does not parse (a hand-edited metrics_csv attribute) is left out of the plot.
    double v[3];
    bool ok[3];
    for (int i = 0; i < 3; ++i) {
      char* end = nullptr;
      v[i] = std::strtod(fields[i].c_str(), &end);
      ok[i] = !fields[i].empty() && *end == '\0';
    }
    if (!ok[0] || !ok[1]) continue;
    train.x.push_back(v[0]);
    train.y.push_back(v[1]);
    if (ok[2]) {
      val.x.push_back(v[0]);
      val.y.push_back(v[2]);
    }
  }
  return plot::svg({{"loss (cross-entropy, nats per token)", "step", "loss", {train, val}}}, 1, 640,
                   360);
}

// The training state a checkpoint holds besides the parameters.
struct RunState {
  int64_t step = 0;  // steps completed
  double best_val = INFINITY;
  uint64_t data_offset = 0, dropout_offset = 0;
  std::string metrics;  // the metrics CSV so far
};

}  // namespace

int run_train(const Args& args) {
  args.allow_only({});
  BG_CHECK(args.positional.size() == 1, "train",
           "usage: bitgrad train CONFIG [--set key=value ...]");
  ConfigReader reader(args.positional[0], args.overrides);
  const TrainConfig cfg = read_config(reader);
  const Device device = parse_device(cfg.device);
  // Before any work: an unwritable output folder, or a resume with nothing to resume, would
  // otherwise surface only at the first save.
  check_output_dir(cfg.out_dir, "train");
  const std::string last_path = cfg.out_dir + "/last.h5", best_path = cfg.out_dir + "/best.h5";
  BG_CHECK(!cfg.resume || std::filesystem::exists(last_path), "train",
           "run.resume is true but there is no checkpoint to resume: ", last_path,
           " does not exist (set run.resume: false to start from scratch)");
  std::printf("# effective config (%s)\n%s", args.positional[0].c_str(),
              reader.effective_yaml().c_str());

  std::unique_ptr<Tokenizer> tok;
  struct {
    std::vector<int32_t> train, val;
  } split;
  if (cfg.train_bin.empty()) {
    // nanoGPT's prepare scripts: split the text, then encode each part.
    const std::string text = read_text_file(cfg.data_path);
    tok = make_tokenizer(cfg.tokenizer, text, cfg.gpt2_dir);
    const size_t cut = split_point(text, cfg.val_fraction);
    split.train = tok->encode(text.substr(0, cut));
    split.val = tok->encode(text.substr(cut));
  } else {
    tok = make_tokenizer(cfg.tokenizer, "", cfg.gpt2_dir);
    split.train = read_tokens(cfg.train_bin, *tok);
    split.val = read_tokens(cfg.val_bin, *tok);
  }
  const std::string train_source = cfg.train_bin.empty() ? cfg.data_path : cfg.train_bin;
  const std::string val_source = cfg.train_bin.empty() ? cfg.data_path : cfg.val_bin;
  const int64_t context = cfg.model.context;
  BG_CHECK(int64_t(split.val.size()) > context, "train", val_source, ": validation split has ",
           split.val.size(), " tokens, fewer than context + 1 = ", context + 1);
  BG_CHECK(int64_t(split.train.size()) > context, "train", train_source, ": training split has ",
           split.train.size(), " tokens, fewer than context + 1 = ", context + 1);
  Generator init(cfg.seed), data_gen(cfg.seed + 1), dropout_gen(cfg.seed + 2);
  const bool is_gpt = cfg.model_type == "gpt";
  std::unique_ptr<CharMLP> mlp;
  std::unique_ptr<GPT> gpt;
  Module* model = nullptr;
  if (is_gpt) {
    GPTConfig g = cfg.gpt;
    if (g.vocab_size == 0) g.vocab_size = tok->vocab_size();
    BG_CHECK(g.vocab_size >= tok->vocab_size(), "train", "model.vocab_size ", g.vocab_size,
             " is smaller than the ", tok->kind(), " tokenizer's ", tok->vocab_size());
    BG_CHECK(!(g.fused_attention && device.is_cuda() && g.n_embd / g.n_head != 64), "config",
             "model.attention: fused runs head_dim 64 on CUDA, this model has n_embd / n_head = ",
             g.n_embd / g.n_head, "; set model.attention: composed");
    gpt = std::make_unique<GPT>(g, init);
    model = gpt.get();
  } else {
    CharMLPConfig m = cfg.model;
    m.vocab_size = tok->vocab_size();
    mlp = std::make_unique<CharMLP>(m, init);
    model = mlp.get();
  }
  const auto named = model->named_parameters();
  FlatParameters params(named, device);
  std::printf(
      "data: %zu train / %zu val tokens, vocab %lld | model: %s, %lld parameters | device: %s\n",
      split.train.size(), split.val.size(), (long long)tok->vocab_size(), cfg.model_type.c_str(),
      (long long)params.numel(), device.str().c_str());
  std::unique_ptr<AdamW> adamw;
  std::unique_ptr<SGD> sgd;
  if (cfg.optimizer == "adamw")
    adamw = std::make_unique<AdamW>(params, cfg.adamw);
  else
    sgd = std::make_unique<SGD>(params, cfg.momentum, cfg.adamw.weight_decay);

  // Checkpoints: last.h5 (every evaluation, the end, a signal: what resume reads) and best.h5
  // (the best validation loss so far). Parameters use the model's state_dict names; the tied
  // LM head is also stored as lm_head.weight so PyTorch's load_state_dict finds every key.
  auto save = [&](const std::string& path, const RunState& st) {
    CheckpointWriter ck(path);
    for (const auto& [name, t] : named) ck.tensor(name, t);
    if (is_gpt)
      for (const auto& [name, t] : named)
        if (name == "transformer.wte.weight") ck.tensor("lm_head.weight", t);
    // Optimizer state in a group of its own: the root holds exactly the model's state_dict.
    if (adamw) {
      ck.tensor("optimizer/exp_avg", adamw->exp_avg());
      ck.tensor("optimizer/exp_avg_sq", adamw->exp_avg_sq());
    } else {
      ck.tensor("optimizer/momentum_buffer", sgd->momentum_buffer());
    }
    ck.attr("format", std::string(kTrainFormat));
    ck.attr("model_type", cfg.model_type);
    ck.attr("config", reader.effective_yaml());
    tok->save(ck);
    if (is_gpt) save_gpt_config(ck, gpt->config());
    ck.attr("val_data", val_source);
    ck.attr("val_fraction", cfg.val_fraction);
    ck.attr("step", st.step);
    ck.attr("optimizer_steps", adamw ? adamw->steps() : st.step);
    ck.attr("best_val_loss", st.best_val);
    ck.attr("data_rng_offset", int64_t(st.data_offset));
    ck.attr("dropout_rng_offset", int64_t(st.dropout_offset));
    ck.attr("metrics_csv", st.metrics);
    ck.commit();
  };
  RunState state;
  state.metrics = "step,train_loss,val_loss,lr,ms_per_step\n";
  int64_t saved_step = -1;  // the step of the last.h5 this run can fall back to (-1: none)
  if (cfg.resume) {
    CheckpointReader ck(last_path);
    BG_CHECK(is_train_checkpoint(ck), "train", last_path, " is not a bitgrad train checkpoint");
    BG_CHECK(ck.str_attr("model_type") == cfg.model_type, "train", last_path, " holds a ",
             ck.str_attr("model_type"), " model, the config asks for ", cfg.model_type);
    const auto saved_tok = load_tokenizer(ck);
    BG_CHECK(saved_tok->kind() == tok->kind() && saved_tok->vocab_size() == tok->vocab_size() &&
                 (tok->kind() != "char" ||
                  ck.str_attr("vocab_chars") == static_cast<const CharTokenizer&>(*tok).chars()),
             "train", last_path, " was trained with another vocabulary (", saved_tok->kind(), ", ",
             saved_tok->vocab_size(), " tokens) than this config's data (", tok->kind(), ", ",
             tok->vocab_size(), " tokens)");
    if (is_gpt) {
      const std::string diff =
          gpt_architecture_difference(load_gpt_config(ck, last_path), gpt->config());
      BG_CHECK(diff.empty(), "train", last_path,
               " holds another architecture than the config (checkpoint vs config: ", diff, ")");
    }
    load_parameters(ck, named);
    // bitgrad-train-1 kept the optimizer state at the root as optimizer.*.
    const std::string opt = ck.has("optimizer/exp_avg") || ck.has("optimizer/momentum_buffer")
                                ? "optimizer/"
                                : "optimizer.";
    if (adamw) {
      adamw->exp_avg().copy_(ck.tensor(opt + "exp_avg", DType::f32, adamw->exp_avg().shape()));
      adamw->exp_avg_sq().copy_(
          ck.tensor(opt + "exp_avg_sq", DType::f32, adamw->exp_avg_sq().shape()));
      adamw->set_steps(ck.int_attr("optimizer_steps"));
    } else {
      sgd->momentum_buffer().copy_(
          ck.tensor(opt + "momentum_buffer", DType::f32, sgd->momentum_buffer().shape()));
    }
    state.step = ck.int_attr("step");
    state.best_val = ck.float_attr("best_val_loss");
    data_gen.offset = uint64_t(ck.int_attr("data_rng_offset"));
    dropout_gen.offset = uint64_t(ck.int_attr("dropout_rng_offset"));
    state.metrics = ck.str_attr("metrics_csv");
    BG_CHECK(state.step <= cfg.steps, "train", last_path, " is at step ", state.step,
             ", past train.steps = ", cfg.steps);
    saved_step = state.step;
    std::printf("resumed from %s at step %lld\n", last_path.c_str(), (long long)state.step);
  }

  auto batch_loss = [&](const std::vector<int32_t>& tokens, Generator& gen) {
    Tensor x, y;
    sample_windows(tokens, cfg.batch, context, gen, device, &x, &y);
    if (is_gpt) return gpt->loss(x, y, dropout_gen);
    const Tensor target = y.slice(1, context - 1, context).reshape({cfg.batch});
    return cross_entropy(mlp->forward(x, dropout_gen), target);
  };
  auto evaluate = [&](const std::vector<int32_t>& tokens) {
    NoGradGuard no_grad;
    model->train(false);
    Generator gen(cfg.seed + 3);  // the same eval batches every time
    double total = 0;
    for (int64_t i = 0; i < cfg.eval_iters; ++i) total += batch_loss(tokens, gen).item();
    model->train(true);
    return total / double(cfg.eval_iters);
  };

  // Steps done and where the batch and dropout streams stand: what resume continues from.
  auto record_position = [&](int64_t steps_done) {
    state.step = steps_done;
    state.data_offset = data_gen.offset;
    state.dropout_offset = dropout_gen.offset;
  };
  // MFU as nanoGPT estimates it (PaLM appendix B): 6 N + 12 L C T FLOPs per token, N the
  // non-embedding parameters, against the GPU's dense bf16 peak.
  double flops_per_token = 0, peak_tflops = 0;
  if (is_gpt && device.is_cuda()) {
    const GPTConfig& g = gpt->config();
    flops_per_token = 6.0 * double(gpt->non_embedding_parameters()) +
                      12.0 * double(g.n_layer * g.n_embd * g.block_size);
    peak_tflops = peak_bf16_tflops(cuda::device_name(device.index));
  }
  set_matmul_precision(cfg.precision);
  // Non-finite losses and gradient norms are caught on the device at the step they happen and
  // read when a progress line syncs anyway; nothing non-finite is ever saved.
  NonFiniteWatch loss_watch(device), grad_watch(device);
  auto checkpoint_note = [&]() {
    return saved_step >= 0
               ? str_cat("the last checkpoint, ", last_path, " (step ", saved_step,
                         "), is kept as it was")
               : str_cat("no checkpoint was saved by this run (", last_path,
                         " is first written at step ", std::min(cfg.eval_interval, cfg.steps), ")");
  };
  auto stop_if_nonfinite = [&]() {
    const int64_t at_loss = loss_watch.first_step(), at_grad = grad_watch.first_step();
    if (at_loss == 0 && at_grad == 0) return;
    const bool is_loss = at_loss != 0 && (at_grad == 0 || at_loss <= at_grad);
    fail("train", is_loss ? "the loss" : "the gradient norm", " became non-finite at step ",
         is_loss ? at_loss : at_grad, "; stopping: ", checkpoint_note());
  };
  g_stop_signal = 0;
  auto old_int = std::signal(SIGINT, request_stop);
  auto old_term = std::signal(SIGTERM, request_stop);
  const auto t_start = std::chrono::steady_clock::now();
  auto t_last = t_start;
  const int64_t first_step = state.step;
  double last_loss = NAN;
  int64_t step = first_step;
  bool stopped_early = false;
  for (; step < cfg.steps && !g_stop_signal; ++step) {
    if (cfg.stop_after > 0 && step - first_step == cfg.stop_after) {
      stopped_early = true;
      break;
    }
    const double lr = cfg.schedule.at(step);
    params.zero_grad();
    Tensor loss;
    for (int64_t micro = 0; micro < cfg.grad_accum; ++micro) {
      loss = batch_loss(split.train, data_gen);
      loss_watch.check(loss, step + 1);
      (cfg.grad_accum > 1 ? loss / double(cfg.grad_accum) : loss).backward();
    }
    Tensor scale;
    if (cfg.grad_clip > 0) {
      const ClipResult clip = clip_grad_norm(params, cfg.grad_clip);
      scale = clip.scale;
      grad_watch.check(clip.norm, step + 1);
    } else {
      grad_watch.check(grad_norm(params), step + 1);
    }
    if (adamw)
      adamw->step(lr, scale);
    else
      sgd->step(lr, scale);
    const bool log = (step + 1) % cfg.log_interval == 0 || step == 0 || step + 1 == cfg.steps;
    const bool eval = (step + 1) % cfg.eval_interval == 0 || step + 1 == cfg.steps;
    if (!log && !eval) continue;
    last_loss = loss.item();  // syncs the device
    stop_if_nonfinite();
    const auto now = std::chrono::steady_clock::now();
    const double elapsed = std::chrono::duration<double>(now - t_start).count();
    const double ms =
        std::chrono::duration<double, std::milli>(now - t_last).count() /
        double(step == first_step ? 1 : std::min<int64_t>(cfg.log_interval, step + 1 - first_step));
    t_last = now;
    double val = NAN;
    if (eval) {
      val = evaluate(split.val);
      BG_CHECK(std::isfinite(val), "train", "the validation loss is ", val, " at step ", step + 1,
               "; stopping: ", checkpoint_note());
    }
    const double tokens_per_step = double(cfg.batch * cfg.grad_accum * context);
    const double tokens_per_s = tokens_per_step * 1000.0 / ms;
    char mfu[32] = "";
    if (peak_tflops > 0)
      std::snprintf(mfu, sizeof mfu, " | MFU %.1f%%",
                    100.0 * flops_per_token * tokens_per_s / (peak_tflops * 1e12));
    std::printf(
        "step %6lld/%lld | loss %.4f | %s | lr %.2e | %.2f ms/step | %.0f tok/s%s | ETA %s\n",
        (long long)(step + 1), (long long)cfg.steps, last_loss,
        eval ? ("val " + std::to_string(val).substr(0, 6)).c_str() : "          ", lr, ms,
        tokens_per_s, mfu,
        format_duration(elapsed / double(step + 1 - first_step) * double(cfg.steps - step - 1))
            .c_str());
    std::fflush(stdout);
    state.metrics += std::to_string(step + 1) + "," + std::to_string(last_loss) + "," +
                     (eval ? std::to_string(val) : "") + "," + std::to_string(lr) + "," +
                     std::to_string(ms) + "\n";
    if (eval) {
      record_position(step + 1);
      const bool improved = val < state.best_val;
      if (improved) state.best_val = val;
      save(last_path, state);
      saved_step = state.step;
      if (improved) save(best_path, state);
      write_file_atomic(cfg.out_dir + "/metrics.csv", state.metrics);
    }
  }
  std::signal(SIGINT, old_int);
  std::signal(SIGTERM, old_term);
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - t_start).count();
  if (g_stop_signal || stopped_early) {
    stop_if_nonfinite();  // a stop saves the state: never a non-finite one
    record_position(step);
    save(last_path, state);
    write_file_atomic(cfg.out_dir + "/metrics.csv", state.metrics);
    if (stopped_early) {
      std::printf(
          "stopped after step %lld (run.stop_after_steps): checkpoint %s (resume with "
          "--set run.resume=true)\n",
          (long long)step, last_path.c_str());
      return 0;
    }
    std::printf(
        "stopped by signal %d after step %lld: checkpoint %s (resume with --set "
        "run.resume=true)\n",
        int(g_stop_signal), (long long)step, last_path.c_str());
    return 130;
  }
  write_file_atomic(cfg.out_dir + "/config.yaml", reader.effective_yaml());
  write_file_atomic(cfg.out_dir + "/loss.svg", loss_plot(state.metrics));

  // A short sample from the trained model, seeded by the first validation tokens.
  model->train(false);
  NoGradGuard no_grad;
  std::vector<int32_t> ctx(split.val.begin(),
                           split.val.begin() + (is_gpt ? std::min<int64_t>(context, 16) : context));
  Generator sample_gen(cfg.seed + 4);
  const SampleSettings settings{200, 1.0, 0};
  if (is_gpt) {
    ctx = generate(*gpt, ctx, settings, tok->vocab_size(), sample_gen, device);
  } else {
    for (int64_t i = 0; i < settings.new_tokens; ++i) {
      std::vector<int64_t> window(ctx.end() - context, ctx.end());
      const Tensor logits = mlp->forward(from_vector(window, {1, context}, device), dropout_gen);
      ctx.push_back(sample_token(logits.to_vector<float>(), settings, sample_gen));
    }
  }
  const std::string sample = tok->decode(ctx);
  std::printf(
      "done: %lld steps in %.1f s | final train loss %.4f | best val loss %.4f | outputs in %s\n",
      (long long)cfg.steps, seconds, last_loss, state.best_val, cfg.out_dir.c_str());
  std::printf("sample:\n%s\n", sample.c_str());
  return 0;
}

}  // namespace bg::cli
