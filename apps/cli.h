// cli.h: shared bits of the bitgrad subcommands.
#pragma once
#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "core/files.h"
#include "core/optim.h"

namespace bg {
class ConfigReader;
struct Device;
}  // namespace bg

namespace bg::cli {

// Positional arguments and the "--set key=value" overrides of a subcommand.
struct Args {
  std::vector<std::string> positional;
  std::vector<std::string> overrides;                        // --set key=value
  std::vector<std::pair<std::string, std::string>> options;  // --name value
  // The value of --name (or `def`); throws for an option the command does not take.
  std::string option(const std::string& name, const std::string& def) const;
  bool has(const std::string& name) const;
  // Throws for an option not in `names`, and for an option given twice.
  void allow_only(const std::vector<std::string>& names) const;
  // Throws when both options were given.
  void exclusive(const std::string& a, const std::string& b) const;
};
Args parse_args(int argc, char** argv, int first);
// An option's value as a number in [lo, hi]; a one-line error naming the option otherwise.
int64_t parse_integer(const std::string& text, const std::string& option, int64_t lo, int64_t hi);
double parse_number(const std::string& text, const std::string& option, double lo, double hi);


// run.name and run.out_dir: the folder a run writes, runs/<run.name> unless run.out_dir names
// another. A name is one folder name (not ".", "..", nor a path); a --set run.name on a config
// that pins run.out_dir is refused, since the output would not move.
std::string read_out_dir(ConfigReader& r, const std::string& default_name);

// Per-command defaults of the shared optimizer.* and schedule.* keys.
struct OptimizerDefaults {
  double lr;
  std::vector<double> betas;
  double weight_decay;
  ScheduleKind schedule;
  double min_lr;
};
// optimizer.{lr, betas, eps, weight_decay} and schedule.{type, warmup_steps, min_lr}, checked;
// the schedule spans `steps`. Without `adam` (SGD), betas and eps are reported as not used.
void read_adamw_and_schedule(ConfigReader& r, const OptimizerDefaults& defaults, int64_t steps,
                             AdamWConfig* adamw, LrSchedule* schedule, bool adam = true);

// usage.cpp: the usage of one command, or of all of them (bitgrad help).
bool is_command(const std::string& name);
void print_usage(const std::string& name);
void print_all_usage();

int run_train(const Args& args);
int run_launch(const Args& args, const char* self);
int run_info(const Args& args);
int run_checksum(const Args& args);
int run_check_determinism(const Args& args);
int run_bench(const Args& args);
int run_fit_bide(const Args& args);
int run_config(const Args& args);
// config_meanings.cpp: the one-line meaning of every config key (`bitgrad config`).
const std::map<std::string, std::string>& config_key_meanings();
int run_sample(const Args& args);
int run_eval(const Args& args);
// forecast.cpp: `bitgrad forecast`, and `bitgrad eval` of a forecaster checkpoint.
int run_forecast(const Args& args);
// Whether `path` names sample paths to score (a .csv) rather than a checkpoint.
bool is_paths_file(const std::string& path);
int run_forecast_eval(const Args& args);
int run_prepare(const Args& args);
int run_export(const Args& args);
int run_import(const Args& args);
int run_plot(const Args& args);

}  // namespace bg::cli
