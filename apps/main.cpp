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
      fail("cli", "unknown option '", s, "'");
    } else {
      a.positional.push_back(s);
    }
  }
  return a;
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
      "  train CONFIG [--set key=value ...]   train the model a YAML config describes\n"
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
    if (cmd == "info") return bg::cli::run_info(args);
    std::fprintf(stderr, "bitgrad: unknown command '%s' (see 'bitgrad help')\n", cmd.c_str());
    return 2;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "bitgrad %s: %s\n", cmd.c_str(), e.what());
    return 1;
  }
}
