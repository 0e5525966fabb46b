// cli.h: shared bits of the bitgrad subcommands.
#pragma once
#include <string>
#include <vector>

namespace bg::cli {

// Positional arguments and the "--set key=value" overrides of a subcommand.
struct Args {
  std::vector<std::string> positional;
  std::vector<std::string> overrides;
};
Args parse_args(int argc, char** argv, int first);

// Writes `text` to `path` atomically (temporary file + rename); creates parent folders.
void write_file_atomic(const std::string& path, const std::string& text);

int run_train(const Args& args);
int run_info(const Args& args);

}  // namespace bg::cli
