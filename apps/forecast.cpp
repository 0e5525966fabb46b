// forecast.cpp: `bitgrad forecast CKPT --data FILE`: sample paths and quantiles of the points
// after each series (models/forecast/forecast.h), written as CSV; and `bitgrad eval` of a forecaster
// (models/forecast/forecast_eval.h): its scores on each series' test window against seasonal naive.
#include <cmath>
#include <cstdio>
#include <memory>
#include <sstream>

#include "cli.h"
#include "core/error.h"
#include "core/files.h"
#include "core/strings.h"
#include "data/csv.h"
#include "models/forecast/forecast.h"
#include "models/forecast/forecast_eval.h"
#include "models/forecast/forecast_run.h"

namespace bg::cli {
namespace {

// --quantiles 0.1,0.5,0.9: levels strictly between 0 and 1, ascending, none twice.
std::vector<double> parse_levels(const std::string& text) {
  std::vector<double> levels;
  std::stringstream in(text);
  std::string item;
  while (std::getline(in, item, ',')) {
    const double q = parse_number(item, "--quantiles", -HUGE_VAL, HUGE_VAL);
    BG_CHECK(q > 0 && q < 1, "forecast", "--quantiles: ", item,
             " is not a level strictly between 0 and 1");
    levels.push_back(q);
    BG_CHECK(levels.size() == 1 || levels.back() > levels[levels.size() - 2], "forecast",
             "--quantiles: levels must ascend, none twice (", text, ")");
  }
  BG_CHECK(!levels.empty() && text.back() != ',', "forecast",
           "--quantiles: expected levels in (0, 1) separated by commas, got '", text, "'");
  return levels;
}

// A level's column: "q" and the level in the fewest digits that read back to it, so distinct
// levels (0.5 and 0.5000001) never share a name.
std::string level_name(double q) { return "q" + csv_number(q); }

void print_forecast_scores(const ForecastEvaluation& e, const std::string& what, int64_t step,
                           const std::string& data, const ForecastEvalSettings& s) {
  std::printf("%s: ", what.c_str());
  if (step > 0) std::printf("step %lld | ", (long long)step);
  std::printf(
      "%s: %lld series, %lld test points (horizon %lld, season %lld) | ", data.c_str(),
      (long long)e.series, (long long)e.points, (long long)s.horizon, (long long)s.season);
  if (std::isfinite(e.nll)) std::printf("NLL %.4f nats/point | ", e.nll);
  std::printf("CRPS %.5g (naive %.5g, ratio %.4f) | ", e.crps, e.naive_crps, e.crps_ratio);
  if (std::isfinite(e.mase))
    std::printf("MASE %.4f (naive %.4f, ratio %.4f) | ", e.mase, e.naive_mase, e.mase_ratio);
  else  // every series is constant at its season's lag: no scale to divide by
    std::printf("MASE n/a (no series varies at lag %lld) | ", (long long)s.season);
  std::printf("wQL %.4f (naive %.4f) | 80%% coverage %.3f", e.wql, e.naive_wql, e.coverage80);
  if (!s.truth_path.empty())
    std::printf(" | truth: CRPS %.5g (forecast/truth %.4f), NLL %.4f", e.truth_crps,
                e.crps / e.truth_crps, e.truth_nll);
  std::printf("\n");
}

// --horizon: the run's data.horizon unless given; any length (the window slides), the values a
// series' paths hold bounded by forecast_series.
int64_t horizon_option(const Args& args, const LoadedForecaster& ck) {
  return parse_integer(args.option("horizon", std::to_string(ck.horizon)), "--horizon", 1,
                       int64_t(1) << 20);
}

}  // namespace

bool is_paths_file(const std::string& path) {
  return ends_with(path, ".csv");
}

int run_forecast(const Args& args) {
  args.allow_only(
      {"data", "horizon", "context", "samples", "quantiles", "seed", "out", "paths", "device"});
  BG_CHECK(args.positional.size() == 1 && args.has("data") && args.has("out"), "forecast",
           "usage: bitgrad forecast CKPT --data FILE --out FILE.csv [--horizon H] [--context C] "
           "[--samples N] "
           "[--quantiles 0.1,0.5,0.9] [--seed S] [--paths FILE.csv] [--device D]");
  const std::string& path = args.positional[0];
  const Device device = parse_device(args.option("device", "auto"));
  const auto ck = load_forecaster_checkpoint(path, device);
  ForecastSettings s;
  s.horizon = horizon_option(args, *ck);
  s.samples = parse_integer(args.option("samples", "100"), "--samples", 1, 1 << 20);
  s.levels = parse_levels(args.option("quantiles", "0.1,0.2,0.3,0.4,0.5,0.6,0.7,0.8,0.9"));
  s.seed = uint64_t(parse_integer(args.option("seed", "0"), "--seed", 0, INT64_MAX));
  s.min_context = parse_integer(args.option("context", "0"), "--context", 0, INT64_MAX);
  // A context the block holds, before reading.
  (void)forecast_window(ck->model->config(), s.horizon, s.min_context);
  const std::string data = args.option("data", "");
  const std::string out = args.option("out", ""), paths_out = args.option("paths", "");
  check_output_file(out, "forecast", "--out", {data});
  if (args.has("paths")) check_output_file(paths_out, "forecast", "--paths", {data, out});
  const SeriesSet set = read_forecaster_series(data, ck->model->config());
  const std::vector<Cadence> cadences = series_cadences(set);
  std::vector<std::vector<std::string>> stamps;  // checked before any forecast is drawn
  for (size_t i = 0; i < set.series.size(); ++i)
    stamps.push_back(future_stamps(set.series[i], cadences[i], s.horizon));
  // Both files stream out as each series is done (memory stays one group's), each to its
  // temporary, renamed into place only when every series is written.
  AtomicFileWriter csv(out, "forecast");
  std::unique_ptr<AtomicFileWriter> paths;
  if (args.has("paths")) paths = std::make_unique<AtomicFileWriter>(paths_out, "forecast");
  std::string header = "unique_id,ds,mean";
  for (const double q : s.levels) header += ',' + level_name(q);
  csv.write(header + '\n');
  if (paths) paths->write("unique_id,ds,path,y\n");
  forecast_series(*ck->model, set.series, s, device, [&](size_t i, SeriesForecast&& f) {
    const std::string id = csv_field(set.series[i].id);
    std::string rows, path_rows;
    for (int64_t t = 0; t < s.horizon; ++t) {
      const std::string& ds = stamps[i][size_t(t)];
      rows += id + ',' + ds + ',' + csv_number(f.mean[size_t(t)]);
      for (const auto& q : f.quantiles) rows += ',' + csv_number(q[size_t(t)]);
      rows += '\n';
      if (!paths) continue;
      for (int64_t j = 0; j < s.samples; ++j) {
        path_rows += id + ',' + ds + ',' + std::to_string(j) + ',' +
                     csv_number(f.paths[size_t(j)][size_t(t)]) + '\n';
        if (path_rows.size() > (size_t(1) << 20)) paths->write(path_rows), path_rows.clear();
      }
    }
    csv.write(rows);
    if (paths) paths->write(path_rows);
  });
  csv.commit();
  if (paths) paths->commit();
  std::printf("%s: %zu series x %lld steps, %lld paths each%s -> %s\n", path.c_str(),
              set.series.size(), (long long)s.horizon, (long long)s.samples,
              s.horizon == 1 ? " (quantiles exact off the one-step law)" : "", out.c_str());
  return 0;
}

int run_paths_eval(const Args& args) {
  args.allow_only({"data", "horizon", "season", "truth", "json"});
  BG_CHECK(args.positional.size() == 1 && args.has("data") && args.has("horizon"), "eval",
           "usage: bitgrad eval PATHS.csv --data FILE --horizon H [--season M] [--truth FILE] "
           "[--json FILE]");
  const std::string& path = args.positional[0];
  ForecastEvalSettings s;
  s.horizon = parse_integer(args.option("horizon", "1"), "--horizon", 1, 1 << 16);
  s.season = parse_integer(args.option("season", "1"), "--season", 1, 1 << 16);
  s.truth_path = args.option("truth", "");
  const std::string data = args.option("data", ""), json = args.option("json", "");
  if (args.has("json")) check_output_file(json, "eval", "--json", {data, path, s.truth_path});
  const SeriesSet set = read_series(data);
  check_test_window(set, s.horizon);
  const std::vector<SeriesForecast> f = read_forecast_paths(path, set, s.horizon);
  s.samples = int64_t(f.at(0).paths.size());
  const ForecastEvaluation e = score_forecasts(set, f, {}, s);
  print_forecast_scores(e, path, 0, data, s);
  if (args.has("json")) write_file_atomic(json, forecast_evaluation_json(e, path, data, s), "eval");
  return 0;
}

int run_forecast_eval(const Args& args) {
  // Forecasts made elsewhere (sample paths in a CSV) are scored by the same code.
  if (args.positional.size() == 1 && is_paths_file(args.positional[0])) return run_paths_eval(args);
  args.allow_only({"data", "horizon", "season", "samples", "seed", "truth", "json", "device"});
  BG_CHECK(args.positional.size() == 1, "eval",
           "usage: bitgrad eval FORECASTER [--data FILE] [--horizon H] [--season M] [--samples N] "
           "[--seed S] [--truth FILE] [--json FILE] [--device D]");
  const std::string& path = args.positional[0];
  const Device device = parse_device(args.option("device", "auto"));
  const auto ck = load_forecaster_checkpoint(path, device);
  ForecastEvalSettings s;
  s.horizon = horizon_option(args, *ck);
  s.season = parse_integer(args.option("season", std::to_string(ck->season)), "--season", 1,
                           1 << 16);
  s.samples = parse_integer(args.option("samples", "100"), "--samples", 2, 1 << 20);
  s.seed = uint64_t(parse_integer(args.option("seed", "0"), "--seed", 0, INT64_MAX));
  s.truth_path = args.option("truth", "");
  const std::string data = args.option("data", ck->data_path);
  BG_CHECK(!data.empty(), "eval", path, " names no series file: use --data");
  const std::string json = args.option("json", "");
  if (args.has("json")) check_output_file(json, "eval", "--json", {data, s.truth_path});
  const SeriesSet set = read_forecaster_series(data, ck->model->config());
  const ForecastEvaluation e = evaluate_forecaster(*ck->model, set, s, device);
  print_forecast_scores(e, path, ck->step, data, s);
  if (args.has("json")) write_file_atomic(json, forecast_evaluation_json(e, path, data, s), "eval");
  return 0;
}

}  // namespace bg::cli
