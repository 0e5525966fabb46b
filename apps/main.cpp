// main.cpp: the bitgrad command line. Library errors arrive as exceptions and leave here as
// one line on stderr and exit code 1.
#include <cstdio>
#include <cstring>
#include <exception>
#include <filesystem>
#include <fstream>
#include <string>

#include "cli.h"
#include "core/error.h"

namespace bg::cli {

Args parse_args(int argc, char** argv, int first) {
  Args a;
  for (int i = first; i < argc; ++i) {
    const std::string s = argv[i];
    if (s == "--set") {
      if (i + 1 >= argc) fail("cli", "--set needs key.path=value");
      a.overrides.push_back(argv[++i]);
    } else if (s.rfind("--set=", 0) == 0) {
      a.overrides.push_back(s.substr(6));
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

void Args::allow_only(const std::vector<std::string>& names) const {
  for (const auto& [k, v] : options) {
    bool ok = false;
    for (const auto& n : names) ok |= n == k;
    if (!ok) fail("cli", "unknown option '--", k, "'");
  }
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

void write_file_atomic(const std::string& path, const std::string& text) {
  namespace fs = std::filesystem;
  const fs::path p(path);
  if (p.has_parent_path()) fs::create_directories(p.parent_path());
  const std::string tmp = path + ".tmp";
  {
    std::ofstream f(tmp, std::ios::binary | std::ios::trunc);
    BG_CHECK(f.good(), "io", tmp, ": cannot open for writing");
    f << text;
    f.flush();
    BG_CHECK(f.good(), "io", tmp, ": write failed");
  }
  fs::rename(tmp, p);
}

}  // namespace bg::cli

namespace {

void usage() {
  std::puts(
      "usage: bitgrad <command> [args]\n"
      "\n"
      "commands:\n"
      "  fit-bide CONFIG [--set key=value ...] fit BIDE distributions (samplers or sample files)\n"
      "  train CONFIG [--set key=value ...]   train the model a YAML config describes\n"
      "  sample CKPT [--prompt TEXT] [--tokens N] [--temperature T] [--top-k K] [--seed S]\n"
      "                                       text from a trained GPT checkpoint\n"
      "  eval CKPT [--data FILE] [--batch-size B]  validation loss and perplexity of a GPT\n"
      "  prepare TEXT --out DIR [--tokenizer gpt2|byte] [--val-fraction F]\n"
      "                                       llm.c token shards DIR/train.bin, DIR/val.bin\n"
      "  bench sick [--out FILE] [--reps N]   SICK kernel benchmark (JSON)\n"
      "  bench attention [--out FILE]          fused vs composed causal attention (JSON)\n"
      "  info                                 build and device information\n"
      "  help                                 this message\n");
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2 || !std::strcmp(argv[1], "help") || !std::strcmp(argv[1], "--help")) {
    usage();
    return argc < 2 ? 2 : 0;
  }
  const std::string cmd = argv[1];
  try {
    const bg::cli::Args args = bg::cli::parse_args(argc, argv, 2);
    if (cmd == "train") return bg::cli::run_train(args);
    if (cmd == "fit-bide") return bg::cli::run_fit_bide(args);
    if (cmd == "sample") return bg::cli::run_sample(args);
    if (cmd == "eval") return bg::cli::run_eval(args);
    if (cmd == "prepare") return bg::cli::run_prepare(args);
    if (cmd == "info") return bg::cli::run_info(args);
    if (cmd == "bench") return bg::cli::run_bench(args);
    std::fprintf(stderr, "bitgrad: unknown command '%s' (see 'bitgrad help')\n", cmd.c_str());
    return 2;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "bitgrad %s: %s\n", cmd.c_str(), e.what());
    return 1;
  }
}
