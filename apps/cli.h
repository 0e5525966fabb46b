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
// The one-line meaning of every config key (`bitgrad config`), from the commands' declared
// lists (train's run_settings, fit-bide's fit_settings and its distributions' parameters).
const std::map<std::string, std::string>& config_key_meanings();
// fit_bide_config.cpp: the distributions' keys, distributions[].<key>, with their meanings.
void add_distribution_meanings(std::map<std::string, std::string>& out);
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
