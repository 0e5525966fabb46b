// train.cpp: `bitgrad train CONFIG`: reads the config, builds data, model and optimizer, and
// runs the training loop with periodic evaluation, a progress line and a metrics file.
#include <chrono>
#include <cmath>
#include <cstdio>
#include <sstream>

#include "cli.h"
#include "core/config.h"
#include "core/optim.h"
#include "data/text.h"
#include "models/char_mlp.h"

namespace bg::cli {
namespace {

struct TrainConfig {
  std::string out_dir, device, data_path;
  uint64_t seed = 0;
  double val_fraction = 0.1;
  CharMLPConfig model;
  int64_t steps = 0, batch = 0, eval_interval = 0, eval_iters = 0, log_interval = 0;
  double grad_clip = 0;
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
  c.data_path = r.string("data.path");
  c.val_fraction = r.number("data.val_fraction", 0.1, 0.0, 0.5);
  r.choice("model.type", "char_mlp", {"char_mlp"});
  c.model.context = r.integer("model.context", 16, 1, 4096);
  c.model.n_embd = r.integer("model.n_embd", 32, 1, 65536);
  c.model.n_hidden = r.integer("model.n_hidden", 256, 1, 1 << 20);
  c.model.n_layer = r.integer("model.n_layer", 2, 0, 64);
  c.model.dropout = r.number("model.dropout", 0.0, 0.0, 0.95);
  c.steps = r.integer("train.steps", 1000, 1, int64_t(1) << 40);
  c.batch = r.integer("train.batch_size", 64, 1, 1 << 24);
  c.eval_interval = r.integer("train.eval_interval", 250, 1, int64_t(1) << 40);
  c.eval_iters = r.integer("train.eval_iters", 20, 1, 1 << 20);
  c.log_interval = r.integer("train.log_interval", 100, 1, int64_t(1) << 40);
  c.grad_clip = r.number("train.grad_clip", 1.0, 0.0, 1e9);
  c.optimizer = r.choice("optimizer.type", "adamw", {"adamw", "sgd"});
  c.schedule.lr = r.number("optimizer.lr", 1e-3, 0.0, 10.0);
  const std::vector<double> betas = r.numbers("optimizer.betas", {0.9, 0.999}, 2);
  for (double b : betas)
    if (b < 0 || b >= 1) r.fail_at("optimizer.betas", "each beta must be in [0, 1)");
  c.adamw.beta1 = betas[0];
  c.adamw.beta2 = betas[1];
  c.adamw.eps = r.number("optimizer.eps", 1e-8, 0.0, 1.0);
  c.adamw.weight_decay = r.number("optimizer.weight_decay", 0.0, 0.0, 10.0);
  c.momentum = r.number("optimizer.momentum", 0.9, 0.0, 1.0);
  c.schedule.kind =
      r.choice("schedule.type", "constant", {"constant", "cosine", "linear", "exponential"});
  c.schedule.warmup_steps = r.integer("schedule.warmup_steps", 0, 0, c.steps);
  c.schedule.min_lr = r.number("schedule.min_lr", 0.0, 0.0, 10.0);
  if (c.schedule.kind == "exponential" && c.schedule.min_lr <= 0)
    r.fail_at("schedule.min_lr", "an exponential schedule needs min_lr > 0");
  c.schedule.total_steps = c.steps;
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

}  // namespace

int run_train(const Args& args) {
  args.allow_only({});
  BG_CHECK(args.positional.size() == 1, "train",
           "usage: bitgrad train CONFIG [--set key=value ...]");
  ConfigReader reader(args.positional[0], args.overrides);
  const TrainConfig cfg = read_config(reader);
  const Device device = parse_device(cfg.device);
  std::printf("# effective config (%s)\n%s", args.positional[0].c_str(),
              reader.effective_yaml().c_str());

  const std::string text = read_text_file(cfg.data_path);
  const CharVocab vocab(text);
  const TokenSplit split = split_tokens(vocab.encode(text), cfg.val_fraction);
  BG_CHECK(int64_t(split.val.size()) > cfg.model.context, "train", cfg.data_path,
           ": validation split has ", split.val.size(),
           " tokens, fewer than context + 1 = ", cfg.model.context + 1);
  CharMLPConfig mcfg = cfg.model;
  mcfg.vocab_size = vocab.size();
  Generator init(cfg.seed), data_gen(cfg.seed + 1), dropout_gen(cfg.seed + 2),
      eval_gen(cfg.seed + 3);
  CharMLP model(mcfg, init);
  FlatParameters params(model.named_parameters(), device);
  std::printf(
      "data: %zu train / %zu val tokens, vocab %lld | model: %lld parameters | device: %s\n",
      split.train.size(), split.val.size(), (long long)vocab.size(), (long long)params.numel(),
      device.str().c_str());
  std::unique_ptr<AdamW> adamw;
  std::unique_ptr<SGD> sgd;
  if (cfg.optimizer == "adamw")
    adamw = std::make_unique<AdamW>(params, cfg.adamw);
  else
    sgd = std::make_unique<SGD>(params, cfg.momentum, cfg.adamw.weight_decay);

  auto batch_loss = [&](const std::vector<int32_t>& tokens, Generator& gen) {
    Tensor x, y;
    sample_windows(tokens, cfg.batch, mcfg.context, gen, device, &x, &y);
    const Tensor target = y.slice(1, mcfg.context - 1, mcfg.context).reshape({cfg.batch});
    return cross_entropy(model.forward(x, dropout_gen), target);
  };
  auto evaluate = [&](const std::vector<int32_t>& tokens) {
    NoGradGuard no_grad;
    model.train(false);
    Generator gen(cfg.seed + 3);  // the same eval batches every time
    double total = 0;
    for (int64_t i = 0; i < cfg.eval_iters; ++i) total += batch_loss(tokens, gen).item();
    model.train(true);
    return total / double(cfg.eval_iters);
  };

  std::ostringstream metrics;
  metrics << "step,train_loss,val_loss,lr,ms_per_step\n";
  const auto t_start = std::chrono::steady_clock::now();
  auto t_last = t_start;
  double last_loss = NAN, best_val = INFINITY;
  for (int64_t step = 0; step < cfg.steps; ++step) {
    const double lr = cfg.schedule.at(step);
    params.zero_grad();
    Tensor loss = batch_loss(split.train, data_gen);
    loss.backward();
    Tensor scale;
    if (cfg.grad_clip > 0) scale = clip_grad_norm(params, cfg.grad_clip).scale;
    if (adamw)
      adamw->step(lr, scale);
    else
      sgd->step(lr, scale);
    const bool log = (step + 1) % cfg.log_interval == 0 || step == 0 || step + 1 == cfg.steps;
    const bool eval = (step + 1) % cfg.eval_interval == 0 || step + 1 == cfg.steps;
    if (!log && !eval) continue;
    last_loss = loss.item();  // syncs the device
    BG_CHECK(std::isfinite(last_loss), "train", "loss is ", last_loss, " at step ", step + 1,
             "; stopping");
    const auto now = std::chrono::steady_clock::now();
    const double elapsed = std::chrono::duration<double>(now - t_start).count();
    const double ms = std::chrono::duration<double, std::milli>(now - t_last).count() /
                      double(step == 0 ? 1 : std::min<int64_t>(cfg.log_interval, step + 1));
    t_last = now;
    double val = NAN;
    if (eval) {
      val = evaluate(split.val);
      best_val = std::min(best_val, val);
    }
    std::printf("step %6lld/%lld | loss %.4f | %s | lr %.2e | %.2f ms/step | %.0f tok/s | ETA %s\n",
                (long long)(step + 1), (long long)cfg.steps, last_loss,
                eval ? ("val " + std::to_string(val).substr(0, 6)).c_str() : "          ", lr, ms,
                double(cfg.batch * mcfg.context) * 1000.0 / ms,
                format_duration(elapsed / double(step + 1) * double(cfg.steps - step - 1)).c_str());
    std::fflush(stdout);
    metrics << step + 1 << "," << last_loss << "," << (eval ? std::to_string(val) : "") << "," << lr
            << "," << ms << "\n";
  }
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - t_start).count();

  // A short sample from the trained model, seeded by the first validation window.
  model.train(false);
  NoGradGuard no_grad;
  std::vector<int32_t> ctx(split.val.begin(), split.val.begin() + mcfg.context);
  std::string sample = vocab.decode(ctx);
  Generator sample_gen(cfg.seed + 4);
  for (int i = 0; i < 200; ++i) {
    std::vector<int64_t> window(ctx.end() - mcfg.context, ctx.end());
    const Tensor logits =
        model.forward(from_vector(window, {1, mcfg.context}, device), dropout_gen);
    const std::vector<double> p = softmax(logits, -1).to_vector<double>();
    const double u = rand({1}, sample_gen, 0, 1, DType::f64).item();
    double acc = 0;
    int32_t next = int32_t(p.size()) - 1;
    for (size_t k = 0; k < p.size(); ++k)
      if ((acc += p[k]) > u) {
        next = int32_t(k);
        break;
      }
    ctx.push_back(next);
    sample += vocab.decode({next});
  }
  write_file_atomic(cfg.out_dir + "/config.yaml", reader.effective_yaml());
  write_file_atomic(cfg.out_dir + "/metrics.csv", metrics.str());
  std::printf(
      "done: %lld steps in %.1f s | final train loss %.4f | best val loss %.4f | outputs in %s\n",
      (long long)cfg.steps, seconds, last_loss, best_val, cfg.out_dir.c_str());
  std::printf("sample:\n%s\n", sample.c_str());
  return 0;
}

}  // namespace bg::cli
