// main.cpp: the bitgrad command line. Library errors arrive as exceptions and leave here as
// one line on stderr and exit code 1.
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <string>

#include "cli.h"
#include "core/distributed.h"
#include "core/error.h"
#include "core/files.h"

int main(int argc, char** argv) {
  if (argc < 2 || !std::strcmp(argv[1], "help") || !std::strcmp(argv[1], "--help") ||
      !std::strcmp(argv[1], "-h")) {
    bg::cli::print_all_usage();
    return argc < 2 ? 2 : 0;
  }
  const std::string cmd = argv[1];
  if (cmd == "--version" || cmd == "version") {
    std::printf("bitgrad %s (%s)\n", BITGRAD_VERSION, BITGRAD_BUILD_TEXT);
    return 0;
  }
  // `bitgrad <command> --help` anywhere among its arguments: that command's usage, exit 0.
  for (int i = 2; i < argc && bg::cli::is_command(cmd); ++i)
    if (!std::strcmp(argv[i], "--help") || !std::strcmp(argv[i], "-h")) {
      bg::cli::print_usage(cmd);
      return 0;
    }
  try {
    bg::guard_inputs(true);  // no command writes over a file it read (core/files.h)
    const bg::cli::Args args = bg::cli::parse_args(argc, argv, 2);
    // --set changes a config: a command that reads none would ignore it.
    if (!args.overrides.empty() && bg::cli::is_command(cmd) && cmd != "train" &&
        cmd != "fit-bide" && cmd != "check-determinism" && cmd != "launch") {
      std::fprintf(stderr,
                   "bitgrad %s: [cli] --set applies to commands that read a config (train, "
                   "launch, fit-bide, check-determinism); %s reads none\n",
                   cmd.c_str(), cmd.c_str());
      return 1;
    }
    // One rank of several runs `train` alone: fit-bide and check-determinism would each run
    // whole and write the same outputs N times.
    if (cmd == "fit-bide" || cmd == "check-determinism") {
      const bg::DistEnv dist = bg::read_dist_env();
      if (dist.world > 1) {
        std::fprintf(stderr,
                     "bitgrad %s: [dist] runs in one process, but this is rank %d of %d "
                     "(WORLD_SIZE is set); only train runs as a rank\n",
                     cmd.c_str(), dist.rank, dist.world);
        return 1;
      }
    }
    if (cmd == "train") return bg::cli::run_train(args);
    if (cmd == "launch") return bg::cli::run_launch(args, argv[0]);
    if (cmd == "fit-bide") return bg::cli::run_fit_bide(args);
    if (cmd == "config") return bg::cli::run_config(args);
    if (cmd == "sample") return bg::cli::run_sample(args);
    if (cmd == "eval") return bg::cli::run_eval(args);
    if (cmd == "forecast") return bg::cli::run_forecast(args);
    if (cmd == "prepare") return bg::cli::run_prepare(args);
    if (cmd == "export") return bg::cli::run_export(args);
    if (cmd == "import") return bg::cli::run_import(args);
    if (cmd == "plot") return bg::cli::run_plot(args);
    if (cmd == "info") return bg::cli::run_info(args);
    if (cmd == "checksum") return bg::cli::run_checksum(args);
    if (cmd == "check-determinism") return bg::cli::run_check_determinism(args);
    if (cmd == "bench") return bg::cli::run_bench(args);
    std::fprintf(stderr, "bitgrad: unknown command '%s' (see 'bitgrad help')\n", cmd.c_str());
    return 2;
  } catch (const std::exception& e) {
    // A rank of a data-parallel run says which rank it is.
    const char* rank = std::getenv("RANK");
    const char* world = std::getenv("WORLD_SIZE");
    if (rank && world && std::strcmp(world, "1") != 0)
      std::fprintf(stderr, "bitgrad %s (rank %s): %s\n", cmd.c_str(), rank, e.what());
    else
      std::fprintf(stderr, "bitgrad %s: %s\n", cmd.c_str(), e.what());
    return 1;
  }
}
