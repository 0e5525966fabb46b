// main.cpp: the bitgrad command line. Library errors arrive as exceptions and leave here as
// one line on stderr and exit code 1.
#include <cstdio>
#include <cstring>
#include <exception>
#include <string>

#include "cli.h"
#include "core/error.h"

namespace bg::cli {

namespace {

// Options that take no value (every other --name takes one); each command's allow_only still
// decides whether it accepts them.
bool is_flag(const std::string& arg) {
  static const char* const kFlags[] = {"--packed"};
  for (const char* f : kFlags)
    if (arg == f) return true;
  return false;
}

}  // namespace

Args parse_args(int argc, char** argv, int first) {
  Args a;
  for (int i = first; i < argc; ++i) {
    const std::string s = argv[i];
    if (s == "--set") {
      if (i + 1 >= argc) fail("cli", "--set needs key.path=value");
      a.overrides.push_back(argv[++i]);
    } else if (s.rfind("--set=", 0) == 0) {
      a.overrides.push_back(s.substr(6));
    } else if (is_flag(s)) {
      a.options.emplace_back(s.substr(2), "");
    } else if (s.rfind("--", 0) == 0) {
      if (i + 1 >= argc) fail("cli", "option ", s, " needs a value");
      a.options.emplace_back(s.substr(2), argv[++i]);
    } else {
      a.positional.push_back(s);
    }
  }
  return a;
}

std::string Args::option(const std::string& name, const std::string& def) const {
  for (const auto& [k, v] : options)
    if (k == name) return v;
  return def;
}

bool Args::has(const std::string& name) const {
  for (const auto& [k, v] : options)
    if (k == name) return true;
  return false;
}

void Args::allow_only(const std::vector<std::string>& names) const {
  for (size_t i = 0; i < options.size(); ++i) {
    const std::string& k = options[i].first;
    bool ok = false;
    for (const auto& n : names) ok |= n == k;
    if (!ok) fail("cli", "unknown option '--", k, "' (see --help)");
    for (size_t j = 0; j < i; ++j)
      if (options[j].first == k) fail("cli", "option --", k, " given twice");
  }
}

void Args::exclusive(const std::string& a, const std::string& b) const {
  BG_CHECK(!(has(a) && has(b)), "cli", "--", a, " and --", b, " cannot be used together");
}

int64_t parse_integer(const std::string& text, const std::string& option, int64_t lo, int64_t hi) {
  size_t used = 0;
  long long v = 0;
  try {
    v = std::stoll(text, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  BG_CHECK(used == text.size() && !text.empty(), "cli", option, ": expected an integer, got '",
           text, "'");
  BG_CHECK(v >= lo && v <= hi, "cli", option, ": ", v, " is outside [", lo, ", ", hi, "]");
  return v;
}

double parse_number(const std::string& text, const std::string& option, double lo, double hi) {
  size_t used = 0;
  double v = 0;
  try {
    v = std::stod(text, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  BG_CHECK(used == text.size() && !text.empty(), "cli", option, ": expected a number, got '", text,
           "'");
  BG_CHECK(v >= lo && v <= hi, "cli", option, ": ", v, " is outside [", lo, ", ", hi, "]");
  return v;
}

}  // namespace bg::cli

int main(int argc, char** argv) {
  if (argc < 2 || !std::strcmp(argv[1], "help") || !std::strcmp(argv[1], "--help") ||
      !std::strcmp(argv[1], "-h")) {
    bg::cli::print_all_usage();
    return argc < 2 ? 2 : 0;
  }
  const std::string cmd = argv[1];
  // `bitgrad <command> --help` anywhere among its arguments: that command's usage, exit 0.
  for (int i = 2; i < argc && bg::cli::is_command(cmd); ++i)
    if (!std::strcmp(argv[i], "--help") || !std::strcmp(argv[i], "-h")) {
      bg::cli::print_usage(cmd);
      return 0;
    }
  try {
    const bg::cli::Args args = bg::cli::parse_args(argc, argv, 2);
    if (cmd == "train") return bg::cli::run_train(args);
    if (cmd == "fit-bide") return bg::cli::run_fit_bide(args);
    if (cmd == "sample") return bg::cli::run_sample(args);
    if (cmd == "eval") return bg::cli::run_eval(args);
    if (cmd == "prepare") return bg::cli::run_prepare(args);
    if (cmd == "export") return bg::cli::run_export(args);
    if (cmd == "plot") return bg::cli::run_plot(args);
    if (cmd == "info") return bg::cli::run_info(args);
    if (cmd == "checksum") return bg::cli::run_checksum(args);
    if (cmd == "check-determinism") return bg::cli::run_check_determinism(args);
    if (cmd == "bench") return bg::cli::run_bench(args);
    std::fprintf(stderr, "bitgrad: unknown command '%s' (see 'bitgrad help')\n", cmd.c_str());
    return 2;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "bitgrad %s: %s\n", cmd.c_str(), e.what());
    return 1;
  }
}
