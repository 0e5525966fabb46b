// config_schema.cpp: `bitgrad config train|fit-bide [--markdown]`: every key a command reads,
// with its type, default, range and one-line meaning, taken from the validator itself: the
// command's config reader is run over a few probe configs that together take every branch, and
// ConfigReader records each key as it is read (core/config.h, ConfigKeySpec). The meanings come
// from the commands' declared lists (core/settings.h) and fit-bide's distribution table; a key
// without one, or a meaning for a key no command reads, is an error, so the printed reference
// (and docs/config.md, generated from it) cannot drift.
#include <algorithm>
#include <cstdio>
#include <map>
#include <set>

#include "cli.h"
#include "core/config.h"
#include "core/error.h"
#include "fit_bide.h"
#include "models/bide_fit/bide_fit_data.h"
#include "train.h"

namespace bg::cli {
namespace {

// Probe configs (as --set overrides) that together reach every key of a command. A probe's label
// names what it changes, so a default that differs there is printed with it ("32; gpt: 384").
struct Probe {
  std::string label;
  std::vector<std::string> sets;
};

const std::vector<Probe> kTrainProbes = {
    {"", {"data.path=x.txt"}},
    {"gpt",
     {"data.path=x.txt", "model.type=gpt", "model.linear=bitlinear", "train.matmul=lmul",
      "data.tokenizer=gpt2", "run.resume=true", "schedule.type=cosine", "schedule.stage2_step=1"}},
    {"gpt",
     {"data.train_bin=a.bin", "data.val_bin=b.bin", "data.tokenizer=byte", "model.type=gpt",
      "optimizer.type=sgd", "model.head=bide", "model.init_from=w"}},
    {"gpt",
     {"data.path=x.txt", "data.tokenizer=byte_pair", "model.type=gpt", "model.head=bide",
      "model.input=bits"}},
    {"forecaster",
     {"data.path=x.csv", "data.format=series", "model.type=forecaster", "model.head=bide"}},
    {"forecaster",
     {"data.path=x.csv", "data.format=series", "model.type=forecaster", "model.head=binned"}},
    {"forecaster",
     {"data.path=x.csv", "data.format=series", "model.type=forecaster", "model.head=quantile"}}};

std::string every_kind_of_distribution() {
  return "distributions=[{kind: normal, mu: 0, sigma: 1}, {kind: lognormal, mu: 0, sigma: 1}, "
         "{kind: gamma, alpha: 2}, {kind: pareto, alpha: 3}, {kind: poisson, lambda: 3}, "
         "{kind: binomial, p: 0.5}, {kind: student_t, nu: 3}, {kind: uniform, low: 0, high: 1}, "
         "{kind: exponential, rate: 1}, {kind: beta, a: 2, b: 2}, {kind: laplace, mu: 0, b: 1}, "
         "{kind: weibull, k: 2, lambda: 1}, {kind: mixture, weights: [1], means: [0], stds: [1]}, "
         "{kind: file, path: x.txt}]";
}

std::vector<Probe> fit_bide_probes() {
  const std::string all = every_kind_of_distribution();
  return {
      {"", {all}},
      {"uint",
       {all, "bide.dtype=uint", "bide.range=all", "bide.support=[0, 4]", "schedule.stage2_step=1"}},
      {"", {all, "bide.range=[0, 1]", "schedule.type=constant"}}};
}

template <typename ReadFn>
std::vector<ConfigKeySpec> schema_of(const std::vector<Probe>& probes, ReadFn read) {
  std::vector<ConfigKeySpec> keys;
  for (const Probe& probe : probes) {
    ConfigReader r("", probe.sets);
    read(r);
    for (const ConfigKeySpec& s : r.schema()) {
      auto it = std::find_if(keys.begin(), keys.end(),
                             [&](const ConfigKeySpec& k) { return k.key == s.key; });
      if (it == keys.end()) {
        keys.push_back(s);
      } else if (!probe.label.empty() && it->def.find(probe.label + ": ") == std::string::npos) {
        if (it->def != s.def) it->def += "; " + probe.label + ": " + s.def;
        if (it->range != s.range) it->range += "; " + probe.label + ": " + s.range;
      }
    }
  }
  return keys;
}

std::string cell(const std::string& s) { return s.empty() ? "" : "`" + s + "`"; }

}  // namespace

std::vector<ConfigKeySpec> command_schema(const std::string& command) {
  if (command == "train")
    return schema_of(kTrainProbes, [](ConfigReader& r) { read_train_config(r); });
  BG_CHECK(command == "fit-bide", "config", "expected train or fit-bide, got '", command, "'");
  return schema_of(fit_bide_probes(), [](ConfigReader& r) { read_fit_config(r); });
}

const std::map<std::string, std::string>& config_key_meanings() {
  static const std::map<std::string, std::string> m = [] {
    std::map<std::string, std::string> m;
    add_meanings(run_settings(), m);
    add_meanings(fit_settings(), m);
    add_distribution_meanings(m);
    return m;
  }();
  return m;
}

int run_config(const Args& args) {
  args.allow_only({"markdown"});
  BG_CHECK(args.positional.size() == 1, "config",
           "usage: bitgrad config train|fit-bide [--markdown]");
  const std::map<std::string, std::string>& meanings = config_key_meanings();
  // Both commands' keys, so that a meaning no command reads is found whichever is asked for.
  std::set<std::string> read_somewhere;
  for (const char* c : {"train", "fit-bide"})
    for (const ConfigKeySpec& s : command_schema(c)) {
      BG_CHECK(meanings.count(s.key), "config", c, " reads ", s.key,
               ", which no declared list explains");
      read_somewhere.insert(s.key);
    }
  for (const auto& [key, meaning] : meanings)
    BG_CHECK(read_somewhere.count(key), "config", "a declared list explains ", key,
             ", which no command reads");
  const std::vector<ConfigKeySpec> keys = command_schema(args.positional[0]);
  const bool markdown = args.has("markdown");
  if (markdown) {
    std::printf("| key | type | default | range | meaning |\n| --- | --- | --- | --- | --- |\n");
  }
  for (const ConfigKeySpec& s : keys) {
    const std::string def = s.required ? "required" : s.def.empty() ? "\"\"" : s.def;
    if (markdown)
      std::printf("| `%s` | %s | %s | %s | %s |\n", s.key.c_str(), s.type.c_str(),
                  s.required ? "required" : cell(def).c_str(), cell(s.range).c_str(),
                  meanings.at(s.key).c_str());
    else
      std::printf("%-28s %-8s default %-12s %s\n%28s %s\n", s.key.c_str(), s.type.c_str(),
                  def.c_str(), s.range.empty() ? "" : ("range " + s.range).c_str(), "",
                  meanings.at(s.key).c_str());
  }
  return 0;
}

}  // namespace bg::cli
