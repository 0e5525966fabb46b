// train_config.cpp: the keys of `bitgrad train`, checked (README lists them).
#include <sstream>

#include "cli.h"
#include "core/config.h"
#include "plot.h"
#include "train.h"

namespace bg::cli {

TrainRun read_train_config(ConfigReader& r) {
  TrainRun c;
  c.trainer.command = "train";
  if (r.has("bitlinear.lm_head"))
    r.fail_at("bitlinear.lm_head",
              "replaced by model.head: bitlinear (the tied LM head as a BitLinear product)");
  run_settings().read(r, c);
  if (const SettingProblem p = data_spec_problem(c.data)) r.fail_at(p.key, p.message);
  const bool byte_pair = c.data.tokenizer == TokenizerKind::byte_pair;
  const bool series = c.data.format == DataFormat::series;
  if (series != (c.model.type == ModelType::forecaster))
    r.fail_at(series ? "model.type" : "data.format",
              series ? "data.format: series trains a model.type: forecaster"
                     : "model.type: forecaster reads data.format: series");
  if (series) {
    const ForecasterConfig& f = c.model.forecaster;
    if (const SettingProblem p = forecaster_config_problem(f)) r.fail_at(p.key, p.message);
    // The validation pass scores each series' data.horizon held-out points teacher-forced in one
    // window of block_size values, after its scale_window (held_out_windows): a longer horizon
    // would leave some of them unscored. (A forecast may run any horizon: its window slides.)
    if (c.data.horizon > f.block_size - f.scale_window)
      r.fail_at("data.horizon",
                std::to_string(c.data.horizon) + " held-out points do not fit one validation "
                "window after model.scale_window " + std::to_string(f.scale_window) +
                    " in model.block_size " + std::to_string(f.block_size) + " (at most " +
                    std::to_string(f.block_size - f.scale_window) +
                    "; forecast --horizon takes any length)");
  } else if (c.model.type == ModelType::char_mlp) {
    if (byte_pair)
      r.fail_at("data.tokenizer",
                "byte_pair predicts two bytes jointly: a model.type gpt with model.head bide");
  } else {
    GPTConfig& g = c.model.gpt;
    if (byte_pair && g.head != HeadKind::bide)
      r.fail_at("data.tokenizer",
                "byte_pair predicts 65,536 pair ids jointly, which only model.head: bide has an "
                "output over");
    g.predict_tokens = byte_pair ? 2 : 1;
    if (const SettingProblem p = gpt_config_problem(g, false)) r.fail_at(p.key, p.message);
    if (c.model.freeze_trunk_steps > 0 && g.head != HeadKind::bide)
      r.fail_at("model.freeze_trunk_steps",
                "the tied softmax head has no parameters of its own to train; freezing needs "
                "model.head: bide");
    if (byte_pair && g.vocab_size != 0 && g.vocab_size != 256)
      r.fail_at("model.vocab_size",
                "byte_pair pairs ids as first * 256 + second: leave model.vocab_size at 0 (256)");
  }
  if (const auto [key, why] = compute_mode_problem(c.mode); !key.empty()) r.fail_at(key, why);
  const std::string activations =
      c.model.type == ModelType::forecaster
          ? trunk_activations_problem(c.mode, c.model.forecaster)
          : activations_problem(c.mode, c.model.type == ModelType::gpt ? &c.model.gpt : nullptr);
  if (!activations.empty()) r.fail_at("train.activations", activations);
  // A char MLP has no attention: an L-Mul scope of attention alone would change nothing.
  if (c.model.type == ModelType::char_mlp && c.mode.algo == MatmulAlgo::lmul &&
      c.mode.lmul_scope == LmulScope::attention)
    r.fail_at("lmul.scope",
              "a char_mlp has no attention products; use mlp (its hidden layers) "
              "or all");
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
