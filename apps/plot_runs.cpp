// plot_runs.cpp: `bitgrad plot [LABEL=]METRICS.csv ... --out FILE.svg [--title TEXT]`: the
// validation and training losses of several `bitgrad train` runs (their metrics.csv) on one
// step axis, one colour a run: how the README's comparisons (dense against BitNet) are drawn.
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <sstream>

#include "cli.h"
#include "core/error.h"
#include "data/text.h"
#include "models/trainer.h"
#include "plot.h"

namespace bg::cli {
namespace {

const char* const kColors[] = {"#1f77b4", "#d62728", "#2ca02c", "#9467bd",
                               "#ff7f0e", "#8c564b", "#e377c2", "#7f7f7f"};

// A metrics.csv as two series (train and validation loss against step).
std::pair<plot::Series, plot::Series> read_metrics(const std::string& path,
                                                   const std::string& label, const char* color) {
  check_input_file(path, "plot", "metrics file");
  const std::vector<MetricsRow> rows = parse_metrics_csv(read_text_file(path), path);
  BG_CHECK(!rows.empty(), "plot", path, ": no rows");
  return plot::metrics_series(rows, label, color);
}

}  // namespace

int run_plot(const Args& args) {
  args.allow_only({"out", "title"});
  BG_CHECK(!args.positional.empty() && args.has("out"), "plot",
           "usage: bitgrad plot [LABEL=]METRICS.csv ... --out FILE.svg [--title TEXT]");
  BG_CHECK(args.positional.size() <= std::size(kColors), "plot", "at most ", std::size(kColors),
           " runs a plot, got ", args.positional.size());
  plot::Panel val{"validation loss (nats per token)", "step", "loss", {}};
  plot::Panel train{"training loss (nats per token)", "step", "loss", {}};
  for (size_t i = 0; i < args.positional.size(); ++i) {
    const std::string& arg = args.positional[i];
    const size_t eq = arg.find('=');
    const std::string path = eq == std::string::npos ? arg : arg.substr(eq + 1);
    const std::string label = eq == std::string::npos
                                  ? std::filesystem::path(path).parent_path().filename().string()
                                  : arg.substr(0, eq);
    auto [t, v] = read_metrics(path, label.empty() ? path : label, kColors[i]);
    train.series.push_back(t);
    if (!v.x.empty()) val.series.push_back(v);
  }
  const std::string title = args.option("title", "");
  if (!title.empty()) {
    val.title = title + ": " + val.title;
    train.title = title + ": " + train.title;
  }
  const std::string out = args.option("out", "");
  std::vector<std::string> inputs;
  for (const std::string& arg : args.positional) inputs.push_back(arg.substr(arg.find('=') + 1));
  check_output_file(out, "plot", "--out", inputs);
  write_file_atomic(out, plot::svg({val, train}, 2, 560, 360));
  std::printf("wrote %s (%zu runs)\n", out.c_str(), args.positional.size());
  return 0;
}

}  // namespace bg::cli
