#include "forecast_eval.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <sstream>

#include "core/json.h"
#include "data/csv.h"
#include "models/forecast/forecast.h"
#include "models/forecast/forecast_metrics.h"
#include "models/forecast/forecast_run.h"
#include "data/forecast_truth.h"

namespace bg {
namespace {

const std::vector<double> kLevels = {0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9};

// The series cut before its test window (its context).
Series context_of(const Series& s, int64_t horizon) {
  Series c;
  c.id = s.id;
  c.ds.assign(s.ds.begin(), s.ds.end() - horizon);
  c.y.assign(s.y.begin(), s.y.end() - horizon);
  c.lag = s.lag;
  return c;
}

double mean_of(const std::vector<double>& v) {
  double total = 0;
  for (const double x : v) total += x;
  return v.empty() ? NAN : total / double(v.size());
}

// The one-step laws at the end of each context, on the values' grid in series units.
std::vector<DiscreteDistribution> one_step_laws(const Forecaster& model,
                                                const std::vector<Series>& contexts,
                                                Device device) {
  NoGradGuard no_grad;
  const int64_t context = forecast_window(model.config(), 1, 0).first;
  std::vector<int64_t> xs, ys;
  std::vector<WindowScale> scales;
  for (const Series& s : contexts)
    scales.push_back(series_window(s, int64_t(s.y.size()), int64_t(s.y.size()),
                                   window_spec(model.config(), context), xs, ys));
  const int64_t n = int64_t(contexts.size());
  KVCache cache = model.new_cache(n, device);
  const Tensor h = model.forward_cached_hidden(
      from_vector(xs, series_input_shape(n, context, model.config().lag), device), cache);
  std::vector<DiscreteDistribution> out;
  const std::vector<HeadLaw> laws = model.head().laws(h);
  for (int64_t i = 0; i < n; ++i) {
    DiscreteDistribution d = laws[size_t(i)].on_grid();
    for (double& v : d.values) v = scales[size_t(i)].value(v);
    out.push_back(std::move(d));
  }
  return out;
}

}  // namespace

ForecastEvaluation evaluate_forecaster(const Forecaster& model, const SeriesSet& set,
                                       const ForecastEvalSettings& st, Device device) {
  const int64_t h = st.horizon;
  check_test_window(set, h);
  std::vector<Series> contexts;
  for (const Series& s : set.series) contexts.push_back(context_of(s, h));
  // Every series' paths are held until they are scored: the file's, not one series', bound.
  BG_CHECK(st.samples <= kMaxForecastValues / h / int64_t(set.series.size()), "eval", "--samples ",
           st.samples, " x --horizon ", h, " x ", set.series.size(), " series are more than ",
           kMaxForecastValues, " values to hold for scoring (fewer samples)");
  ForecastSettings fs;
  fs.horizon = h;
  fs.samples = st.samples;
  fs.levels = kLevels;
  fs.seed = st.seed;
  const std::vector<SeriesForecast> forecasts = forecast_series(model, contexts, fs, device);
  std::vector<DiscreteDistribution> laws;
  if (h == 1) laws = one_step_laws(model, contexts, device);
  ForecastEvaluation e = score_forecasts(set, forecasts, laws, st, model.config().head.values);
  // The teacher-forced NLL of every test point.
  Tensor x, yt;
  held_out_windows(set, h, 0, model.config(), device, &x, &yt);
  // A quantile head's loss is no log density: its NLL is n/a (NaN).
  e.nll = model.head().loss_is_nll() ? mean_of(model.target_nll(x, yt)) : NAN;
  return e;
}

ForecastEvaluation score_forecasts(const SeriesSet& set,
                                   const std::vector<SeriesForecast>& forecasts,
                                   const std::vector<DiscreteDistribution>& laws,
                                   const ForecastEvalSettings& st, ValueFormat values) {
  const ValueCode& code = value_code(values);
  const int64_t h = st.horizon;
  check_test_window(set, h);
  BG_CHECK(
      forecasts.size() == set.series.size() && (laws.empty() || laws.size() == forecasts.size()),
      "eval", "forecasts for ", forecasts.size(), " series, the data has ", set.series.size());
  std::vector<Series> contexts;
  for (const Series& s : set.series) {
    contexts.push_back(context_of(s, h));
    // The seasonal-naive scale is the mean |y_t - y_{t-season}| over the points before the test
    // window: with no more points than the season it has no terms (MASE would be NaN).
    BG_CHECK(int64_t(contexts.back().y.size()) > st.season, "eval", "series '", s.id, "' has ",
             contexts.back().y.size(), " points before its test window; --season ", st.season,
             " needs more than ", st.season, " (a shorter season, or a longer series)");
  }
  std::map<std::pair<std::string, std::string>, TruthLaw> truth;
  if (!st.truth_path.empty()) {
    BG_CHECK(h == 1, "eval", "--truth scores one-step forecasts: the horizon is ", h,
             " (use --horizon 1)");
    truth = read_truth(st.truth_path);
  }

  ForecastEvaluation e;
  e.nll = NAN;
  e.series = int64_t(set.series.size());
  std::vector<std::vector<double>> pred(kLevels.size()), naive_pred(kLevels.size());
  std::vector<double> actual, crps_ratios, mase_ratios, lo, hi, truth_nll;
  for (size_t i = 0; i < set.series.size(); ++i) {
    const Series& s = set.series[i];
    const SeriesForecast& f = forecasts[i];
    const std::vector<double> y(s.y.end() - h, s.y.end());
    const std::vector<double> naive = seasonal_naive_forecast(contexts[i].y, st.season, h);
    SeriesScore sc;
    sc.id = s.id;
    std::vector<double> crps_t, naive_t, median;
    for (int64_t t = 0; t < h; ++t) {
      if (!laws.empty()) {
        crps_t.push_back(crps_exact(laws[i], y[size_t(t)]));
      } else {
        std::vector<double> col;
        for (const auto& path : f.paths) col.push_back(path[size_t(t)]);
        crps_t.push_back(crps_fair(col, y[size_t(t)]));
      }
      naive_t.push_back(std::fabs(naive[size_t(t)] - y[size_t(t)]));  // a point's CRPS: |error|
      for (size_t l = 0; l < kLevels.size(); ++l) {
        pred[l].push_back(f.quantiles[l][size_t(t)]);
        naive_pred[l].push_back(naive[size_t(t)]);
      }
      median.push_back(f.quantiles[4][size_t(t)]);
      lo.push_back(f.quantiles[0][size_t(t)]);
      hi.push_back(f.quantiles[8][size_t(t)]);
      actual.push_back(y[size_t(t)]);
    }
    sc.crps = mean_of(crps_t);
    sc.naive_crps = mean_of(naive_t);
    const double scale = seasonal_naive_scale(contexts[i].y, st.season);
    sc.mase = scale > 0 ? mase(median, y, scale) : NAN;
    sc.naive_mase = scale > 0 ? mase(naive, y, scale) : NAN;
    if (sc.naive_crps > 0 && sc.crps > 0) {
      crps_ratios.push_back(sc.crps / sc.naive_crps);
      // MASE's ratio is the ratio of mean absolute errors: the scale cancels.
      if (scale > 0 && sc.mase > 0) mase_ratios.push_back(sc.mase / sc.naive_mase);
    }
    if (!truth.empty()) {
      const auto it = truth.find({s.id, s.ds.back()});
      BG_CHECK(it != truth.end(), "eval", st.truth_path, " has no law for series '", s.id, "' at ",
               s.ds.back());
      // The truth on the grid the model's values lie on: scaled as its context is.
      const DiscreteDistribution d =
          on_grid(code, [&](double x) { return it->second.cdf(x); }, f.scale);
      sc.truth_crps = crps_exact(d, y[0]);
      const uint16_t k = code.pattern(f.scale.scaled(y[0]));
      const double p = d.probs[size_t(code.grid_index()[k])];
      truth_nll.push_back(-std::log(p) + code.log_widths()[k]);
    }
    e.per_series.push_back(sc);
  }
  std::vector<double> crps, naive_crps, mases, naive_mases, truth_crps;
  for (const SeriesScore& sc : e.per_series) {
    crps.push_back(sc.crps);
    naive_crps.push_back(sc.naive_crps);
    if (std::isfinite(sc.mase)) {
      mases.push_back(sc.mase);
      naive_mases.push_back(sc.naive_mase);
    }
    if (std::isfinite(sc.truth_crps)) truth_crps.push_back(sc.truth_crps);
  }
  e.points = int64_t(actual.size());
  e.crps = mean_of(crps);
  e.naive_crps = mean_of(naive_crps);
  e.truth_crps = truth_crps.empty() ? NAN : mean_of(truth_crps);
  e.truth_nll = truth_nll.empty() ? NAN : mean_of(truth_nll);
  e.ratio_series = int64_t(crps_ratios.size());
  e.crps_ratio = crps_ratios.empty() ? NAN : geometric_mean(crps_ratios);
  e.mase_ratio = mase_ratios.empty() ? NAN : geometric_mean(mase_ratios);
  e.mase = mean_of(mases);
  e.naive_mase = mean_of(naive_mases);
  e.wql = weighted_quantile_loss(kLevels, pred, actual);
  e.naive_wql = weighted_quantile_loss(kLevels, naive_pred, actual);
  e.coverage80 = coverage(lo, hi, actual);
  return e;
}

std::string forecast_evaluation_json(const ForecastEvaluation& e, const std::string& checkpoint,
                                     const std::string& data, const ForecastEvalSettings& s) {
  const auto num = [](double v) {
    if (!std::isfinite(v)) return std::string("null");
    char buf[40];
    std::snprintf(buf, sizeof buf, "%.9g", v);
    return std::string(buf);
  };
  const auto str = [](const std::string& v) { return json_quote(v); };  // every byte kept
  std::ostringstream o;
  o << "{\"checkpoint\": " << str(checkpoint) << ", \"data\": " << str(data)
    << ", \"horizon\": " << s.horizon << ", \"season\": " << s.season
    << ", \"samples\": " << s.samples << ", \"seed\": " << s.seed << ", \"series\": " << e.series
    << ", \"points\": " << e.points << ",\n \"nll\": " << num(e.nll)
    << ", \"crps\": " << num(e.crps) << ", \"naive_crps\": " << num(e.naive_crps)
    << ", \"crps_ratio\": " << num(e.crps_ratio) << ", \"mase\": " << num(e.mase)
    << ", \"naive_mase\": " << num(e.naive_mase) << ", \"mase_ratio\": " << num(e.mase_ratio)
    << ", \"ratio_series\": " << e.ratio_series << ", \"wql\": " << num(e.wql)
    << ", \"naive_wql\": " << num(e.naive_wql) << ", \"coverage80\": " << num(e.coverage80)
    << ", \"truth_crps\": " << num(e.truth_crps) << ", \"truth_nll\": " << num(e.truth_nll)
    << ",\n \"per_series\": [";
  for (size_t i = 0; i < e.per_series.size(); ++i) {
    const SeriesScore& sc = e.per_series[i];
    o << (i ? ",\n  " : "\n  ") << "{\"id\": " << str(sc.id) << ", \"crps\": " << num(sc.crps)
      << ", \"naive_crps\": " << num(sc.naive_crps) << ", \"mase\": " << num(sc.mase)
      << ", \"naive_mase\": " << num(sc.naive_mase) << ", \"truth_crps\": " << num(sc.truth_crps)
      << "}";
  }
  o << "]}\n";
  return o.str();
}

std::vector<SeriesForecast> read_forecast_paths(const std::string& path, const SeriesSet& set,
                                                int64_t horizon) {
  LineReader in(path, "eval", "paths file");
  std::string line;
  const std::vector<std::string> header = {"unique_id", "ds", "path", "y"};
  BG_CHECK(in.next(&line) && csv_fields(line, in.path(), 1) == header, "eval", path, ":1: expected the header unique_id,ds,path,y");
  std::map<std::string, size_t> index;
  for (size_t i = 0; i < set.series.size(); ++i) index[set.series[i].id] = i;
  // Each series' test window by instant: a stamp matches however it is written (with or without
  // seconds, 'T' or ' ').
  std::vector<std::map<int64_t, int64_t>> window(set.series.size());
  for (size_t i = 0; i < set.series.size(); ++i) {
    const std::vector<Stamp> stamps = series_stamps(set.series[i]);
    for (int64_t t = 0; t < horizon; ++t)
      window[i][stamps[stamps.size() - size_t(horizon) + size_t(t)].at] = t;
  }
  // values[series][step] : the paths' values in path order
  std::vector<std::vector<std::map<int64_t, double>>> values(
      set.series.size(), std::vector<std::map<int64_t, double>>(size_t(horizon)));
  while (in.next(&line)) {
    if (line.empty()) continue;
    // in.where() names the line in a message only: not built for every row.
    const std::vector<std::string> f = csv_fields(line, in.path(), in.line_no());
    BG_CHECK(f.size() == 4, "eval", in.where(), ": expected 4 fields, got ", f.size());
    const auto it = index.find(f[0]);
    BG_CHECK(it != index.end(), "eval", in.where(), ": series '", f[0], "' is not in the data");
    Stamp stamp;
    std::string why;
    BG_CHECK(parse_stamp(f[1], &stamp, &why), "eval", in.where(), ": ds: ", why);
    const auto step = window[it->second].find(stamp.at);
    BG_CHECK(stamp.kind == set.stamps && step != window[it->second].end(), "eval", in.where(), ": ",
             f[1], " is not in series '", f[0], "''s test window (its last ", horizon,
             " points)");
    char* end = nullptr;
    const long long j = std::strtoll(f[2].c_str(), &end, 10);
    BG_CHECK(end && *end == 0 && !f[2].empty() && j >= 0, "eval", in.where(), ": path '",
             f[2], "' is not a whole number");
    const double v = std::strtod(f[3].c_str(), &end);
    BG_CHECK(end && *end == 0 && !f[3].empty() && std::isfinite(v), "eval", in.where(), ": y '", f[3],
             "' is not a finite number");
    auto& at = values[it->second][size_t(step->second)];
    BG_CHECK(at.emplace(j, v).second, "eval", in.where(), ": path ", j, " of ", f[0],
             " at ", f[1], " given twice");
  }
  std::vector<SeriesForecast> out(set.series.size());
  for (size_t i = 0; i < set.series.size(); ++i) {
    const size_t m = values[i][0].size();
    for (int64_t t = 0; t < horizon; ++t)
      BG_CHECK(values[i][size_t(t)].size() == m && m >= 2, "eval", path, ": series '",
               set.series[i].id, "' has ", values[i][size_t(t)].size(), " paths at ",
               set.series[i].ds[set.series[i].ds.size() - size_t(horizon) + size_t(t)],
               ", expected the same number (at least 2) at every point of its test window");
    SeriesForecast& f = out[i];
    f.paths.assign(m, std::vector<double>(size_t(horizon)));
    f.mean.assign(size_t(horizon), 0.0);
    f.quantiles.assign(kLevels.size(), std::vector<double>(size_t(horizon)));
    for (int64_t t = 0; t < horizon; ++t) {
      std::vector<double> col;
      size_t j = 0;
      for (const auto& [id, v] : values[i][size_t(t)]) {
        f.paths[j++][size_t(t)] = v;
        f.mean[size_t(t)] += v / double(m);
        col.push_back(v);
      }
      std::sort(col.begin(), col.end());
      for (size_t l = 0; l < kLevels.size(); ++l)
        f.quantiles[l][size_t(t)] = sample_quantile(col, kLevels[l]);
    }
  }
  return out;
}

}  // namespace bg
